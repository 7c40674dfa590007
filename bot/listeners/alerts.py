"""The storm incident's "Acknowledge incident" button: a person has seen the common cause, so the held per-node
alerts go out one by one from the next pass of the watch loop. Recorded in the audit trail with who and when."""

from __future__ import annotations

from typing import Any

from slack_bolt import Ack, App, Respond
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from ..alerts import ACK_ACTION, acknowledge
from ..services import Services
from .clicks import Click, click, queued


def acknowledged(services: Services, client: WebClient, at: Click, storm_id: int) -> None:
    try:
        storm = acknowledge(services, client, storm_id=storm_id, user=at.user,
                            oncall=services.settings.oncall_usergroup)
    except SlackApiError as exc:
        at.reply.slack_failed(exc, "updating the incident")
        return
    if storm is None:
        at.reply.tell("I know of no such incident, so I did nothing.")


def register(app: App, services: Services) -> None:
    def on_ack(ack: Ack, body: dict[str, Any], action: dict[str, Any], client: WebClient, respond: Respond) -> None:
        ack()
        at = click(body, client, respond)
        value = str(action.get("value") or "")
        if not value.isdigit():
            services.notices.offer(at.reply.tell, "That button names no incident, so I did nothing.")
            return
        queued(services, at, acknowledged, services, client, at, int(value))

    app.action(ACK_ACTION)(on_ack)
