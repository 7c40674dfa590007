"""Two copies of the bot on one store, and a bot restarted inside Slack's retry window: an event Slack delivers
again, or a signed request sent again, is answered once, whichever copy gets it."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from bot.audit import AuditLog
from bot.nodes import SnapshotNodeSource
from bot.settings import Settings
from bot.storage import open_db
from bot.transport.local import LocalSlack
from bot.transport.mock_slack import MockSlack
from bot.workflow.tracker import SqliteTracker
from diagnostics.tickets import RulesDrafter

from .helpers import OPS, SEEDS, USERS, png_renderer, posted
from .test_mentions import _paste

pytestmark = pytest.mark.slack_realism

SETTINGS = Settings(signing_secret="one-app-one-secret")  # replicas of one Slack app share its signing secret


@contextmanager
def replica(store: Path, slack: MockSlack) -> Iterator[LocalSlack]:
    """One copy of the bot: its own process state and connection, the store and Slack it shares with the others."""
    db = open_db(store)
    with LocalSlack(settings=SETTINGS, source=SnapshotNodeSource.from_files([SEEDS]), drafter=RulesDrafter(),
                    tracker=SqliteTracker(db), audit=AuditLog(db), renderer=png_renderer, slack=slack) as local:
        yield local


def _mentions(local: LocalSlack) -> int:
    return [e["kind"] for e in local.audit.entries()].count("mention")


def test_two_replicas_on_one_store_answer_a_retried_event_and_a_replayed_request_once(tmp_path: Path) -> None:
    slack = MockSlack(users=dict(USERS))
    with ExitStack() as stack:
        one, two = (stack.enter_context(replica(tmp_path, slack)) for _ in range(2))
        asked = one.injector.mention("why is job 4411 slow?", user="UBOB", channel=OPS)
        for attempt, reason in ((1, "http_timeout"), (2, "http_error")):  # the load balancer sends these to two
            assert two.injector.retry(asked, attempt, reason).status == 200
        assert slack.wait_for(lambda s: posted(s, thread=asked.ts))
        pasted = slack.user_message(OPS, "UALICE", _paste((9000, 2, 45000)), asked.ts)
        event = {**(asked.event or {}), "event_id": "EvPASTE1",
                 "event": {"type": "message", "user": "UALICE", "text": _paste((9000, 2, 45000)), "ts": pasted,
                           "thread_ts": asked.ts, "channel": OPS, "channel_type": "channel", "event_ts": pasted}}
        body, stamp = json.dumps(event), int(time.time())
        signature = one.injector.verifier.generate_signature(timestamp=str(stamp), body=body)
        for inj in (one.injector, two.injector):  # the very same signed request, captured and sent to both
            sent = inj.send(body, "application/json", timestamp=stamp, signature=signature)
            assert sent.status == 200
        assert slack.wait_for(lambda s: len(posted(s, thread=asked.ts)) >= 2)
        time.sleep(0.5)
        assert len(posted(slack, thread=asked.ts)) == 2  # one answer to the question, one to the paste
        assert _mentions(one) == _mentions(two) == 1  # one store: both copies read the same audit trail
        assert one.audit.db["bot_pastes"].count == 1


def test_a_bot_restarted_inside_slacks_retry_window_answers_a_retry_once(tmp_path: Path) -> None:
    slack = MockSlack(users=dict(USERS))
    with replica(tmp_path, slack) as before:
        asked = before.injector.mention("why is job 4411 slow?", user="UBOB", channel=OPS)
        assert slack.wait_for(lambda s: posted(s, thread=asked.ts))
    with replica(tmp_path, slack) as after:  # a deploy: Slack's retry of the event arrives at the new process
        assert after.injector.retry(asked, 1, "http_timeout").status == 200
        fresh = after.injector.mention("why is job 4411 slow?", user="UBOB", channel=OPS)
        assert slack.wait_for(lambda s: posted(s, thread=fresh.ts))
        time.sleep(0.5)
        assert len(posted(slack, thread=asked.ts)) == 1 and _mentions(after) == 2
