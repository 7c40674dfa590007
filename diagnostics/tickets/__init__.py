"""Repair tickets and answers: facts from the diagnosis, words from the rules or Claude (pydantic-ai)."""

from .answers import Answer, Answerer, ClaudeAnswerer, RulesAnswerer, answerer_from_env, rules_answer
from .build import Judged, NoFaultError, NoPartError, owners_view, select
from .calls import ModelCall
from .candidates import Candidate, candidates_for
from .catalog import Part, RepairPlan, plan_for
from .claude import ClaudeDrafter, drafter_from_env
from .drafter import Drafter
from .escalation import escalate
from .evidence import evidence_lines, link_crossed, link_measures
from .history import Hardware, PartHistory, PastTicket, ordinal
from .hypotheses import Inspection, inspection_markdown, rules_inspection
from .identity import hardware_of
from .model_run import ENV_KEY, ModelCheck, RunLimits, check_model, model_name
from .rules import RulesDrafter
from .ticket import Cost, Evidence, Hypothesis, Identity, RepairTicket, Step

__all__ = [
    "ENV_KEY",
    "Answer",
    "Answerer",
    "Candidate",
    "ClaudeAnswerer",
    "ClaudeDrafter",
    "Cost",
    "Drafter",
    "Evidence",
    "Hardware",
    "Hypothesis",
    "Identity",
    "Inspection",
    "Judged",
    "ModelCall",
    "ModelCheck",
    "NoFaultError",
    "NoPartError",
    "Part",
    "PartHistory",
    "PastTicket",
    "RepairPlan",
    "RepairTicket",
    "RulesAnswerer",
    "RulesDrafter",
    "RunLimits",
    "Step",
    "answerer_from_env",
    "candidates_for",
    "check_model",
    "drafter_from_env",
    "escalate",
    "evidence_lines",
    "hardware_of",
    "inspection_markdown",
    "link_crossed",
    "link_measures",
    "model_name",
    "ordinal",
    "owners_view",
    "plan_for",
    "rules_answer",
    "rules_inspection",
    "select",
]
