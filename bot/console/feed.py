"""The channel as one person sees it, read back from the mock Slack server's record.

Messages keep the Block Kit the bot posted (the page renders it); files point at the console's own file route;
ephemeral replies appear only for the person they were meant for, as in Slack.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

from ..transport.mock_slack import BOT_USER, Message, MockSlack


@dataclass
class Echo:
    """What Slack itself shows the person who typed a slash command: the command and the app's ack (ephemeral)."""

    ts: str
    text: str
    user: str
    blocks: list[dict[str, Any]] = field(default_factory=list)
    thread_ts: str | None = None


class Decision(TypedDict):
    """What a draft preview came to: `filed` as a new ticket, `joined` the open ticket for its part, or
    `discarded` (no ticket)."""

    outcome: Literal["filed", "joined", "discarded"]
    ticket: str | None


def version(slack: MockSlack, echoes: int = 0) -> int:
    """Changes whenever the mock records a call or a message (an update is a call, a post adds a message)."""
    return len(slack.calls) + len(slack.messages) + echoes


def _file_json(slack: MockSlack, file_id: str) -> dict[str, Any] | None:
    f = slack.files.get(file_id)
    if f is None:
        return None
    mimetype = "image/png" if f.name.endswith(".png") else "application/octet-stream"
    return {"id": f.id, "name": f.name, "title": f.title, "mimetype": mimetype, "url": f"/files/{f.id}/{f.name}"}


def message_json(slack: MockSlack, m: Message) -> dict[str, Any]:
    """One message as the page renders it."""
    files = [j for j in (_file_json(slack, f) for f in m.files) if j is not None]
    return {"ts": m.ts, "thread_ts": m.thread_ts, "user": m.user, "bot": m.user == BOT_USER,
            "name": "fabricbot" if m.user == BOT_USER else slack.users.get(m.user, m.user),
            "text": m.text, "blocks": m.blocks, "files": files, "ephemeral": m.ephemeral_to is not None,
            "edited": m.edits > 0}


def echo_json(echo: Echo, name: str) -> dict[str, Any]:
    return {"ts": echo.ts, "thread_ts": echo.thread_ts, "user": echo.user, "bot": echo.user == BOT_USER,
            "name": "fabricbot" if echo.user == BOT_USER else name, "text": echo.text, "blocks": echo.blocks,
            "files": [], "ephemeral": True, "edited": False}


def channel_feed(slack: MockSlack, channel: str, viewer: str, echoes: list[Echo],
                 decisions: Mapping[str, Decision] | None = None) -> dict[str, Any]:
    """Top-level messages in order, each with its thread replies; what `viewer` may see, nothing else. A draft
    preview that was decided carries its `decision`."""
    seen = [m for m in list(slack.messages)  # a copy: listeners post while the page reads
            if m.channel == channel and (m.ephemeral_to is None or m.ephemeral_to == viewer)]
    items = [{**message_json(slack, m), "decision": (decisions or {}).get(m.ts)} for m in seen]
    name = slack.users.get(viewer, viewer)
    items.extend(echo_json(e, name) for e in echoes)
    items.sort(key=lambda m: m["ts"])
    replies: dict[str, list[dict[str, Any]]] = {}
    top = []
    for item in items:
        if item["thread_ts"] and item["thread_ts"] != item["ts"]:
            replies.setdefault(item["thread_ts"], []).append(item)
        else:
            top.append(item)
    for item in top:
        item["replies"] = replies.pop(item["ts"], [])
    # replies whose root is not in view (a thread on an ephemeral root): show them at the top level
    top.extend(r for rs in replies.values() for r in rs)
    top.sort(key=lambda m: m["ts"])
    return {"channel": channel, "messages": top}
