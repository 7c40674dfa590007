"""A node with no reading in the span a sweep reads is said in one wording, whichever source was swept (the
store's nodes, some or all of them silent, and the nodes a Prometheus server knows around the span)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pandas as pd

from diagnostics import load_thresholds
from diagnostics.analysis.fleet import history_needed
from diagnostics.prometheus import SweepResult
from diagnostics.prometheus.client import LabelValues
from diagnostics.prometheus.presence import say_silent
from diagnostics.service import Request, StoreSource, diagnose, sweep
from diagnostics.store import open_store
from tests.analysis.helpers import T0, link_series, links, steady

NODES = ["node-1", "node-2", "node-3"]


def _store(tmp_path: Path) -> Path:
    """node-1 reads throughout; node-2 and node-3 only in the first hour of a day."""
    csv = tmp_path / "links.csv"
    links(link_series(steady(20.0, 289), node="node-1"),
          *(link_series(steady(20.0, 13), node=n) for n in NODES[1:])).to_csv(csv, index=False)
    store = tmp_path / "store"
    assert open_store(store).ingest([csv], fmt="tables").files[0].status == "ingested"
    return store


def _as_prometheus_says(store: SweepResult, reported: set[str], span: timedelta) -> SweepResult:
    """The same silence said by the Prometheus sweep: the server knows every node, `reported` answered."""
    said = SweepResult(at=store.at, window_hours=store.window_hours, source=store.source)
    say_silent(said, reported, LabelValues(NODES), span=span, around_hours=24.0,
               usable=lambda _: True)
    return said


def test_silent_nodes_are_said_alike_by_every_sweep(tmp_path: Path) -> None:
    source = StoreSource(_store(tmp_path))
    thresholds = load_thresholds()
    span = history_needed(Request().length, thresholds)  # what the store's sweep of its default window reads
    end = T0 + pd.Timedelta(hours=24)
    some = sweep(source, Request(end=end.to_pydatetime(), thresholds=thresholds))
    # past node-1's span, but not past the day (`limits.known_nodes_hours`) after which node-2 and node-3 retire
    every = sweep(source, Request(end=(end + pd.Timedelta(hours=5.5)).to_pydatetime(), thresholds=thresholds))
    assert some.silent == NODES[1:] and every.silent == NODES
    for result, reported in ((some, {"node-1"}), (every, set())):
        said = [r for r in result.incomplete_reasons if "no reading" in r]
        assert said == _as_prometheus_says(result, reported, span).incomplete_reasons, said
        assert all(n in said[0] for n in result.silent)


def _tray(path: Path, node: str, hours: int, replays: float) -> None:
    """A GB200 compute tray's 4 x 18 NVLinks read every 5 minutes for `hours`; GPU 0 NVLink 1 gains `replays` a
    reading."""
    rows = [{"timestamp": (T0 + pd.Timedelta(minutes=5 * i)).isoformat(), "node_id": node, "gpu": gpu,
             "link_type": "nvlink", "link": link, "replay": i * replays if (gpu, link) == (0, 1) else 0.0}
            for i in range(hours * 12 + 1) for gpu in range(4) for link in range(18)]
    pd.DataFrame(rows).to_csv(path, index=False)


def test_a_racks_silent_hosts_say_what_their_last_readings_showed(tmp_path: Path) -> None:
    """Trays 2 and 3 of rack r1 stopped reporting after 2 hours, tray 2 on GPU 0 NVLink 1 failing: the rack's answer
    named them silent, but not tray 2's fault, which the tray's own answer says."""
    trays = {"r1-c01": (8, 0.0), "r1-c02": (2, 200.0), "r1-c03": (2, 0.0)}
    for node, (hours, replays) in trays.items():
        _tray(tmp_path / f"{node}.csv", node, hours, replays)
    (tmp_path / "nodes.csv").write_text("node_id,platform,rack,tray\n" + "".join(
        f"{n},gb200-nvl72-compute-tray,r1,{i + 1}\n" for i, n in enumerate(trays)))
    store = tmp_path / "store"
    open_store(store).ingest([*(tmp_path / f"{n}.csv" for n in trays), tmp_path / "nodes.csv"])
    source = StoreSource(store)
    tray = diagnose(source, Request(node="r1-c02")).incomplete
    shown = tray[0].split("its last readings")[1]
    assert "GPU 0 NVLink 1" in shown, tray
    answer = diagnose(source, Request(rack="r1"))
    rack = answer.incomplete
    assert len(rack) == 1 and "r1-c02, r1-c03" in rack[0], rack
    assert rack[0].endswith(f"r1-c02's last readings{shown}"), rack  # as the tray's answer says it
    assert "r1-c03's last readings" not in rack[0], rack  # gone silent healthy: nothing to say
    # the rack's diagnosis (what /fabric RACK shows) says it too
    assert f"r1-c02's last readings{shown}" in answer.diagnosis.warnings, answer.diagnosis.warnings


def test_a_node_whose_series_all_stop_inside_the_window_stopped_reporting(tmp_path: Path) -> None:
    """node-2's readings stop 30 minutes before the window's end (every link at once): not healthy, not each link
    down, but a node that stopped reporting; its answer says since when and is incomplete."""
    csv = tmp_path / "links.csv"
    links(link_series(steady(20.0, 289), node="node-1"), link_series(steady(20.0, 283), node="node-2")).to_csv(
        csv, index=False)
    store = tmp_path / "store"
    open_store(store).ingest([csv], fmt="tables")
    source = StoreSource(store)
    result = sweep(source, Request(thresholds=load_thresholds()))
    assert result.silent == ["node-2"] and not result.complete
    assert [r for r in result.incomplete_reasons if "stopped reporting" in r and "node-2" in r]
    assert not [o for o in result.offenders if o.node_id == "node-2"]
    answer = diagnose(source, Request(node="node-2", thresholds=load_thresholds()))
    assert answer.incomplete and "every series stopped" in answer.incomplete[0]


def test_a_node_whose_every_gpu_fell_off_the_bus_went_quiet_for_that_not_unexplained(tmp_path: Path) -> None:
    """node-2's two GPUs each log an Xid 79 as their series stop: its silence is what its answer names (urgent, off
    the bus), so neither the sweep nor the node's answer calls the view incomplete (a rack's trays whose GPUs all
    fell off at once once made the fleet's answer exit 3, 'not all seen', over a rack-wide outage)."""
    csv, log = tmp_path / "links.csv", tmp_path / "kern.log"
    links(link_series(steady(20.0, 289), node="node-1"),
          *(link_series(steady(20.0, 283), node="node-2", gpu=g) for g in (0, 1))).to_csv(csv, index=False)
    stop = T0 + pd.Timedelta(minutes=5 * 282)
    buses = {0: "0000:18:00.0", 1: "0000:2a:00.0"}
    log.write_text("".join(f"{(stop + pd.Timedelta(minutes=1)).isoformat()} node-2 kernel: NVRM: Xid (PCI:{bus}): 79, "
                           f"pid=0, GPU has fallen off the bus.\n" for bus in buses.values()), encoding="utf-8")
    gpus = tmp_path / "gpus.csv"
    pd.DataFrame({"node_id": "node-2", "gpu": list(buses), "uuid": [f"GPU-{g}" for g in buses],
                  "pci_bus_id": list(buses.values())}).to_csv(gpus, index=False)
    store = tmp_path / "store"
    for path, fmt in ((csv, "tables"), (gpus, "tables"), (log, None)):
        assert open_store(store).ingest([path], fmt=fmt).files[0].status == "ingested", path
    source = StoreSource(store)
    result = sweep(source, Request(thresholds=load_thresholds()))
    assert result.complete, result.incomplete_reasons
    assert {o.rule for o in result.offenders if o.node_id == "node-2"} == {"xid_off_bus"}
    answer = diagnose(source, Request(node="node-2", thresholds=load_thresholds()))
    assert not answer.incomplete and answer.diagnosis.fault_detected


def test_a_node_whose_window_holds_only_a_gpus_own_fault_is_not_silent_and_its_fault_is_said(tmp_path: Path) -> None:
    """A kernel log of GSP timeouts alone (Xid 119, gpud's test copy of a Dell XE9680's dmesg): no link reading, so
    no link is judged, but the node spoke: the sweep says it is not judged (not that it has no reading) and says its
    GPU's fault with NVIDIA's action, in the words the node's own answer uses."""
    store = tmp_path / "store"
    log = Path(__file__).resolve().parents[2] / "fixtures" / "real" / "kernel_xid119_gsp_xe9680_gpud_1.txt"
    assert open_store(store).ingest([log], node_id="n1").files[0].status == "ingested"
    source = StoreSource(store)
    end = pd.Timestamp("2025-02-23 16:31", tz="UTC").to_pydatetime()
    result = sweep(source, Request(end=end))
    answer = diagnose(source, Request(node="n1", end=end)).diagnosis
    note = next(w for w in answer.warnings if w.startswith("Xid 119"))
    assert "RESET_GPU" in note and "0000:9b:00.0" in note
    assert result.silent == [] and result.unjudged == ["n1"] and not result.complete
    assert f"n1: {note}" in result.warnings
    assert not any("no reading in the" in r for r in result.incomplete_reasons)


def test_a_node_whose_link_readings_stopped_stays_silent_though_its_gpu_logged_a_fault(tmp_path: Path) -> None:
    """node-2 read its links in the day's first hour only, then its GPU logged GSP timeouts (Xid 119): the node
    stopped reporting, which a sweep says as silent (with what its last readings showed), and its GPU's fault is
    said beside it; a node with Xids is not taken for one that never had link readings."""
    store = _store(tmp_path)
    at = (T0 + pd.Timedelta(hours=23, minutes=30)).strftime("%Y-%m-%dT%H:%M:%S+0000")
    log = tmp_path / "node-2.log"
    log.write_text(f"{at} node-2 kernel: NVRM: Xid (PCI:0000:9b:00): 119, pid=1, name=python, Timeout after 6s of "
                   "waiting for RPC response from GPU4 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20801813 0x4c).\n")
    assert open_store(store).ingest([log]).files[0].status == "ingested"
    result = sweep(StoreSource(store), Request())
    assert "node-2" in result.silent and "node-2" not in result.unjudged
    assert any(w.startswith("node-2: Xid 119") for w in result.warnings)


def test_a_sweeps_gpu_faults_come_after_its_own_notes(tmp_path: Path) -> None:
    """`/fabric fleet` shows a sweep's first warnings only: a node's GPU fault is said after the view's own notes
    (events after the window's end, not judged), which many GPU faults pushed out of sight."""
    store = _store(tmp_path)
    stamp = (T0 + pd.Timedelta(hours=23, minutes=30)).strftime("%Y-%m-%dT%H:%M:%S+0000")
    after = (T0 + pd.Timedelta(hours=26)).strftime("%Y-%m-%dT%H:%M:%S+0000")
    log = tmp_path / "kern.log"
    log.write_text(f"{stamp} node-1 kernel: NVRM: Xid (PCI:0000:9b:00): 119, pid=1, name=python, Timeout after 6s "
                   "of waiting for RPC response from GPU4 GSP! Expected function 76 (GSP_RM_CONTROL) (0x2080 0x4).\n"
                   f"{after} node-9 kernel: NVRM: Xid (PCI:0000:1b:00): 79, pid=1, name=python, GPU has fallen off "
                   "the bus.\n")
    assert open_store(store).ingest([log]).files[0].status == "ingested"
    warnings = sweep(StoreSource(store), Request()).warnings
    later = next(i for i, w in enumerate(warnings) if "events after the window's end" in w)
    fault = next(i for i, w in enumerate(warnings) if w.startswith("node-1: Xid 119"))
    assert later < fault
