"""Deciding a draft as one transaction, and mending what a crash left behind at start-up.

The claim, the approval, the ticket, its history, the draft's new state and the filing's audit entry are written
in one SQLite transaction (`Database.atomic`, whose nested blocks are savepoints): a bot killed at any point leaves
either all of them or none, so a draft is never stuck "filing" and a ticket never lacks its history or audit row.
This holds for the mock tracker, which lives in the same database; a tracker elsewhere cannot join the transaction,
which is what `recover` is for.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from diagnostics.config import load_verification
from diagnostics.tickets import Hardware

from ..audit import AuditLog
from ..state import DRAFTS, BotState, Draft
from ..storage import db_lock
from .states import DraftState
from .tracker import FilingResult, Tracker

# a draft claimed but not yet tied to its ticket: `decide` never leaves one (it claims straight to "filed" inside its
# transaction); a database written before that, or a tracker outside it, can leave one, and `recover` mends it
FILING = DraftState.FILING


class Record(Protocol):
    def __call__(self, kind: str, *, actor: str, subject: str = "", **detail: Any) -> int: ...


@dataclass(frozen=True)
class Decision:
    """What deciding a draft did: `result` is None for a discard."""

    draft: Draft
    result: FilingResult | None


def decide(*, state: BotState, tracker: Tracker, record: Record, draft_id: int, actor: str, filing: bool,
           evidence: Callable[[Draft], list[str]],
           parts: Callable[[Draft], list[str]] | None = None,
           wider: Callable[[Draft], str | None] | None = None) -> Decision | None:
    """File or discard a pending draft, all or nothing; None when it was already decided (a second click).
    `parts`: the slugs the ticket stands for (its part and the links it explains), watched after a repair; `wider`:
    who besides the draft's owner may hold the open ticket that stands for its part (a tray's part: its rack)."""
    db = state.db
    with db_lock(db), db.atomic():
        draft = state.claim_draft(draft_id, DraftState.FILED if filing else DraftState.DISCARDED)
        if draft is None:
            return None
        subject = f"{draft.node_id} / {draft.component}"
        if not filing:
            record("discard", actor=actor, subject=subject, draft=draft_id)
            return Decision(draft, None)
        record("approval", actor=actor, subject=subject, draft=draft_id)
        gpu = Hardware(serial=draft.gpu_serial, uuid=draft.gpu_uuid) if draft.gpu_serial or draft.gpu_uuid else None
        result = tracker.file(node_id=draft.node_id, component=draft.component, slug=draft.slug or draft.component,
                              title=f"{draft.node_id}: {draft.component}", body=draft.markdown,
                              priority=draft.priority, actor=actor, evidence=evidence(draft),
                              parts=parts(draft) if parts else None, hardware=gpu,
                              replace_at=load_verification().replace_at_ticket,
                              wider=wider(draft) if wider else None)
        state.update_draft(draft_id, ticket_id=result.ticket.id)
        record("filing", actor="fabricbot", subject=subject, ticket=result.ticket.id, created=result.created,
               approved_by=actor, draft=draft_id, recurrence_of=result.recurrence_of,
               repeat_offender=result.repeat_offender)
        return Decision(draft, result)


@dataclass(frozen=True)
class Recovered:
    """What `recover` mended: drafts returned to pending or tied to their ticket, tickets given history."""

    drafts_pending: tuple[int, ...] = ()
    drafts_filed: tuple[int, ...] = ()
    tickets_with_history: tuple[str, ...] = ()
    tickets_audited: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.drafts_pending or self.drafts_filed or self.tickets_with_history or self.tickets_audited)


def recover(*, state: BotState, tracker: Tracker, audit: AuditLog, record: Record) -> Recovered:
    """Mend, at start-up, what a crash between states left: a draft still "filing" is tied to the open ticket for
    its part if there is one, else returned to pending (its next click files it once); a ticket with no history
    row gets one; a ticket with no filing entry in the audit trail gets a recovery entry. Each mend is audited."""
    db = state.db
    pending: list[int] = []
    filed: list[int] = []
    with db_lock(db), db.atomic():
        for row in list(db[DRAFTS].rows_where("status = ?", [FILING])):
            draft = Draft(**row)
            ticket = tracker.open_ticket(draft.node_id, draft.slug or draft.component)
            subject = f"{draft.node_id} / {draft.component}"
            if ticket is None:
                state.update_draft(draft.id, status=DraftState.PENDING)
                pending.append(draft.id)
                record("recovery", actor="fabricbot", subject=subject, draft=draft.id, mend="draft-pending",
                       outcome="left filing by a crash; back to pending")
            else:
                state.update_draft(draft.id, status=DraftState.FILED, ticket_id=ticket.id)
                filed.append(draft.id)
                record("recovery", actor="fabricbot", subject=subject, draft=draft.id, ticket=ticket.id,
                       mend="draft-filed", outcome="left filing by a crash; its part's open ticket")
        mended = tracker.mend()
        for ticket in mended:
            record("recovery", actor="fabricbot", subject=f"{ticket.node_id} / {ticket.component}",
                   ticket=ticket.id, mend="history", outcome="ticket had no history row; restored")
        audited = {str(e["detail"].get("ticket")) for kind in ("filing", "recovery") for e in audit.entries(kind)
                   if kind == "filing" or e["detail"].get("mend") in ("draft-filed", "filing-entry")}
        unaudited = [t for t in tracker.tickets() if t.id not in audited]
        for ticket in unaudited:
            record("recovery", actor="fabricbot", subject=f"{ticket.node_id} / {ticket.component}",
                   ticket=ticket.id, filed_by=ticket.filed_by, mend="filing-entry",
                   outcome="ticket had no filing entry; recorded")
    return Recovered(tuple(pending), tuple(filed), tuple(t.id for t in mended), tuple(t.id for t in unaudited))
