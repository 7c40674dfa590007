"""Repair advice built from the repair catalog: a fault's whole plan on a platform (`repair_plan`) and the one-line
action a Diagnosis carries (`localization_action`, `repair_action`). Above topology (a plan reads the platform's
graph to know what a reset stops), below analysis (which names each suspect's action)."""

from .actions import (
    DEFAULT_FAULT,
    fault_of,
    finding_fault,
    localization_action,
    localization_plan,
    place_facts,
    repair_action,
    silent_action,
    status_action,
    xid_fatal,
)
from .plan import repair_plan
from .plan_model import Capture, PlanFacts, PlanStep, RepairPlan, RepeatOffender, Reset

__all__ = [
    "DEFAULT_FAULT",
    "Capture",
    "PlanFacts",
    "PlanStep",
    "RepairPlan",
    "RepeatOffender",
    "Reset",
    "fault_of",
    "finding_fault",
    "localization_action",
    "localization_plan",
    "place_facts",
    "repair_action",
    "repair_plan",
    "silent_action",
    "status_action",
    "xid_fatal",
]
