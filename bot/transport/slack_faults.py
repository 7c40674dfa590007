"""How the mock Slack fails, as Slack does: rate limits, revoked tokens, missing scopes, channels the bot cannot post
in, and errors a test injects for one method.

Slack answers a rate-limited call with HTTP 429, a `Retry-After` header (seconds) and `{"ok": false, "error":
"ratelimited"}` (https://docs.slack.dev/apis/web-api/rate-limits); every other failure is HTTP 200 with `ok: false`
and the method's error code (https://docs.slack.dev/reference/methods/chat.postMessage lists its own).
"""

from __future__ import annotations

import threading
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

# The bot token scope each Web API method the bot calls needs (each method's reference page names it). Downloading
# a file's `url_private` needs files:read too; auth.test needs none.
METHOD_SCOPES: dict[str, str | None] = {
    "auth.test": None,
    "chat.postMessage": "chat:write",
    "chat.update": "chat:write",
    "chat.postEphemeral": "chat:write",
    "files.getUploadURLExternal": "files:write",
    "files.completeUploadExternal": "files:write",
    "files.info": "files:read",
    "url_private": "files:read",
    "usergroups.users.list": "usergroups:read",
    "users.info": "users:read",
    "conversations.replies": "channels:history",
}
CHANNEL_METHODS = {"chat.postMessage", "chat.update", "chat.postEphemeral"}


@dataclass(frozen=True)
class Failure:
    """What the mock answers instead of the method's result."""

    body: dict[str, Any]
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds before answering: past the client's timeout, Slack not answering in time
    cut: bool = False  # the connection drops mid-answer (headers, then less of the body than they promise)

    @classmethod
    def stall(cls, seconds: float) -> Failure:
        """Slack taking `seconds` to answer, and then only an error (the call took no effect)."""
        return cls({"ok": False, "error": "internal_error"}, delay=seconds)

    @classmethod
    def dropped(cls) -> Failure:
        """The connection dropping mid-answer (slack_sdk raises http.client's IncompleteRead)."""
        return cls({"ok": False, "error": "connection_dropped"}, cut=True)


@dataclass
class Faults:
    """The failures the mock is set to give; every change and every taking happens under one lock."""

    scopes: frozenset[str] | None = None  # None: every scope granted
    revoked: bool = False
    outside: set[str] = field(default_factory=set)  # channels the bot is not a member of
    missing: set[str] = field(default_factory=set)  # channels that do not exist (or the bot cannot see)
    archived: set[str] = field(default_factory=set)
    _queued: dict[str, list[Failure]] = field(default_factory=lambda: defaultdict(list))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def rate_limit(self, method: str, *, times: int = 1, retry_after: int = 1) -> None:
        """The next `times` calls of `method` get HTTP 429 with Retry-After."""
        self.queue(method, Failure({"ok": False, "error": "ratelimited"}, 429, {"Retry-After": str(retry_after)}),
                   times)

    def fail(self, method: str, error: str, *, times: int = 1, **extra: Any) -> None:
        """The next `times` calls of `method` answer `error` (with `extra` fields, e.g. needed= for missing_scope)."""
        self.queue(method, Failure({"ok": False, "error": error, **extra}), times)

    def queue(self, method: str, failure: Failure, times: int) -> None:
        with self._lock:
            self._queued[method].extend([failure] * times)

    def take(self, method: str, params: dict[str, Any]) -> Failure | None:
        """The failure this call gets, if any: the token first, then queued ones, scopes, the channel."""
        if self.revoked:
            return Failure({"ok": False, "error": "token_revoked"})
        with self._lock:
            queued = self._queued.get(method)
            if queued:
                return queued.pop(0)
        needed = METHOD_SCOPES.get(method)
        if self.scopes is not None and needed is not None and needed not in self.scopes:
            return Failure({"ok": False, "error": "missing_scope", "needed": needed,
                            "provided": ",".join(sorted(self.scopes))})
        if method in CHANNEL_METHODS:
            return self.channel_failure(str(params.get("channel") or ""))
        return None

    def channel_failure(self, channel: str) -> Failure | None:
        """Why the bot cannot post in `channel`, as chat.postMessage says it."""
        if not channel or channel in self.missing:
            return Failure({"ok": False, "error": "channel_not_found"})
        if channel in self.archived:
            return Failure({"ok": False, "error": "is_archived"})
        if channel in self.outside:
            return Failure({"ok": False, "error": "not_in_channel"})
        return None
