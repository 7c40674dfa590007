"""Where approved tickets go: a Tracker protocol and the SQLite mock tracker behind it.

The mock keeps tickets and their status history in the store's database (sqlite-utils). Filing is
idempotent per node and component (its slug: the same link is one ticket however its name reads, port known or
not): while a ticket is open for the part, or for a wider part whose `parts` hold it (a switch chip's ticket stands
for its ports and links, a GPU's for its links), filing again adds evidence to that ticket; a wider part asked while
a narrower one is open is a new decision, a ticket of its own (`open_within` names the narrower ones). After it
was closed, a recurrence opens a new ticket linked to the old one and escalates it to replacement (saying so when
the GPU in the slot was replaced since: the fault stayed with the slot). A ticket also keeps the GPU it is on (its
serial, else its UUID), so a GPU's tickets are found on any node; its third is escalated as a repeat offender.
A ticket lives open -> verifying (a person reported the repair; the bot watches the part through a soak) ->
closed with the evidence, or back to open, escalated to replacement, when the errors return. The history keeps
every step. Nothing is written anywhere else; a real tracker adapter implements the same protocol.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import sqlite_utils

from diagnostics import InputError
from diagnostics import format as fmt
from diagnostics.store import transaction
from diagnostics.tickets import Hardware, ordinal

from ..options import parse_time
from ..storage import db_lock
from .states import OPEN_STATES, TicketState

TICKETS = "tickets"
HISTORY = "ticket_history"


def ticket_time(iso: str | None) -> str:
    """A time a ticket keeps (ISO 8601) as every reply says times; one never kept is said as unknown."""
    return fmt.when(datetime.fromisoformat(iso)) if iso else "an unknown time"


@dataclass(frozen=True)
class Ticket:
    """A ticket as the tracker holds it."""

    id: str
    node_id: str
    component: str
    slug: str
    title: str
    status: str
    priority: str
    filed_by: str
    filed_at: str
    body: str
    linked_to: str | None = None
    escalated: bool = False
    evidence: tuple[str, ...] = ()
    parts: tuple[str, ...] = ()  # the slugs the ticket stands for: its part and the links it explains
    repaired_at: str | None = None
    repaired_by: str | None = None
    gpu_serial: str | None = None  # the GPU the part is on: its history follows it from node to node
    gpu_uuid: str | None = None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Ticket:
        slug = row.get("slug") or row["component"]
        return cls(id=row["id"], node_id=row["node_id"], component=row["component"], slug=slug, title=row["title"],
                   status=row["status"], priority=row["priority"], filed_by=row["filed_by"],
                   filed_at=row["filed_at"], body=row["body"], linked_to=row["linked_to"],
                   escalated=bool(row["escalated"]), evidence=tuple(json.loads(row["evidence"] or "[]")),
                   parts=tuple(json.loads(row.get("parts") or "[]") or [slug]),
                   repaired_at=row.get("repaired_at"), repaired_by=row.get("repaired_by"),
                   gpu_serial=row.get("gpu_serial"), gpu_uuid=row.get("gpu_uuid"))


@dataclass(frozen=True)
class FilingResult:
    """What a filing did: `created` is False when an open ticket already covered the component."""

    ticket: Ticket
    created: bool
    recurrence_of: str | None = None
    repeat_offender: str | None = None  # "3rd ticket on GPU serial ...", when the GPU is one


class Tracker(Protocol):
    def file(self, *, node_id: str, component: str, slug: str, title: str, body: str, priority: str, actor: str,
             evidence: list[str], parts: list[str] | None = None, hardware: Hardware | None = None,
             replace_at: int = 3, wider: str | None = None) -> FilingResult: ...

    def open_ticket(self, node_id: str, slug: str, *, wider: str | None = None) -> Ticket | None:
        """The open ticket that stands for the part: its own, else one whose parts hold it, on `node_id` or on
        `wider` (`Diagnosis.wider_owner`: a tray's part under its rack's ticket)."""
        ...

    def open_within(self, node_id: str, parts: list[str]) -> list[Ticket]:
        """The open tickets on `node_id` for one of `parts` (narrower parts of a wider one), oldest first."""
        ...

    def open_on(self, node_id: str) -> list[Ticket]:
        """Every open ticket on `node_id` (open, in progress or verifying its repair), oldest first."""
        ...

    def tickets_on(self, hardware: Hardware) -> list[Ticket]:
        """Every ticket filed on this GPU (its serial, else its UUID), on any node, oldest first."""
        ...

    def add_evidence(self, ticket_id: str, evidence: list[str], *, actor: str) -> Ticket: ...

    def get(self, ticket_id: str) -> Ticket | None: ...

    def set_status(self, ticket_id: str, status: str, *, actor: str, note: str = "") -> Ticket: ...

    def history(self, ticket_id: str) -> list[dict[str, Any]]: ...

    def report_repair(self, ticket_id: str, *, actor: str, at: str | None = None, note: str = "") -> Ticket:
        """The repair is done: the ticket waits in `verifying` while the part is watched. RepairTimeError when `at` is
        before the ticket was filed or ahead of the clock."""
        ...

    def close(self, ticket_id: str, *, actor: str, evidence: list[str]) -> Ticket:
        """The repair held: closed, with what showed it."""
        ...

    def reopen(self, ticket_id: str, *, actor: str, evidence: list[str]) -> Ticket:
        """The repair did not hold: open again and escalated to replacing the part."""
        ...

    def tickets(self) -> list[Ticket]: ...

    def mend(self) -> list[Ticket]:
        """Give a history row to each ticket a crash left without one; the tickets mended."""
        ...


def _gpu_of(ticket: Ticket) -> Hardware:
    return Hardware(serial=ticket.gpu_serial, uuid=ticket.gpu_uuid)


def _other_gpu(ticket: Ticket, hardware: Hardware) -> bool:
    """Whether the earlier ticket named another GPU than `hardware` (a serial, else a UUID, known on both)."""
    if ticket.gpu_serial and hardware.serial:
        return ticket.gpu_serial != hardware.serial
    return bool(ticket.gpu_uuid and hardware.uuid and ticket.gpu_uuid != hardware.uuid)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


CLOCK_SKEW = timedelta(minutes=5)  # a repair time typed on another machine may run this far ahead of the clock


class RepairTimeError(ValueError):
    """A repair dated before its ticket was filed, or ahead of the clock: it would never be verified."""


def _stamp(text: str) -> datetime:
    return parse_time(text, field="at")


def _check_repair_time(ticket: Ticket, when: str, now: str) -> None:
    try:
        repaired = _stamp(when)
    except InputError:
        raise RepairTimeError(f"the repair time {when!r} is no ISO time") from None
    if repaired < _stamp(ticket.filed_at):
        raise RepairTimeError(f"the repair time is before {ticket.id} was filed ({ticket_time(ticket.filed_at)})")
    if repaired > _stamp(now) + CLOCK_SKEW:
        raise RepairTimeError(f"the repair time is ahead of the clock ({ticket_time(now)}): a repair is reported "
                              "once done")


class SqliteTracker:
    """The mock tracker: one lock serializes filings, so concurrent clicks can never create two tickets."""

    def __init__(self, db: sqlite_utils.Database, *, prefix: str = "FAB", clock: Callable[[], str] = _now) -> None:
        self.db = db
        self.prefix = prefix
        self.clock = clock
        self._lock = db_lock(db)
        with transaction(db):  # two bots starting at once add a missing column once
            db[TICKETS].create(  # type: ignore[union-attr]
                {"id": str, "seq": int, "node_id": str, "component": str, "slug": str, "title": str,
                 "status": str, "priority": str, "filed_by": str, "filed_at": str, "body": str, "linked_to": str,
                 "escalated": int, "evidence": str},
                pk="id", not_null={"node_id", "component", "status"}, if_not_exists=True,
            )
            if "slug" not in db[TICKETS].columns_dict:  # a database from before tickets were keyed by slug
                db[TICKETS].add_column("slug", str)  # type: ignore[union-attr]
                db.execute(f"update {TICKETS} set slug = component where slug is null")
            for column in ("parts", "repaired_at", "repaired_by", "gpu_serial", "gpu_uuid"):  # from before repairs
                # were verified, and before tickets followed a GPU's serial
                if column not in db[TICKETS].columns_dict:
                    db[TICKETS].add_column(column, str)  # type: ignore[union-attr]
            db[HISTORY].create(  # type: ignore[union-attr]
                {"id": int, "ticket_id": str, "at": str, "status": str, "actor": str, "note": str},
                pk="id", foreign_keys=[("ticket_id", TICKETS, "id")], if_not_exists=True,
            )

    def _latest(self, node_id: str, slug: str, *, open_only: bool) -> Ticket | None:
        where = "node_id = ? and slug = ?"
        if open_only:
            where += " and status in ({})".format(", ".join("?" for _ in OPEN_STATES))
        args: list[Any] = [node_id, slug, *(OPEN_STATES if open_only else ())]
        rows = list(self.db[TICKETS].rows_where(where, args, order_by="seq desc", limit=1))
        return Ticket.from_row(rows[0]) if rows else None

    def _open(self, node_id: str) -> list[Ticket]:
        where = "node_id = ? and status in ({})".format(", ".join("?" for _ in OPEN_STATES))
        return [Ticket.from_row(r) for r in self.db[TICKETS].rows_where(where, [node_id, *OPEN_STATES],
                                                                           order_by="seq")]

    def _covering(self, node_id: str, slug: str, wider: str | None = None) -> Ticket | None:
        """The part's own open ticket, else the newest open one whose parts hold it, on the node, else on `wider`."""
        own = self._latest(node_id, slug, open_only=True)
        if own is not None:
            return own
        for owner in (node_id, *([wider] if wider and wider != node_id else [])):
            held = next((t for t in reversed(self._open(owner)) if slug in t.parts), None)
            if held is not None:
                return held
        return None

    def open_ticket(self, node_id: str, slug: str, *, wider: str | None = None) -> Ticket | None:
        with self._lock:
            return self._covering(node_id, slug, wider)

    def open_within(self, node_id: str, parts: list[str]) -> list[Ticket]:
        with self._lock:
            return [t for t in self._open(node_id) if t.slug in parts]

    def open_on(self, node_id: str) -> list[Ticket]:
        with self._lock:
            return self._open(node_id)

    def get(self, ticket_id: str) -> Ticket | None:
        rows = list(self.db[TICKETS].rows_where("id = ?", [ticket_id]))
        return Ticket.from_row(rows[0]) if rows else None

    def _history(self, ticket_id: str, status: str, actor: str, note: str, at: str | None = None) -> None:
        self.db[HISTORY].insert(  # type: ignore[union-attr]
            {"ticket_id": ticket_id, "at": at or self.clock(), "status": status, "actor": actor, "note": note})

    def tickets_on(self, hardware: Hardware) -> list[Ticket]:
        with self._lock:
            return self._on(hardware)

    def _on(self, hardware: Hardware) -> list[Ticket]:
        where = " or ".join(w for w, v in (("gpu_serial = ?", hardware.serial), ("gpu_uuid = ?", hardware.uuid)) if v)
        if not where:
            return []
        args = [v for v in (hardware.serial, hardware.uuid) if v]
        return [Ticket.from_row(r) for r in self.db[TICKETS].rows_where(where, args, order_by="seq")]

    def file(self, *, node_id: str, component: str, slug: str, title: str, body: str, priority: str, actor: str,
             evidence: list[str], parts: list[str] | None = None, hardware: Hardware | None = None,
             replace_at: int = 3, wider: str | None = None) -> FilingResult:
        """A new ticket, or evidence added to the open one that stands for the part (its own or a wider part's, on
        the node or on `wider`, as `open_ticket` finds it). A part that was ticketed and closed before is a
        recurrence (linked, escalated); a GPU (`hardware`) on its `replace_at`th ticket on any node is a repeat
        offender: escalated, its title saying which ticket it is."""
        with self._lock, self.db.atomic():
            existing = self._covering(node_id, slug, wider)
            if existing is not None:
                return FilingResult(self.add_evidence(existing.id, evidence, actor=actor), created=False)
            previous = self._latest(node_id, slug, open_only=False)
            before = self._on(hardware) if hardware is not None else []
            offender = hardware is not None and len(before) + 1 >= replace_at
            seq = int(self.db.execute(f"select coalesce(max(seq), 0) + 1 from {TICKETS}").fetchone()[0])
            ticket_id = f"{self.prefix}-{seq:04d}"
            notes, said = [], ""
            if offender:
                said = f"{ordinal(len(before) + 1)} ticket on {hardware}"
                title = f"{title} ({said}: replace the GPU)"
                notes.append(f"repeat offender: {said} (after {', '.join(t.id for t in before)}); escalated to "
                             "replacing the GPU")
            elif previous is not None and hardware is not None and _other_gpu(previous, hardware):
                title = f"{title} (recurrence of {previous.id} on a new GPU: the fault stayed with the slot)"
                notes.append(f"the GPU was replaced since {previous.id} ({_gpu_of(previous)} then, {hardware} "
                             "now): look past the GPU, at its socket, baseboard or riser")
            elif previous is not None:
                title = f"{title} (recurrence of {previous.id}: replace the part)"
            if previous is not None:
                notes.insert(0, f"recurrence of {previous.id}; escalated to replacement")
            linked = previous or (before[-1] if before else None)
            self.db[TICKETS].insert({  # type: ignore[union-attr]
                "id": ticket_id, "seq": seq, "node_id": node_id, "component": component, "slug": slug, "title": title,
                "status": TicketState.OPEN, "priority": priority, "filed_by": actor, "filed_at": self.clock(),
                "body": body,
                "linked_to": linked.id if linked else None, "escalated": int(previous is not None or offender),
                "evidence": json.dumps(list(dict.fromkeys(evidence))),
                "parts": json.dumps(sorted({slug, *(parts or [])})),
                "gpu_serial": hardware.serial if hardware else None, "gpu_uuid": hardware.uuid if hardware else None,
            })
            self._history(ticket_id, TicketState.OPEN, actor, "; ".join(notes) or "filed")
            ticket = self.get(ticket_id)
            assert ticket is not None
            return FilingResult(ticket, created=True, recurrence_of=previous.id if previous else None,
                                repeat_offender=said if offender else None)

    def add_evidence(self, ticket_id: str, evidence: list[str], *, actor: str) -> Ticket:
        """Append evidence not yet on the ticket (a repeat click adds nothing)."""
        with self._lock, self.db.atomic():
            ticket = self.get(ticket_id)
            if ticket is None:
                raise KeyError(ticket_id)
            merged = list(dict.fromkeys([*ticket.evidence, *evidence]))
            if merged != list(ticket.evidence):
                self.db[TICKETS].update(ticket_id, {"evidence": json.dumps(merged)})  # type: ignore[union-attr]
                self._history(ticket_id, ticket.status, actor, f"{len(merged) - len(ticket.evidence)} evidence added")
            updated = self.get(ticket_id)
            assert updated is not None
            return updated

    def set_status(self, ticket_id: str, status: str, *, actor: str, note: str = "") -> Ticket:
        with self._lock, self.db.atomic():
            if self.get(ticket_id) is None:
                raise KeyError(ticket_id)
            self.db[TICKETS].update(ticket_id, {"status": status})  # type: ignore[union-attr]
            self._history(ticket_id, status, actor, note)
            ticket = self.get(ticket_id)
            assert ticket is not None
            return ticket

    def _ticket(self, ticket_id: str, *, status: tuple[str, ...]) -> Ticket:
        ticket = self.get(ticket_id)
        if ticket is None:
            raise KeyError(ticket_id)
        if ticket.status not in status:
            raise ValueError(f"{ticket_id} is {ticket.status}, not {' or '.join(status)}")
        return ticket

    def report_repair(self, ticket_id: str, *, actor: str, at: str | None = None, note: str = "") -> Ticket:
        with self._lock, self.db.atomic():
            ticket = self._ticket(ticket_id, status=(TicketState.OPEN, TicketState.IN_PROGRESS))
            now = self.clock()
            when = at or now
            _check_repair_time(ticket, when, now)
            self.db[TICKETS].update(ticket_id, {  # type: ignore[union-attr]
                "status": TicketState.VERIFYING, "repaired_at": when, "repaired_by": actor})
            self._history(ticket_id, "repair_reported", actor, note or "repair reported", at=now)
            self._history(ticket_id, TicketState.VERIFYING, "fabricbot", f"watching the part's counters from {when}")
            return self._ticket(ticket_id, status=(TicketState.VERIFYING,))

    def close(self, ticket_id: str, *, actor: str, evidence: list[str]) -> Ticket:
        with self._lock, self.db.atomic():
            ticket = self._ticket(ticket_id, status=(TicketState.VERIFYING,))
            merged = list(dict.fromkeys([*ticket.evidence, *evidence]))
            self.db[TICKETS].update(ticket_id, {  # type: ignore[union-attr]
                "status": TicketState.CLOSED, "evidence": json.dumps(merged)})
            self._history(ticket_id, TicketState.CLOSED, actor, "; ".join(evidence) or "repair held")
            return self._ticket(ticket_id, status=(TicketState.CLOSED,))

    def reopen(self, ticket_id: str, *, actor: str, evidence: list[str]) -> Ticket:
        with self._lock, self.db.atomic():
            ticket = self._ticket(ticket_id, status=(TicketState.VERIFYING,))
            merged = list(dict.fromkeys([*ticket.evidence, *evidence]))
            title = ticket.title if ticket.escalated else f"{ticket.title} (repair did not hold: replace the part)"
            self.db[TICKETS].update(ticket_id, {  # type: ignore[union-attr]
                "status": TicketState.OPEN, "escalated": 1, "title": title, "evidence": json.dumps(merged),
                "repaired_at": None, "repaired_by": None})
            self._history(ticket_id, TicketState.OPEN, actor,
                          "repair did not hold; escalated to replacement: " + ("; ".join(evidence) or "errors back"))
            return self._ticket(ticket_id, status=(TicketState.OPEN,))

    def history(self, ticket_id: str) -> list[dict[str, Any]]:
        return list(self.db[HISTORY].rows_where("ticket_id = ?", [ticket_id], order_by="id"))

    def mend(self) -> list[Ticket]:
        with self._lock, self.db.atomic():
            orphans = [Ticket.from_row(r) for r in self.db.query(
                f"select t.* from {TICKETS} t where not exists "
                f"(select 1 from {HISTORY} h where h.ticket_id = t.id) order by t.seq")]
            for ticket in orphans:
                self.db[HISTORY].insert({  # type: ignore[union-attr]
                    "ticket_id": ticket.id, "at": ticket.filed_at, "status": ticket.status, "actor": ticket.filed_by,
                    "note": "filed (history row restored at start-up)"})
            return orphans

    def tickets(self) -> list[Ticket]:
        return [Ticket.from_row(r) for r in self.db[TICKETS].rows_where(order_by="seq")]
