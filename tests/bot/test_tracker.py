"""The mock tracker: one ticket per open node+component, recurrences linked and escalated, a status history."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import pytest

from bot.storage import open_db
from bot.workflow.tracker import RepairTimeError, SqliteTracker
from diagnostics import format as fmt


@pytest.fixture
def tracker() -> SqliteTracker:
    return SqliteTracker(open_db(None))


def _file(tracker: SqliteTracker, component: str = "GPU 2 -> GPU 3 NVLink 1", actor: str = "UALICE",
          evidence: list[str] | None = None, slug: str | None = None):
    return tracker.file(node_id="hpc-gpu-node-12", component=component, slug=slug or component,
                        title=f"node-12: {component}",
                        body="# ticket", priority="urgent", actor=actor, evidence=evidence or ["crc 45,120/h"])


def test_filing_creates_a_ticket_with_history(tracker: SqliteTracker) -> None:
    result = _file(tracker)
    assert result.created and result.ticket.id == "FAB-0001"
    assert result.ticket.status == "open" and result.ticket.filed_by == "UALICE"
    assert [(h["status"], h["actor"], h["note"]) for h in tracker.history("FAB-0001")] == [
        ("open", "UALICE", "filed")]


def test_a_second_filing_while_open_points_to_the_open_ticket_and_adds_evidence(tracker: SqliteTracker) -> None:
    first = _file(tracker)
    second = _file(tracker, actor="UBOB", evidence=["crc 45,120/h", "replay 9,000/h"])
    assert not second.created and second.ticket.id == first.ticket.id
    assert second.ticket.evidence == ("crc 45,120/h", "replay 9,000/h")
    assert len(tracker.tickets()) == 1
    assert tracker.history(first.ticket.id)[-1]["actor"] == "UBOB"


def test_concurrent_filings_make_one_ticket(tracker: SqliteTracker) -> None:
    barrier = threading.Barrier(8)
    ids: list[str] = []

    def click(n: int) -> None:
        barrier.wait()
        ids.append(_file(tracker, actor=f"U{n}").ticket.id)

    threads = [threading.Thread(target=click, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(tracker.tickets()) == 1 and set(ids) == {"FAB-0001"}


def test_a_recurrence_after_close_opens_a_linked_escalated_ticket(tracker: SqliteTracker) -> None:
    first = _file(tracker).ticket
    tracker.set_status(first.id, "closed", actor="UTECH", note="reseated")
    again = _file(tracker)
    assert again.created and again.recurrence_of == first.id
    assert again.ticket.linked_to == first.id and again.ticket.escalated
    assert "replace" in again.ticket.title
    assert [h["status"] for h in tracker.history(first.id)] == ["open", "closed"]


def test_other_components_get_their_own_tickets(tracker: SqliteTracker) -> None:
    _file(tracker)
    other = _file(tracker, component="GPU 4 PCIe")
    assert other.created and other.ticket.id == "FAB-0002"


def test_unknown_ticket_status_change_is_an_error(tracker: SqliteTracker) -> None:
    with pytest.raises(KeyError):
        tracker.set_status("FAB-9999", "closed", actor="U")


def test_one_link_is_one_ticket_however_its_name_reads(tracker: SqliteTracker) -> None:
    first = _file(tracker, component="GPU 2 NVLink 1", slug="gpu2-nvlink1")
    # the same link, named with the switch port a later analysis found, is the same ticket
    again = _file(tracker, component="GPU 2 NVLink 1 -> NVSwitch 0 port 9", slug="gpu2-nvlink1")
    other = _file(tracker, component="GPU 2 NVLink 2 -> NVSwitch 0 port 10", slug="gpu2-nvlink2")
    assert first.created and not again.created and again.ticket.id == first.ticket.id
    assert other.created and other.ticket.id != first.ticket.id
    assert tracker.open_ticket("hpc-gpu-node-12", "gpu2-nvlink1") is not None


def _gpu(tracker: SqliteTracker, actor: str = "UALICE") -> str:
    return tracker.file(node_id="hpc-gpu-node-12", component="GPU 2", slug="gpu2", title="node-12: GPU 2", body="",
                        priority="urgent", actor=actor, evidence=["gpu2 links"],
                        parts=["gpu2-nvlink1", "gpu2-nvlink2"]).ticket.id


def test_an_open_ticket_whose_parts_hold_the_part_is_its_open_ticket(tracker: SqliteTracker) -> None:
    gpu = _gpu(tracker)
    covered = tracker.open_ticket("hpc-gpu-node-12", "gpu2-nvlink1")
    assert covered is not None and covered.id == gpu
    assert tracker.open_ticket("hpc-gpu-node-07", "gpu2-nvlink1") is None  # another node's part
    link = _file(tracker, component="GPU 2 NVLink 1", slug="gpu2-nvlink1", actor="UBOB", evidence=["crc 9/h"])
    assert not link.created and link.ticket.id == gpu and link.ticket.evidence == ("gpu2 links", "crc 9/h")
    tracker.report_repair(gpu, actor="UTECH")  # verifying is still open
    assert tracker.open_ticket("hpc-gpu-node-12", "gpu2-nvlink2") is not None
    tracker.close(gpu, actor="fabricbot", evidence=["clean"])  # a closed ticket covers nothing
    assert tracker.open_ticket("hpc-gpu-node-12", "gpu2-nvlink2") is None
    assert _file(tracker, component="GPU 2 NVLink 2", slug="gpu2-nvlink2").created


def test_a_wider_part_is_not_swallowed_by_a_narrower_open_ticket(tracker: SqliteTracker) -> None:
    link = _file(tracker, component="GPU 2 NVLink 1", slug="gpu2-nvlink1").ticket
    assert tracker.open_ticket("hpc-gpu-node-12", "gpu2") is None
    assert [t.id for t in tracker.open_within("hpc-gpu-node-12", ["gpu2", "gpu2-nvlink1", "gpu2-nvlink2"])] == [link.id]
    gpu = _gpu(tracker)
    assert gpu != link.id and len(tracker.tickets()) == 2
    assert tracker.open_ticket("hpc-gpu-node-12", "gpu2-nvlink1").id == link.id  # its own ticket comes first


def test_a_repair_is_dated_between_the_filing_and_the_clock() -> None:
    now = "2026-03-01T12:00:00+00:00"
    tracker = SqliteTracker(open_db(None), clock=lambda: now)
    ticket = _file(tracker).ticket.id
    clock = fmt.when(datetime(2026, 3, 1, 12, tzinfo=UTC))
    with pytest.raises(RepairTimeError, match=rf"ahead of the clock \({clock}\)"):
        tracker.report_repair(ticket, actor="UTECH", at="2030-01-01T00:00:00+00:00")
    filed = fmt.when(datetime.fromisoformat(tracker.get(ticket).filed_at))  # type: ignore[union-attr]
    with pytest.raises(RepairTimeError, match=rf"before {ticket} was filed \({filed}\)"):
        tracker.report_repair(ticket, actor="UTECH", at="2026-03-01T11:59:00+00:00")
    assert tracker.get(ticket).status == "open"  # type: ignore[union-attr]
    assert tracker.report_repair(ticket, actor="UTECH", at="2026-03-01T12:04:00Z").status == "verifying"  # skew
