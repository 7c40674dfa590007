"""Slack payloads before any listener: malformed signed ones get 400, replays and event retries are done once."""

from __future__ import annotations

import json
import time
from pathlib import Path
from urllib.parse import urlencode

from bot.dedupe import SEEN, WAIT_S, Seen
from bot.payloads import problem
from bot.storage import open_db

from .helpers import OPS, local_bot, posted

FORM = "application/x-www-form-urlencoded"


def test_malformed_signed_payloads_get_400_and_unsigned_ones_401() -> None:
    with local_bot() as local:
        inj = local.injector
        bad = [
            (urlencode({"payload": "{not json"}), FORM),
            ("[1, 2]", "application/json"),
            ("\"a string\"", "application/json"),
            (json.dumps({"type": "event_callback", "event_id": "Ev1"}), "application/json"),
            (json.dumps({"type": "event_callback", "event_id": "Ev2", "event": {"type": "app_mention"}}),
             "application/json"),
            (urlencode({"payload": json.dumps({"type": "block_actions", "user": {"id": "UALICE"}})}), FORM),
            (urlencode({"payload": json.dumps({"type": "block_actions", "actions": [{"action_id": "draft:0"}],
                                                "user": {"id": "UALICE"}})}), FORM),
            (urlencode({"command": "/fabric", "text": "hpc-gpu-node-12"}), FORM),
        ]
        for body, kind in bad:
            sent = inj.send(body, kind)
            assert sent.status == 400, (body, sent.status, sent.body)
            assert sent.body.startswith("malformed payload")
            assert inj.send(body, kind, sign=False).status == 401
        raw = inj.http.post(inj.url, content=b"\xff\xfe{", headers={
            "Content-Type": FORM, "X-Slack-Request-Timestamp": str(int(time.time())),
            "X-Slack-Signature": inj.verifier.generate_signature(timestamp=str(int(time.time())), body="\xff\xfe{")})
        assert raw.status_code in (400, 401)  # never a 500 or a reset connection
        assert inj.command("help", user="UALICE", channel=OPS).status == 200  # the app still answers
        time.sleep(0.2)
        assert not posted(local.slack)


def test_problem_names_what_is_missing() -> None:
    assert problem({"command": "/fabric", "user_id": "U1", "channel_id": "C1", "text": "x"}) is None
    assert "without its user" in str(problem({"type": "block_actions", "actions": []}))
    assert "channel and ts" in str(problem({"type": "event_callback", "event_id": "E", "event": {
        "type": "message", "channel": "C1"}}))
    assert problem({"type": "event_callback", "event_id": "E", "event": {"type": "team_join"}}) is None


def test_a_replayed_request_inside_the_five_minutes_does_nothing_again() -> None:
    with local_bot() as local:
        inj = local.injector
        body = inj.command_body("hpc-gpu-node-12", user="UALICE", channel=OPS)
        ts = int(time.time())
        first = inj.send(body, FORM, timestamp=ts)
        again = inj.send(body, FORM, timestamp=ts)  # the same bytes, the same signature
        assert first.status == 200 and "Looking at" in first.body
        assert again.status == 200 and again.body == ""
        assert local.slack.wait_for(lambda s: len(posted(s)) == 1)
        time.sleep(0.5)
        assert len(posted(local.slack)) == 1
        assert [e["kind"] for e in local.audit.entries()].count("command") == 1


def test_an_event_delivered_again_gets_one_reply() -> None:
    with local_bot() as local:
        asked = local.injector.mention("why is job 4411 slow?", user="UBOB", channel=OPS)
        retried = local.injector.retry(asked, attempt=1)
        twice = local.injector.retry(asked, attempt=2, reason="http_error")
        assert asked.status == retried.status == twice.status == 200
        assert local.slack.wait_for(lambda s: posted(s, thread=asked.ts))
        time.sleep(0.5)
        assert len(posted(local.slack, thread=asked.ts)) == 1
        assert [e["kind"] for e in local.audit.entries()].count("mention") == 1


def test_seen_keys_expire_and_are_shared_by_every_connection_to_the_store(tmp_path: Path) -> None:
    now = [1_800_000_000.0]
    one = Seen(open_db(tmp_path), "event", 10.0, clock=lambda: now[0])
    other = Seen(open_db(tmp_path), "event", 10.0, clock=lambda: now[0])  # a second process on the same store
    replays = Seen(open_db(tmp_path), "request", 10.0, clock=lambda: now[0])
    assert one.first("a") and not one.first("a") and not other.first("a")
    assert replays.first("a")  # kinds are apart
    now[0] += 11.0
    assert other.first("a") and not one.first("a")  # expired, so new again, once
    assert open_db(tmp_path)[SEEN].count == 2  # the expired rows of a kind go as new ones come


def test_a_store_locked_by_another_writer_delays_an_acknowledgement_at_most_a_second(tmp_path: Path) -> None:
    seen = Seen(open_db(tmp_path), "event", 10.0)
    writer = open_db(tmp_path)
    writer.execute("begin immediate")  # a long ingest in another process holds the write lock
    try:
        start = time.perf_counter()
        assert seen.first("Ev1") and seen.first("Ev1")  # answered rather than dropped: it cannot tell
        assert time.perf_counter() - start < 2 * WAIT_S + 1.0
    finally:
        writer.conn.rollback()
    assert seen.first("Ev2") and not seen.first("Ev2")


def test_socket_mode_shares_the_checks_and_the_retry_dedupe() -> None:
    from slack_bolt.adapter.socket_mode.internals import run_bolt_app
    from slack_bolt.request import BoltRequest
    from slack_sdk.socket_mode.request import SocketModeRequest

    from bot.app import build_app
    from bot.audit import AuditLog
    from bot.nodes import SnapshotNodeSource
    from bot.settings import Settings
    from bot.storage import open_db
    from bot.transport.loopback import LoopbackServer
    from bot.transport.mock_slack import MockSlack
    from bot.workflow.tracker import SqliteTracker
    from diagnostics.tickets import RulesDrafter

    from .helpers import SEEDS

    slack = MockSlack()
    with LoopbackServer(slack.app) as server:
        slack.base_url = server.url
        db = open_db(None)
        app = build_app(settings=Settings(bot_token=slack.token, slack_api_url=slack.api_url),
                        source=SnapshotNodeSource.from_files([SEEDS]), drafter=RulesDrafter(),
                        tracker=SqliteTracker(db), audit=AuditLog(db), socket_mode=True)
        try:
            ts = slack.user_message(OPS, "UBOB", "<@UFABRICBOT> why is job 4411 slow?")
            event = {"type": "event_callback", "event_id": "EvSOCKET1", "team_id": "TLOCAL", "api_app_id": "ALOCAL",
                     "authorizations": [{"team_id": "TLOCAL", "user_id": "UFABRICBOT", "is_bot": True}],
                     "event": {"type": "app_mention", "user": "UBOB", "text": "<@UFABRICBOT> why is job 4411 slow?",
                               "ts": ts, "channel": OPS, "event_ts": ts}}
            for attempt in (0, 1):  # Slack resends an envelope it got no ack for, with retry_attempt
                req = SocketModeRequest(type="events_api", envelope_id=f"e{attempt}", payload=event,
                                        retry_attempt=attempt, retry_reason="timeout" if attempt else None)
                assert run_bolt_app(app, req).status == 200
            assert slack.wait_for(lambda s: posted(s, thread=ts))
            time.sleep(0.3)
            assert len(posted(slack, thread=ts)) == 1
            broken = {"type": "event_callback", "event_id": "EvSOCKET2", "event": {"type": "app_mention"}}
            assert app.dispatch(BoltRequest(mode="socket_mode", body=broken)).status == 400
        finally:
            app.services.shutdown()
