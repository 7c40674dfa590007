"""Repair tickets: facts from the diagnosis, words from a drafter (rules, or Claude through pydantic-ai)."""

from .build import NoFaultError
from .candidates import Candidate, candidates_for
from .catalog import Part, RepairPlan, plan_for
from .claude import ClaudeDrafter, ModelCall, drafter_from_env
from .drafter import Drafter
from .hypotheses import Inspection, rules_inspection
from .rules import RulesDrafter
from .ticket import Cost, Evidence, Hypothesis, Identity, RepairTicket, Step

__all__ = [
    "Candidate",
    "ClaudeDrafter",
    "Cost",
    "Drafter",
    "Evidence",
    "Hypothesis",
    "Identity",
    "Inspection",
    "ModelCall",
    "NoFaultError",
    "Part",
    "RepairPlan",
    "RepairTicket",
    "RulesDrafter",
    "Step",
    "candidates_for",
    "drafter_from_env",
    "plan_for",
    "rules_inspection",
]
