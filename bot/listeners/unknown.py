"""A click on a control no listener answers: a button of an older version of the bot, or an edited payload.

Unanswered, Bolt replies 404 and Slack shows the person a bare error mark beside the button; every click is
acknowledged instead and the person told why nothing happened. Registered after every other listener: Bolt runs the
first listener that matches.
"""

from __future__ import annotations

import re
from typing import Any

from slack_bolt import Ack, App, Respond
from slack_sdk import WebClient

from ..services import Services
from .clicks import click

ANY = re.compile(".*")


def register(app: App, services: Services) -> None:
    def on_unknown(ack: Ack, body: dict[str, Any], action: dict[str, Any], client: WebClient,
                   respond: Respond) -> None:
        ack()
        if action.get("url"):  # a link button: Slack opens the link itself and only asks for the acknowledgement
            return
        at = click(body, client, respond)
        name = str(action.get("action_id") or "")[:80]
        services.record("denied", actor=at.user, subject=f"message {at.ts}", reason=f"unknown control {name!r}")
        services.notices.offer(at.reply.tell, f"That control ({name or 'unnamed'}) is not one this bot answers, so "
                                              "I did nothing: it may be from an older version of the bot. Ask "
                                              "`/fabric` again for fresh buttons.")

    app.action(ANY)(on_unknown)
