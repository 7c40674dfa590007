"""A ticket's repair plan: the repair catalog's entry for the candidate's platform and fault kind, with its facts.

The catalog is data (`diagnostics/data/repairs.toml`, `parts.toml`; FABRICBOT_REPAIRS and FABRICBOT_PARTS merge a
user's files in); the plan's part, captures and steps are the facts a drafter's wording is checked against.
"""

from __future__ import annotations

from ..config.parts import Part, parts
from ..enums import ComponentKind, FaultKind, Severity
from ..model import ComponentFacts, Diagnosis
from ..repair import Capture, PlanFacts, PlanStep, RepairPlan, RepeatOffender, Reset, place_facts, repair_plan
from .candidates import Candidate

__all__ = ["Capture", "Part", "PlanStep", "RepairPlan", "RepeatOffender", "Reset", "parts", "plan_for"]


def plan_for(diagnosis: Diagnosis, candidate: Candidate, repeat_offender: RepeatOffender | None = None) -> RepairPlan:
    """The plan for this candidate's fault on the diagnosis's platform, filled with the candidate's facts; a repeat
    offender's replaces the part that carries its GPU first."""
    own = set(candidate.findings)
    states = [f.severity is Severity.DOWN for f in diagnosis.findings if f.component in own]
    # a link down, or a GPU whose failing links are all down: whether they came back is their state, not a count
    down = (candidate.kind is ComponentKind.NVLINK and any(states)) or (
        candidate.fault is FaultKind.GPU_NVLINKS and bool(states) and all(states))
    facts = PlanFacts(node_id=diagnosis.owner_of(candidate.id), link_down=down, unit=candidate.component,
                      bus=candidate.ref.bus, boards=diagnosis.platforms_alike,
                      **candidate.model_dump(include=set(ComponentFacts.model_fields)),
                      **place_facts(diagnosis.rack, diagnosis.job_id))
    return repair_plan(diagnosis.platform, candidate.fault, facts, repeat_offender=repeat_offender)
