"""A repeat offender's ticket: the GPU's history, and on its `replace_at_ticket`th ticket the escalation.

The escalated ticket names the part that carries the GPU (its module, card or tray, from the parts catalog) as the
replacement, with the plan's own part after it, and its steps are the repeat offender's plan: the same captures and
isolation (a drain: the replacement powers the node off), then the replacement first and the checks after it. The
reset, reseat and swap test the earlier tickets tried are not repeated, so the steps agree with the headline.
"""

from __future__ import annotations

from ..config.parts import Part, parts
from ..model import Diagnosis
from ..topology import NodeGraph
from .build import select, ticket_steps
from .catalog import RepeatOffender, plan_for
from .history import PartHistory, ordinal
from .ticket import RepairTicket


def carrier_of(platform: str | None) -> Part | None:
    """The catalog's part that carries the GPU on `platform` (its module, card or compute tray)."""
    return next((p for p in parts() if p.carries_gpu and p.platform == platform), None)


def repeat_offender(history: PartHistory, platform: str | None) -> RepeatOffender | None:
    """What a repeat offender's plan replaces and why; None before the GPU's `replace_at`th ticket."""
    if not history.repeat_offender:
        return None
    carrier = carrier_of(platform)
    why = (f"{ordinal(history.ordinal).capitalize()} ticket on {history.hardware} "
           f"({', '.join(t.id for t in history.tickets)} before it): replace the "
           f"{carrier.fru if carrier else 'GPU (its module, card or tray)'}, not another repair of the link.")
    return RepeatOffender(why=why, carrier=carrier)


def escalate(ticket: RepairTicket, history: PartHistory | None, diagnosis: Diagnosis, *,
             graph: NodeGraph | None = None) -> RepairTicket:
    """The ticket with its GPU's history; on a repeat offender's, the escalation: the summary saying why first, the
    part that carries the GPU replaced first, and the repeat offender's plan for the ticket's candidate (`graph`:
    the one it was drafted with) in place of its steps (a drafter's wording was of the plan it no longer follows)."""
    if history is None:
        return ticket
    update: dict[str, object] = {"history": history}
    offender = repeat_offender(history, diagnosis.platform)
    if offender is not None:
        candidate, _ = select(diagnosis, ticket.candidate_id, graph)
        plan = plan_for(diagnosis, candidate, offender)
        update |= {"escalation": offender.why, "summary": f"{offender.why} {ticket.summary}"}
        if plan.applies:
            update |= {"replacement_part": plan.part, "next_part": plan.next_part, "capture_first": plan.captures,
                       "isolation_steps": ticket_steps(plan.isolation), "repair_steps": ticket_steps(plan.repair)}
    return ticket.model_copy(update=update)
