"""A mock Slack Web API on loopback: the methods fabricbot uses, with state, and a record of every call.

Point slack_sdk's WebClient at `MockSlack.api_url` (its `base_url`). Messages, threads, files and
ephemeral replies are kept so tests and the demo can read the conversation back. It fails as Slack does
(`faults`: rate limits, revoked tokens, missing scopes, channels the bot is not in, an answer too late or cut off;
a file download without a token that may read it is sent to the sign-in page), checks blocks as Slack does
(`invalid_blocks`, see blockkit.py), refuses text over Slack's 40,000 characters (`msg_too_long`) and blocks over
its whole-message limit (`msg_blocks_too_long`), a picture's alt text over 1,000 characters (`alt_txt_too_large`),
and will not edit a message the bot did not post (`cant_update_message`).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, quote

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from .blockkit import MAX_BLOCKS_TEXT, block_errors, blocks_text_length, shown, special_tokens
from .slack_faults import Failure, Faults

BOT_TOKEN = "xoxb-local-mock"
APP_TOKEN = "xapp-local-mock"  # the app-level token Socket Mode opens its connection with
BOT_USER = "UFABRICBOT"
TEAM = "TLOCAL"
MAX_TEXT = 40_000  # https://api.slack.com/changelog/2018-04-truncating-really-long-messages
MAX_ALT_TXT = 1000  # files.getUploadURLExternal's `alt_txt_too_large`: "longer than the limit of 1000 character"
POSTING = {"chat.postMessage", "chat.update", "chat.postEphemeral"}
# A response URL may be used 5 times within 30 minutes of the interaction that gave it
# (https://docs.slack.dev/interactivity/handling-user-interaction#message_responses). What Slack answers past that is
# not documented; the mock answers 404 with `used_url` or `expired_url` as the body (assumed).
RESPONSE_URL_USES = 5
RESPONSE_URL_TTL_S = 30 * 60


@dataclass
class Call:
    """One request the mock received (tokens left out)."""

    method: str
    params: dict[str, Any]
    at: float = field(default_factory=time.monotonic)


@dataclass
class Message:
    channel: str
    ts: str
    text: str
    user: str
    blocks: list[dict[str, Any]] = field(default_factory=list)
    thread_ts: str | None = None
    ephemeral_to: str | None = None  # the user who alone sees it
    files: list[str] = field(default_factory=list)
    edits: int = 0

    @property
    def shown(self) -> str:
        """The text as people read it (escapes decoded)."""
        return shown(self.text)

    @property
    def shown_blocks(self) -> str:
        """The blocks as JSON, escapes decoded: what a test looks for a fact in."""
        return shown(json.dumps(self.blocks, ensure_ascii=False))


@dataclass
class File:
    id: str
    name: str
    title: str
    length: int
    content: bytes | None = None
    channel: str | None = None
    thread_ts: str | None = None


class MockSlack:
    """State and routes of the mock; `app` is the Starlette app to serve, `base_url` set once it is served."""

    def __init__(self, *, users: dict[str, str] | None = None, usergroups: dict[str, list[str]] | None = None,
                 token: str = BOT_TOKEN, scopes: frozenset[str] | None = None) -> None:
        self.token = token
        self.faults = Faults(scopes=scopes)
        self.users = users or {}
        self.usergroups = usergroups or {}
        self.calls: list[Call] = []
        self.messages: list[Message] = []
        self.files: dict[str, File] = {}
        self.base_url = ""
        self._ts = itertools.count(1)
        self._ids = itertools.count(1)
        self._hooks = itertools.count(1)
        self.clock: Callable[[], float] = time.monotonic  # a test may move it on to expire response URLs
        self.hooks: dict[str, tuple[float, int]] = {}  # response URL id -> (issued at, uses)
        self._cond = threading.Condition()
        methods: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            "auth.test": self._auth_test, "chat.postMessage": self._post, "chat.update": self._update,
            "chat.postEphemeral": self._ephemeral, "files.getUploadURLExternal": self._get_upload_url,
            "files.completeUploadExternal": self._complete_upload, "files.info": self._file_info,
            "conversations.replies": self._replies, "users.info": self._user_info,
            "usergroups.users.list": self._usergroup_users,
        }
        self._methods = methods
        self.app = Starlette(routes=[
            Route("/api/{method}", self._api, methods=["GET", "POST"]),
            Route("/upload/{file_id}", self._upload, methods=["POST"]),
            Route("/files/{file_id}/{name}", self._download, methods=["GET"]),
            Route("/signin", self._sign_in, methods=["GET"]),
            Route("/response/{channel}/{user}/{hook}", self._response_url, methods=["POST"]),
        ])

    # -- reading back -------------------------------------------------------------------------------------
    @property
    def api_url(self) -> str:
        return f"{self.base_url}/api/"

    def response_url(self, channel: str, user: str) -> str:
        """A fresh response URL, as each slash command or click carries: 5 uses within 30 minutes."""
        with self._cond:
            hook = f"H{next(self._hooks):06d}"
            self.hooks[hook] = (self.clock(), 0)
        return f"{self.base_url}/response/{channel}/{user}/{hook}"

    def calls_to(self, method: str) -> list[Call]:
        with self._cond:
            return [c for c in self.calls if c.method == method]

    def wait_for(self, predicate: Callable[[MockSlack], bool], timeout: float = 120.0) -> bool:
        """Block until `predicate(self)` holds (re-checked after every call the mock receives); the limit only
        catches what never comes, so it is long enough for a busy machine."""
        with self._cond:
            return self._cond.wait_for(lambda: predicate(self), timeout=timeout)

    def thread(self, channel: str, ts: str) -> list[Message]:
        with self._cond:
            return [m for m in self.messages if m.channel == channel and (m.ts == ts or m.thread_ts == ts)]

    def find(self, ts: str) -> Message | None:
        with self._cond:
            return next((m for m in self.messages if m.ts == ts), None)

    def errors(self, method: str | None = None) -> list[str]:
        """The error codes the mock answered (to `method`, or to any call), in order."""
        with self._cond:
            return [str(c.params["error"]) for c in self.calls
                    if "error" in c.params and (method is None or c.method == method)]

    def specials(self) -> list[str]:
        """Every `<...>` token Slack would parse in what the bot posted: mentions, pings and links (mrkdwn only)."""
        with self._cond:
            return [tok for m in self.messages if m.user == BOT_USER for tok in special_tokens(m.text, m.blocks)]

    def user_message(self, channel: str, user: str, text: str, thread_ts: str | None = None) -> str:
        """A message a person posts (Slack then sends the app its event); returns its ts."""
        with self._cond:
            msg = Message(channel=channel, ts=self._next_ts(), text=text, user=user, thread_ts=thread_ts)
            self.messages.append(msg)
            self._cond.notify_all()
        return msg.ts

    def user_file(self, name: str, content: bytes, channel: str, user: str,
                  thread_ts: str | None = None) -> tuple[str, dict[str, Any]]:
        """A snippet or file a person shares; returns the message ts and the file as events describe it."""
        with self._cond:
            f = File(id=f"F{next(self._ids):08d}", name=name, title=name, length=len(content), content=content,
                     channel=channel, thread_ts=thread_ts)
            self.files[f.id] = f
            msg = Message(channel=channel, ts=self._next_ts(), text="", user=user, thread_ts=thread_ts,
                          files=[f.id])
            self.messages.append(msg)
            self._cond.notify_all()
            return msg.ts, self._file_json(f)

    # -- plumbing -----------------------------------------------------------------------------------------
    def _next_ts(self) -> str:
        return f"1800000000.{next(self._ts):06d}"

    def _record(self, method: str, params: dict[str, Any]) -> None:
        with self._cond:
            self.calls.append(Call(method, params))
            self._cond.notify_all()

    def _authorized(self, request: Request, params: dict[str, Any]) -> bool:
        header = request.headers.get("authorization", "")
        token = header.removeprefix("Bearer ").strip() or str(params.pop("token", ""))
        return token == self.token

    async def _params(self, request: Request) -> dict[str, Any]:
        params: dict[str, Any] = dict(request.query_params)
        if request.method == "POST":
            kind = request.headers.get("content-type", "")
            body = await request.body()
            if kind.startswith("application/json"):
                params.update(json.loads(body or b"{}"))
            else:  # slack_sdk sends the other methods form-encoded
                params.update(parse_qsl(body.decode("utf-8"), keep_blank_values=True))
        for key in ("blocks", "files", "attachments"):
            if isinstance(params.get(key), str):
                params[key] = json.loads(params[key])
        return params

    async def _api(self, request: Request) -> Response:
        method = request.path_params["method"]
        params = await self._params(request)
        if method == "apps.connections.open":
            return self._connections_open(request, params)
        if not self._authorized(request, params):
            self._record(method, {**params, "error": "invalid_auth"})
            return JSONResponse({"ok": False, "error": "invalid_auth"})
        handler = self._methods.get(method)
        if handler is None:
            self._record(method, {**params, "error": "unknown_method"})
            return JSONResponse({"ok": False, "error": "unknown_method"})
        failure = self.faults.take(method, params) or self._content_failure(method, params)
        if failure is not None:
            self._record(method, {**params, "error": failure.body["error"]})
            await asyncio.sleep(failure.delay)
            if failure.cut:
                return Response(b'{"ok":', media_type="application/json", headers={"content-length": "4096"})
            return JSONResponse(failure.body, status_code=failure.status, headers=failure.headers)
        with self._cond:
            result = handler(params)
        self._record(method, params if result.get("ok") else {**params, "error": result.get("error")})
        return JSONResponse(result)

    def _connections_open(self, request: Request, params: dict[str, Any]) -> Response:
        """Socket Mode's WebSocket URL, for the app-level token only: a bot token there is `not_allowed_token_type`
        (node-slack-sdk #1851), any other `invalid_auth`. The URL leads nowhere: the mock serves no WebSocket."""
        token = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        error = None if token == APP_TOKEN else "not_allowed_token_type" if token.startswith("xoxb-") else \
            "invalid_auth"
        self._record("apps.connections.open", {"error": error} if error else {})
        if error:
            return JSONResponse({"ok": False, "error": error})
        return JSONResponse({"ok": True, "url": "wss://local.slack.invalid/link/?ticket=mock"})

    @staticmethod
    def _content_failure(method: str, params: dict[str, Any]) -> Failure | None:
        """What Slack refuses in a message itself: text too long, blocks it cannot lay out, nothing to show."""
        if method not in POSTING:
            return None
        if len(str(params.get("text") or "")) > MAX_TEXT:
            return Failure({"ok": False, "error": "msg_too_long"})
        if "blocks" in params:
            errors = block_errors(params["blocks"])
            if errors:
                return Failure({"ok": False, "error": "invalid_blocks", "errors": errors,
                                "response_metadata": {"messages": [f"[ERROR] {e}" for e in errors]}})
            if blocks_text_length(params["blocks"]) > MAX_BLOCKS_TEXT:
                return Failure({"ok": False, "error": "msg_blocks_too_long"})
        elif method != "chat.update" and not params.get("text"):
            return Failure({"ok": False, "error": "no_text"})
        return None

    # -- Web API methods (called under the lock) ----------------------------------------------------------
    def _auth_test(self, _: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "url": "https://local.slack.invalid/", "team": "local", "user": "fabricbot",
                "team_id": TEAM, "user_id": BOT_USER, "bot_id": "BFABRICBOT"}

    def _message_json(self, m: Message) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "message", "ts": m.ts, "text": m.text, "user": m.user, "blocks": m.blocks}
        if m.thread_ts:
            out["thread_ts"] = m.thread_ts
        if m.files:
            out["files"] = [self._file_json(self.files[f]) for f in m.files]
        return out

    def _post(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = str(params.get("channel", ""))
        if not channel:
            return {"ok": False, "error": "channel_not_found"}
        msg = Message(channel=channel, ts=self._next_ts(), text=str(params.get("text") or ""), user=BOT_USER,
                      blocks=list(params.get("blocks") or []), thread_ts=params.get("thread_ts") or None)
        self.messages.append(msg)
        return {"ok": True, "channel": channel, "ts": msg.ts, "message": self._message_json(msg)}

    def _update(self, params: dict[str, Any]) -> dict[str, Any]:
        msg = next((m for m in self.messages if m.ts == params.get("ts") and m.channel == params.get("channel")),
                   None)
        if msg is None:
            return {"ok": False, "error": "message_not_found"}
        if msg.user != BOT_USER or msg.ephemeral_to is not None:  # a person's message, or one only they see
            return {"ok": False, "error": "cant_update_message"}
        msg.text = str(params.get("text") or msg.text)
        if "blocks" in params:
            msg.blocks = list(params.get("blocks") or [])
        msg.edits += 1
        return {"ok": True, "channel": msg.channel, "ts": msg.ts, "text": msg.text}

    def _ephemeral(self, params: dict[str, Any]) -> dict[str, Any]:
        msg = Message(channel=str(params.get("channel")), ts=self._next_ts(), text=str(params.get("text") or ""),
                      user=BOT_USER, blocks=list(params.get("blocks") or []),
                      thread_ts=params.get("thread_ts") or None, ephemeral_to=str(params.get("user")))
        self.messages.append(msg)
        return {"ok": True, "message_ts": msg.ts}

    def _file_json(self, f: File) -> dict[str, Any]:
        return {"id": f.id, "name": f.name, "title": f.title, "size": f.length, "mimetype": _mimetype(f.name),
                "url_private": f"{self.base_url}/files/{f.id}/{f.name}",
                "url_private_download": f"{self.base_url}/files/{f.id}/{f.name}"}

    def _get_upload_url(self, params: dict[str, Any]) -> dict[str, Any]:
        if len(str(params.get("alt_txt") or "")) > MAX_ALT_TXT:
            return {"ok": False, "error": "alt_txt_too_large"}
        file_id = f"F{next(self._ids):08d}"
        name = str(params.get("filename") or "file")
        self.files[file_id] = File(id=file_id, name=name, title=name, length=int(params.get("length") or 0))
        return {"ok": True, "upload_url": f"{self.base_url}/upload/{file_id}", "file_id": file_id}

    def _complete_upload(self, params: dict[str, Any]) -> dict[str, Any]:
        entries = params.get("files") or []
        done = []
        for entry in entries:
            f = self.files.get(entry.get("id", ""))
            if f is None or f.content is None:
                return {"ok": False, "error": "file_not_found" if f is None else "file_upload_incomplete"}
            f.title = entry.get("title") or f.title
            done.append(f)
        channel = params.get("channel_id") or params.get("channels")
        if channel:
            msg = Message(channel=str(channel), ts=self._next_ts(), text=str(params.get("initial_comment") or ""),
                          user=BOT_USER, thread_ts=params.get("thread_ts") or None, files=[f.id for f in done])
            self.messages.append(msg)
            for f in done:
                f.channel, f.thread_ts = msg.channel, msg.thread_ts
        return {"ok": True, "files": [self._file_json(f) for f in done]}

    def _file_info(self, params: dict[str, Any]) -> dict[str, Any]:
        f = self.files.get(str(params.get("file")))
        if f is None:
            return {"ok": False, "error": "file_not_found"}
        return {"ok": True, "file": self._file_json(f)}

    def _replies(self, params: dict[str, Any]) -> dict[str, Any]:
        channel, ts = params.get("channel"), params.get("ts")
        found = [self._message_json(m) for m in self.messages
                 if m.channel == channel and m.ephemeral_to is None and (m.ts == ts or m.thread_ts == ts)]
        if not found:
            return {"ok": False, "error": "thread_not_found"}
        return {"ok": True, "messages": found, "has_more": False}

    def _user_info(self, params: dict[str, Any]) -> dict[str, Any]:
        user = str(params.get("user"))
        if user not in self.users:
            return {"ok": False, "error": "user_not_found"}
        return {"ok": True, "user": {"id": user, "name": self.users[user], "real_name": self.users[user],
                                     "is_bot": False, "tz": "UTC"}}

    def _usergroup_users(self, params: dict[str, Any]) -> dict[str, Any]:
        group = str(params.get("usergroup"))
        if group not in self.usergroups:
            return {"ok": False, "error": "no_such_subteam"}
        return {"ok": True, "users": list(self.usergroups[group])}

    # -- non-API endpoints --------------------------------------------------------------------------------
    async def _upload(self, request: Request) -> Response:
        file_id = request.path_params["file_id"]
        body = await request.body()  # step 2 of files_upload_v2 posts the raw bytes
        failure = self.faults.take("upload", {})  # e.g. Failure({...}, 500): the upload host failing
        if failure is not None:
            self._record("upload", {"file_id": file_id, "error": failure.body.get("error", "failed")})
            return Response("upload failed", status_code=failure.status)
        with self._cond:
            f = self.files.get(file_id)
            if f is not None:
                f.content = body
        self._record("upload", {"file_id": file_id, "bytes": len(body)})
        if f is None:
            return Response("no such upload", status_code=404)
        return Response(f"OK - {len(body)}", media_type="text/plain")

    async def _download(self, request: Request) -> Response:
        """A file's bytes for the bot token; otherwise, as Slack does, a redirect to its sign-in page (an HTML page
        when followed): no token, a wrong one, or one without files:read (bolt-js #2585; the scope case as
        nlink-jp/scli v1.7.2 found it)."""
        signed_in = request.headers.get("authorization", "") == f"Bearer {self.token}"
        if not signed_in or self.faults.take("url_private", {}) is not None:
            self._record("url_private", {"file_id": request.path_params["file_id"], "error": "sign_in"})
            return RedirectResponse(f"{self.base_url}/signin?redir={quote(request.url.path)}", status_code=302)
        f = self.files.get(request.path_params["file_id"])
        self._record("url_private", {"file_id": request.path_params["file_id"]})
        if f is None or f.content is None:
            return Response("not found", status_code=404)
        return Response(f.content, media_type=_mimetype(f.name))

    async def _sign_in(self, _: Request) -> Response:
        return HTMLResponse("<!DOCTYPE html><html><head><title>Sign in | Slack</title></head><body>Sign in to "
                            "local.slack.invalid</body></html>")

    async def _response_url(self, request: Request) -> Response:
        body = json.loads(await request.body() or b"{}")
        channel, user = request.path_params["channel"], request.path_params["user"]
        with self._cond:
            issued, uses = self.hooks.get(request.path_params["hook"], (float("-inf"), 0))
            spent = "used_url" if uses >= RESPONSE_URL_USES else \
                "expired_url" if self.clock() - issued > RESPONSE_URL_TTL_S else None
            if spent is None:
                self.hooks[request.path_params["hook"]] = (issued, uses + 1)
        if spent is not None:
            self._record("response_url", {"channel": channel, "user": user, **body, "error": spent})
            return Response(spent, status_code=404)
        refused = self._content_failure("chat.postMessage", body)
        if refused is not None:  # a response URL answers with a status and the error as plain text
            self._record("response_url", {"channel": channel, "user": user, **body, "error": refused.body["error"]})
            return Response(str(refused.body["error"]), status_code=400 if refused.status == 200 else refused.status)
        with self._cond:
            public = body.get("response_type") == "in_channel"
            self.messages.append(Message(channel=channel, ts=self._next_ts(), text=str(body.get("text") or ""),
                                         user=BOT_USER, blocks=list(body.get("blocks") or []),
                                         thread_ts=body.get("thread_ts"), ephemeral_to=None if public else user))
        self._record("response_url", {"channel": channel, "user": user, **body})
        return Response("ok")


def _mimetype(name: str) -> str:
    kinds = {"png": "image/png", "svg": "image/svg+xml", "pdf": "application/pdf", "gz": "application/gzip",
             "txt": "text/plain", "log": "text/plain", "csv": "text/csv", "json": "application/json"}
    return kinds.get(name.rsplit(".", 1)[-1].lower(), "application/octet-stream")
