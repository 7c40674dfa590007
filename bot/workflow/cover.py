"""An open ticket that already stands for a part (its own, or a wider part's whose parts include it), and the
open tickets for narrower parts of a part being drafted: one wording for every door that drafts or files.

A port of a ticketed switch chip, or a link of a ticketed GPU, gets no second ticket: the person is told which
ticket covers it. The reverse is not swallowed: a wider repair (the whole chip while one of its ports is ticketed)
is a new decision, drafted as its own ticket, which names the narrower open ones.
"""

from __future__ import annotations

from collections.abc import Callable

from diagnostics import Diagnosis
from diagnostics.tickets import RepairTicket

from .states import TicketState
from .tracker import Ticket, Tracker, ticket_time


def covering(ticket: Ticket, slug: str, component: str) -> str:
    """How `ticket` stands for the part asked (`slug`, named `component`): nothing to add when it is the part's own,
    else ' covers <its part>, which includes <component>'."""
    return "" if ticket.slug == slug else f" covers {ticket.component}, which includes {component}"


def standing(ticket: Ticket, who: Callable[[str], str] = str) -> str:
    """How a ticket that stands for a part is: already open, or verifying its repair, since when and by whom: a
    part repaired and soaking waits for its readings, not for hands (`fabricbot tickets` lists it so)."""
    if ticket.status != TicketState.VERIFYING:
        return "is already open"
    since = ticket_time(ticket.repaired_at)
    by = f" by {who(ticket.repaired_by)}" if ticket.repaired_by else ""
    return f"is verifying its repair (repaired {since}{by})"


def open_line(ticket: Ticket, *, text: Callable[[str], str] = str, who: Callable[[str], str] = str) -> str:
    """An open ticket as an answer lists it beside the node's diagnosis: its id, its part (`text`: how the door
    escapes it), how it stands and who filed it when (`who`: how the door names a person)."""
    state = "verifying its repair" if ticket.status == TicketState.VERIFYING else str(ticket.status).replace("_", " ")
    return (f"{ticket.id}: {text(ticket.component)} ({state}; filed by {who(ticket.filed_by)} "
            f"{ticket_time(ticket.filed_at)})")


def narrower_note(tickets: list[Ticket]) -> str | None:
    """The warning a wider part's draft carries while tickets for parts of it are open."""
    if not tickets:
        return None
    named = ", ".join(f"{t.id} ({t.component})" for t in tickets)
    return (f"already open for a part of this one: {named}; this wider repair is a ticket of its own, so link or "
            "close them when it is filed")


def with_narrower(ticket: RepairTicket, tracker: Tracker, diagnosis: Diagnosis, slug: str) -> RepairTicket:
    """The draft of the part `slug`, with a warning naming the open tickets for its narrower parts (the links it
    explains), on whichever owner each is filed: a rack's switch chip explains links its compute trays' hosts own."""
    parts = diagnosis.parts_of(slug)
    owners = dict.fromkeys([diagnosis.owner_of(slug), *(diagnosis.owner_of(p) for p in parts)])
    note = narrower_note([t for owner in owners for t in tracker.open_within(owner, parts)
                          if t.slug != ticket.candidate_id])
    return ticket if note is None else ticket.model_copy(update={"warnings": [*ticket.warnings, note]})
