"""Repair tickets: facts from the diagnosis, words from a drafter (rules, or Claude through pydantic-ai)."""

from .build import NoFaultError
from .candidates import Candidate, candidates_for
from .catalog import Part, RepairPlan, plan_for
from .claude import ENV_KEY, ClaudeDrafter, ModelCall, drafter_from_env, model_name
from .drafter import Drafter
from .hypotheses import Inspection, inspection_markdown, rules_inspection
from .rules import RulesDrafter
from .ticket import Cost, Evidence, Hypothesis, Identity, RepairTicket, Step

__all__ = [
    "ENV_KEY",
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
    "inspection_markdown",
    "model_name",
    "plan_for",
    "rules_inspection",
]
