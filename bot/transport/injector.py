"""Sends what Slack sends: signed slash commands, block actions and Events API payloads, over HTTP.

The requests are built and signed as Slack builds them (form-encoded commands, a `payload` form field
for interactions, JSON for events; `X-Slack-Signature` over `v0:{timestamp}:{body}`), so the app under
test verifies them with its real signing secret.
"""

from __future__ import annotations

import itertools
import json
import secrets
import ssl
import time
from dataclasses import dataclass, replace
from functools import cache
from typing import Any
from urllib.parse import urlencode

import httpx
from slack_sdk.signature import SignatureVerifier

from .mock_slack import BOT_USER, TEAM, MockSlack

APP_ID = "AFABRICBOT"


@dataclass
class Sent:
    """The app's HTTP answer to one injected request, and how long the answer took."""

    status: int
    body: str
    seconds: float
    ts: str | None = None  # the user message an event was about, as Slack stored it
    event: dict[str, Any] | None = None  # an Events API envelope as sent (to deliver it again)


    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


@cache
def _tls() -> ssl.SSLContext:
    """One TLS context for every injector: httpx builds one per client otherwise, loading the system's certificates
    each time (20 ms, as much as starting the bot's two servers)."""
    return ssl.create_default_context()


class Injector:
    """Signs and posts requests to the app's events URL; `slack` supplies the response URLs."""

    def __init__(self, app_url: str, signing_secret: str, slack: MockSlack, *, timeout: float = 30.0) -> None:
        self.url = app_url
        self.verifier = SignatureVerifier(signing_secret)
        self.slack = slack
        # A connection per request, as Slack's deliveries come: a kept-alive one can be closed by the server's idle
        # timeout (uvicorn's 5 s) just as the next request goes out on it, and that request is reset.
        self.http = httpx.Client(timeout=timeout, limits=httpx.Limits(max_keepalive_connections=0),
                                 verify=_tls())
        self._seq = itertools.count(1)
        self._run = secrets.token_hex(3).upper()  # event ids unique across injectors, as Slack's are

    def close(self) -> None:
        self.http.close()

    def send(self, body: str, content_type: str, *, timestamp: int | None = None, sign: bool = True,
             signature: str | None = None, headers: dict[str, str] | None = None) -> Sent:
        ts = str(int(time.time()) if timestamp is None else timestamp)
        headers = {"Content-Type": content_type, "X-Slack-Request-Timestamp": ts, **(headers or {})}
        if sign:
            headers["X-Slack-Signature"] = signature or str(self.verifier.generate_signature(timestamp=ts, body=body))
        start = time.perf_counter()
        response = self.http.post(self.url, content=body.encode("utf-8"), headers=headers)
        return Sent(response.status_code, response.text, time.perf_counter() - start)

    def _trigger(self) -> str:
        return f"{next(self._seq)}.trigger"

    def command_body(self, text: str, *, user: str, channel: str, command: str = "/fabric") -> str:
        return urlencode({
            "token": "legacy-verification-token", "team_id": TEAM, "team_domain": "local", "channel_id": channel,
            "channel_name": channel.lower(), "user_id": user, "user_name": self.slack.users.get(user, user),
            "command": command, "text": text, "api_app_id": APP_ID, "is_enterprise_install": "false",
            "response_url": self.slack.response_url(channel, user), "trigger_id": self._trigger(),
        })

    def command(self, text: str, *, user: str, channel: str, **kw: Any) -> Sent:
        return self.send(self.command_body(text, user=user, channel=channel), "application/x-www-form-urlencoded",
                         **kw)

    def action(self, action: dict[str, Any], *, user: str, channel: str, message_ts: str,
               thread_ts: str | None = None, **kw: Any) -> Sent:
        """Click a button or pick an option (the `action` element as in the message's blocks, plus its pick)."""
        message = self.slack.find(message_ts)
        element = {**action, "action_ts": f"{time.time():.6f}"}
        payload = {
            "type": "block_actions", "team": {"id": TEAM, "domain": "local"}, "api_app_id": APP_ID,
            "user": {"id": user, "username": self.slack.users.get(user, user), "team_id": TEAM},
            "container": {"type": "message", "message_ts": message_ts, "channel_id": channel,
                          "is_ephemeral": False},
            "channel": {"id": channel, "name": channel.lower()},
            "message": {"type": "message", "ts": message_ts, "thread_ts": thread_ts,
                        "text": message.text if message else "", "blocks": message.blocks if message else []},
            "trigger_id": self._trigger(), "response_url": self.slack.response_url(channel, user),
            "actions": [element],
        }
        body = urlencode({"payload": json.dumps(payload)})
        return self.send(body, "application/x-www-form-urlencoded", **kw)

    def event(self, event: dict[str, Any], **kw: Any) -> Sent:
        n = next(self._seq)
        envelope = {
            "token": "legacy-verification-token", "team_id": TEAM, "api_app_id": APP_ID, "event": event,
            "type": "event_callback", "event_id": f"Ev{self._run}{n:06d}", "event_time": int(time.time()),
            "authorizations": [{"team_id": TEAM, "user_id": BOT_USER, "is_bot": True}],
        }
        return replace(self.send(json.dumps(envelope), "application/json", **kw), event=envelope)

    def retry(self, sent: Sent, attempt: int = 1, reason: str = "http_timeout") -> Sent:
        """Deliver an event again as Slack retries it: the same envelope, freshly signed, with the retry headers."""
        assert sent.event is not None, "only events are retried"
        again = self.send(json.dumps(sent.event), "application/json", timestamp=int(time.time()) + attempt,
                          headers={"X-Slack-Retry-Num": str(attempt), "X-Slack-Retry-Reason": reason})
        return replace(again, ts=sent.ts, event=sent.event)

    def mention(self, text: str, *, user: str, channel: str, thread_ts: str | None = None) -> Sent:
        text = f"<@{BOT_USER}> {text}"
        ts = self.slack.user_message(channel, user, text, thread_ts)
        event = {"type": "app_mention", "user": user, "text": text, "ts": ts, "channel": channel,
                 "event_ts": ts}
        if thread_ts:
            event["thread_ts"] = thread_ts
        return replace(self.event(event), ts=ts)

    def message(self, text: str, *, user: str, channel: str, thread_ts: str | None = None,
                subtype: str | None = None) -> Sent:
        """A person's message; `subtype` "thread_broadcast" for a thread reply also sent to the channel."""
        ts = self.slack.user_message(channel, user, text, thread_ts)
        event = {"type": "message", "user": user, "text": text, "ts": ts, "channel": channel,
                 "channel_type": "channel", "event_ts": ts, **({"subtype": subtype} if subtype else {})}
        if thread_ts:
            event["thread_ts"] = thread_ts
        return replace(self.event(event), ts=ts)

    def snippet(self, content: str, name: str, *, user: str, channel: str, thread_ts: str | None = None) -> Sent:
        """Share a text snippet (Slack stores the file, then sends a `file_share` message event)."""
        ts, file = self.slack.user_file(name, content.encode("utf-8"), channel, user, thread_ts)
        event: dict[str, Any] = {"type": "message", "subtype": "file_share", "user": user, "text": "", "ts": ts,
                                 "channel": channel, "channel_type": "channel", "event_ts": ts, "files": [file]}
        if thread_ts:
            event["thread_ts"] = thread_ts
        return replace(self.event(event), ts=ts)

    def url_verification(self, challenge: str) -> Sent:
        body = json.dumps({"token": "legacy-verification-token", "challenge": challenge,
                           "type": "url_verification"})
        return self.send(body, "application/json")
