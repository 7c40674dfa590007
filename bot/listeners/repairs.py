"""A filed ticket's "Report repair" button: the repair is done, so the ticket waits in verifying while the bot
watches its part. Only those who may file may report a repair; the reply goes in the ticket's thread, and a repeat
press's only to the person who pressed it."""

from __future__ import annotations

from typing import Any

from slack_bolt import Ack, App, Respond
from slack_sdk import WebClient

from diagnostics import FabricbotError

from .. import blocks
from ..lifecycle import post_text, report_repair, retire_repair_button
from ..mrkdwn import esc
from ..replies import SLACK_FAILURES
from ..services import Services
from ..workflow.states import TicketState
from .clicks import Click, click, queued
from .filing import CannotCheck, FilingRights


def reported(services: Services, rights: FilingRights, client: WebClient, at: Click, ticket_id: str) -> None:
    """The work behind one click."""
    try:
        allowed = rights.allowed(client, at.user, at.channel)
    except CannotCheck as exc:
        at.reply.tell(str(exc))
        return
    if not allowed:
        services.record("denied", actor=at.user, subject=f"ticket {ticket_id}", reason="not allowed to report a repair")
        at.reply.tell("Reporting a repair is limited to the on-call channels and groups, as filing is.")
        return
    closed = services.tracker.get(ticket_id)
    if closed is not None and closed.status == TicketState.CLOSED:  # closed where the message was not updated
        retire_repair_button(services, client, closed)
        at.reply.tell(f"*{esc(ticket_id)}* is closed: its repair was verified, so there is no repair to report. "
                      "A new failure of the part files a new ticket.")
        return
    try:
        text, changed = report_repair(services, ticket_id=ticket_id, user=at.user)
    except FabricbotError as exc:
        at.reply.tell(f"I could not report that repair: {esc(exc)}")
        return
    if not changed:  # a repeat press: the thread already says it, so only the presser hears it again, by the
        at.reply.tell(text)  # click's response URL (ephemeral; https://api.slack.com/interactivity/handling)
        return
    try:
        post_text(client, at.channel, text, thread_ts=at.thread)
    except SLACK_FAILURES as exc:
        at.reply.slack_failed(exc, "saying the repair was reported")


def register(app: App, services: Services) -> None:
    rights = FilingRights(services)

    def on_repair(ack: Ack, body: dict[str, Any], action: dict[str, Any], client: WebClient,
                  respond: Respond) -> None:
        ack()
        at = click(body, client, respond)
        ticket_id = str(action.get("value") or "")
        shown = str((body.get("message") or {}).get("text") or "")
        if not ticket_id or ticket_id not in shown:  # a value edited to another ticket than the message names
            services.record("denied", actor=at.user, subject=f"message {at.ts}", reason="button on another ticket")
            services.notices.offer(at.reply.tell, "That button does not belong to the ticket this message shows, "
                                                  "so I did nothing.")
            return
        queued(services, at, reported, services, rights, client, at, ticket_id)

    app.action(blocks.REPAIR_ACTION)(on_repair)
