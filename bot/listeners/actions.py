"""Buttons: draft a ticket for a finding, then file or discard the draft.

Filing is guarded twice: a draft is decided in one transaction (a double click files once; a crash leaves all or
nothing), and the tracker returns the open ticket for the same node and part (two drafts never make two tickets).
"""

from __future__ import annotations

import re
import time
from typing import Any

from slack_bolt import Ack, App
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from diagnostics import Diagnosis, FabricbotError

from .. import blocks
from .. import filing as filing_
from ..app import Services
from ..drafting import graph_for, ticket_priority
from ..state import Draft

USERGROUP_TTL_S = 60.0


def _where(body: dict[str, Any]) -> tuple[str, str, str, str]:
    """(user, channel, message ts, thread root ts) of an interaction."""
    container = body.get("container") or {}
    message = body.get("message") or {}
    channel = (body.get("channel") or {}).get("id") or container.get("channel_id", "")
    ts = container.get("message_ts") or message.get("ts", "")
    return body["user"]["id"], channel, ts, message.get("thread_ts") or ts


def _ephemeral(client: WebClient, channel: str, user: str, text: str, thread_ts: str | None = None) -> None:
    client.chat_postEphemeral(channel=channel, user=user, text=text, thread_ts=thread_ts)


def evidence_lines(diagnosis: Diagnosis, component: str, at: str, analysis_id: int) -> list[str]:
    """What a ticket keeps from one analysis; a later analysis adds its own lines, a repeat click none."""
    names = {component}
    if diagnosis.localization is not None and diagnosis.localization.component == component:
        names.update(diagnosis.localization.links)
    head = f"analysis {analysis_id} at {at}, {diagnosis.node_id}"
    lines = [f"{head}: {blocks.finding_line(f)[2:]}" for f in diagnosis.findings
             if f.component in names]
    if diagnosis.degradation_pct is not None:
        lines.append(f"{head}: step time {diagnosis.degradation_pct:+.1f}% against baseline")
    return lines


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
                except SlackApiError:
                    users = frozenset()
                cached = self._members[group] = (time.monotonic(), users)
            if user in cached[1]:
                found.add(group)
        return frozenset(found)

    def allowed(self, client: WebClient, user: str, channel: str) -> bool:
        groups = self.groups_of(client, user) if self.settings.filing_usergroups else frozenset()
        return self.settings.may_file_in(channel, groups)


def register(app: App, services: Services) -> None:
    rights = FilingRights(services)

    def ack_only(ack: Ack) -> None:
        ack()

    def draft(body: dict[str, Any], action: dict[str, Any], client: WebClient) -> None:
        user, channel, _, thread = _where(body)
        value = action.get("value") or (action.get("selected_option") or {}).get("value", "")
        target = blocks.DraftTarget.parse(value)
        diagnosis = services.state.analysis(target.analysis_id)
        if diagnosis is None:
            _ephemeral(client, channel, user, "That analysis is gone; run `/fabric` again.", thread)
            return
        ref = target.ref(diagnosis)
        component = ref.name if ref is not None else diagnosis.isolated_component
        slug = ref.slug if ref is not None else component
        at = services.clock().isoformat(timespec="seconds")
        existing = services.tracker.open_ticket(diagnosis.node_id, slug)
        if existing is not None:
            lines = evidence_lines(diagnosis, component, at, target.analysis_id)
            known = services.tracker.add_evidence(existing.id, lines, actor=user)
            services.record("draft", actor=user, subject=f"{diagnosis.node_id} / {component}",
                            outcome="points to open ticket", ticket=known.id)
            client.chat_postMessage(channel=channel, thread_ts=thread, text=(
                f"A ticket for {component} on `{diagnosis.node_id}` is already open: *{known.id}* "
                f"(filed by <@{known.filed_by}>). I added this analysis to its evidence."))
            return
        if not services.limiter.allow(user):
            services.record("denied", actor=user, subject=f"{diagnosis.node_id} / {component}",
                            reason="draft rate limit")
            _ephemeral(client, channel, user, f"You have drafted {services.settings.drafts_per_minute} tickets in "
                       "the last minute; try again shortly.", thread)
            return
        if services.drafter is None:
            _ephemeral(client, channel, user, "No ticket drafter is installed with this bot.", thread)
            return
        try:
            ticket = services.drafter.draft(diagnosis, component=component, graph=graph_for(diagnosis))
        except FabricbotError as exc:
            _ephemeral(client, channel, user, f"I could not draft that ticket: {exc}", thread)
            return
        markdown = ticket.to_markdown()
        drafted_by = str(getattr(ticket, "drafted_by", None) or "rules")
        draft_id = services.state.save_draft(
            analysis_id=target.analysis_id, node_id=diagnosis.node_id, component=component, slug=slug,
            markdown=markdown,
            priority=ticket_priority(ticket, diagnosis), drafted_by=drafted_by, channel=channel)
        services.record("draft", actor=user, subject=f"{diagnosis.node_id} / {component}", draft=draft_id,
                        drafted_by=drafted_by, priority=ticket_priority(ticket, diagnosis))
        posted = client.chat_postMessage(
            channel=channel, thread_ts=thread, text=f"Ticket draft for {component} on {diagnosis.node_id}",
            blocks=blocks.preview_blocks(draft_id=draft_id, node_id=diagnosis.node_id, component=component,
                                         markdown=markdown, drafted_by=drafted_by, requester=user))
        services.state.update_draft(draft_id, message_ts=str(posted["ts"]))

    def decide(body: dict[str, Any], action: dict[str, Any], client: WebClient) -> None:
        user, channel, ts, thread = _where(body)
        thread = thread if thread != ts else ""
        filing = action["action_id"] == blocks.FILE_ACTION
        draft_id = int(action["value"])
        if not rights.allowed(client, user, channel):
            services.record("denied", actor=user, subject=f"draft {draft_id}",
                            reason="not allowed to file", action=action["action_id"], channel=channel)
            _ephemeral(client, channel, user, "You can look at drafts here, but filing and discarding are limited "
                       "to the on-call channels and groups.", thread or None)
            return

        def evidence(draft: Draft) -> list[str]:
            diagnosis = services.state.analysis(draft.analysis_id)
            at = services.clock().isoformat(timespec="seconds")
            return evidence_lines(diagnosis, draft.component, at, draft.analysis_id) if diagnosis else []

        def parts(draft: Draft) -> list[str]:
            diagnosis = services.state.analysis(draft.analysis_id)
            return diagnosis.parts_of(draft.slug) if diagnosis else [draft.slug]

        decision = filing_.decide(state=services.state, tracker=services.tracker, record=services.record,
                                  draft_id=draft_id, actor=user, filing=filing, evidence=evidence, parts=parts)
        if decision is None:
            current = services.state.draft(draft_id)
            state = "gone" if current is None else current.status
            extra = f" as {current.ticket_id}" if current and current.ticket_id else ""
            _ephemeral(client, channel, user, f"That draft is already {state}{extra}.", thread or None)
            return
        if decision.result is None:
            outcome = f":wastebasket: Discarded by <@{user}>."
        else:
            result = decision.result
            ticket = result.ticket
            if not result.created:
                outcome = (f":link: Already open as *{ticket.id}* (filed by <@{ticket.filed_by}>); "
                           f"<@{user}>'s approval added this evidence to it.")
            elif result.recurrence_of:
                outcome = (f":rotating_light: Filed *{ticket.id}* (approved by <@{user}>): a recurrence of "
                           f"{result.recurrence_of}, escalated to replacement.")
            else:
                outcome = f":white_check_mark: Filed as *{ticket.id}*, approved by <@{user}>."
        previous = (body.get("message") or {}).get("blocks") or []
        client.chat_update(channel=channel, ts=ts, text=outcome, blocks=blocks.decided_blocks(previous, outcome))

    app.action(re.compile(rf"^{blocks.DRAFT_ACTION}:"))(ack=ack_only, lazy=[draft])
    app.action(re.compile(rf"^{blocks.DRAFT_LINK_ACTION}:"))(ack=ack_only, lazy=[draft])
    app.action(blocks.FILE_ACTION)(ack=ack_only, lazy=[decide])
    app.action(blocks.DISCARD_ACTION)(ack=ack_only, lazy=[decide])
