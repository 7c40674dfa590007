"""Telling a person what went wrong: one clear message per Slack error code, sent where they will see it.

A slash command or a button has a response URL, which works even where the bot cannot post (not in the channel, a
revoked token); an event has none, so the bot tries an ephemeral message. Error codes are those the Web API methods
document (https://docs.slack.dev/reference/methods/chat.postMessage and the others the bot calls).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

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
    "invalid_blocks": "Slack refused the layout of my answer (`invalid_blocks`), so it was not posted; please report "
                      "this with what you asked.",
    "restricted_action": "This workspace does not let me post here (`restricted_action`); ask a workspace admin.",
    "no_permission": "I am not allowed to do that here (`no_permission`); ask a workspace admin.",
    "message_not_found": "The message I meant to update is gone (`message_not_found`).",
    "cant_update_message": "Slack would not let me update that message (`cant_update_message`).",
    **{code: _TOKEN for code in ("invalid_auth", "not_authed", "token_revoked", "token_expired", "account_inactive")},
}


def error_code(exc: SlackApiError) -> str:
    return str(exc.response.get("error") or "unknown_error")


def explain(exc: SlackApiError) -> str:
    """What a person should read for this Slack error: what happened and what to do."""
    code = error_code(exc)
    if code == "missing_scope":
        needed = esc(str(exc.response.get("needed") or "a"))
        return (f"My Slack app lacks the `{needed}` scope: an admin must add it (slack/manifest.yaml lists every "
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
        """Say `text` to the person alone; if even that fails, log it (there is nowhere else to say it)."""
        try:
            if self.respond is not None:
                self.respond(text=text, response_type="ephemeral", replace_original=False)
                return
            self.client.chat_postEphemeral(channel=self.channel, user=self.user, text=text, thread_ts=self.thread_ts)
        except (SlackApiError, OSError) as exc:
            log.warning("fabricbot: could not tell %s in %s: %s (%s)", self.user, self.channel, text, exc)

    def slack_failed(self, exc: SlackApiError, doing: str) -> None:
        """Tell the person why Slack refused `doing`, and log it once."""
        log.warning("fabricbot: Slack refused %s for %s in %s: %s", doing, self.user, self.channel, error_code(exc))
        self.tell(explain(exc))
