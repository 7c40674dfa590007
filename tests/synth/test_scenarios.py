"""Each scenario generated alone with a fixed seed: what the synth writes, what its ground truth says, and the
analysis scored against it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from diagnostics.analysis import analyze_tables
from diagnostics.enums import FaultKind
from diagnostics.ingest.base import Source
from diagnostics.ingest.dcgm import read_scrapes
from diagnostics.repair import repair_plan
from diagnostics.synth.evaluate import SCORES, EvalReport, evaluate, fits
from diagnostics.synth.fleet import build, generate
from diagnostics.synth.node import NEAR_HIGH
from diagnostics.synth.truth import EXPLAINS, NO_JOB

BLACKWELL_RULES = {"effective_errors", "effective_ber", "recovery_failed", "symbol_ber"}


def _fleet(folder: Path, scenarios: list[str], *, seed: int, nodes: int, scrapes: int = 0) -> tuple[
        dict[str, Any], EvalReport]:
    generate(out=folder, seed=seed, nodes=nodes, hours=6, scrapes=scrapes, scenarios=scenarios)
    return json.loads((folder / "ground_truth.json").read_text()), evaluate(folder)


def _exact(report: EvalReport) -> None:
    """Every node's every answer as the truth has it."""
    for node in report.nodes:
        assert node.wrong == [], (node.node_id, node.scenario, node.wrong, node.expected, node.given)
    for s in report.scenarios.values():
        assert all(s.value(n) in (None, 1.0) for n in SCORES)
    assert report.false_urgent_high == 0


def _tables(folder: Path) -> dict[str, pd.DataFrame]:
    return {t: pd.read_parquet(folder / f"{t}.parquet") for t in ("link_samples", "events", "step_samples")}


def test_a_gpu_off_the_bus_is_the_gpu_not_its_links_and_its_job_stops(tmp_path: Path) -> None:
    truth, report = _fleet(tmp_path, ["xid79_gpu_lost"], seed=21, nodes=4, scrapes=1)
    _exact(report)
    for node in truth["nodes"].values():
        (fault,) = node["faults"]
        assert node["expect"]["localized"] == [f"gpu{fault['gpu']}"] and node["expect"]["verdict"] == NO_JOB
        assert node["expect"]["priority"] == "urgent"  # a GPU lost: every job on it has stopped
    # the Xid came hours before the analysed hour: only the GPU's silence since then keeps it in view
    end = pd.Timestamp(truth["end"])
    assert all(end - pd.Timestamp(t["faults"][0]["onset"]) > pd.Timedelta(hours=2) for t in truth["nodes"].values())
    steps = _tables(tmp_path)["step_samples"]
    for job_id, job in truth["jobs"].items():  # the job's processes on the GPU failed: it logs no step since
        mine = steps[steps["job_id"].astype(str) == job_id]
        assert pd.to_datetime(mine["timestamp"]).max() < pd.Timestamp(job["stopped_at"])
    # the scrapes carry the Xid counter, and the lost GPU has no link series there
    (scrape,) = (tmp_path / "dcgm").glob("*.prom")
    node = truth["nodes"][scrape.stem]
    gpu = node["faults"][0]["gpu"]
    result = read_scrapes([(Source.from_path(scrape), None)], node_id=scrape.stem)
    events = result.tables["events"]
    assert set(zip(events["gpu"], events["code"], strict=True)) == {(gpu, 79)}
    assert gpu not in set(result.tables["link_samples"]["gpu"].dropna())


def test_an_xid79_long_before_the_gpu_fell_silent_is_not_blamed() -> None:
    tables, truth = build(seed=21, nodes=1, hours=6, scenarios=["xid79_gpu_lost"])
    node, facts = next(iter(truth["nodes"].items()))
    end = pd.Timestamp(truth["end"])
    found = analyze_tables(tables, node_id=node, end=end, platform=facts["platform"])
    assert "xid_off_bus" in {c.rule for f in found.findings for c in f.crossed}
    events = tables["events"].copy()
    events.loc[events["kind"] == "xid", "timestamp"] -= pd.Timedelta(hours=2)  # an old Xid, not this silence
    older = analyze_tables({**tables, "events": events}, node_id=node, end=end, platform=facts["platform"])
    assert "xid_off_bus" not in {c.rule for f in older.findings for c in f.crossed}


def test_xid79_after_pcie_replays_names_the_gpu_with_the_replays_as_evidence(tmp_path: Path) -> None:
    truth, report = _fleet(tmp_path, ["xid79_after_pcie_replays"], seed=8, nodes=3)
    _exact(report)
    links = _tables(tmp_path)["link_samples"]
    for name, node in truth["nodes"].items():
        (fault,) = node["faults"]
        assert fault["fault"] == FaultKind.GPU_OFF_BUS.value and node["expect"]["localized"] == [fault["component"]]
        pcie = links[(links["node_id"] == name) & (links["gpu"] == fault["gpu"]) & (links["link_type"] == "pcie")]
        rising = pcie[pd.to_datetime(pcie["timestamp"]) >= pd.Timestamp(fault["replays_from"])]
        assert rising["replay"].diff().sum() > 0  # the replays rose before the GPU fell off the bus
        assert pd.to_datetime(pcie["timestamp"]).max() <= pd.Timestamp(fault["onset"])  # then its series stop
    for result in report.nodes:
        assert result.given["localized"] == result.expected["localized"]  # no PCIe part beside the GPU
        assert result.given["caveats"][0]["says"] == "pcie replay"


def test_blackwell_is_written_as_dcgm_exporter_writes_it(tmp_path: Path) -> None:
    """NVLink5 counters only as each GPU's total over its links (no `nvlink` label); per link only the replays."""
    truth, report = _fleet(tmp_path, ["blackwell_link_errors", "healthy_blackwell"], seed=3, nodes=4, scrapes=1)
    _exact(report)
    links = _tables(tmp_path)["link_samples"]
    nvlink = links[links["link_type"] == "nvlink"]
    totals, per_link = nvlink[nvlink["gpu_total"]], nvlink[~nvlink["gpu_total"]]
    assert totals["link"].isna().all() and per_link["link"].notna().all()
    for column in ("symbol_errors", "effective_errors", "recovery_successful", "recovery_failed", "symbol_ber",
                   "effective_ber"):
        assert totals[column].notna().all() and per_link[column].isna().all(), column
    assert per_link["replay"].notna().all() and totals["replay"].isna().all()
    assert len(totals.groupby(["node_id", "gpu"], observed=True)) == 8 * len(truth["nodes"])
    (scrape,) = (tmp_path / "dcgm").glob("*.prom")
    text = scrape.read_text()
    assert 'DCGM_FI_DEV_NVLINK_COUNT_EFFECTIVE_ERRORS{gpu="0",Hostname=' in text  # a GPU's total: no nvlink label
    assert "COUNT_EFFECTIVE_ERRORS{gpu=\"0\",nvlink=" not in text
    back = read_scrapes([(Source.from_path(scrape), None)], node_id=scrape.stem).tables["link_samples"]
    assert back[back["effective_errors"].notna()]["gpu_total"].all()
    end = pd.Timestamp(truth["end"])
    rules_seen: set[str] = set()
    for node_id, node in truth["nodes"].items():
        assert node["platform"] == "hgx-b200-8gpu"
        d = analyze_tables(_tables(tmp_path), node_id=node_id, end=end, platform=node["platform"])
        if node["benign"]:  # a BER just under its limit: nothing fails
            assert not d.fault_detected and node["near"]
            continue
        (fault,) = node["faults"]
        assert d.localization is not None and d.localization.fault is FaultKind.NVLINK_AGGREGATE
        assert d.localization.component == f"GPU {fault['gpu']} NVLinks"
        bad = [f for f in d.findings if f.severity.value in ("failing", "down")]
        assert {c.rule for f in bad for c in f.crossed} <= BLACKWELL_RULES
        assert all(f.rates_per_hour.get("replay", 0.0) < 10 for f in d.findings)  # replays stay rare
        rules_seen.add(fault["rule"])
    assert rules_seen


def test_two_faults_one_slows_the_job_and_the_other_starts_an_hour_apart(tmp_path: Path) -> None:
    truth, report = _fleet(tmp_path, ["two_faults"], seed=5, nodes=6)
    _exact(report)
    for node in truth["nodes"].values():
        slow, other = node["faults"]
        assert slow["slows_job"] and not other["slows_job"]
        apart = abs(pd.Timestamp(slow["onset"]) - pd.Timestamp(other["onset"]))
        assert apart >= pd.Timedelta(hours=1) or pd.Timestamp(other["onset"]) == pd.Timestamp(truth["start"])
        assert node["expect"]["headline"] == slow["component"] and node["expect"]["verdict"] == EXPLAINS
        assert len(node["expect"]["localized"]) == 2


def test_a_node_without_a_platform_is_localized_and_says_so(tmp_path: Path) -> None:
    truth, report = _fleet(tmp_path, ["platform_unknown", "healthy"], seed=6, nodes=2)
    _exact(report)
    unknown = [n for n, v in truth["nodes"].items() if v["scenario"] == "platform_unknown"]
    inventory = pd.read_csv(tmp_path / "nodes.csv")
    assert not set(unknown) & set(inventory["node_id"])  # the inventory lacks it
    links = _tables(tmp_path)["link_samples"]
    peers = set(links[links["node_id"].isin(unknown)]["peer"].dropna().astype(str))
    assert any(p.startswith("nvswitch-") for p in peers) and not any(p.startswith("NVSwitch") for p in peers)
    for name in unknown:
        node = truth["nodes"][name]
        assert node["platform"] is None and node["board"] and node["expect"]["parts"] == {
            node["faults"][0]["component"]: "unknown"}  # the part its link implies, with its candidates
        d = analyze_tables(_tables(tmp_path), node_id=name, end=pd.Timestamp(truth["end"]))
        assert d.platform is None and any(w.startswith("platform unknown") for w in d.warnings)
        assert d.localization is not None and d.localization.ref.slug == node["faults"][0]["component"]
        part = repair_plan(None, d.localization.fault or FaultKind.NVLINK).part
        assert part is not None and part.platform == "unknown" and part.candidates and part.decided_by
    # the fit score: a plan for a platform the node is not known to have would name a part where none may be
    result = next(r for r in report.nodes if r.node_id == unknown[0])
    assert result.given["fit"] == {truth["nodes"][unknown[0]]["faults"][0]["component"]: "fits"}
    d = analyze_tables(_tables(tmp_path), node_id=unknown[0], end=pd.Timestamp(truth["end"]))
    loc = d.localization
    assert loc is not None
    named = fits(loc, d.model_copy(update={"platform": "hgx-h100-8gpu"}), loc.fault.value if loc.fault else None,
                 None)
    assert named[0] is False and "where none applies" in named[1]


def test_a_single_scrape_is_not_failing_and_asks_for_a_second_reading(tmp_path: Path) -> None:
    truth, report = _fleet(tmp_path, ["single_scrape", "single_scrape", "replay_storm"], seed=9, nodes=3)
    _exact(report)
    links = _tables(tmp_path)["link_samples"]
    for name, node in truth["nodes"].items():
        if node["scenario"] != "single_scrape":
            continue
        assert links[links["node_id"] == name]["timestamp"].nunique() == 1
        assert node["expect"] | {"detected": False, "priority": "low"} == node["expect"]
        result = next(r for r in report.nodes if r.node_id == name)
        assert result.given["detected"] is False and result.given["caveats"][0]["says"] == "second reading"


def test_fabric_manager_down_stops_jobs_and_names_no_part(tmp_path: Path) -> None:
    truth, report = _fleet(tmp_path, ["fabric_manager_down", "healthy", "healthy"], seed=4, nodes=3)
    _exact(report)
    steps = _tables(tmp_path)["step_samples"]
    for node in truth["nodes"].values():
        if node["scenario"] != "fabric_manager_down":
            continue
        job = truth["jobs"][node["job"]]
        assert job["stopped_at"] == node["faults"][0]["onset"] and job["slowdown_pct"] == 0.0
        mine = steps[steps["job_id"].astype(str) == node["job"]]
        assert pd.to_datetime(mine["timestamp"]).max() < pd.Timestamp(job["stopped_at"])  # no step since FM stopped
        assert node["expect"] | {"verdict": NO_JOB, "priority": "high", "localized": ["fabric-software"]} == \
            node["expect"] and node["expect"]["parts"] == {"fabric-software": None}
        for other in job["nodes"]:  # every node of the job: it does not run
            assert truth["nodes"][other]["expect"]["verdict"] == NO_JOB


def test_a_fatal_sxid_names_the_switch_port_and_stops_the_link_and_the_job(tmp_path: Path) -> None:
    truth, report = _fleet(tmp_path, ["fatal_sxid", "healthy"], seed=13, nodes=4)
    _exact(report)
    tables = _tables(tmp_path)
    sxid = tables["events"][tables["events"]["kind"] == "sxid"]
    for name, node in truth["nodes"].items():
        if node["scenario"] != "fatal_sxid":
            continue
        (fault,) = node["faults"]
        mine = sxid[sxid["node_id"] == name]
        assert list(mine["severity"]) == ["fatal"] and list(mine["link"]) == [fault["port"]]
        assert fault["component"] == f"nvswitch-{mine['nvswitch'].iloc[0]}-port{fault['port']}"
        links = tables["link_samples"]
        gpu_side = links[(links["node_id"] == name) & (links["gpu"] == fault["gpu"]) & (links["link"] == fault["link"])]
        assert gpu_side["link_state"].astype(str).iloc[-1] == "inactive"  # the switch stopped the link
        assert node["expect"] | {"localized": [fault["component"]], "verdict": NO_JOB, "priority": "high"} == \
            node["expect"]


def test_a_pcie_downtrain_says_how_many_lanes_not_which(tmp_path: Path) -> None:
    truth, report = _fleet(tmp_path, ["pcie_downtrain"], seed=11, nodes=2)
    _exact(report)
    for name, node in truth["nodes"].items():
        (fault,) = node["faults"]
        assert "lanes" not in fault and fault["width"] < fault["max_width"]
        d = analyze_tables(_tables(tmp_path), node_id=name, end=pd.Timestamp(truth["end"]), platform=node["platform"])
        lost = fault["max_width"] - fault["width"]
        assert any(f"lanes lost: {lost} of {fault['max_width']}" in e for f in d.findings for e in f.evidence)
        assert d.localization is not None and d.localization.lanes == []


@pytest.mark.parametrize("seed", [3, 4])
def test_near_threshold_faults_are_drawn_and_still_found(tmp_path: Path, seed: int) -> None:
    mix = ["replay_storm", "pcie_riser_replays", "nvswitch_port_fault", "gpu_wide_fault", "healthy"]
    truth, report = _fleet(tmp_path, mix, seed=seed, nodes=10)
    _exact(report)
    faults = [f for n in truth["nodes"].values() for f in n["faults"]]
    ratios = [f.get("least_ratio") or f["ratio"] for f in faults]  # a switch or GPU fault: its nearest link
    near = [r for r in ratios if r is not None and r < NEAR_HIGH]
    assert near and min(near) >= 1.1  # within 1.5x of the threshold, and found (above)
    under = [x["ratio"] for n in truth["nodes"].values() for x in n["near"]]
    assert under and max(under) < 1.0 and max(under) > 0.8  # just under a threshold, and not flagged (above)


def test_no_slowdown_is_drawn_where_the_policy_could_read_it_either_way() -> None:
    _, truth = build(seed=12, nodes=40, hours=6)
    for job in truth["jobs"].values():
        pct = job["slowdown_pct"]
        assert pct == 0.0 or all(abs(pct - step) >= 1.5 for step in (5.0, 20.0)), pct


def test_same_seed_same_fleet_in_another_process() -> None:
    """Hash randomisation differs per process: nothing the generator draws may depend on it."""
    code = ("import pandas as pd; from diagnostics.synth import build; "
            "t, _ = build(seed=5, nodes=4, hours=6); "
            "print(int(pd.util.hash_pandas_object(t['link_samples'], index=False).sum()))")
    digests = {subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONHASHSEED": seed},
                              capture_output=True, text=True, check=True).stdout for seed in ("1", "2")}
    assert len(digests) == 1 and digests != {""}


@pytest.mark.parametrize(("asked", "said"), [(["nope"], "unknown scenario nope;"),
                                             (["nope", "other"], "unknown scenarios nope, other;")])
def test_unknown_scenarios_are_named_in_words_that_agree(asked: list[str], said: str) -> None:
    from diagnostics.errors import InputError
    from diagnostics.synth.fleet import build
    from diagnostics.synth.rack_fleet import build_racks

    with pytest.raises(InputError) as fleet:
        build(nodes=1, scenarios=asked)
    with pytest.raises(InputError) as racks:
        build_racks(racks=1, scenarios=asked)
    assert str(fleet.value).startswith(said) and str(racks.value).startswith(said.replace("unknown ", "unknown rack "))
