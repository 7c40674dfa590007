"""Every real output in fixtures/real/, as a new user would run it: ingested into a fresh store, then `analyze
--store --node`, `ticket --store` and `render --store` for each node it holds: answers, never a traceback."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from diagnostics.store import open_store
from tests.bot.commands.conftest import Cli
from tests.shared import SAID_ONLY_SAMPLES, answered_exit

REAL = Path(__file__).resolve().parents[3] / "fixtures" / "real"
SAMPLES = sorted(REAL.glob("*.txt"))
OFF_BUS = re.compile(r"NVRM: (?:The NVIDIA )?GPU ([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.\d)(?::| *$)", re.MULTILINE)


@pytest.mark.parametrize("sample", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_each_real_sample_goes_through_the_whole_path(sample: Path, tmp_path: Path,
                                                      cli: Cli) -> None:
    store = tmp_path / "store"
    code, _, err = cli("ingest", str(sample), "--store", str(store), "--at", "2026-03-01T12:00:00Z")
    if code != 0:  # a sample that names no node is ingested as the node the user says it is
        assert "--node" in err, err
        code, _, err = cli("ingest", str(sample), "--store", str(store), "--node", "n1",
                            "--at", "2026-03-01T12:00:00Z")
    assert code == 0, err
    nodes = open_store(store).nodes()
    if sample.name in SAID_ONLY_SAMPLES:  # no reading to analyze: what the log says is said at ingest
        assert not nodes and "warning:" in err, err
        return
    assert nodes
    text = sample.read_text()
    off_bus = set(OFF_BUS.findall(text)) if "fallen off the bus" in text else set()  # the GPUs the driver lost
    for node in nodes:
        code, out, err = cli("analyze", "--store", str(store), "--node", node, "--json")
        assert code == answered_exit(out), err
        diagnosis = json.loads(out)
        assert diagnosis["node_id"] == node and "{" not in diagnosis["repair_action"]
        if off_bus:  # a fatal finding on that GPU, named by its bus, and the suspect the headline names
            fatal = {f["component"] for f in diagnosis["findings"] if f["severity"] == "down"
                     and any(c["rule"] == "xid_off_bus" for c in f["crossed"])}
            assert fatal == {f"the GPU at PCI {bus}" for bus in off_bus}, fatal
            assert diagnosis["localization"]["fault"] == "gpu-off-bus"
            assert diagnosis["isolated_component"] in fatal and diagnosis["ticket_priority"] == "urgent"  # GPU lost
        unknown = answered_exit(json.dumps(diagnosis)) == 3  # one reading, a pinned counter: health unknown
        code, out, err = cli("ticket", node, "--store", str(store))
        assert code in (0, 1) or (code == 3 and unknown), err
        assert ("# " in out) if code == 0 else ("fabricbot:" in err)
        picture = tmp_path / f"{node}.png"
        code, out, err = cli("render", node, "--store", str(store), "-o", str(picture))
        assert code == (3 if unknown else 0), err  # drawn either way; exits as analyze does
        assert picture.stat().st_size > 10_000
        if diagnosis["platform"] is not None:  # a known board: every finding placed on it lands on its picture
            unplaced = "PCI address alone"  # a GPU no index places (`nvidia-smi -q -i N`): no box of the board is its
            assert not [line for line in err.splitlines() if "not drawn" in line and unplaced not in line], err


def test_a_cut_log_of_xid_45_lines_still_says_which_nvlink5_xids_came_first(tmp_path: Path,
                                                                         cli: Cli) -> None:
    """Only `Xid 45 ... caused by previous Xid 149/145` lines survive the cut: the causes happened on those GPUs."""
    store = tmp_path / "store"
    cli("ingest", str(REAL / "xid_145_149_log_1.txt"), "--store", str(store), "--node", "n1",
         "--at", "2026-03-01T12:00:00Z")
    _, out, _ = cli("analyze", "--store", str(store), "--node", "n1", "--json")
    d = json.loads(out)
    assert d["fault_detected"]
    causes = {c["message"] for f in d["findings"] for c in f["crossed"] if c["rule"] == "xid_nvlink"}
    assert any("145" in m for m in causes) and any("149" in m for m in causes)
    assert d["localization"]["component"].startswith("the GPU at PCI 0000:")


def test_a_fabric_whose_health_is_unhealthy_warns_and_one_still_in_progress_fails(
        tmp_path: Path, cli: Cli) -> None:
    seen = {}
    for name in ("smi_q_fabric_unhealthy_1", "smi_q_fabric_in_progress_1"):
        store = tmp_path / name
        cli("ingest", str(REAL / f"{name}.txt"), "--store", str(store), "--node", "n1",
             "--at", "2026-03-01T12:00:00Z")
        _, out, _ = cli("analyze", "--store", str(store), "--node", "n1", "--json")
        d = json.loads(out)
        fabric = next(f for f in d["findings"] if f["component"] == "Fabric Manager / NVIDIA driver")
        seen[name] = (fabric["severity"], fabric["evidence"][0], d["fault_detected"])
    assert seen["smi_q_fabric_unhealthy_1"] == ("warning", "fabric health summary is 'Unhealthy': none of the Health "
                                                "fields read says why; `nvidia-smi -q -d FABRIC` on the node shows "
                                                "them all (Route Recovery in progress, Route Unhealthy, Access "
                                                "Timeout Recovery, Incorrect Configuration)", False)
    assert seen["smi_q_fabric_in_progress_1"] == ("failing", "fabric state is 'In Progress', not Completed", True)


def test_a_stored_topology_names_the_board_for_analyze_as_for_render(tmp_path: Path, cli: Cli) -> None:
    store = str(tmp_path / "store")
    assert cli("ingest", str(REAL / "topo_m_dgx_a100_1.txt"), "--store", store, "--node", "n1")[0] == 0
    diagnosis = json.loads(cli("analyze", "--store", store, "--node", "n1", "--json")[1])
    assert diagnosis["platform"] == "dgx-a100-8gpu"
    assert diagnosis["repair_action"].startswith("Collect this node's link counters")  # a matrix holds no counters


def test_an_undated_paste_still_shows_its_down_links(cli: Cli) -> None:
    code, out, _ = cli("analyze", str(REAL / "nvlink_s_v100_inactive_1.txt"), "--node", "pn", "--json")
    d = json.loads((code == 0 and out) or "{}")
    assert d["fault_detected"] and d["ticket_priority"] == "high"
    assert any("carry no time: taken as read at" in w for w in d["warnings"])


@pytest.mark.parametrize(("links", "said"), [(1, "1 reading of v carries no time"),
                                            (2, "2 readings of v carry no time")])
def test_an_undated_pastes_readings_are_counted_in_words_that_agree(cli: Cli, tmp_path: Path, links: int,
                                                                     said: str) -> None:
    paste = tmp_path / "paste.txt"
    head = (REAL / "nvlink_e_v100_short_form_1.txt").read_text().splitlines()[2]  # GPU 0's header line
    paste.write_text("\n".join([head, *(f"         Link {k}: Replay Errors: 2353" for k in range(links))]) + "\n")
    code, out, err = cli("analyze", str(paste), "--node", "v", "--json")
    assert code == answered_exit(out) == 3, err  # one reading: no rate, so health unknown
    assert any(w.startswith(f"{said}: taken as read at") for w in json.loads(out)["warnings"]), out


def test_an_unknown_job_is_an_error_and_a_window_reads_as_a_duration(tmp_path: Path, cli: Cli) -> None:
    fleet = REAL.parent / "fleet"
    code, _, err = cli("analyze", str(fleet), "--node", "hpc-gpu-node-12", "--job", "999999")
    assert code == 2 and "no step samples for job '999999'" in err
    store = str(tmp_path / "s")
    cli("ingest", str(fleet / "link_samples.parquet"), "--store", store)
    code, out, _ = cli("sweep", "--store", store, "--window", "2h", "--json")
    assert json.loads(out)["window_hours"] == 2.0
