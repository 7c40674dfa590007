"""Watching repaired parts: each verifying ticket's part judged on the store's readings since its repair, then
closed with the evidence when the soak held or reopened, escalated to replacement, when the errors came back."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from diagnostics.analysis import RepairCheck, RepairVerdict, check_stored_repair
from diagnostics.config import Thresholds, VerificationPolicy, load_verification
from diagnostics.store import TelemetryStore

from .filing import Record
from .tracker import VERIFYING, Ticket, Tracker


@dataclass(frozen=True)
class Verified:
    """One verifying ticket after a check: the ticket as it now stands, and the check that moved it (or not)."""

    ticket: Ticket
    check: RepairCheck

    @property
    def moved(self) -> bool:
        return self.check.verdict is not RepairVerdict.HOLDING


def verify_repairs(*, tracker: Tracker, store: TelemetryStore, record: Record,
                   policy: VerificationPolicy | None = None, thresholds: Thresholds | None = None,
                   ticket_ids: set[str] | None = None) -> list[Verified]:
    """Check every verifying ticket (or those named); each close and reopen goes to the audit trail."""
    policy = policy or load_verification()
    known = set(store.nodes())
    out = []
    for ticket in tracker.tickets():
        if ticket.status != VERIFYING or (ticket_ids is not None and ticket.id not in ticket_ids):
            continue
        assert ticket.repaired_at is not None
        if ticket.node_id not in known:
            check = RepairCheck(node_id=ticket.node_id, parts=list(ticket.parts),
                                repaired_at=datetime.fromisoformat(ticket.repaired_at), checked_to=None,
                                soak_hours=policy.soak_hours, windows=0, covered=0, verdict=RepairVerdict.HOLDING,
                                evidence=[f"the store holds no readings of {ticket.node_id}"])
        else:
            check = check_stored_repair(store, node_id=ticket.node_id, parts=ticket.parts,
                                        repaired_at=datetime.fromisoformat(ticket.repaired_at), policy=policy,
                                        thresholds=thresholds)
        subject = f"{ticket.node_id} / {ticket.component}"
        if check.verdict is RepairVerdict.HELD:
            ticket = tracker.close(ticket.id, actor="fabricbot", evidence=[check.summary])
        elif check.verdict is RepairVerdict.FAILED:
            ticket = tracker.reopen(ticket.id, actor="fabricbot", evidence=check.evidence)
        if check.verdict is not RepairVerdict.HOLDING:  # a check that moves nothing is answered, not audited
            record("verification", actor="fabricbot", subject=subject, ticket=ticket.id,
                   verdict=check.verdict.value, windows=check.windows, covered=check.covered, summary=check.summary)
        out.append(Verified(ticket, check))
    return out
