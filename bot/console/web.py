"""The console's web app (Starlette): the page, the channel feed, and the person's input sent as Slack sends it.

`/api/send` turns a typed line into a signed slash command, mention or message through the injector;
`/api/action` finds the clicked element in the blocks the bot posted and sends its block action. The feed
long-polls the mock Slack server's record, so the page changes when the bot posts.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..listeners.commands import COMMAND
from ..state import BotState
from ..transport.injector import Sent
from ..transport.local import LocalSlack
from ..transport.mock_slack import BOT_USER, Message
from ..workflow.states import DraftState
from .feed import Decision, Echo, channel_feed, version
from .topology import analysis_of, latest_analysis, summary_for_file, topology_view

STATIC = Path(__file__).resolve().parent / "static"
LONG_POLL_S = 8.0
MENTION = "@fabricbot"


class ConsoleError(ValueError):
    """A request the console cannot act on; the page shows the message."""


class Console:
    """One person in one channel of the local Slack: what they see and what they send."""

    def __init__(self, local: LocalSlack, *, user: str, channel: str, channel_name: str,
                 nodes: Sequence[str] = ()) -> None:
        self.local = local
        self.slack = local.slack
        self.user = user
        self.channel = channel
        self.channel_name = channel_name
        self.state = BotState(local.audit.db)
        self.nodes = list(nodes)
        self.echoes: list[Echo] = []
        self._lock = threading.Lock()
        self._closed = threading.Event()

    def close(self) -> None:
        """End pending long polls, so the server can stop at once."""
        self._closed.set()

    # -- what the page shows ------------------------------------------------------------------------------
    def version(self) -> int:
        return version(self.slack, len(self.echoes))

    def feed(self) -> dict[str, Any]:
        with self._lock:
            echoes = list(self.echoes)
        out = channel_feed(self.slack, self.channel, self.user, echoes, self.decisions())
        out["version"] = self.version()
        return out

    def decisions(self) -> dict[str, Decision]:
        """What each decided draft preview in the channel came to, by its message: the page reads the ticket from
        here, not from the wording of the bot's reply."""
        joined = {e["detail"].get("draft") for e in self.local.audit.entries("filing")
                  if e["detail"].get("created") is False}
        return {d.message_ts: Decision(outcome="discarded" if d.status == DraftState.DISCARDED
                                       else "joined" if d.id in joined else "filed", ticket=d.ticket_id)
                for d in self.state.decided_drafts(self.channel)}

    def wait(self, after: int, timeout: float = LONG_POLL_S) -> None:
        """Return once something changed since `after` (or after `timeout`)."""
        deadline = time.monotonic() + timeout
        while self.version() == after and time.monotonic() < deadline and not self._closed.is_set():
            self.slack.wait_for(lambda _: self.version() != after, timeout=min(0.25, deadline - time.monotonic()))

    def info(self) -> dict[str, Any]:
        return {"user": self.user, "name": self.slack.users.get(self.user, self.user), "channel": self.channel,
                "channel_name": self.channel_name, "bot": BOT_USER, "nodes": self.nodes}

    def _file_message(self, file_id: str) -> Message:
        found = next((m for m in list(self.slack.messages) if file_id in m.files), None)
        if found is None:
            raise ConsoleError(f"no message shares file {file_id}")
        return found

    def topology(self, file_id: str) -> dict[str, Any]:
        """The clickable topology behind a picture the bot posted."""
        message = self._file_message(file_id)
        node = self.slack.files[file_id].name.rsplit(".", 1)[0]
        summary = summary_for_file(self.slack, message)
        analysis = analysis_of(summary) if summary is not None else latest_analysis(self.state, node)
        diagnosis = self.state.analysis(analysis) if analysis is not None else None
        if diagnosis is None or analysis is None:
            raise ConsoleError(f"no analysis of {node} behind file {file_id}")
        assert self.local.app is not None
        return topology_view(self.local.app.services.source.drawable(diagnosis), analysis, summary)

    # -- what the person does -----------------------------------------------------------------------------
    def _echo_ts(self, n: int) -> str:
        """A ts just after the newest message, so the echo sorts where the person typed it."""
        latest = max((m.ts for m in list(self.slack.messages)), default="1800000000.000000")
        return f"{latest}{n}"

    def _echo(self, text: str, *, user: str, n: int, blocks: list[dict[str, Any]] | None = None,
              thread_ts: str | None = None, ts: str | None = None) -> None:
        with self._lock:
            self.echoes.append(Echo(ts or self._echo_ts(n), text, user, blocks or [], thread_ts))

    def send(self, text: str, thread_ts: str | None = None) -> dict[str, Any]:
        """A line typed in the message box: a slash command, a mention, or a message (a paste in a thread)."""
        text = text.strip()
        if not text:
            raise ConsoleError("nothing to send")
        kw: dict[str, Any] = {"user": self.user, "channel": self.channel}
        if text.startswith("/"):
            command, _, args = text.partition(" ")
            base = self._echo_ts(0)
            self._echo(text, user=self.user, n=1, ts=base + "1")
            if command != COMMAND:
                self._echo(f"`{command}` is not a command here; try `{COMMAND} help`.", user=BOT_USER, n=2,
                           ts=base + "2")
                return {"status": 404}
            sent = self.local.injector.command(args.strip(), **kw)
            self._ack_echo(sent, base + "2")
            return {"status": sent.status}
        if MENTION in text:
            sent = self.local.injector.mention(text.replace(MENTION, "", 1).strip(), thread_ts=thread_ts, **kw)
        else:
            sent = self.local.injector.message(text, thread_ts=thread_ts, **kw)
        return {"status": sent.status}

    def _ack_echo(self, sent: Sent, ts: str) -> None:
        """Slack shows a command's ack body to its sender alone."""
        if sent.status != 200:
            self._echo(f"The app answered HTTP {sent.status}.", user=BOT_USER, n=2, ts=ts)
            return
        try:
            body = sent.json() or {}
        except json.JSONDecodeError:
            body = {"text": sent.body}
        if body.get("text") or body.get("blocks"):
            self._echo(str(body.get("text") or ""), user=BOT_USER, n=2, blocks=body.get("blocks"), ts=ts)

    def act(self, message_ts: str, action_id: str, option: str | None = None) -> dict[str, Any]:
        """Click an element of a message the bot posted: the block action Slack would send for it."""
        message = self.slack.find(message_ts)
        if message is None:
            raise ConsoleError(f"no message {message_ts}")
        for block in message.blocks:
            for element in block.get("elements", []) if block.get("type") == "actions" else []:
                if element.get("action_id") == action_id:
                    action = self._action(element, str(block.get("block_id", "")), option)
                    sent = self.local.injector.action(action, user=self.user, channel=message.channel,
                                                      message_ts=message.ts, thread_ts=message.thread_ts)
                    return {"status": sent.status}
        raise ConsoleError(f"message {message_ts} has no element {action_id!r} (already decided?)")

    @staticmethod
    def _action(element: dict[str, Any], block_id: str, option: str | None) -> dict[str, Any]:
        """The `actions[0]` of a block_actions payload, as Slack builds it from the element."""
        action = {k: v for k, v in element.items() if k not in ("options", "placeholder", "confirm")}
        action["block_id"] = block_id
        if element.get("type") == "static_select":
            chosen = next((o for o in element.get("options", []) if o.get("value") == option), None)
            if chosen is None:
                raise ConsoleError(f"{element.get('action_id')} has no option {option!r}")
            action["selected_option"] = chosen
        return action


def _json_body(request_body: bytes) -> dict[str, Any]:
    try:
        data = json.loads(request_body or b"{}")
    except json.JSONDecodeError as exc:
        raise ConsoleError(f"the request body is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ConsoleError("the request body must be a JSON object")
    return data


def console_app(console: Console) -> Starlette:
    """The ASGI app: the page and its static files, the feed, files, topology, send and act."""

    def page(_: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-store"})

    def info(_: Request) -> Response:
        return JSONResponse(console.info())

    def feed(request: Request) -> Response:
        after = request.query_params.get("after")
        if after is not None and after.lstrip("-").isdigit():
            console.wait(int(after))
        return JSONResponse(console.feed())

    def file(request: Request) -> Response:
        f = console.slack.files.get(request.path_params["file_id"])
        if f is None or f.content is None:
            return Response("not found", status_code=404)
        media = "image/png" if f.name.endswith(".png") else "application/octet-stream"
        return Response(f.content, media_type=media)

    async def call(request: Request, fn: Callable[[dict[str, Any]], dict[str, Any]]) -> Response:
        """Run `fn(json body)` off the event loop (it waits on the bot); a ConsoleError is a 400."""
        try:
            data = _json_body(await request.body()) if request.method == "POST" else dict(request.path_params)
            return JSONResponse(await run_in_threadpool(fn, data))
        except ConsoleError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)

    async def send(request: Request) -> Response:
        return await call(request, lambda d: console.send(str(d.get("text", "")), d.get("thread_ts")))

    async def act(request: Request) -> Response:
        return await call(request, lambda d: console.act(str(d.get("message_ts", "")), str(d.get("action_id", "")),
                                                         d.get("option")))

    async def topology(request: Request) -> Response:
        return await call(request, lambda d: console.topology(str(d["file_id"])))

    return Starlette(routes=[
        Route("/", page),
        Route("/api/info", info),
        Route("/api/feed", feed),
        Route("/api/topology/{file_id}", topology),
        Route("/api/send", send, methods=["POST"]),
        Route("/api/action", act, methods=["POST"]),
        Route("/files/{file_id}/{name}", file),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ])
