"""Telling a person what went wrong: one clear message per Slack error code, sent where they will see it.

A slash command or a button has a response URL, which works even where the bot cannot post (not in the channel, a
revoked token); an event has none, so the bot tries an ephemeral message. Error codes are those the Web API methods
document (https://docs.slack.dev/reference/methods/chat.postMessage and the others the bot calls).
"""

from __future__ import annotations

import errno
import logging
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from http.client import HTTPException
from typing import Any
from urllib.error import HTTPError, URLError

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from .mrkdwn import esc

log = logging.getLogger("fabricbot")

_TOKEN = ("My Slack token is not valid any more (`{code}`): an admin must reinstall the app or update "
          "SLACK_BOT_TOKEN.")
_MESSAGES = {
    "not_in_channel": "I am not a member of this channel, so I cannot post here: invite me with `/invite @fabricbot` "
                      "and try again.",
    "channel_not_found": "I cannot see this channel (a private channel or a conversation I am not in): invite me, "
                         "or ask in a channel I am in.",
    "is_archived": "This channel is archived, so I cannot post in it.",
    "ratelimited": "Slack is rate-limiting me right now and still refused after I waited and retried; try again in "
                   "a minute.",
    "msg_too_long": "My answer was longer than Slack allows in one message, so it was not posted; please report this "
                    "with what you asked.",
    "msg_blocks_too_long": "My answer held more text than Slack allows in one message (`msg_blocks_too_long`), so it "
                           "was not posted; asking again gets the same refusal, so please report this with what you "
                           "asked.",
    "invalid_blocks": "Slack refused the layout of my answer (`invalid_blocks`), so it was not posted; please report "
                      "this with what you asked.",
    "restricted_action": "This workspace does not let me post here (`restricted_action`); ask a workspace admin.",
    "no_permission": "I am not allowed to do that here (`no_permission`); ask a workspace admin.",
    "message_not_found": "The message I meant to update is gone (`message_not_found`).",
    "cant_update_message": "Slack would not let me update that message (`cant_update_message`).",
    **{code: _TOKEN for code in ("invalid_auth", "not_authed", "token_revoked", "token_expired", "account_inactive")},
}


def whole_ticket_not_attached(name: str) -> str:
    """Said when a long ticket's full text could not be uploaded beside its preview."""
    return (f"The preview shows the start of the ticket, but its whole text (`{esc(name)}`) could not be attached; "
            "filing it still records all of it in the tracker.")


# What a call to Slack may raise besides an answer: Slack's refusal (SlackApiError), the SDK's own failures
# (SlackClientError: a bad request it would not send, an upload URL answering an error), the network (OSError:
# refused, reset, timed out, a name that does not resolve) and a cut response (HTTPException, e.g. IncompleteRead).
SLACK_FAILURES: tuple[type[Exception], ...] = (SlackApiError, SlackClientError, OSError, HTTPException)
CONTENT_CODES = frozenset({"msg_too_long", "msg_blocks_too_long", "invalid_blocks"})  # asking again fails alike


def from_slack(exc: BaseException) -> bool:
    """Whether a failure among SLACK_FAILURES came from the way to Slack, not from this machine: an OSError naming
    a file, or a disk's or the process's own errno (no space, an I/O error, too many open files), is the store's."""
    if not isinstance(exc, OSError) or isinstance(exc, (ConnectionError, TimeoutError, URLError)):
        return True
    return exc.filename is None and exc.errno not in _LOCAL_ERRNOS


_LOCAL_ERRNOS = frozenset({errno.ENOSPC, errno.EIO, errno.EMFILE, errno.ENFILE, errno.EROFS, errno.EDQUOT,
                           errno.ENOENT, errno.EACCES, errno.EPERM})


def failed_locally(exc: BaseException) -> str:
    """What is said when the bot's own side failed (its store, its disk, a bug), never blamed on Slack."""
    if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
        return ("the store's database is busy: another writer (an ingest, a compaction) held it past the wait; "
                "try again in a minute")
    if isinstance(exc, OSError):
        where = f" ({exc.filename})" if exc.filename else ""
        return f"reading or writing the store failed{where}: {exc.strerror or exc}; tell whoever runs the bot"
    return f"something failed on my side ({type(exc).__name__}: {exc}); tell whoever runs the bot"


def refusal(exc: BaseException) -> str:
    """Slack's error code with what its answer says of the cause: for `invalid_blocks` and the like, which block and
    which limit (`response_metadata.messages`, `errors`), so a log names the limit hit, not the code alone."""
    code = error_code(exc)
    if not isinstance(exc, SlackApiError):
        return code
    said = [str(m) for m in (exc.response.get("response_metadata") or {}).get("messages", [])]
    said += [str(e) for e in exc.response.get("errors") or []]
    return f"{code} ({'; '.join(said)[:1000]})" if said else code


def error_code(exc: BaseException) -> str:
    """Slack's error code, or a word for a failure that never reached an answer (`timeout`, `network_error`)."""
    if isinstance(exc, SlackApiError):
        return str(exc.response.get("error") or "unknown_error")
    if isinstance(exc, HTTPError):  # a non-API URL (an upload, a download) answering an error status
        return f"http_{exc.code}"
    if isinstance(exc, TimeoutError) or "timed out" in str(exc).lower():
        return "timeout"
    if isinstance(exc, (OSError, HTTPException)):
        return "network_error"
    return "client_error"


def explain(exc: BaseException) -> str:
    """What a person should read for this failure: what happened and what to do."""
    if not isinstance(exc, SlackApiError):
        code = error_code(exc)
        if code == "timeout":
            return "Slack did not answer in time (`timeout`), so that did not finish; try again in a minute."
        if code.startswith("http_"):
            return (f"Slack's file service answered HTTP {esc(code.removeprefix('http_'))}, so that did not finish; "
                    "try again in a minute.")
        if code == "network_error":
            return ("I could not reach Slack (`network_error`: the connection failed or was cut), so that did not "
                    "finish; try again in a minute.")
        return f"Slack's client refused the request (`{esc(type(exc).__name__)}`: {esc(str(exc)[:200])}); try again."
    code = error_code(exc)
    if code == "missing_scope":
        needed = esc(str(exc.response.get("needed") or "a"))
        return (f"My Slack app lacks the `{needed}` scope: an admin must add it (slack/manifest.json lists every "
                "scope) and reinstall the app.")
    template = _MESSAGES.get(code, "Slack refused the request (`{code}`); try again, and tell the bot's admins if it "
                                   "goes on.")
    return template.format(code=esc(code))


@dataclass
class Replier:
    """Where one request's person hears back: its response URL when it has one, else an ephemeral message."""

    client: WebClient
    user: str
    channel: str
    thread_ts: str | None = None
    respond: Callable[..., Any] | None = None

    def tell(self, text: str) -> None:
        """Say `text` to the person alone: through the response URL, checking its answer (a spent or expired URL
        answers an error status, it does not raise), else an ephemeral message; if even that fails, log it."""
        if self.respond is not None:
            try:
                answer = self.respond(text=text, response_type="ephemeral", replace_original=False)
                status = getattr(answer, "status_code", 200)
                if status == 200:
                    return
                log.info("fabricbot: the response URL answered %s (%s); telling %s by an ephemeral message",
                         status, str(getattr(answer, "body", ""))[:100], self.user)
            except SLACK_FAILURES as exc:
                log.info("fabricbot: the response URL failed (%s); telling %s by an ephemeral message",
                         error_code(exc), self.user)
        try:
            self.client.chat_postEphemeral(channel=self.channel, user=self.user, text=text, thread_ts=self.thread_ts)
        except SLACK_FAILURES as exc:
            log.warning("fabricbot: could not tell %s in %s: %s (%s)", self.user, self.channel, text,
                        error_code(exc))

    def slack_failed(self, exc: BaseException, doing: str) -> None:
        """Tell the person what did not finish (`doing`: a picture under a summary already posted is not the
        summary) and why Slack refused it, and log it once."""
        log.warning("fabricbot: Slack refused %s for %s in %s: %s", doing, self.user, self.channel, refusal(exc))
        self.tell(f"{doing[:1].upper()}{doing[1:]} did not finish. {explain(exc)}")
