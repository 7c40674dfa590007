"""A GPU's earlier tickets, as the tracker holds them, in the shape a drafted ticket carries (`PartHistory`): each
with when it was filed, when its repair was reported and how the repair went."""

from __future__ import annotations

from datetime import datetime

from diagnostics.config import load_verification
from diagnostics.tickets import Hardware, PartHistory, PastTicket

from .states import TicketState
from .tracker import Ticket, Tracker

REPORTED = "repair_reported"


def _outcome(ticket: Ticket, rows: list[dict[str, object]]) -> tuple[str, datetime | None]:
    """How the ticket's repair went, and when the (last) repair was reported."""
    reported = [r for r in rows if r["status"] == REPORTED]
    repaired = ticket.repaired_at or (str(reported[-1]["at"]) if reported else None)
    failed = any("did not hold" in str(r["note"]) for r in rows)
    if ticket.status == TicketState.CLOSED:
        said = "repair held after one that did not" if failed else "closed, the repair held"
    elif ticket.status == TicketState.VERIFYING:
        said = "repair reported, being verified"
    else:
        said = "repair did not hold: reopened" if failed else f"{ticket.status}, no repair reported"
    return said, datetime.fromisoformat(repaired) if repaired else None


def part_history(tracker: Tracker, hardware: Hardware, *, node_id: str, slug: str,
                 replace_at: int | None = None) -> PartHistory:
    """The GPU's tickets before a new one on `node_id`'s `slug`: all of them but that part's open ticket (a filing
    adds evidence to it rather than a ticket)."""
    before = [t for t in tracker.tickets_on(hardware)
              if not (t.node_id == node_id and t.slug == slug and t.status != TicketState.CLOSED)]
    past = []
    for t in before:
        outcome, repaired = _outcome(t, tracker.history(t.id))
        past.append(PastTicket(id=t.id, node_id=t.node_id, component=t.component,
                               filed_at=datetime.fromisoformat(t.filed_at), repaired_at=repaired, outcome=outcome))
    return PartHistory(hardware=hardware, tickets=past,
                       replace_at=replace_at or load_verification().replace_at_ticket)
