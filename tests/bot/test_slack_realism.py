"""The real app over HTTP through the mock Slack server, slow and failing as Slack and a Claude draft are.

Under load: ten slow drafts in flight (as Claude runs with a few tool calls take), twenty `/fabric` commands at once
are all acknowledged and answered before any draft ends (how fast: benchmarks/bench_slash.py). Retries: an event
Slack delivers again gets one answer. Slack's errors: each gets its own message to the person, and no state is lost
(a draft slot, a draft, a ticket). Escaping: pings, mentions and masked links in text the bot did not write never
reach the channel as such.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from bot.nodes import SnapshotNodeSource
from bot.posted import POSTED
from bot.settings import Settings
from bot.transport.blockkit import special_tokens
from bot.transport.injector import Sent
from bot.transport.local import LocalSlack
from bot.transport.mock_slack import BOT_USER, Message, MockSlack
from diagnostics import Diagnosis
from diagnostics.tickets import Answer, RepairTicket, RulesDrafter

from .helpers import LONG_WAIT, OPS, SEEDS, SlowDrafter, buttons, local_bot, posted, private, summary_for
from .test_mentions import _paste

pytestmark = pytest.mark.slack_realism

NODE = "hpc-gpu-node-12"
HOSTILE = ("<!channel>", "<@U0ADMIN>", "<https://evil.example|the runbook>", "[the runbook](https://evil.example)")
HOSTILE_TEXT = "Read " + " and ".join(HOSTILE) + " & act."


def _told(local: LocalSlack, user: str, n: int = 1, timeout: float = 10.0) -> list[str]:
    """What the bot told `user` alone (escapes decoded), once it has told them `n` things."""
    assert local.slack.wait_for(lambda s: len(private(s, user)) >= n, timeout=timeout), (
        [m.text for m in private(local.slack)], local.slack.errors())
    return [m.shown for m in private(local.slack, user)]


def _click(local: LocalSlack, message: Message, element: dict[str, Any], user: str = "UALICE") -> Sent:
    return local.injector.action(element, user=user, channel=OPS, message_ts=message.ts,
                                 thread_ts=message.thread_ts)


def _in_thread(local: LocalSlack, summary: Message) -> list[Message]:
    return posted(local.slack, thread=summary.ts)


def _preview(local: LocalSlack, summary: Message, user: str = "UALICE") -> Message:
    """Click "Draft ticket" and wait for the preview that replaces "Drafting…"."""
    _click(local, summary, buttons(summary)[0], user)
    assert local.slack.wait_for(lambda s: any(len(buttons(m)) == 2 for m in _in_thread(local, summary)))
    return copy.deepcopy(next(m for m in _in_thread(local, summary) if len(buttons(m)) == 2))


def _button(preview: Message, action_id: str) -> dict[str, Any]:
    return next(b for b in buttons(preview) if b["action_id"] == action_id)


def _warm(local: LocalSlack) -> None:
    """One request first, as a running app has had: Bolt checks its token once (auth.test) and keeps the answer."""
    assert local.injector.command("help", user="UALICE", channel=OPS).status == 200


# -- under load ---------------------------------------------------------------------------------------------------

def test_twenty_commands_are_all_answered_while_ten_slow_drafts_are_in_flight() -> None:
    """Each answered while every draft still runs (the drafts wait on a gate the test opens after), so the claim is
    about the bot, not the machine's load; how fast (every ack under 1 s, the summary p95 under 3 s) is measured in
    benchmarks/bench_slash.py."""
    gate = threading.Event()
    drafter = SlowDrafter(8.0, gate=gate)
    settings = Settings(drafts_per_minute=100, draft_workers=10)
    with local_bot(settings, drafter=drafter) as local:
        summaries = [summary_for(local, NODE) for _ in range(10)]
        clicks = [_click(local, s, buttons(s)[0], user=f"UDRAFT{i}") for i, s in enumerate(summaries)]
        assert all(c.status == 200 for c in clicks)
        assert local.slack.wait_for(lambda s: drafter.drafts == 10 and all(_in_thread(local, m) for m in summaries),
                                    timeout=LONG_WAIT)  # ten "Drafting…" shown, ten drafts running
        before = len(posted(local.slack))
        acks: list[Sent] = []
        lock = threading.Lock()

        def command(node: str) -> None:
            sent = local.injector.command(node, user="UALICE", channel=OPS)
            with lock:
                acks.append(sent)

        threads = [threading.Thread(target=command, args=(n,)) for n in [NODE, "hpc-gpu-node-03"] * 10]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(acks) == 20 and all(a.status == 200 and "Looking at" in a.body for a in acks)
        assert local.slack.wait_for(lambda s: len(posted(s)) == before + 20, timeout=LONG_WAIT)
        assert drafter.done == 0  # answered while every draft was still running
        gate.set()
        assert local.slack.wait_for(lambda s: all(any(m.edits for m in _in_thread(local, x)) for x in summaries),
                                    timeout=LONG_WAIT)
        previews = [m for x in summaries for m in _in_thread(local, x)]
        assert len(previews) == 10 and all(len(buttons(m)) == 2 for m in previews)  # each "Drafting…" replaced


def test_a_slow_request_never_holds_up_the_others_on_the_servers_event_loop() -> None:
    with local_bot() as local:
        app = local.app
        assert app is not None
        dispatch = app.dispatch
        release = threading.Event()

        def slow(request: Any) -> Any:  # as a listener stuck on a lock or a slow disk would be
            if "slowpoke" in request.raw_body:
                release.wait(timeout=LONG_WAIT)
            return dispatch(request)

        app.dispatch = slow  # type: ignore[method-assign]
        stuck = threading.Thread(target=local.injector.command, args=("slowpoke",),
                                 kwargs={"user": "UALICE", "channel": OPS})
        stuck.start()
        time.sleep(0.2)
        quick = [local.injector.command(NODE, user="UBOB", channel=OPS) for _ in range(3)]
        assert all(q.status == 200 for q in quick) and stuck.is_alive()  # answered while the other is stuck
        release.set()
        stuck.join()


# -- retries ------------------------------------------------------------------------------------------------------

def test_an_event_slack_delivers_again_gets_one_answer() -> None:
    with local_bot() as local:
        root = summary_for(local, NODE)
        paste = local.injector.message(_paste((9000, 2, 45000)), user="UALICE", channel=OPS, thread_ts=root.ts)
        for attempt, reason in ((1, "http_timeout"), (2, "http_error"), (3, "http_timeout")):
            assert local.injector.retry(paste, attempt, reason).status == 200
        asked = local.injector.mention("why is job 4411 slow?", user="UBOB", channel=OPS)
        assert local.injector.retry(asked).status == 200
        assert local.slack.wait_for(lambda s: posted(s, thread=root.ts) and posted(s, thread=asked.ts))
        time.sleep(0.5)
        assert len(posted(local.slack, thread=root.ts)) == 1 and len(posted(local.slack, thread=asked.ts)) == 1
        assert local.audit.db["bot_pastes"].count == 1
        assert [e["kind"] for e in local.audit.entries()].count("mention") == 1


# -- Slack's errors -----------------------------------------------------------------------------------------------

Fault = Callable[[MockSlack], None]
COMMAND_FAULTS: dict[str, tuple[Fault, str]] = {
    "not_in_channel": (lambda s: s.faults.outside.add(OPS), "invite me with `/invite @fabricbot`"),
    "channel_not_found": (lambda s: s.faults.missing.add(OPS), "I cannot see this channel"),
    "is_archived": (lambda s: s.faults.archived.add(OPS), "This channel is archived"),
    "token_revoked": (lambda s: setattr(s.faults, "revoked", True), "not valid any more (`token_revoked`)"),
    "invalid_auth": (lambda s: s.faults.fail("chat.postMessage", "invalid_auth"),
                     "not valid any more (`invalid_auth`)"),
    "ratelimited": (lambda s: s.faults.rate_limit("chat.postMessage", times=3, retry_after=0),
                    "rate-limiting me right now and still refused after I waited and retried"),
    "missing_scope": (lambda s: s.faults.fail("chat.postMessage", "missing_scope", needed="chat:write"),
                      "lacks the `chat:write` scope: an admin must add it (slack/manifest.json lists every scope)"),
    "msg_too_long": (lambda s: s.faults.fail("chat.postMessage", "msg_too_long"), "longer than Slack allows"),
    "invalid_blocks": (lambda s: s.faults.fail("chat.postMessage", "invalid_blocks"),
                       "refused the layout of my answer (`invalid_blocks`)"),
}


@pytest.mark.parametrize("code", sorted(COMMAND_FAULTS))
def test_a_command_slack_refuses_to_post_says_why_and_works_once_it_is_fixed(code: str) -> None:
    fault, expected = COMMAND_FAULTS[code]
    with local_bot() as local:
        _warm(local)
        fault(local.slack)
        sent = local.injector.command(NODE, user="UALICE", channel=OPS)
        assert sent.status == 200 and "Looking at" in sent.body
        # a channel Slack refuses still gives the person the answer, to them alone, after why it was refused
        here = code in ("not_in_channel", "channel_not_found", "is_archived")
        told, *answer = _told(local, "UALICE", n=2 if here else 1)
        assert expected in told, told
        assert len(answer) == (1 if here else 0) and all("to you alone" in a for a in answer), answer
        assert posted(local.slack) == [] and local.audit.db[POSTED].count == 0  # nothing half-posted to click on
        local.slack.faults = type(local.slack.faults)()  # the admin fixes it
        summary = summary_for(local, NODE)
        assert buttons(summary) and local.slack.wait_for(lambda s: local.audit.db[POSTED].count == 1)


def test_one_rate_limit_is_waited_out_and_the_person_hears_nothing_of_it() -> None:
    with local_bot() as local:
        local.slack.faults.rate_limit("chat.postMessage", times=1, retry_after=0)
        summary = summary_for(local, NODE)
        assert buttons(summary) and local.slack.errors("chat.postMessage") == ["ratelimited"]
        assert private(local.slack) == []


def test_a_missing_upload_scope_still_leaves_the_summary_and_says_which_scope() -> None:
    with local_bot() as local:
        _warm(local)
        local.slack.faults.scopes = frozenset({"chat:write", "usergroups:read", "files:read"})
        summary = summary_for(local, NODE)
        assert buttons(summary)  # the diagnosis is there; only its picture is missing
        assert "lacks the `files:write` scope" in _told(local, "UALICE")[0]


def test_a_missing_upload_scope_for_the_fleet_heat_map_is_said_as_for_a_node_picture() -> None:
    """The heat map's upload under `/fabric fleet` failed into the log alone: the person saw a list with no picture
    and no word of why."""
    with local_bot() as local:
        _warm(local)
        local.slack.faults.scopes = frozenset({"chat:write", "usergroups:read", "files:read"})
        assert local.injector.command("fleet", user="UALICE", channel=OPS).status == 200
        told = _told(local, "UALICE")[0]
        assert "Uploading the fleet heat map did not finish" in told and "lacks the `files:write` scope" in told
        assert posted(local.slack)  # the fleet list itself stands


def test_a_refused_drafting_post_keeps_the_draft_slot_and_makes_no_draft() -> None:
    with local_bot(Settings(drafts_per_minute=1)) as local:
        summary = summary_for(local, NODE)
        local.slack.faults.outside.add(OPS)  # the bot was removed from the channel after it posted
        _click(local, summary, buttons(summary)[0])
        assert "invite me with `/invite @fabricbot`" in _told(local, "UALICE")[0]
        assert local.audit.db["bot_drafts"].count == 0
        local.slack.faults.outside.clear()
        preview = _preview(local, summary)  # the one draft a minute was not spent on the refused post
        assert "Ticket draft" in preview.shown_blocks


def test_a_refused_preview_leaves_no_draft_to_file_and_no_drafting_message() -> None:
    with local_bot(Settings(drafts_per_minute=1)) as local:
        summary = summary_for(local, NODE)
        local.slack.faults.fail("chat.update", "invalid_blocks")
        _click(local, summary, buttons(summary)[0])
        assert "refused the layout of my answer" in _told(local, "UALICE")[0]
        (draft,) = local.audit.db["bot_drafts"].rows
        assert draft["status"] == "unposted"
        (shown,) = _in_thread(local, summary)
        assert "could not be shown (`invalid_blocks`)" in shown.shown and "Drafting" not in shown.shown
        assert buttons(shown) == []
        preview = _preview(local, summary)  # the slot came back
        assert "Ticket draft" in preview.shown_blocks


def test_a_filing_check_slack_refuses_names_the_scope_not_the_allow_list() -> None:
    settings = Settings(filing_usergroups=frozenset({"SOPS"}))
    with local_bot(settings, usergroups={"SOPS": ["UALICE"]}) as local:
        preview = _preview(local, summary_for(local, NODE))
        local.slack.faults.fail("usergroups.users.list", "missing_scope", needed="usergroups:read")
        _click(local, preview, _button(preview, "file_ticket"))
        (told,) = _told(local, "UALICE")
        assert "lacks the `usergroups:read` scope" in told and "limited" not in told
        assert [d["status"] for d in local.audit.db["bot_drafts"].rows] == ["pending"]
        _click(local, preview, _button(preview, "file_ticket"))  # the next click looks again
        assert local.slack.wait_for(lambda s: local.tracker.tickets())  # type: ignore[attr-defined]


def test_a_filing_whose_message_update_slack_refuses_stands_and_is_said() -> None:
    """The filer alone heard it once, so the channel still saw File offered on a ticket already filed: the thread
    hears the decision too."""
    with local_bot() as local:
        preview = _preview(local, summary_for(local, NODE))
        local.slack.faults.rate_limit("chat.update", times=3, retry_after=0)
        _click(local, preview, _button(preview, "file_ticket"))
        (told,) = _told(local, "UALICE")
        assert "Filed as *FAB-0001*" in told and "could not change the draft's message to say so" in told
        assert "rate-limiting" in told
        assert local.slack.wait_for(lambda s: any("Filed as *FAB-0001*" in m.text and "could not be changed" in m.text
                                                  for m in posted(s, thread=preview.thread_ts)))
        assert [t.id for t in local.tracker.tickets()] == ["FAB-0001"]  # type: ignore[attr-defined]
        assert [(d["status"], d["ticket_id"]) for d in local.audit.db["bot_drafts"].rows] == [("filed", "FAB-0001")]
        _click(local, preview, _button(preview, "file_ticket"))  # a second click files nothing more
        assert "already filed as FAB-0001" in _told(local, "UALICE", 2)[1]


def test_a_discard_whose_message_is_gone_stands_and_is_said() -> None:
    with local_bot() as local:
        preview = _preview(local, summary_for(local, NODE))
        local.slack.faults.fail("chat.update", "message_not_found")
        _click(local, preview, _button(preview, "discard_draft"))
        (told,) = _told(local, "UALICE")
        assert "Discarded by" in told and "The message I meant to update is gone" in told
        assert [d["status"] for d in local.audit.db["bot_drafts"].rows] == ["discarded"]


@pytest.mark.parametrize(("code", "fault", "expected"), [
    ("ratelimited", lambda s: s.faults.rate_limit("chat.postMessage", times=3, retry_after=0), "rate-limiting me"),
    ("msg_too_long", lambda s: s.faults.fail("chat.postMessage", "msg_too_long"), "longer than Slack allows"),
])
def test_a_mention_slack_refuses_to_answer_is_said_to_who_asked(code: str, fault: Fault, expected: str) -> None:
    with local_bot() as local:
        _warm(local)
        fault(local.slack)
        asked = local.injector.mention("why is job 4411 slow?", user="UBOB", channel=OPS)
        assert asked.status == 200
        assert expected in _told(local, "UBOB")[0]
        assert local.slack.errors("chat.postMessage")[-1] == code


def test_a_snippet_slack_sends_to_its_sign_in_page_is_said_unreadable_naming_the_scope() -> None:
    with local_bot() as local:
        root = summary_for(local, NODE)
        local.slack.faults.scopes = frozenset({"chat:write", "files:write", "usergroups:read"})
        local.injector.snippet(_paste((500, 0, 2500)).replace("```", ""), "nvlink-e.txt", user="UALICE",
                               channel=OPS, thread_ts=root.ts)
        assert local.slack.wait_for(lambda s: posted(s, thread=root.ts))
        said = posted(local.slack, thread=root.ts)[0].shown
        assert said.startswith("I cannot read `nvlink-e.txt`: Slack sent me to its sign-in page") and \
            "`files:read` scope" in said
        assert local.slack.errors("url_private") == ["sign_in"]  # answered with a 302, as Slack does
        # a proxy that follows the redirect hands over the sign-in page itself (HTTP 200, HTML): not read either
        ts, file = local.slack.user_file("nvlink-e.txt", b"GPU 0: x\n", OPS, "UALICE", root.ts)
        page = {**file, "url_private": f"{local.slack.base_url}/signin", "url_private_download": None}
        local.injector.event({"type": "message", "subtype": "file_share", "user": "UALICE", "text": "", "ts": ts,
                              "channel": OPS, "thread_ts": root.ts, "files": [page]})
        assert local.slack.wait_for(lambda s: len(posted(s, thread=root.ts)) == 2)
        assert posted(local.slack, thread=root.ts)[1].shown == said


# -- escaping -----------------------------------------------------------------------------------------------------

class HostileSource(SnapshotNodeSource):
    """The seed nodes, with telemetry text (warnings, the verdict, the action) holding pings and masked links."""

    def diagnose(self, node_id: str, *, window_hours: float | None = None) -> Diagnosis:
        d = super().diagnose(node_id, window_hours=window_hours)
        return d.model_copy(update={"warnings": [*d.warnings, HOSTILE_TEXT], "verdict": HOSTILE_TEXT,
                                    "repair_action": HOSTILE_TEXT})


class HostileDrafter(RulesDrafter):
    """A model whose ticket text and name carry pings, mentions and links."""

    def draft(self, diagnosis: Diagnosis, **kwargs: Any) -> RepairTicket:
        ticket = super().draft(diagnosis, **kwargs)
        return ticket.model_copy(update={"summary": HOSTILE_TEXT, "reasoning": HOSTILE_TEXT,
                                         "drafted_by": "<@U0ADMIN>"})


class HostileAnswerer:
    def answer(self, diagnosis: Diagnosis, question: str) -> Answer:
        return Answer(HOSTILE_TEXT, "<!here>")


def _only_the_bots_own(local: LocalSlack) -> None:
    """Every `<...>` Slack would parse in what the bot posted is a mention of a person who clicked or asked."""
    assert set(local.slack.specials()) <= {"@UALICE", "@UBOB"}, local.slack.specials()
    for m in local.slack.messages:
        if m.user == BOT_USER:
            assert "<https://evil.example" not in m.text + str(m.blocks)


def test_pings_mentions_and_links_from_telemetry_the_model_and_people_are_shown_as_text() -> None:
    source = HostileSource(SnapshotNodeSource.from_files([SEEDS]).snapshots.values())
    with local_bot(source=source, drafter=HostileDrafter(), answerer=HostileAnswerer()) as local:
        summary = summary_for(local, NODE)
        preview = _preview(local, summary)
        asked = local.injector.mention(f"what is wrong with {NODE}? {HOSTILE_TEXT}", user="UBOB", channel=OPS)
        assert local.slack.wait_for(lambda s: len(posted(s, thread=asked.ts)) >= 2)
        acks = []
        for text in HOSTILE:
            acks.append(local.injector.command(f'"{text}"', user="UALICE", channel=OPS))  # an unknown node, echoed
            acks.append(local.injector.command(f"{NODE} {text}", user="UALICE", channel=OPS))  # a usage error
        acks.append(local.injector.command(f"job {HOSTILE[1]}", user="UALICE", channel=OPS))
        for ack in acks:  # the acknowledgement is a message too: Slack parses its text
            text = ack.json()["text"] if ack.body.startswith("{") else ack.body
            assert ack.status == 200 and text and special_tokens(text, []) == [], ack.body
        assert local.slack.wait_for(lambda s: len(private(s, "UALICE")) >= 5)
        _only_the_bots_own(local)
        for shown in (summary.shown_blocks, preview.shown_blocks, posted(local.slack, thread=asked.ts)[0].shown):
            assert "<!channel>" in shown and "<@U0ADMIN>" in shown  # shown to people as the text it was
            assert "<https://evil.example|the runbook>" in shown
        assert "the runbook (`https://evil.example`)" in preview.shown_blocks  # a Markdown link: its address shown
        assert all("I don't know a node called" in t or "job" in t for t in _told(local, "UALICE", 5))
        _click(local, preview, _button(preview, "file_ticket"), "UBOB")
        assert local.slack.wait_for(lambda s: bool(local.tracker.tickets()))  # type: ignore[attr-defined]
        (ticket,) = local.tracker.tickets()  # type: ignore[attr-defined]
        assert "](https://evil.example)" not in ticket.body  # stored as the tracker renders it: the link as text
        assert ticket.body.count("the runbook (`https://evil.example`)") == 3  # the summary, reasoning and warning
