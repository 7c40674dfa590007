"""The synthetic fleet (seeded, labelled), the eval's scores against its ground truth, and the CLI around them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from bot.cli import main
from diagnostics.analysis import analyze_fleet
from diagnostics.enums import FaultKind, Priority
from diagnostics.synth.evaluate import SCORES, EvalReport, evaluate, score, score_node
from diagnostics.synth.fleet import build, generate, load
from diagnostics.synth.scenarios import SCENARIOS
from diagnostics.synth.truth import EXPLAINS, NOT_THE_FABRIC

FLEET = Path(__file__).resolve().parents[2] / "fixtures" / "fleet"


def _meets(report: EvalReport, floor: float = 0.95) -> None:
    for name, s in report.scenarios.items():
        for what in SCORES:
            value = s.value(what)
            assert value is None or value >= floor, (name, what, value, report.render())
    assert report.false_urgent_high == 0


def test_committed_fleet_meets_every_score(committed_eval: EvalReport) -> None:
    committed = committed_eval  # scored once per run, shared with the life nodes' checks
    _meets(committed)
    assert set(committed.scenarios) == set(SCENARIOS)
    healthy = committed.scenarios["healthy"]
    assert healthy.value("headline") is None and healthy.value("fit") is None  # nothing to name: n/a, not 1.00
    assert healthy.value("verdict") is not None and healthy.value("priority") is not None


def test_committed_fleet_holds_the_demo_nodes() -> None:
    truth = json.loads((FLEET / "ground_truth.json").read_text())
    node12 = truth["nodes"]["hpc-gpu-node-12"]
    assert node12["faults"][0] | {"gpu": 2, "link": 1, "peer": "GPU 3"} == node12["faults"][0]
    assert node12["expect"] | {"headline": "gpu2-nvlink1", "verdict": EXPLAINS, "priority": "urgent"} == \
        node12["expect"]
    assert truth["nodes"]["hpc-gpu-node-03"]["scenario"] == "healthy"
    assert "hpc-gpu-node-12" in truth["jobs"]["4411"]["nodes"]
    own = [job for job in truth["jobs"].values() if "hpc-gpu-node-03" in job["nodes"]]
    assert own == [own[0] | {"nodes": ["hpc-gpu-node-03"], "slowdown_pct": 0.0}]  # its own job, not slow
    assert sum(f.stat().st_size for f in FLEET.rglob("*") if f.is_file()) < 4_500_000  # 27 nodes and life/


def test_same_seed_same_fleet_other_seed_other_fleet() -> None:
    a, truth_a = build(seed=5, nodes=4, hours=6)
    b, truth_b = build(seed=5, nodes=4, hours=6)
    c, _ = build(seed=6, nodes=4, hours=6)
    pd.testing.assert_frame_equal(a["link_samples"], b["link_samples"])
    assert truth_a == truth_b
    assert not a["link_samples"]["replay"].equals(c["link_samples"]["replay"])


def test_a_fresh_seed_meets_every_score(tmp_path: Path) -> None:
    generate(out=tmp_path, seed=101, nodes=8, hours=6, scrapes=0)
    _meets(evaluate(tmp_path))


def test_a_fleet_written_as_csv_is_scored_as_the_same_fleet_as_parquet(tmp_path: Path) -> None:
    """The CSV tables are read as `fabricbot ingest` reads them: a bare read_csv made the events' NVSwitch 2 the
    float 2.0, and a correct `NVSwitch 2 port 18` scored wrong (`nvswitch-2-0-port18`)."""
    scenarios = ["fatal_sxid", "nvswitch_end_fault", "pcie_lane_errors", "healthy"]
    for fmt in ("parquet", "csv"):
        generate(out=tmp_path / fmt, seed=77, nodes=4, hours=6, scrapes=0, fmt=fmt, scenarios=scenarios)
    parquet, csv = (load(tmp_path / fmt)[0] for fmt in ("parquet", "csv"))
    for name, frame in parquet.items():
        pd.testing.assert_frame_equal(csv[name].drop(columns="source"), frame.drop(columns="source"),
                                      check_categorical=False, obj=name)
    reports = [evaluate(tmp_path / fmt) for fmt in ("parquet", "csv")]
    assert reports[0].overall() == reports[1].overall()
    _meets(reports[1])


# -- the scoring itself: a wrong answer lowers exactly its own score ----------------------------------------------
@pytest.fixture(scope="module")
def scored() -> tuple[dict[str, Any], dict[str, Any]]:
    """Diagnoses of a small fleet: two faults on one node (one explains its job), a slowdown from outside, healthy."""
    tables, truth = build(seed=7, nodes=3, hours=6, scenarios=["two_faults", "outside_slowdown", "healthy"])
    inventory = {n: v["platform"] for n, v in truth["nodes"].items() if v["platform"]}
    fleet = analyze_fleet(tables, end=pd.Timestamp(truth["end"]), platforms=inventory, nodes=sorted(truth["nodes"]))
    return truth, {"fleet": fleet, "tables": tables, "inventory": inventory}


def _node(scored: tuple[dict[str, Any], dict[str, Any]], scenario: str) -> tuple[Any, Any, dict[str, Any]]:
    truth, run = scored
    node = next(n for n, v in truth["nodes"].items() if v["scenario"] == scenario)
    d = run["fleet"].diagnoses[node]
    return d, run["fleet"].jobs.get(d.job_id), truth["nodes"][node]["expect"]


def test_the_right_answers_score_one(scored: tuple[dict[str, Any], dict[str, Any]]) -> None:
    truth, run = scored
    report = score(run["tables"], truth, run["inventory"])
    _meets(report, floor=1.0)
    two = report.scenarios["two_faults"]
    assert two.localization.tp == 2 and two.fit.total == 2 and two.headline.total == 1


def test_a_wrong_headline_lowers_the_headline_score_only(scored: tuple[dict[str, Any], dict[str, Any]]) -> None:
    d, job, expect = _node(scored, "two_faults")
    swapped = d.model_copy(update={"localization": d.localizations[1],
                                   "localizations": [d.localizations[1], d.localizations[0]]})
    right, _, _ = score_node(d, job, expect)
    wrong, given, missed = score_node(swapped, job, expect)
    assert right.value("headline") == 1.0 and wrong.value("headline") == 0.0
    assert missed == ["headline"] and given["headline"] != expect["headline"]
    assert wrong.value("localization") == 1.0 and wrong.value("priority") == 1.0  # the same parts, same priority


def test_a_wrong_verdict_lowers_the_verdict_score(scored: tuple[dict[str, Any], dict[str, Any]]) -> None:
    d, job, expect = _node(scored, "two_faults")
    assert expect["verdict"] == EXPLAINS
    unexplained = d.model_copy(update={"findings": [f.model_copy(update={"explains_slowdown": False})
                                                    for f in d.findings]})
    s, given, missed = score_node(unexplained, job, expect)
    assert s.value("verdict") == 0.0 and given["verdict"] == NOT_THE_FABRIC and "verdict" in missed
    outside, job2, expect2 = _node(scored, "outside_slowdown")
    blamed = outside.model_copy(update={"findings": [f.model_copy(update={"explains_slowdown": True})
                                                     for f in [*outside.findings, *d.failing]]})
    assert score_node(blamed, job2, expect2)[0].value("verdict") == 0.0


def test_a_wrong_priority_lowers_the_priority_score(scored: tuple[dict[str, Any], dict[str, Any]]) -> None:
    d, job, expect = _node(scored, "healthy")
    for level in Priority:
        s, _, _ = score_node(d.model_copy(update={"ticket_priority": level}), job, expect)
        assert s.value("priority") == (1.0 if level.value == expect["priority"] else 0.0)


def test_a_part_that_does_not_fit_lowers_the_fit_score(scored: tuple[dict[str, Any], dict[str, Any]]) -> None:
    d, job, expect = _node(scored, "two_faults")
    loc = d.localizations[0]
    other = FaultKind.NVSWITCH if loc.fault is not FaultKind.NVSWITCH else FaultKind.NVLINK
    kinds = d.model_copy(update={"localizations": [loc.model_copy(update={"fault": other}), *d.localizations[1:]]})
    assert score_node(kinds, job, expect)[0].fit.right == 1  # one of two parts fits now
    unfilled = loc.model_copy(update={"action": "Reseat the {part} of GPU {gpu}"})
    placeholder = d.model_copy(update={"localizations": [unfilled, *d.localizations[1:]]})
    s, given, _ = score_node(placeholder, job, expect)
    assert s.fit.right == 1 and "placeholder" in given["fit"][loc.ref.slug]


def test_a_plan_that_stops_more_than_it_isolates_lowers_the_safety_score(
        scored: tuple[dict[str, Any], dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The catalog is the user's to edit: an NVLink plan whose isolation excludes one GPU while its steps reseat the
    module with the node powered off would kill the node's other jobs, and the eval says so, step by step."""
    d, job, expect = _node(scored, "two_faults")
    assert score_node(d, job, expect)[0].value("safety") == 1.0  # the shipped plans isolate what they stop
    mine = tmp_path / "repairs.toml"
    mine.write_text('[step.exclude-only]\ntext = "Exclude GPU {gpu} from new jobs; the node\'s other GPUs keep '
                    'running"\n\n[fault.nvlink]\nisolate = ["exclude-only"]\n')
    monkeypatch.setenv("FABRICBOT_REPAIRS", str(mine))
    s, given, missed = score_node(d, job, expect)
    assert s.value("safety") is not None and s.value("safety") < 1.0 and "safety" in missed
    said = [note for note in given["safety"].values() if note != "safe"]
    assert said and "stops every GPU of the node" in said[0] and "the isolation reaches the gpu" in said[0]


def test_a_missing_caveat_lowers_the_caveat_score(scored: tuple[dict[str, Any], dict[str, Any]]) -> None:
    d, job, expect = _node(scored, "healthy")
    assert score_node(d, job, expect)[0].value("caveats") is None  # nothing to say: n/a
    needs = expect | {"caveats": [{"in": "warnings", "says": "second reading"}]}
    said = d.model_copy(update={"warnings": [*d.warnings, "a rate needs a second reading"]})
    assert score_node(said, job, needs)[0].value("caveats") == 1.0
    assert score_node(d, job, needs)[0].value("caveats") == 0.0
    elsewhere = expect | {"caveats": [{"in": "verdict", "says": "second reading"}]}  # said, but not where it must be
    assert score_node(said, job, elsewhere)[0].value("caveats") == 0.0


# -- the CLI -------------------------------------------------------------------------------------------------------
def test_cli_synth_eval_and_json_agree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "fleet"
    assert main(["synth", "--out", str(out), "--seed", "3", "--nodes", "3", "--hours", "6", "--format", "csv",
                 "--scrapes", "0", "--no-life"]) == 0  # the life lines: test_life's CLI check
    assert (out / "link_samples.csv").exists() and (out / "ground_truth.json").exists()
    capsys.readouterr()
    assert main(["eval", str(out)]) == 0
    text = capsys.readouterr().out
    assert "false urgent/high: 0" in text and "overall" in text
    assert text.splitlines()[0].split() == ["scenario", "nodes", "detect", "localize", "headline", "verdict",
                                            "priority", "fit", "safe", "caveats"]
    assert main(["eval", str(out), "--json", "--min-score", "0.95"]) == 0
    data = json.loads(capsys.readouterr().out)
    summary_lines = ("overall", "false", " ", "reboots", "warning", "repairs", "lane localization", "end localization",
                     "alerts:", "storm incidents")
    assert set(data["scenarios"]) == {row.split()[0] for row in text.splitlines()[1:]
                                      if row and not row.startswith(summary_lines)}
    assert set(data["overall"]) >= {"nodes", *SCORES, "lane", "end"} and data["false_urgent_high"] == 0


def test_cli_eval_refuses_a_fleet_without_expectations(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    generate(out=tmp_path, seed=2, nodes=2, hours=6, scrapes=0)
    truth = json.loads((tmp_path / "ground_truth.json").read_text())
    for node in truth["nodes"].values():
        node.pop("expect")
    (tmp_path / "ground_truth.json").write_text(json.dumps(truth))
    assert main(["eval", str(tmp_path)]) == 2
    assert "no 'expect'" in capsys.readouterr().err
    assert main(["eval", "/nonexistent-fleet"]) == 2


def test_cli_analyze(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(FLEET / "link_samples.parquet"), str(FLEET / "step_samples.parquet"),
                 str(FLEET / "nodes.csv"), "--node", "hpc-gpu-node-12", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["fault_detected"] is True and data["isolated_component"] == "GPU 2 -> GPU 3 NVLink 1"
    assert data["ticket_priority"] == "urgent" and data["job_id"] == "4411"
    failing = [f for f in data["findings"] if f["severity"] == "failing"]
    assert failing[0]["explains_slowdown"] is True and failing[0]["rates_per_hour"]["replay"] > 1000


def test_cli_analyze_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    # a node the files do not hold is answered as the store answers it: an error naming some they do hold
    assert main(["analyze", str(FLEET / "link_samples.parquet"), "--node", "no-such-node"]) == 2
    said = capsys.readouterr().err
    assert "no node 'no-such-node' in the files" in said and "hpc-gpu-node-01" in said and said.count("\n") == 1
    assert main(["analyze", "--node", "x"]) == 2
    assert "fabricbot:" in capsys.readouterr().err


def test_cli_analyze_from_the_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    generate(out=tmp_path / "fleet", seed=4, nodes=2, hours=6, scrapes=0)
    store = tmp_path / "store"
    files = [str(tmp_path / "fleet" / f"{t}.parquet") for t in ("link_samples", "step_samples", "events")]
    assert main(["ingest", "--store", str(store), *files]) == 0
    capsys.readouterr()
    assert main(["analyze", "--store", str(store), "--node", "hpc-gpu-node-01", "--window", "1h", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    truth = json.loads((tmp_path / "fleet" / "ground_truth.json").read_text())["nodes"]["hpc-gpu-node-01"]
    assert data["fault_detected"] is bool(truth["faults"])
    assert main(["analyze", "--store", str(store), "--node", "nope"]) == 2
    assert "no node 'nope'" in capsys.readouterr().err


@pytest.mark.parametrize("seed", [31, 47])
def test_lanes_and_ends_are_named_on_a_fresh_seed(seed: int) -> None:
    tables, truth = build(seed=seed, nodes=12, hours=6,
                          scenarios=["pcie_lane_errors", "nvlink_lane_errors", "nvswitch_end_fault"])
    report = score(tables, truth, {n: v["platform"] for n, v in truth["nodes"].items() if v["platform"]})
    _meets(report)
    total = report.overall()
    assert total.lane.tp >= 6 and total.end.tp >= 4  # lanes in two scenarios, ends in two
    assert total.lane.f1 is not None and total.lane.f1 >= 0.95 and total.end.f1 is not None and total.end.f1 >= 0.95
    lines = report.render().splitlines()
    assert any(line.startswith("lane localization: F1=") for line in lines)
    assert any(line.startswith("end localization: F1=") for line in lines)
    truth_ends = {e for v in truth["nodes"].values() for f in v["faults"] if (e := f.get("end"))}
    assert truth_ends >= {"gpu", "nvswitch"}  # both ends drawn, so a fixed answer could not score
