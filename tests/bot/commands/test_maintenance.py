"""Planned work: a node in maintenance is diagnosed and shown, but nothing pages and no ticket comes from it."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from freezegun import freeze_time

from diagnostics.store import open_store
from tests.analysis.helpers import T0, link_series, links, steady

from .conftest import Cli

END = T0 + pd.Timedelta(hours=2)


def _store(tmp_path: Path) -> Path:
    """node-12 with a failing link over two hours, node-13 healthy."""
    frame = links(link_series(steady(9000.0, 25), node="node-12", gpu=2, link=1),
                  link_series(steady(2.0, 25), node="node-13", gpu=0, link=0))
    csv = tmp_path / "links.csv"
    frame.to_csv(csv, index=False)
    store = tmp_path / "store"
    assert open_store(store).ingest([csv], fmt="tables").files[0].status == "ingested"
    return store


def test_a_window_over_the_analysis_keeps_the_findings_and_stops_the_page_and_the_ticket(tmp_path: Path,
                                                                                          cli: Cli) -> None:
    store = _store(tmp_path)
    code, out, _ = cli("sweep", "--store", str(store), "--json")
    assert code == 1 and json.loads(out)["offenders"]  # before: node-12 pages
    code, out, _ = cli("maintenance", "node-12", "3h", "reseat NVSwitch tray", "--by", "alice", "--store", str(store),
                       "--at", (END - pd.Timedelta(minutes=30)).isoformat())
    assert code == 0 and "in maintenance until 2026-03-01 04:30 UTC: reseat NVSwitch tray (set by alice)" in out

    code, out, _ = cli("analyze", "--store", str(store), "--node", "node-12", "--json")
    diagnosis = json.loads(out)
    assert diagnosis["maintenance"].startswith("in maintenance until 2026-03-01 04:30 UTC")
    assert diagnosis["fault_detected"] and diagnosis["ticket_priority"] == "low"  # shown, not paged
    code, out, err = cli("ticket", "node-12", "--store", str(store))
    assert code == 1 and "no ticket from planned work" in err and out == ""
    code, out, err = cli("sweep", "--store", str(store), "--json")
    swept = json.loads(out)
    assert code == 0 and swept["offenders"] == [] and "node-12" in " ".join(swept["warnings"])

    code, out, _ = cli("maintenance", "--store", str(store), "--at", END.isoformat())
    assert out.split()[:2] == ["node-12", "now"]
    code, out, _ = cli("maintenance", "node-12", "--end", "--by", "alice", "--store", str(store),
                       "--at", (END + pd.Timedelta(hours=5)).isoformat())
    assert out.strip() == "node-12 is not in maintenance"  # its 3 h were over by then
    code, out, _ = cli("maintenance", "node-12", "--end", "--by", "alice", "--store", str(store),
                       "--at", (END - pd.Timedelta(minutes=10)).isoformat())
    assert out.strip() == "node-12: ended 1 maintenance window"
    code, out, _ = cli("analyze", "--store", str(store), "--node", "node-12", "--json")
    assert "ended inside this window" in json.loads(out)["maintenance"]  # the last hour still saw it


def test_bad_requests_name_what_is_wrong(tmp_path: Path, cli: Cli) -> None:
    store = _store(tmp_path)
    code, _, err = cli("maintenance", "node-99", "2h", "--by", "alice", "--store", str(store))
    assert code == 2 and "node-99" in err
    code, _, err = cli("maintenance", "node-12", "forever", "--by", "alice", "--store", str(store))
    assert code == 2 and "forever" in err
    code, _, err = cli("maintenance", "node-12", "90d", "--by", "alice", "--store", str(store))
    assert code == 2 and "30 days" in err
    code, _, err = cli("maintenance", "node-12", "2h", "--store", str(store))
    assert code == 2 and "--by" in err


def test_work_set_now_on_readings_older_than_a_window_reaches_says_it_holds_none_of_them(tmp_path: Path,
                                                                                        cli: Cli) -> None:
    """Set without `--at` months after the readings (an old or replayed store), the window starts now and the
    answers, judged at the newest reading, were still paged and ticketed without a word why."""
    store = _store(tmp_path)
    with freeze_time(END + pd.Timedelta(days=45)):
        code, out, err = cli("maintenance", "node-12", "2h", "reseat", "--by", "alice", "--store", str(store))
    assert code == 0 and "in maintenance until 2026-04-15" in out
    assert "newest reading (2026-03-01 02:00 UTC)" in err and "fabricbot maintenance node-12 DURATION --at TIME" in err
    code, _, err = cli("maintenance", "node-13", "2h", "reseat", "--by", "alice", "--store", str(store),
                       "--at", (END - pd.Timedelta(minutes=30)).isoformat())
    assert code == 0 and err == ""  # placed where it was asked
    with freeze_time(END + pd.Timedelta(days=2)):  # within a window's reach: stretched back over the readings
        code, _, err = cli("maintenance", "node-13", "2h", "reseat", "--by", "alice", "--store", str(store))
    assert code == 0 and "newest reading" not in err  # stretched back over the readings: none said outside it
    assert "already in maintenance" in err  # the window set at --at above still open where this one starts


def _inventory(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name / "nodes.csv"
    path.parent.mkdir()
    path.write_text(text)
    return path


def test_a_drain_for_a_fault_is_not_planned_work(tmp_path: Path, cli: Cli) -> None:
    """A drained node (`state=DRAIN`, as the ticket itself orders and health checkers do on faults) is ticketed,
    pages at its priority, and its readings from before the drain stay its own."""
    store = _store(tmp_path)
    for i, state in enumerate(("IDLE+DRAIN*", "drained,fabric", "DRAIN,Xid 79 on GPU 3 (health check)")):
        text = "node_id,platform,state,reason\n" + f"node-12,hgx-h100-8gpu,{state}\n"
        assert cli("ingest", str(_inventory(tmp_path, f"drain-{i}", text)), "--store", str(store))[0] == 0
        code, out, _ = cli("sweep", "--store", str(store), "--json")
        swept = json.loads(out)
        assert code == 1 and {o["node_id"] for o in swept["offenders"]} == {"node-12"}, state
        assert swept["diagnoses"]["node-12"]["maintenance"] is None
    code, out, err = cli("ticket", "node-12", "--store", str(store))
    assert code == 0 and "planned work" not in err and "node-12" in out
    code, out, _ = cli("maintenance", "--store", str(store))
    assert out.strip() == "no maintenance windows"


def test_an_inventory_that_says_maintenance_holds_the_node_from_then_until_it_says_otherwise(tmp_path: Path,
                                                                                             cli: Cli) -> None:
    """Slurm's MAINT, or a drain whose reason says maintenance, is planned work from the time the scheduler gives
    (else the ingest that first saw it), not from 1970; `--end` ends what the listing shows."""
    store = _store(tmp_path)
    text = "node_id,platform,state,reason,since\n" + f"node-12,hgx-h100-8gpu,DRAIN*,kernel upgrade,{END.isoformat()}\n"
    assert cli("ingest", str(_inventory(tmp_path, "upgrade", text)), "--store", str(store))[0] == 0
    code, out, _ = cli("sweep", "--store", str(store), "--json")
    swept = json.loads(out)
    assert code == 0 and swept["offenders"] == [], swept["offenders"]
    note = swept["diagnoses"]["node-12"]["maintenance"]
    assert "the inventory's state is DRAIN* (kernel upgrade)" in note and "no end set" in note
    # the hour before the drain began is not held: its failing link is still a fault
    before = (END - pd.Timedelta(minutes=5)).isoformat()
    code, out, _ = cli("analyze", "--store", str(store), "--node", "node-12", "--json", "--window", "1h",
                       "--end", before)
    assert json.loads(out)["maintenance"] is None and json.loads(out)["ticket_priority"] != "low"

    code, out, _ = cli("maintenance", "--store", str(store), "--at", END.isoformat())
    assert out.split()[:2] == ["node-12", "now"]
    code, out, _ = cli("maintenance", "node-12", "--end", "--by", "alice", "--store", str(store),
                       "--at", (END + pd.Timedelta(minutes=1)).isoformat())
    assert out.strip() == "node-12: ended 1 maintenance window"
    code, out, _ = cli("maintenance", "--store", str(store), "--at", (END + pd.Timedelta(hours=1)).isoformat())
    assert out.split()[:2] == ["node-12", "over"]

    maint = "node_id,platform,state\nnode-12,hgx-h100-8gpu,IDLE+MAINT\n"
    assert cli("ingest", str(_inventory(tmp_path, "maint", maint)), "--store", str(store))[0] == 0
    code, out, _ = cli("sweep", "--store", str(store), "--json")
    assert code == 0 and "IDLE+MAINT" in json.loads(out)["diagnoses"]["node-12"]["maintenance"]
    resumed = "node_id,platform,state\nnode-12,hgx-h100-8gpu,mixed\n"
    assert cli("ingest", str(_inventory(tmp_path, "resumed", resumed)), "--store", str(store))[0] == 0
    code, out, _ = cli("sweep", "--store", str(store), "--json")
    assert code == 1 and {o["node_id"] for o in json.loads(out)["offenders"]} == {"node-12"}


def test_an_inventory_time_that_is_not_a_time_is_refused_with_the_node_and_value(tmp_path: Path, cli: Cli) -> None:
    store = _store(tmp_path)
    text = "node_id,platform,state,reason,since\nnode-12,hgx-h100-8gpu,drain,maintenance,yesterday\n"
    code, out, err = cli("ingest", str(_inventory(tmp_path, "bad", text)), "--store", str(store))
    assert code != 0 and "node-12" in out + err and "'yesterday' is not ISO 8601" in out + err


def test_which_scheduler_states_hold_a_node() -> None:
    from diagnostics.store.maintenance import held

    assert all(held(s) for s in ("IDLE+MAINTENANCE+RESERVED", "maint", "MAINT*"))
    assert all(held(s, "planned maintenance") for s in ("drain", "DRAINED", "draining", "drng*", "cordoned",
                                                         "SchedulingDisabled"))
    assert all(held("drain", r) for r in ("kernel upgrade", "scheduled BIOS update", "maint window 42"))
    assert not any(held(s, r) for s in ("drain", "DRAINED", "cordoned") for r in (None, "", "fabric", "Xid 79",
                                                                                  "NVLink errors (health check)"))
    assert not any(held(s, "maintenance") for s in ("idle", "mixed", "allocated", "down*", "", None, "Ready"))


def test_a_window_set_now_starts_at_the_newest_reading_as_the_slack_door_does(tmp_path: Path, cli: Cli) -> None:
    """A store fed every few minutes lags the clock: set now with no --at, the window starts at the node's newest
    reading (as `/fabric maintenance` does), so the analysis window, which ends there, sees it and no ticket is
    drafted; readings older than the longest window allows are not backdated to."""
    from freezegun import freeze_time

    store = _store(tmp_path)
    with freeze_time((END + pd.Timedelta(minutes=10)).to_pydatetime()):
        code, out, _ = cli("maintenance", "node-12", "2h", "swap the riser", "--by", "alice", "--store", str(store))
        assert code == 0 and "in maintenance until 2026-03-01 04:10 UTC" in out  # two hours from now
        code, out, err = cli("ticket", "node-12", "--store", str(store))
        assert code == 1 and "no ticket from planned work" in err and out == ""
        assert "`fabricbot maintenance NODE --end --by NAME`" in err  # as its hint says it, it ends it
        assert cli("maintenance", "node-12", "--end", "--by", "alice", "--store", str(store))[0] == 0
    with freeze_time((END + pd.Timedelta(days=40)).to_pydatetime()):
        code, out, _ = cli("maintenance", "node-13", "2h", "swap the riser", "--by", "alice", "--store", str(store))
        assert code == 0 and "in maintenance until 2026-04-10 04:00 UTC" in out


def test_work_set_over_open_work_says_both_stand(tmp_path: Path, cli: Cli) -> None:
    """A second window over an open one was added without a word: the node listed twice, each to its own end."""
    store = str(_store(tmp_path))
    with freeze_time(END):
        assert "already" not in cli("maintenance", "node-12", "2h", "swap GPU 4 riser", "--by", "ann",
                                    "--store", store)[2]
        code, _, err = cli("maintenance", "node-12", "3h", "again", "--by", "bob", "--store", store)
        assert code == 0 and "already in maintenance until" in err and "swap GPU 4 riser (set by ann)" in err
        assert "both stand, the node in maintenance while any is open; `end` ends every one" in err
        cli("maintenance", "node-12", "--end", "--by", "ann", "--store", store)
        assert "already" not in cli("maintenance", "node-12", "1h", "after", "--by", "ann", "--store", store)[2]
