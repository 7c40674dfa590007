"""Repair tickets and answers: facts from the diagnosis, words from the rules or Claude (pydantic-ai).

The names that draft or answer with Claude load pydantic-ai and the anthropic SDK (about a second) when first asked
for, so a command that only reads tickets, plans or the rules' drafts does not pay for them."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .build import Judged, NoFaultError, NoPartError, owners_view, select
from .candidates import Candidate, candidates_for
from .catalog import Part, RepairPlan, plan_for
from .drafter import Drafter
from .escalation import escalate
from .evidence import evidence_lines, link_crossed, link_measures
from .history import Hardware, PartHistory, PastTicket, ordinal
from .hypotheses import Inspection, inspection_markdown, rules_inspection
from .identity import hardware_of
from .rules import RulesDrafter
from .ticket import Cost, Evidence, Hypothesis, Identity, RepairTicket, Step

if TYPE_CHECKING:
    from .answers import Answer, Answerer, ClaudeAnswerer, RulesAnswerer, answerer_from_env, rules_answer
    from .calls import ModelCall
    from .claude import ClaudeDrafter, drafter_from_env
    from .model_run import ENV_KEY, ModelCheck, RunLimits, check_model, model_name

_MODEL_STACK = {
    **dict.fromkeys(("Answer", "Answerer", "ClaudeAnswerer", "RulesAnswerer", "answerer_from_env", "rules_answer"),
                    "answers"),
    "ModelCall": "calls",
    **dict.fromkeys(("ClaudeDrafter", "drafter_from_env"), "claude"),
    **dict.fromkeys(("ENV_KEY", "ModelCheck", "RunLimits", "check_model", "model_name"), "model_run"),
}


def __getattr__(name: str) -> Any:  # no `__dir__` naming them: a tool that walks a module's names would load them
    if name not in _MODEL_STACK:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{_MODEL_STACK[name]}", __name__), name)
    globals()[name] = value
    return value


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
