"""A fatal event keeps its component failed until a reset, reboot or driver reload is seen, not only while it lies in
the rate window; the verdict weighs the slowdown's onset against the event's time; a GPU lost is urgent."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from diagnostics import Priority, Severity
from diagnostics.analysis.node import analyze_tables
from diagnostics.analysis.restarts import last_restarts
from diagnostics.analysis.rows import node_pieces
from diagnostics.model import Diagnosis
from diagnostics.service import Request, StoreSource, diagnose, files_source
from diagnostics.store import open_store
from diagnostics.tickets import RulesDrafter
from diagnostics.times import ns
from tests.analysis.helpers import T0, events, link_series, links, steady, steps
from tests.conftest import FIXTURES

HOURS = 6
N = HOURS * 12 + 1
END = (T0 + pd.Timedelta(hours=HOURS)).to_pydatetime()


def _links(reset_gpu: int | None = None, at_h: float = 4.0) -> pd.DataFrame:
    """Four GPUs' NVLink 0 counting a few replays; `reset_gpu`'s counters restart at `at_h` hours (every GPU's
    with -1: a reboot)."""
    frames = []
    for gpu in range(4):
        values = steady(2.0, N, base=100.0)
        if reset_gpu is not None and reset_gpu in (gpu, -1):
            cut = int(at_h * 12)
            values = values[:cut] + [v - values[cut] for v in values[cut:]]
        frames.append(link_series(values, gpu=gpu, link=0))
    return links(*frames)


def _xid(code: int, at_h: float, gpu: int = 2, **kw: object) -> dict[str, object]:
    return {"timestamp": T0 + pd.Timedelta(hours=at_h), "gpu": gpu, "kind": "xid", "code": code,
            "text": f"NVRM: Xid (PCI:0000:1b:00): {code}, pid=1", **kw}


def _diagnose(tables: dict[str, pd.DataFrame]) -> Diagnosis:
    return analyze_tables(tables, node_id="n1", end=END)


def _rules(d: Diagnosis) -> set[str]:
    return {c.rule for f in d.findings for c in f.crossed if f.severity in (Severity.FAILING, Severity.DOWN)}


def test_a_fatal_xid_before_the_window_still_fails_its_gpu() -> None:
    d = _diagnose({"link_samples": _links(), "events": events([_xid(74, 2.0)])})
    assert "xid_nvlink" in _rules(d) and d.fault_detected
    finding = next(f for f in d.findings if any(c.rule == "xid_nvlink" for c in f.crossed))
    assert any("before this window: it holds until a GPU reset" in e for e in finding.evidence)
    # the line every door quotes (the digest's "new failing parts", the sweep's row) dates it: a months-old Xid of a
    # node that only ever sent its kernel log was read there as this window's
    (said,) = [c.message for c in finding.crossed]
    assert said == "1 Xid 74 on GPU 2, logged 2026-03-01 02:00 UTC, before this window (xid_nvlink)", said
    fresh = _diagnose({"link_samples": _links(), "events": events([_xid(74, 5.5)])})
    assert not any("before this window" in c.message for f in fresh.findings for c in f.crossed)


def test_a_reset_of_its_gpu_or_a_reboot_clears_it_and_another_gpus_does_not() -> None:
    assert "xid_nvlink" not in _rules(_diagnose({"link_samples": _links(reset_gpu=2),
                                                 "events": events([_xid(74, 2.0)])}))
    assert "xid_nvlink" not in _rules(_diagnose({"link_samples": _links(reset_gpu=-1),
                                                 "events": events([_xid(74, 2.0)])}))
    assert "xid_nvlink" in _rules(_diagnose({"link_samples": _links(reset_gpu=1),
                                             "events": events([_xid(74, 2.0)])}))
    # a reset before the event clears nothing
    assert "xid_nvlink" in _rules(_diagnose({"link_samples": _links(reset_gpu=2, at_h=1.0),
                                             "events": events([_xid(74, 2.0)])}))


def test_a_non_fatal_event_counts_only_in_its_window() -> None:
    sxid = {"timestamp": T0 + pd.Timedelta(hours=2), "kind": "sxid", "code": 20034, "nvswitch": "1", "link": 9,
            "severity": "non-fatal", "text": "nvidia-nvswitch1: SXid (PCI:0000:05:00.0): 20034, Non-fatal"}
    d = _diagnose({"link_samples": _links(), "events": events([sxid])})
    assert not any(c.rule == "sxid" for f in d.findings for c in f.crossed)
    fatal = {**sxid, "code": 12028, "severity": "fatal",
             "text": "nvidia-nvswitch1: SXid (PCI:0000:05:00.0): 12028, Fatal, Link 9 egress non-posted PRIV error"}
    assert "sxid_fatal" in _rules(_diagnose({"link_samples": _links(), "events": events([fatal])}))
    assert "sxid_fatal" not in _rules(_diagnose({"link_samples": _links(reset_gpu=-1),
                                                 "events": events([fatal])}))  # the node rebooted since


def test_the_verdict_weighs_the_slowdown_onset_against_the_events_time() -> None:
    def job(onset_h: float) -> pd.DataFrame:
        values = [180.0 if i < onset_h * 12 else 240.0 for i in range(N)]
        return steps(values, nodes="n1")

    together = _diagnose({"link_samples": _links(), "events": events([_xid(74, 5.5)]), "step_samples": job(5.5)})
    assert together.verdict is not None and "explains job j1's slowdown" in together.verdict
    assert "XID at 2026-03-01 05:30 UTC began it" in together.verdict
    assert together.ticket_priority is Priority.URGENT  # +33%, explained
    late = _diagnose({"link_samples": _links(), "events": events([_xid(74, 5.5)]), "step_samples": job(3.0)})
    finding = next(f for f in late.findings if any(c.rule == "xid_nvlink" for c in f.crossed))
    assert finding.explains_slowdown is False
    assert any("after job j1's slowdown began" in e and "it did not start it" in e for e in finding.evidence)
    assert late.verdict is not None and "do not track it" in late.verdict


def test_a_gpu_off_the_bus_is_urgent_as_a_slowdown_over_20_percent_is() -> None:
    """The issue's nit: Xid 79 was 'high' while a +20% slowdown was 'urgent'; a GPU lost stops every job on it."""
    d = _diagnose({"link_samples": _links(), "events": events([_xid(79, 5.8)])})
    assert "xid_off_bus" in _rules(d) and d.ticket_priority is Priority.URGENT


def test_several_gpus_off_the_bus_point_first_to_what_they_share_not_to_each_gpu() -> None:
    """Three GPUs lost at once (an NVIDIA forum thread: GPUs 06:00, 07:00 and 09:00 in one second) are a switch,
    power or platform fault more likely than three GPU swaps; one GPU off the bus is its own."""
    three = _diagnose({"link_samples": _links(), "events": events([_xid(79, 5.8, gpu=g) for g in (0, 1, 3)])})
    (said,) = [w for w in three.warnings if "fell off the bus" in w]
    assert said.startswith("3 GPUs fell off the bus (GPU 0, GPU 1, GPU 3): a cause they share")
    assert three.ticket_priority is Priority.URGENT
    one = _diagnose({"link_samples": _links(), "events": events([_xid(79, 5.8)])})
    assert not any("fell off the bus (" in w for w in one.warnings)


def test_restarts_are_found_for_every_node_in_one_pass_whatever_order_the_rows_come_in() -> None:
    """Each node's GPU restarts, and its reboot (every GPU restarted: the earliest of them), from one table of
    several nodes, the same whether it comes link by link (as the store hands it) or shuffled, read whole or a few
    nodes at a time."""
    frames = []
    for node, reset in (("n1", 2), ("n2", -1), ("n3", None)):
        for gpu in range(4):
            values = steady(2.0, N, base=100.0)
            if reset in (gpu, -1):
                cut = 48 + gpu  # four hours in, a reading apart per GPU
                values = values[:cut] + [v - values[cut] for v in values[cut:]]
            frames.append(link_series(values, node=node, gpu=gpu, link=0))
    table = links(*frames)
    at = T0.value + 48 * 300 * 10**9  # the 49th reading's time
    expected = {"n1": {2: at + 2 * 300 * 10**9},
                "n2": {g: at + g * 300 * 10**9 for g in range(4)} | {None: at}}
    stored = table.assign(node_id=table["node_id"].astype("category"))  # as a store's window holds it
    assert len(node_pieces(stored, 100)) == 3  # a node a piece
    for frame in (table, table.sample(frac=1.0, random_state=7).reset_index(drop=True), stored):
        t = ns(frame["timestamp"])
        for rows in (1_000_000, 100):
            assert last_restarts(frame, t, ["n1", "n2", "n3"], int(t.max()), piece_rows=rows) == expected
            assert last_restarts(frame, t, ["n2"], int(t.max()), piece_rows=rows) == {"n2": expected["n2"]}
            assert last_restarts(frame, t, ["n1"], at, piece_rows=rows) == {}  # a restart after the end is not seen


def test_a_links_per_lane_counters_beside_its_own_are_not_a_restart() -> None:
    """A link's lane rows (a lane's CRC count, smaller than the link's) read at the same times are series of their
    own: taken for one series, each lane reading after the link's would look like its counter restarting."""
    link = link_series({"crc_data": steady(60.0, N, base=5000.0)}, gpu=2, link=1)
    lane = link_series({"crc_data": steady(10.0, N, base=700.0)}, gpu=2, link=1).assign(lane=1)
    table = links(link, lane)
    t = ns(table["timestamp"])
    assert last_restarts(table, t, ["n1"], int(t.max())) == {}
    assert "xid_nvlink" in _rules(_diagnose({"link_samples": table, "events": events([_xid(74, 2.0)])}))


def test_a_real_fatal_sxid_stops_its_link_and_is_high_through_file_and_store(tmp_path: Path) -> None:
    """An A100 host's fatal SXid 24007 (its kernel log, no link telemetry): the switch link it names is stopped
    until the node restarts, as a link seen down is, so the priority is a down link's, not a failing one's."""
    path = FIXTURES / "real" / "sxid_24007_xid_a100_1.txt"
    files, node, _ = files_source([path])
    open_store(tmp_path / "store").ingest([path])
    request = Request(node=node)
    for got in (diagnose(files, request).diagnosis, diagnose(StoreSource(tmp_path / "store"), request).diagnosis):
        assert got.fault_detected and got.ticket_priority is Priority.HIGH, (got.ticket_priority, got.findings)
        assert any(c.rule == "sxid_fatal" for f in got.findings for c in f.crossed)
        assert not [f for f in got.findings if f.severity is Severity.DOWN]  # no link was seen down: the event says it


XID_LINES = {  # GB200 kernel lines as the driver writes them: the subcode word and the stated severity
    "149 fatal": "149, NETIR_LINK_EVT  Fatal   XC0 i0 Link 01 (0x021425c6 0x00000000)",
    "145 fatal": "145, RLW_TX Fatal XC0 i0 Link 13 (0x0409a0c2 0x00000008)",
    "145 undecoded": "145, NVLink: RLW Error on link 13",  # no subcode: the code's own severity, failing
}


def _xid_doors(tmp_path: Path, line: str) -> list[tuple[str, Priority]]:
    """The priority a kernel log holding one Xid line gets through each door: the file's diagnosis and its drafted
    ticket, and the store's (the log ingested) and its ticket."""
    path = tmp_path / "kern.log"
    path.write_text(f"2026-03-01T10:00:00+00:00 gb200-n01 kernel: NVRM: Xid (PCI:0009:01:00): {line}\n")
    files, node, _ = files_source([path])
    open_store(tmp_path / "store").ingest([path])
    request = Request(node=node)
    got = []
    for door, source in (("file", files), ("store", StoreSource(tmp_path / "store"))):
        d = diagnose(source, request).diagnosis
        assert d.fault_detected and any(c.rule == "xid_nvlink" for f in d.findings for c in f.crossed), door
        assert not [f for f in d.findings if f.severity is Severity.DOWN]  # no link was seen down: the Xid says it
        got += [(door, d.ticket_priority), (f"{door} ticket", RulesDrafter().draft(d).priority)]
    return got


@pytest.mark.parametrize("case", ["149 fatal", "145 fatal"])
def test_a_fatal_nvlink_xid_stops_its_link_and_is_high_through_file_store_and_ticket(tmp_path: Path,
                                                                                     case: str) -> None:
    """A fatal NVLink5 Xid (Link Fatal, RESET_GPU in NVIDIA's decode) stops its link until the GPU is reset, as a
    fatal SXid stops a switch link: a stopped link's priority, not a failing one's, with no slowdown known."""
    got = _xid_doors(tmp_path, XID_LINES[case])
    assert all(p is Priority.HIGH for _, p in got), got


def test_an_nvlink_xid_not_decoded_fatal_keeps_a_failing_links_priority(tmp_path: Path) -> None:
    got = _xid_doors(tmp_path, XID_LINES["145 undecoded"])
    assert all(p is Priority.MEDIUM for _, p in got), got


def test_a_ticket_for_an_xid_names_each_piece_of_its_evidence_once(tmp_path: Path) -> None:
    """The localization's evidence repeats its finding's: the hypothesis joined both, so every fact came twice."""
    path = tmp_path / "kern.log"
    line = XID_LINES["149 fatal"]
    path.write_text(f"2026-03-01T10:00:00+00:00 gb200-n01 kernel: NVRM: Xid (PCI:0009:01:00): {line}\n")
    files, node, _ = files_source([path])
    ticket = RulesDrafter().draft(diagnose(files, Request(node=node)).diagnosis)
    (chosen,) = [h for h in ticket.hypotheses if h.agrees_with_analysis]
    assert any("Xid 149" in e for e in chosen.evidence)
    assert len(chosen.evidence) == len(set(chosen.evidence)), chosen.evidence
