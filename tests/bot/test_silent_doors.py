"""What every door says of a node it cannot judge: one gone silent says what its last readings showed, and one whose
only input is events (no link reading) says its fabric health is unknown, not "no fabric fault"."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pandas as pd
import pytest

from bot.cli import main
from bot.mrkdwn import esc
from bot.nodes import StoreNodeSource
from diagnostics.analysis.diagnosis import NO_LINKS_ACTION
from diagnostics.store.telemetry import TelemetryStore
from diagnostics.tickets.answers import rules_answer

from .helpers import local_bot, summary_for
from .test_store_source import START, text_of, write_hours

NODES_CSV = "node_id,platform\ngpu-node-7,hgx-h100-8gpu\ngpu-node-9,hgx-h100-8gpu\n"


def _store(tmp_path: Path, *, quiet_replays: float, events: list[dict[str, object]] | None = None,
           quiet_hours: int = 0) -> Path:
    """gpu-node-7 read for 8 hours; gpu-node-9 read for its first 2 (`quiet_replays` a reading on GPU 0 NVLink 1),
    or, given `events`, its first `quiet_hours` (never read, for none: those events are all it has)."""
    store_dir = tmp_path / "store"
    files = [tmp_path / "on.csv", tmp_path / "nodes.csv"]
    write_hours(files[0], "gpu-node-7", 0, 8, per_reading=0.0)
    files[1].write_text(NODES_CSV)
    if events is None or quiet_hours:
        write_hours(tmp_path / "quiet.csv", "gpu-node-9", 0, quiet_hours or 2, per_reading=quiet_replays)
        files.append(tmp_path / "quiet.csv")
    if events is not None:
        (tmp_path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
        files.append(tmp_path / "events.jsonl")
    TelemetryStore(store_dir).ingest(files)
    return store_dir


def _doors(store_dir: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, str, str]:
    """What `analyze --store --node gpu-node-9`, `sweep --store` and `/fabric gpu-node-9` say."""
    main(["analyze", "--store", str(store_dir), "--node", "gpu-node-9"])
    analyzed = capsys.readouterr()
    main(["sweep", "--store", str(store_dir)])
    swept = capsys.readouterr()
    with local_bot(source=StoreNodeSource(store_dir)) as local:
        summary = summary_for(local, "gpu-node-9")
    return analyzed.out + analyzed.err, swept.out + swept.err, summary.text + text_of(summary)


def test_a_node_silent_after_a_failing_link_says_so_at_every_door(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """gpu-node-9's last hour of readings showed GPU 0 NVLink 1 over the replay rule, then it stopped reporting:
    every door said only that it was silent since 02:00, as of a node gone silent healthy."""
    analyzed, swept, slack = _doors(_store(tmp_path, quiet_replays=200.0), capsys)
    said = next(line for line in swept.splitlines() if "its last readings" in line).split("its last readings")[1]
    last = said.split(" priority: ")[0].rsplit("; ", 1)[0]  # what they showed, before the priority it gives
    assert "GPU 0 NVLink 1" in last and "nvlink_replay" in last and "2026-03-01 02:00 UTC" in last, last
    assert "no link reading from gpu-node-9 since 2026-03-01 02:00 UTC" in swept
    # the node's answer says it on its silence warning, and on why the answer is incomplete
    assert analyzed.count(f"its last readings{last}") == 2, analyzed
    assert esc(f"its last readings{last}") in slack, slack  # as Slack's mrkdwn writes it


def _head(said: str) -> tuple[str, str]:
    """The priority and action an `analyze` answer gives."""
    lines = said.splitlines()
    priority = lines[0].split("priority=")[1].split()[0]
    return priority, next(line for line in lines if line.lstrip().startswith("action:")).split("action:", 1)[1].strip()


def test_a_node_silent_after_a_failing_link_ranks_and_acts_on_it_at_every_door(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """gpu-node-9 went silent on GPU 0 NVLink 1 failing: every door ranked it low, with 'collect its link counters',
    as a node never measured. It is as urgent as its last fault, and its action finds why it stopped reporting
    (read only) before that fault's repair."""
    store_dir = _store(tmp_path, quiet_replays=200.0)
    analyzed, swept, slack = _doors(store_dir, capsys)
    main(["analyze", "--store", str(store_dir), "--node", "gpu-node-9", "--end", "2026-03-01T02:00:00Z"])
    then_priority, then_action = _head(capsys.readouterr().out)
    priority, action = _head(analyzed)
    assert then_priority != "low" and priority == then_priority, analyzed
    first, repair = action.split(then_action)[0], action.split(then_action)[-1]
    assert then_action in action and repair == "", action  # the fault's own repair last, whole
    assert "stopped reporting" in first and "nvidia-smi -L" in first and "reset GPU" not in first, action
    assert NO_LINKS_ACTION not in analyzed
    line = next(r for r in swept.splitlines()[0].split("; no link reading") if "its last readings" in r)
    assert f"{then_priority} priority" in line and "stopped reporting" in line, swept
    assert "all-clear): no link reading from gpu-node-9" in swept, swept  # the most urgent reason first
    assert f"*Priority*\\n{then_priority}" in slack, slack
    assert esc(then_action) in slack and NO_LINKS_ACTION not in slack, slack


def test_a_node_silent_on_a_fault_under_planned_work_stays_low(tmp_path: Path) -> None:
    """Planned work over its window holds a node gone silent on a failing link low, as any node in maintenance:
    nothing pages (its exporter may be stopped for that work)."""
    store_dir = _store(tmp_path, quiet_replays=200.0)
    TelemetryStore(store_dir).maintenance.set("gpu-node-9", start=START + pd.Timedelta(hours=7),
                                              span=timedelta(hours=2), reason="reseat GPU 0", set_by="UBOB")
    held = StoreNodeSource(store_dir).diagnose("gpu-node-9")
    assert held.maintenance is not None and held.ticket_priority.value == "low", held
    assert any("its last readings" in w for w in held.warnings), held.warnings  # still said


def test_a_node_silent_and_healthy_says_no_last_fault(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for said in _doors(_store(tmp_path, quiet_replays=0.0), capsys):
        assert "gpu-node-9" in said and "its last readings" not in said, said


def test_a_node_silent_says_the_xid_logged_after_its_last_link_reading(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """gpu-node-9's links were healthy to 02:00, when its exporter stopped; its kernel log went on, with an Xid 74 on
    GPU 0 at 02:30. What its last readings showed was judged on the window ending at 02:00, which holds no Xid, so
    it said nothing of it: the window is drawn on to its newest event where that comes after its newest link
    reading."""
    xid = {"timestamp": (START + pd.Timedelta(hours=2, minutes=30)).isoformat(), "node_id": "gpu-node-9",
           "kind": "xid", "code": 74, "gpu": 0}
    store_dir = _store(tmp_path, quiet_replays=0.0, events=[xid], quiet_hours=2)
    analyzed, _, slack = _doors(store_dir, capsys)
    for said in (analyzed, slack):
        last = said.split("its last readings")[1] if "its last readings" in said else ""
        # drawn on from a window before the last link reading to the Xid: it holds both
        assert "(window 1.5 h to 2026-03-01 02:30 UTC)" in last and "Xid 74" in last, said


def test_a_silent_node_whose_window_holds_a_fatal_xid_is_acted_on_alike_at_every_door(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A fatal Xid stands in the windows after it: gpu-node-9, silent since 02:00 with an Xid 74 at 02:30, is failing
    in its answer's window too. `analyze` and /fabric found why it stopped reporting first; the sweep gave the Xid's
    repair alone."""
    xid = {"timestamp": (START + pd.Timedelta(hours=2, minutes=30)).isoformat(), "node_id": "gpu-node-9",
           "kind": "xid", "code": 74, "gpu": 0}
    analyzed, swept, slack = _doors(_store(tmp_path, quiet_replays=0.0, events=[xid], quiet_hours=2), capsys)
    priority, action = _head(analyzed)
    assert action.startswith("Find why gpu-node-9 stopped reporting"), action
    assert f"{priority} priority; {action}" in swept, swept
    assert esc(action) in slack, slack


def _sxid(code: int, port: int) -> dict[str, object]:
    return {"timestamp": (START + pd.Timedelta(hours=7, minutes=30)).isoformat(), "node_id": "gpu-node-9",
            "kind": "sxid", "code": code, "severity": "non-fatal", "nvswitch": "3", "link": port}


@pytest.mark.parametrize("codes", [[22013], [22013, 20001]], ids=["ignorable", "ignorable-and-warning"])
def test_a_node_of_events_alone_is_of_unknown_health_at_every_door(tmp_path: Path, codes: list[int],
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """gpu-node-9 has SXids and no link reading: an SXid that warns (20001) judges no link, yet `analyze` headed it
    `fault=no`, /fabric "no fabric fault" and the answer "no failing link", while its own warning said its health
    was unknown. An SXid NVIDIA says to ignore (22013) leaves it unknown too."""
    store_dir = _store(tmp_path, quiet_replays=0.0, events=[_sxid(c, 40 + i) for i, c in enumerate(codes)])
    analyzed, _, slack = _doors(store_dir, capsys)
    head = analyzed.splitlines()[0]
    assert "fault=unknown" in head, head
    assert "fabric health unknown" in slack and "no fabric fault" not in slack, slack
    d = StoreNodeSource(store_dir).diagnose("gpu-node-9")
    assert d.health_unknown() and not d.fault_detected
    said = rules_answer(d)
    assert "fabric health is unknown" in said, said
    assert "within thresholds" not in said and "no failing link" not in said and "no fabric fault" not in said
    if 20001 in codes:  # what warns is still said
        assert "SXid 20001" in said, said


def test_a_node_of_warning_events_alone_is_told_to_collect_its_counters(tmp_path: Path) -> None:
    """An SXid that warns on a node with no link reading: its action said 'read the counters again within the hour',
    of counters never read, where a node with nothing read is told to collect them."""
    d = StoreNodeSource(_store(tmp_path, quiet_replays=0.0, events=[_sxid(20001, 40)])).diagnose("gpu-node-9")
    assert d.findings and d.health_unknown()
    assert d.repair_action == NO_LINKS_ACTION, d.repair_action


def test_a_sweep_says_a_node_of_events_alone_has_no_link_reading(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """The sweep called the node of an SXid that warns one that 'holds one reading per link, or none: totals only,
    no rates', of a node with no total read."""
    store_dir = _store(tmp_path, quiet_replays=0.0, events=[_sxid(20001, 40)])
    assert main(["sweep", "--store", str(store_dir)]) == 1  # the other nodes' offenders: found, though incomplete
    head = capsys.readouterr().out.splitlines()[0]
    assert "no link reading, so their links are not judged: gpu-node-9" in head and "totals" not in head, head
