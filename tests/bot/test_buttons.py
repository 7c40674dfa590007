"""Draft and filing buttons: "Drafting…" at once, one draft per click in flight, values checked against the
message's own analysis and draft, two-person filing."""

from __future__ import annotations

import copy
import json
import threading
import time
from typing import Any

from bot.nodes import TableNodeSource
from bot.settings import Settings
from bot.transport.local import LocalSlack
from bot.transport.mock_slack import Message
from diagnostics import Diagnosis
from diagnostics.synth.fleet import build
from diagnostics.tickets import RepairTicket, RulesDrafter

from .helpers import LONG_WAIT, OPS, SlowDrafter, buttons, local_bot, posted, private, summary_for


def _click(local: LocalSlack, message: Message, element: dict[str, Any], user: str = "UALICE") -> int:
    return local.injector.action(element, user=user, channel=OPS, message_ts=message.ts,
                                 thread_ts=message.thread_ts).status


def _told(local: LocalSlack, user: str, n: int = 1) -> list[str]:
    assert local.slack.wait_for(lambda s: len(private(s, user)) >= n), private(local.slack)
    return [m.text for m in private(local.slack, user)]


def test_drafting_is_said_at_once_and_replaced_by_the_preview() -> None:
    """"Drafting…" is shown while the draft still runs (it waits on a gate), then replaced by the preview."""
    gate = threading.Event()
    drafter = SlowDrafter(1.0, gate=gate)
    with local_bot(drafter=drafter) as local:
        summary = summary_for(local, "hpc-gpu-node-12")
        assert _click(local, summary, buttons(summary)[0]) == 200
        assert local.slack.wait_for(lambda s: posted(s, thread=summary.ts), timeout=LONG_WAIT)
        (placeholder,) = posted(local.slack, thread=summary.ts)
        assert drafter.done == 0 and "Drafting the ticket for GPU 2 -> GPU 3 NVLink 1" in placeholder.shown
        assert placeholder.edits == 0 and buttons(placeholder) == []
        gate.set()
        assert local.slack.wait_for(lambda s: placeholder.edits == 1, timeout=LONG_WAIT)
        assert "Ticket draft: hpc-gpu-node-12" in placeholder.shown_blocks and len(buttons(placeholder)) == 2
        assert len(posted(local.slack, thread=summary.ts)) == 1  # replaced, not a second message


def test_a_repeated_click_while_the_draft_runs_drafts_once() -> None:
    drafter = SlowDrafter(1.0)
    with local_bot(drafter=drafter) as local:
        summary = summary_for(local, "hpc-gpu-node-12")
        button = buttons(summary)[0]
        for user in ("UALICE", "UALICE", "UBOB"):
            assert _click(local, summary, button, user) == 200
        assert "You asked for this draft a moment ago" in _told(local, "UALICE")[0]
        assert "<@UALICE> asked for this draft a moment ago" in _told(local, "UBOB")[0]
        assert local.slack.wait_for(lambda s: any(m.edits for m in posted(s, thread=summary.ts)))
        time.sleep(0.3)
        assert drafter.drafts == 1 and len(posted(local.slack, thread=summary.ts)) == 1
        assert [e["kind"] for e in local.audit.entries()].count("draft") == 1


def test_a_click_after_its_draft_was_shown_points_to_the_waiting_draft() -> None:
    """Draft clicked again once the first draft was shown drafted a second preview of the same part, two drafts of
    one fault waiting side by side; it now points to the one waiting, and a draft filed or discarded frees the part."""
    with local_bot() as local:
        summary = summary_for(local, "hpc-gpu-node-12")
        button = buttons(summary)[0]
        assert _click(local, summary, button, "UALICE") == 200
        assert local.slack.wait_for(lambda s: any("Ticket draft" in m.shown_blocks
                                                  for m in posted(s, thread=summary.ts)), timeout=LONG_WAIT)
        assert _click(local, summary, button, "UBOB") == 200
        assert local.slack.wait_for(lambda s: len(posted(s, thread=summary.ts)) == 2, timeout=LONG_WAIT)
        assert local.slack.wait_for(lambda s: posted(s, thread=summary.ts)[1].edits >= 1, timeout=LONG_WAIT)
        second = posted(local.slack, thread=summary.ts)[1]
        assert "is already waiting in this thread (asked for by <@UALICE>): file or discard it there" in second.shown
        assert "Ticket draft" not in second.shown_blocks and local.audit.db["bot_drafts"].count == 1


def test_a_button_value_the_bot_did_not_make_gets_a_reply_and_drafts_nothing() -> None:
    with local_bot() as local:
        summary = summary_for(local, "hpc-gpu-node-12")
        button = buttons(summary)[0]
        good = json.loads(button["value"])
        for value in ("{not json", json.dumps({"a": good["a"], "f": 99}), json.dumps({"f": 0}), "[]"):
            assert _click(local, summary, {**button, "value": value}) == 200
        texts = _told(local, "UALICE", 4)
        assert all("not one I made" in t or "drafted nothing" in t for t in texts), texts
        time.sleep(0.3)
        drafts = [m for m in posted(local.slack, thread=summary.ts) if "Ticket draft" in m.shown_blocks]
        assert drafts == [] and not local.audit.db["bot_drafts"].count
        assert len(list(local.audit.entries("denied"))) >= 3


def test_an_edited_value_never_drafts_from_another_messages_analysis() -> None:
    with local_bot() as local:
        node12 = summary_for(local, "hpc-gpu-node-12")
        node03 = summary_for(local, "hpc-gpu-node-03")
        assert buttons(node03) == []  # healthy: nothing to draft
        forged = {**buttons(node12)[0]}
        node03_analysis = local.app.services.posted.analysis_of(OPS, node03.ts)  # type: ignore[union-attr]
        forged["value"] = json.dumps({**json.loads(forged["value"]), "a": node03_analysis})
        assert _click(local, node12, forged) == 200
        assert "does not match the analysis this message shows" in _told(local, "UALICE")[0]
        time.sleep(0.3)
        assert posted(local.slack, thread=node12.ts) == [] and not local.audit.db["bot_drafts"].count
        (denied,) = local.audit.entries("denied")
        assert denied["detail"]["reason"] == "button value names another message's analysis"


def _preview(local: LocalSlack, summary: Message, user: str) -> Message:
    _click(local, summary, buttons(summary)[0], user)
    assert local.slack.wait_for(lambda s: any(len(buttons(m)) == 2 for m in posted(s, thread=summary.ts)))
    return copy.deepcopy(next(m for m in posted(local.slack, thread=summary.ts) if len(buttons(m)) == 2))


def test_two_person_filing_needs_an_approver_other_than_who_asked() -> None:
    with local_bot(Settings(two_person_filing=True)) as local:
        preview = _preview(local, summary_for(local, "hpc-gpu-node-12"), "UALICE")
        file_button = next(b for b in buttons(preview) if b["action_id"] == "file_ticket")
        _click(local, preview, file_button, "UALICE")
        assert "Two-person filing is on" in _told(local, "UALICE")[0]
        assert local.tracker.tickets() == []  # type: ignore[attr-defined]
        _click(local, preview, file_button, "UBOB")
        assert local.slack.wait_for(lambda s: local.tracker.tickets())  # type: ignore[attr-defined]
        assert local.tracker.tickets()[0].filed_by == "UBOB"  # type: ignore[attr-defined]


def test_a_filing_button_acts_only_on_the_draft_its_message_shows() -> None:
    with local_bot() as local:
        summary = summary_for(local, "hpc-gpu-node-12")
        preview = _preview(local, summary, "UALICE")
        file_button = next(b for b in buttons(preview) if b["action_id"] == "file_ticket")
        for value in ("999", "not a number"):
            _click(local, preview, {**file_button, "value": value}, "UBOB")
        texts = _told(local, "UBOB", 2)
        assert any("does not belong to the draft" in t for t in texts) and any("not one I made" in t for t in texts)
        assert local.tracker.tickets() == []  # type: ignore[attr-defined]


def _one_node(scenario: str, seed: int) -> tuple[TableNodeSource, str]:
    """A synthetic node with one planted fault, as a source the bot reads."""
    tables, truth = build(seed=seed, nodes=1, hours=2, scenarios=[scenario])
    (node,) = truth["nodes"]
    return TableNodeSource(tables, {n: v["platform"] for n, v in truth["nodes"].items()}), node


def _previews(local: LocalSlack, summary: Message, n: int) -> list[Message]:
    assert local.slack.wait_for(lambda s: len([m for m in posted(s, thread=summary.ts) if len(buttons(m)) == 2]) >= n)
    return [m for m in posted(local.slack, thread=summary.ts) if len(buttons(m)) == 2]


def test_a_suspect_gpus_own_xid_is_its_one_button_not_a_second() -> None:
    """A GPU whose NVLinks fail and which logged an Xid: the GPU's finding (the Xid) is the suspect GPU itself, so
    the summary offers one button for the GPU (its links in its menu) and no second button for the same part."""
    source, node = _one_node("gpu_wide_fault", 3)
    with local_bot(source=source) as local:
        summary = summary_for(local, node)
        gpu = source.diagnose(node).isolated_component
        assert gpu.startswith("GPU ") and "Xid" in summary.shown_blocks  # the GPU's own finding is listed
        labels = [e["text"]["text"] for e in buttons(summary) if e["type"] == "button"]
        assert labels == [f"Draft ticket: {gpu}"]
        menus = [o["text"]["text"] for e in buttons(summary) if e["type"] == "static_select" for o in e["options"]]
        assert menus and gpu not in menus and all(name.startswith(f"{gpu} NVLink") for name in menus)


def test_a_node_whose_fabric_manager_is_down_offers_the_fabric_softwares_draft_not_a_part_per_link() -> None:
    """Fabric Manager down: every NVLink inactive at once, the analysis blames the fabric software. The summary
    offers that one draft (no part), not a hardware button or menu per inactive link; clicking it drafts the
    fabric software's ticket."""
    source, node = _one_node("fabric_manager_down", 3)
    with local_bot(source=source) as local:
        summary = summary_for(local, node)
        assert "inactive" in summary.shown_blocks  # the links down are still listed
        (button,) = buttons(summary)
        assert button["type"] == "button" and button["text"]["text"] == "Draft ticket: Fabric Manager / NVIDIA driver"
        assert _click(local, summary, button) == 200
        (preview,) = _previews(local, summary, 1)
        assert preview.shown == f"Ticket draft for Fabric Manager / NVIDIA driver on {node}"
        assert "nothing physical is replaced" in preview.shown_blocks


class _LongDrafter(RulesDrafter):
    """The rules drafter with a model's long reasoning: a ticket whose preview cannot hold it all (a snippet does)."""

    def draft(self, diagnosis: Diagnosis, **kwargs: Any) -> RepairTicket:
        ticket = super().draft(diagnosis, **kwargs)
        return ticket.model_copy(update={"reasoning": "The errors follow the bridge, not the GPU. " * 250})


def test_a_preview_whose_snippet_could_not_be_attached_stops_pointing_at_it() -> None:
    """The upload of a long ticket's whole text refused (`missing_scope`): the requester was told privately, but the
    public preview still said what it left out was 'only in the snippet ... below', a file that was never there, and
    a reviewer filed it on that word. The preview now says where the rest is: the tracker, once it is filed."""
    with local_bot(drafter=_LongDrafter()) as local:
        local.slack.faults.fail("files.getUploadURLExternal", "missing_scope", times=5, needed="files:write")
        summary = summary_for(local, "hpc-gpu-node-12")
        assert _click(local, summary, buttons(summary)[0]) == 200
        assert local.slack.wait_for(lambda s: any(m.edits >= 2 for m in posted(s, thread=summary.ts)),
                                    timeout=LONG_WAIT), posted(local.slack, thread=summary.ts)
        (preview,) = [m for m in posted(local.slack, thread=summary.ts) if "Ticket draft" in m.shown_blocks]
        assert "only in the tracker once it is filed" in preview.shown_blocks and "snippet" not in preview.shown_blocks
        assert len(buttons(preview)) == 2  # still to be filed or discarded
        assert any("could not be attached" in t for t in _told(local, "UALICE"))


def test_a_click_no_listener_answers_is_acknowledged_and_said() -> None:
    """A button of an older version of the bot (or an edited payload): Bolt answered 404 'unhandled request', which
    Slack shows as a bare error mark. It is acknowledged, the person told why nothing happened, and the refusal
    recorded; a link button's click is acknowledged and nothing else."""
    with local_bot() as local:
        summary = summary_for(local, "hpc-gpu-node-12")
        stale = {"type": "button", "action_id": "drop_tables", "block_id": "old", "value": "x",
                 "text": {"type": "plain_text", "text": "Old"}}
        assert _click(local, summary, stale) == 200
        (said,) = _told(local, "UALICE")
        assert "That control (drop_tables) is not one this bot answers" in said and "/fabric" in said
        (denied,) = local.audit.entries("denied")
        assert denied["actor"] == "UALICE" and "drop_tables" in denied["detail"]["reason"]
        link = {"type": "button", "action_id": "open-runbook", "url": "https://example.invalid/runbook",
                "text": {"type": "plain_text", "text": "Runbook"}}
        assert _click(local, summary, link, "UBOB") == 200
        time.sleep(0.3)
        assert private(local.slack, "UBOB") == []
