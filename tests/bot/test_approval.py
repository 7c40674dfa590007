"""Draft -> preview -> File / Discard through the local transport: one ticket per part, rights, rate limit."""

from __future__ import annotations

import copy
import threading
from pathlib import Path

import pytest

from bot.runtime import node_source
from bot.settings import Settings
from bot.transport.local import LocalSlack
from bot.transport.mock_slack import Message
from diagnostics.store.telemetry import TelemetryStore

from .helpers import OPS, buttons, local_bot, posted, private, summary_for
from .test_store_source import write_hours


def _draft(local: LocalSlack, summary: Message, user: str = "UALICE") -> Message:
    """Click the summary's draft button; the preview ("Drafting…" replaced) as the clicker saw it."""
    before = len(posted(local.slack, thread=summary.ts))
    (button,) = [b for b in buttons(summary) if b["type"] == "button"]
    assert local.injector.action(button, user=user, channel=OPS, message_ts=summary.ts).status == 200
    assert local.slack.wait_for(lambda s: len(posted(s, thread=summary.ts)) > before
                                and posted(s, thread=summary.ts)[before].edits > 0)
    return copy.deepcopy(posted(local.slack, thread=summary.ts)[before])


def _click(local: LocalSlack, preview: Message, action_id: str, user: str) -> int:
    (element,) = [b for b in buttons(preview) if b["action_id"] == action_id]
    return local.injector.action(element, user=user, channel=OPS, message_ts=preview.ts,
                                 thread_ts=preview.thread_ts).status


def _edited(local: LocalSlack, preview: Message) -> Message:
    """The preview once a decision updated it."""
    assert local.slack.wait_for(lambda s: (s.find(preview.ts) or preview).edits > preview.edits)
    found = local.slack.find(preview.ts)
    assert found is not None
    return found


def test_draft_preview_then_file_records_one_ticket_with_its_approver() -> None:
    with local_bot() as local:
        preview = _draft(local, summary_for(local, "hpc-gpu-node-12"))
        shown = preview.shown_blocks
        assert "Ticket draft: hpc-gpu-node-12 / GPU 2 -> GPU 3 NVLink 1" in shown
        assert "*Priority:* urgent" in shown and "GPU 3" in shown and "Drafted by rules" in shown
        assert {b["action_id"] for b in buttons(preview)} == {"file_ticket", "discard_draft"}
        assert _click(local, preview, "file_ticket", "UBOB") == 200
        filed = _edited(local, preview)
        assert "Filed as *FAB-0001*, approved by <@UBOB>" in filed.text
        assert [(b["action_id"], b["value"]) for b in buttons(filed)] == [("report_repair", "FAB-0001")]
        (ticket,) = local.tracker.tickets()  # type: ignore[attr-defined]
        assert (ticket.node_id, ticket.component, ticket.priority) == (
            "hpc-gpu-node-12", "GPU 2 -> GPU 3 NVLink 1", "urgent")
        kinds = [e["kind"] for e in local.audit.entries()]
        assert kinds == ["command", "analysis", "draft", "approval", "filing"]


@pytest.mark.parametrize(("later", "warned"), [(0.0, True), (500.0, False)])
def test_filing_a_part_the_newest_readings_show_healthy_again_warns_and_still_files(
        tmp_path: Path, later: float, warned: bool) -> None:
    """GPU 0 NVLink 1 fails over the two hours its draft was made from; an hour of readings ingested before it is
    filed adds `later` replays a reading: none, and the approval says so; more, and it says nothing of it."""
    store_dir = tmp_path / "store"
    last = write_hours(tmp_path / "first.csv", "gpu-node-7", 0, 2, per_reading=200.0)
    (tmp_path / "nodes.csv").write_text("node_id,platform\ngpu-node-7,hgx-h100-8gpu\n")
    TelemetryStore(store_dir).ingest([tmp_path / "first.csv", tmp_path / "nodes.csv"])
    with local_bot(source=node_source(Settings(store=store_dir))) as local:
        preview = _draft(local, summary_for(local, "gpu-node-7"))
        write_hours(tmp_path / "later.csv", "gpu-node-7", 2, 1, per_reading=later, base=last)
        TelemetryStore(store_dir).ingest([tmp_path / "later.csv"])
        assert _click(local, preview, "file_ticket", "UBOB") == 200
        filed = _edited(local, preview)
        assert "Filed as *FAB-0001*, approved by <@UBOB>" in filed.text
        said = ("Readings newer than this draft's (window 1 h to 2026-03-01 03:00 UTC) show GPU 0 NVLink 1 -> "
                "NVSwitch 0 port 1 no longer failing")
        assert (said in filed.shown) is warned and (said in filed.shown_blocks) is warned, filed.shown
        assert [t.id for t in local.tracker.tickets()] == ["FAB-0001"]  # type: ignore[attr-defined]


def test_concurrent_double_clicks_file_exactly_one_ticket() -> None:
    with local_bot() as local:
        summary = summary_for(local, "hpc-gpu-node-12")
        first = _draft(local, summary, "UALICE")
        # two previews of the same part: one a summary waits for, the other from a second `/fabric`
        second = _draft(local, summary_for(local, "hpc-gpu-node-12", user="UBOB"), "UBOB")
        barrier = threading.Barrier(4)

        def click(preview: Message, user: str) -> None:
            barrier.wait()
            _click(local, preview, "file_ticket", user)

        threads = [threading.Thread(target=click, args=(p, u))
                   for p, u in ((first, "UALICE"), (first, "UALICE"), (second, "UBOB"), (second, "UBOB"))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        _edited(local, first)
        _edited(local, second)
        assert local.slack.wait_for(lambda s: len(private(s)) == 2)
        assert len(local.tracker.tickets()) == 1  # type: ignore[attr-defined]
        texts = sorted(m.text for m in (local.slack.find(first.ts), local.slack.find(second.ts)) if m)
        assert any("Filed as *FAB-0001*" in t for t in texts)
        assert any("*FAB-0001* (filed by <@U" in t and ") is already open." in t for t in texts)
        assert all("already" in m.text for m in private(local.slack))


def test_a_draft_click_while_a_ticket_is_open_points_to_it() -> None:
    """And the summary asked again lists the open ticket above its buttons: it said "urgent" with a Draft button and
    no word that the fault was filed, so the next engineer could not tell it was in hand before clicking."""
    with local_bot() as local:
        summary = summary_for(local, "hpc-gpu-node-12")
        assert "Open ticket" not in summary.shown_blocks
        _click(local, _draft(local, summary), "file_ticket", "UALICE")
        assert local.slack.wait_for(lambda s: any("Filed as" in m.text for m in s.messages))
        again = summary_for(local, "hpc-gpu-node-12", user="UBOB")
        assert "*Open ticket*" in again.shown_blocks
        assert "FAB-0001: GPU 2 -> GPU 3 NVLink 1 (open; filed by <@UALICE> " in again.shown_blocks
        assert "Open ticket" not in summary_for(local, "hpc-gpu-node-03").shown_blocks  # another node's: not listed
        pointer = _draft(local, again, "UBOB")
        assert "already open: *FAB-0001*" in pointer.text and buttons(pointer) == []
        assert "Drafting the ticket for GPU 2 -&gt; GPU 3 NVLink 1" not in pointer.text  # "Drafting…" was replaced
        assert len(local.tracker.tickets()) == 1  # type: ignore[attr-defined]
        assert local.tracker.history("FAB-0001")[-1]["actor"] == "UBOB"  # type: ignore[attr-defined]


def test_discard_files_nothing() -> None:
    with local_bot() as local:
        preview = _draft(local, summary_for(local, "hpc-gpu-node-12"))
        _click(local, preview, "discard_draft", "UALICE")
        assert "Discarded by <@UALICE>" in _edited(local, preview).text
        _click(local, preview, "file_ticket", "UALICE")  # a stale button on the old message
        assert local.slack.wait_for(lambda s: private(s))
        assert "already discarded" in private(local.slack)[0].text
        assert local.tracker.tickets() == []  # type: ignore[attr-defined]


def test_a_user_outside_the_allow_list_may_look_but_not_file() -> None:
    settings = Settings(filing_usergroups=frozenset({"SOPS"}))
    with local_bot(settings, usergroups={"SOPS": ["UALICE"]}) as local:
        preview = _draft(local, summary_for(local, "hpc-gpu-node-12", user="UMALLORY"), "UMALLORY")
        _click(local, preview, "file_ticket", "UMALLORY")
        assert local.slack.wait_for(lambda s: private(s))
        (denial,) = private(local.slack)
        assert denial.ephemeral_to == "UMALLORY" and "limited" in denial.text
        assert local.tracker.tickets() == []  # type: ignore[attr-defined]
        assert [e["actor"] for e in local.audit.entries("denied")] == ["UMALLORY"]
        _click(local, preview, "file_ticket", "UALICE")
        assert "approved by <@UALICE>" in _edited(local, preview).text


def test_drafts_are_rate_limited_per_user() -> None:
    with local_bot(Settings(drafts_per_minute=1)) as local:
        summary = summary_for(local, "hpc-gpu-node-12")
        _draft(local, summary, "UALICE")
        (button,) = buttons(summary)
        local.injector.action(button, user="UALICE", channel=OPS, message_ts=summary.ts)
        assert local.slack.wait_for(lambda s: private(s))
        assert "try again shortly" in private(local.slack)[0].text
        _draft(local, summary, "UBOB")  # another person is not held back
        assert len([e for e in local.audit.entries("draft")]) == 2


def test_a_recurrence_after_close_files_a_linked_ticket_escalated_to_replacement() -> None:
    with local_bot() as local:
        preview = _draft(local, summary_for(local, "hpc-gpu-node-12"))
        _click(local, preview, "file_ticket", "UALICE")
        _edited(local, preview)
        local.tracker.set_status("FAB-0001", "closed", actor="UTECH", note="cable reseated")  # type: ignore[attr-defined]
        again = _draft(local, summary_for(local, "hpc-gpu-node-12"))
        assert "Ticket draft" in again.shown_blocks  # the closed ticket does not block a new draft
        _click(local, again, "file_ticket", "UBOB")
        text = _edited(local, again).text
        assert "Filed *FAB-0002*" in text and "recurrence of FAB-0001, escalated to replacement" in text
        new = local.tracker.get("FAB-0002")  # type: ignore[attr-defined]
        assert new.linked_to == "FAB-0001" and new.escalated


def test_a_held_ticket_is_previewed_and_filed_as_held_not_urgent() -> None:
    """An NVLink paste said to be from a pcie-8gpu server: its ticket says not to drain until the input and the
    platform agree, so neither its preview nor its tracker row may rank it urgent."""
    from bot.nodes import SnapshotNodeSource
    from diagnostics.snapshots import Snapshot
    from tests.tickets.helpers import SEED_INPUT

    held = Snapshot.model_validate(SEED_INPUT | {"node_id": "pcie-node-3", "platform": "pcie-8gpu"})
    with local_bot(source=SnapshotNodeSource([held])) as local:
        preview = _draft(local, summary_for(local, "pcie-node-3"))
        assert "*Priority:* held (urgent once the input and the platform agree)" in preview.shown_blocks
        assert _click(local, preview, "file_ticket", "UBOB") == 200
        _edited(local, preview)
        (ticket,) = local.tracker.tickets()  # type: ignore[attr-defined]
        assert ticket.priority == "held"


def test_draft_clicked_again_on_one_summary_adds_its_analysis_to_the_open_ticket_once() -> None:
    """Each click on the original summary's Draft after filing added the same analysis to the ticket's evidence
    again, stamped with the click's time (seven clicks, fourteen lines); the lines now carry the analysis's own time
    and window, so the same analysis is added once, and another analysis of the node still is."""
    with local_bot() as local:
        summary = summary_for(local, "hpc-gpu-node-12")
        _click(local, _draft(local, summary), "file_ticket", "UALICE")
        assert local.slack.wait_for(lambda s: any("Filed as" in m.text for m in s.messages))
        (ticket,) = local.tracker.tickets()  # type: ignore[attr-defined]
        filed = len(ticket.evidence)
        assert filed and all(" (window 1 h" in line for line in ticket.evidence), ticket.evidence
        for _ in range(3):
            _draft(local, summary, "UBOB")
        (ticket,) = local.tracker.tickets()  # type: ignore[attr-defined]
        assert len(ticket.evidence) == filed  # the filed analysis is already its evidence
        _draft(local, summary_for(local, "hpc-gpu-node-12", user="UBOB"), "UBOB")
        (ticket,) = local.tracker.tickets()  # type: ignore[attr-defined]
        assert len(ticket.evidence) == 2 * filed  # a new analysis of the node: its lines once
        history = local.tracker.history(ticket.id)  # type: ignore[attr-defined]
        assert len([h for h in history if "evidence added" in (h.get("note") or "")]) == 1
