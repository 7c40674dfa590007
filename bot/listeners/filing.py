"""File or discard a draft from its preview's buttons.

Filing is guarded: only the allowed channels and groups may decide; with two-person filing the approver is someone
other than who asked for the draft; a button acts only on the draft its own message shows; a draft is claimed
in one transaction (a double click files once; a crash leaves all or nothing) and the tracker returns the open
ticket for the same node and part (two drafts never make two tickets). A failed filing writes nothing; a refused
message update after a filing tells the person what was filed.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from slack_bolt import Ack, App, Respond
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from diagnostics.tickets import evidence_lines

from .. import blocks
from ..mrkdwn import esc, mention
from ..replies import SLACK_FAILURES, error_code, explain
from ..services import Services
from ..state import Draft
from ..workflow import filing as filing_
from ..workflow.cover import covering, standing
from ..workflow.tracker import Ticket
from .clicks import Click, click, queued

log = logging.getLogger("fabricbot")
USERGROUP_TTL_S = 60.0
# Errors that say the bot cannot read the groups at all (not that a person is outside them).
_CANNOT_LOOK = ("missing_scope", "invalid_auth", "not_authed", "token_revoked", "account_inactive", "ratelimited")


def joined(ticket: Ticket, slug: str, component: str, *, approver: str) -> str:
    """What an approval is told when the part (`slug`, named `component`) already has `ticket`: the ticket, who filed
    it, how it stands and what wider part it covers, each said in a sentence, and that the evidence joined it."""
    covers = esc(covering(ticket, slug, component))
    added = f"{mention(approver)}'s approval added this evidence to it."
    filed = f"filed by {mention(ticket.filed_by)}"
    wider = f"; it{covers}" if covers else ""
    return f":link: *{esc(ticket.id)}* ({filed}) {standing(ticket, mention)}{wider}. {added}"


def overtaken(services: Services, draft: Draft) -> str | None:
    """A warning for filing a draft whose part the node's readings newer than the draft's analysis show healthy
    again: the ticket stands on the person's word, never held up, but they should know before anyone is sent. None
    when no newer readings say so, or they cannot be read."""
    drafted = services.state.analysis(draft.analysis_id)
    if drafted is None or drafted.window_end is None:
        return None
    hours = drafted.window_asked_hours or drafted.window_hours  # judged as the draft was, on the newest readings
    try:
        newest = services.source.diagnose_rack(drafted.node_id) if drafted.rack is not None and \
            drafted.rack.rack_id == drafted.node_id else services.source.diagnose(drafted.node_id, window_hours=hours)
    except Exception as exc:  # advisory: the filing already stands, and says so
        log.warning("fabricbot: could not read %s's newest readings for draft %s: %s", drafted.node_id, draft.id, exc)
        return None
    if newest.window_end is None or newest.window_end <= drafted.window_end or \
            not newest.reads_clean(drafted.parts_of(draft.slug or draft.component)):
        return None
    return (f":warning: Readings newer than this draft's ({esc(newest.window_said())}) show {esc(draft.component)} "
            "no longer failing: check that it still needs the repair before anyone is sent.")


class CannotCheck(Exception):
    """The filing rights could not be looked up; the message says why."""


class FilingRights:
    """Who may file: the settings' channels, or members of its user groups (looked up, cached a minute)."""

    def __init__(self, services: Services) -> None:
        self.settings = services.settings
        self._members: dict[str, tuple[float, frozenset[str]]] = {}

    def groups_of(self, client: WebClient, user: str) -> frozenset[str]:
        found = set()
        for group in self.settings.filing_usergroups:
            cached = self._members.get(group)
            if cached is None or time.monotonic() - cached[0] > USERGROUP_TTL_S:
                try:
                    users = frozenset(client.usergroups_users_list(usergroup=group).get("users") or [])
                except SLACK_FAILURES as exc:
                    if not isinstance(exc, SlackApiError) or error_code(exc) in _CANNOT_LOOK:  # looked again next
                        raise CannotCheck(f"I cannot check who may file: {explain(exc)}") from None
                    users = frozenset()  # a group that is gone: nobody is in it
                cached = self._members[group] = (time.monotonic(), users)
            if user in cached[1]:
                found.add(group)
        return frozenset(found)

    def allowed(self, client: WebClient, user: str, channel: str) -> bool:
        groups = self.groups_of(client, user) if self.settings.filing_usergroups else frozenset()
        return self.settings.may_file_in(channel, groups)


def decide(services: Services, rights: FilingRights, client: WebClient, at: Click, action_id: str, draft_id: int,
           previous: list[dict[str, Any]]) -> None:
    """The work behind one File or Discard click."""
    filing = action_id == blocks.FILE_ACTION
    try:
        allowed = rights.allowed(client, at.user, at.channel)
    except CannotCheck as exc:
        at.reply.tell(str(exc))
        return
    if not allowed:
        services.record("denied", actor=at.user, subject=f"draft {draft_id}", reason="not allowed to file",
                        action=action_id, channel=at.channel)
        at.reply.tell("You can look at drafts here, but filing and discarding are limited to the on-call channels "
                      "and groups.")
        return
    current = services.state.draft(draft_id)
    if current is None or current.message_ts != at.ts:
        services.record("denied", actor=at.user, subject=f"draft {draft_id}", reason="button on another message")
        at.reply.tell("That button does not belong to the draft this message shows, so I did nothing.")
        return
    if filing and services.settings.two_person_filing and current.requested_by == at.user:
        services.record("denied", actor=at.user, subject=f"draft {draft_id}", reason="two-person filing")
        at.reply.tell("Two-person filing is on: someone other than you, who asked for this draft, must approve it.")
        return

    def evidence(draft: Draft) -> list[str]:
        diagnosis = services.state.analysis(draft.analysis_id)
        when = services.state.analysis_at(draft.analysis_id) or services.clock().isoformat(timespec="seconds")
        return evidence_lines(diagnosis, draft.component, when, draft.analysis_id) if diagnosis else []

    def parts(draft: Draft) -> list[str]:
        diagnosis = services.state.analysis(draft.analysis_id)
        return diagnosis.parts_of(draft.slug) if diagnosis else [draft.slug]

    def wider(draft: Draft) -> str | None:
        diagnosis = services.state.analysis(draft.analysis_id)
        return diagnosis.wider_owner(draft.slug) if diagnosis else None

    try:
        decision = filing_.decide(state=services.state, tracker=services.tracker, record=services.record,
                                  draft_id=draft_id, actor=at.user, filing=filing, evidence=evidence, parts=parts,
                                  wider=wider)
    except Exception as exc:  # the tracker refused: nothing was written, and the person hears why
        at.reply.tell(f"Filing failed, so the draft is still open: {esc(exc)}")
        raise
    if decision is None:
        current = services.state.draft(draft_id)
        state = "gone" if current is None else current.status
        extra = f" as {esc(current.ticket_id)}" if current and current.ticket_id else ""
        at.reply.tell(f"That draft is already {state}{extra}.")
        return
    filed = decision.result.ticket.id if decision.result is not None else None
    if decision.result is None:
        outcome = f":wastebasket: Discarded by {mention(at.user)}."
    else:
        result = decision.result
        ticket = result.ticket
        if not result.created:
            draft = decision.draft
            outcome = joined(ticket, draft.slug or draft.component, draft.component, approver=at.user)
        elif result.repeat_offender:
            outcome = (f":rotating_light: Filed *{esc(ticket.id)}* (approved by {mention(at.user)}): the "
                       f"{esc(result.repeat_offender)}, a repeat offender, escalated to replacing the GPU.")
        elif result.recurrence_of:
            outcome = (f":rotating_light: Filed *{esc(ticket.id)}* (approved by {mention(at.user)}): a recurrence of "
                       f"{esc(result.recurrence_of)}, escalated to replacement.")
        else:
            outcome = f":white_check_mark: Filed as *{esc(ticket.id)}*, approved by {mention(at.user)}."
        warning = overtaken(services, decision.draft)
        if warning is not None:
            outcome = f"{outcome}\n{warning}"
    try:
        client.chat_update(channel=at.channel, ts=at.ts, text=outcome,
                           blocks=blocks.decided_blocks(previous, outcome, filed))
    except SLACK_FAILURES as exc:  # what was decided stands; the person hears it, and why the message did not change
        at.reply.tell(f"{outcome} (I could not change the draft's message to say so: {explain(exc)})")
        try:  # the thread hears it too, or the next reviewer sees File still offered on a ticket already filed
            client.chat_postMessage(channel=at.channel, thread_ts=at.thread,
                                    text=f"{outcome} (the draft above could not be changed to say so; its buttons "
                                         "do nothing more)")
        except SLACK_FAILURES as again:
            at.reply.slack_failed(again, "saying the decision in the thread")


def register(app: App, services: Services) -> None:
    rights = FilingRights(services)

    def on_decide(ack: Ack, body: dict[str, Any], action: dict[str, Any], client: WebClient,
                  respond: Respond) -> None:
        ack()
        at = click(body, client, respond)
        try:
            draft_id = int(str(action.get("value")))
        except ValueError:
            services.record("denied", actor=at.user, subject=f"message {at.ts}", reason="bad draft id")
            services.notices.offer(at.reply.tell, "That button's value is not one I made, so I did nothing.")
            return
        previous = (body.get("message") or {}).get("blocks") or []
        queued(services, at, decide, services, rights, client, at, action["action_id"], draft_id, previous)

    app.action(blocks.FILE_ACTION)(on_decide)
    app.action(blocks.DISCARD_ACTION)(on_decide)
