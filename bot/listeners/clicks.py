"""What every button click carries: who, where (channel, message, thread) and where to tell them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from slack_bolt import Respond
from slack_sdk import WebClient

from ..replies import Replier
from ..services import Services
from ..work import BUSY, Busy


@dataclass(frozen=True)
class Click:
    user: str
    channel: str
    ts: str  # the message the button is on
    thread: str  # that message's thread (its own ts when it starts one)
    reply: Replier


def click(body: dict[str, Any], client: WebClient, respond: Respond | None) -> Click:
    container = body.get("container") or {}
    message = body.get("message") or {}
    channel = (body.get("channel") or {}).get("id") or container.get("channel_id", "")
    ts = container.get("message_ts") or message.get("ts", "")
    thread = message.get("thread_ts") or ts
    user = body["user"]["id"]
    return Click(user, channel, ts, thread, Replier(client, user, channel, thread, respond))


def queued(services: Services, at: Click, fn: Callable[..., Any], *args: Any) -> None:
    """A click's work on the work queue; a full queue is said to the person at once."""
    try:
        services.work.submit(fn, *args)
    except Busy:
        services.notices.offer(at.reply.tell, BUSY)
