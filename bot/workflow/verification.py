"""Watching repaired parts: each verifying ticket's part judged on the readings since its repair (the store's, or
whatever the bot's node source holds), then closed with the evidence when the soak held or reopened, escalated to
replacement, when the errors came back."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from diagnostics.analysis import Diagnostic, RepairCheck, RepairVerdict
from diagnostics.config import VerificationPolicy, load_verification

from ..nodes import NodeSource
from .filing import Record
from .states import TicketState
from .tracker import Ticket, Tracker


@dataclass(frozen=True)
class Verified:
    """One verifying ticket after a check: the ticket as it now stands, and the check that moved it (or not)."""

    ticket: Ticket
    check: RepairCheck


Check = Callable[[Ticket, VerificationPolicy], RepairCheck]
Diagnostics = Callable[[Ticket], Diagnostic | None]  # the post-repair diagnostic a technician reported, if any


def source_check(source: NodeSource, diagnostics: Diagnostics | None = None) -> Check:
    """A ticket's part judged on the node source's readings since its repair (the store's, or the run's own), with
    the post-repair diagnostic reported for it."""
    def check(ticket: Ticket, policy: VerificationPolicy) -> RepairCheck:
        assert ticket.repaired_at is not None
        return source.repair_check(node_id=ticket.node_id, parts=list(ticket.parts),
                                   repaired_at=datetime.fromisoformat(ticket.repaired_at), policy=policy,
                                   diagnostic=diagnostics(ticket) if diagnostics else None)

    return check


def reported_diagnostics(entries: Iterable[Mapping[str, Any]]) -> Diagnostics:
    """Each ticket's latest post-repair diagnostic, from the audit trail's repair reports (`--diag pass|fail`)."""
    latest: dict[str, Diagnostic] = {}
    for entry in entries:
        detail = entry.get("detail") or {}
        if entry.get("kind") == "repair" and detail.get("diag") in ("pass", "fail") and detail.get("diag_at"):
            latest[str(detail["ticket"])] = Diagnostic(at=datetime.fromisoformat(str(detail["diag_at"])),
                                                       passed=detail["diag"] == "pass")
    return lambda ticket: latest.get(ticket.id)


def verify_repairs(*, tracker: Tracker, check: Check, record: Record, policy: VerificationPolicy | None = None,
                   ticket_ids: set[str] | None = None) -> list[Verified]:
    """Check every verifying ticket (or those named); each close and reopen goes to the audit trail."""
    policy = policy or load_verification()
    out = []
    for ticket in tracker.tickets():
        if ticket.status != TicketState.VERIFYING or (ticket_ids is not None and ticket.id not in ticket_ids):
            continue
        assert ticket.repaired_at is not None
        check_ = check(ticket, policy)
        subject = f"{ticket.node_id} / {ticket.component}"
        if check_.verdict is RepairVerdict.HELD:
            ticket = tracker.close(ticket.id, actor="fabricbot", evidence=[check_.summary])
        elif check_.verdict is RepairVerdict.FAILED:
            ticket = tracker.reopen(ticket.id, actor="fabricbot", evidence=check_.evidence)
        if check_.verdict is not RepairVerdict.HOLDING:  # a check that moves nothing is answered, not audited
            record("verification", actor="fabricbot", subject=subject, ticket=ticket.id,
                   verdict=check_.verdict.value, windows=check_.windows, covered=check_.covered,
                   summary=check_.summary)
        out.append(Verified(ticket, check_))
    return out
