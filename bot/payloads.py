"""Slack payloads checked before any listener sees them: a signed but malformed one gets HTTP 400, never a 500.

Only the fields the listeners read are checked, by payload type; an Events API event seen before (a retry, by this
process or another on the same store) is acknowledged and dropped. Both run as Bolt middleware, so HTTP and Socket
Mode share them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from slack_bolt import App, BoltResponse

from .dedupe import Seen

log = logging.getLogger("fabricbot")
MESSAGE_EVENTS = ("app_mention", "message")


def _str(data: Any, key: str) -> bool:
    return isinstance(data, dict) and isinstance(data.get(key), str) and bool(data[key])


def _event_problem(body: dict[str, Any]) -> str | None:
    event = body.get("event")
    if not _str(body, "event_id"):
        return "an event_callback without an event_id"
    if not isinstance(event, dict) or not _str(event, "type"):
        return "an event_callback without an event type"
    if event["type"] in MESSAGE_EVENTS and not (_str(event, "channel") and _str(event, "ts")):
        return f"a {event['type']} event without its channel and ts"
    if not isinstance(event.get("text", ""), str) or not isinstance(event.get("files", []), list):
        return "an event whose text or files are not what Slack sends"
    return None


def _action_problem(body: dict[str, Any]) -> str | None:
    actions = body.get("actions")
    if not _str(body.get("user"), "id"):
        return "a block action without its user"
    if not isinstance(actions, list) or not actions or not all(_str(a, "action_id") for a in actions):
        return "a block action without its actions"
    container: dict[str, Any] = body["container"] if isinstance(body.get("container"), dict) else {}
    if not (_str(body.get("channel"), "id") or _str(container, "channel_id")) or not (
            _str(container, "message_ts") or _str(body.get("message"), "ts")):
        return "a block action without its channel and message"
    return None


def problem(body: Any) -> str | None:
    """Why Slack would never send this payload, or None when the listeners can read it."""
    if not isinstance(body, dict):
        return "a payload that is not an object"
    if body.get("type") == "event_callback":
        return _event_problem(body)
    if body.get("type") == "block_actions":
        return _action_problem(body)
    if "command" in body:
        if not all(_str(body, k) for k in ("command", "user_id", "channel_id")):
            return "a slash command without its command, user or channel"
        if not isinstance(body.get("text", ""), str):
            return "a slash command whose text is not text"
    return None


def install(app: App, *, events: Seen) -> None:
    """Add the checks to `app`: malformed payloads refused with 400, events in `events` acknowledged and dropped."""

    def check(body: dict[str, Any], request: Any, next_: Callable[[], None]) -> BoltResponse | None:
        why = problem(body)
        if why is not None:
            log.warning("fabricbot: refused a malformed Slack payload: %s", why)
            return BoltResponse(status=400, body=f"malformed payload: {why}")
        if body.get("type") == "event_callback" and not events.first(str(body["event_id"])):
            retry = (request.headers.get("x-slack-retry-num") or [""])[0]
            log.info("fabricbot: event %s delivered again (retry %s); answered once already",
                     body["event_id"], retry or "-")
            return BoltResponse(status=200, body="")
        next_()
        return None

    app.middleware(check)
