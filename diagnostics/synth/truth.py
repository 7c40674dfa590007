"""What an engineer expects of each synthetic node's diagnosis, from its labelled faults and its job alone.

Per node: whether a fault is there, the parts to localize (slugs), the headline (the part that explains the
slowdown, else the most severe, else the furthest over its threshold), the verdict on the job, the priority the
thresholds file's policy gives those facts, the part the repair may name (one of the platform's, or none) and what
the diagnosis must say besides. Nothing here reads the analysis: the truth is the scenario's, never the engine's.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pandas as pd

from ..config.parts import UNKNOWN_PLATFORM
from ..config.thresholds import GPU_LOST_RULES
from ..enums import FaultKind, Priority, Severity, severity_rank
from .node import defaults

EXPLAINS = "explains"
NOT_THE_FABRIC = "not the fabric"
NOT_SLOWER = "job not slower"
NO_JOB = "no job"
VERDICTS = (EXPLAINS, NOT_THE_FABRIC, NOT_SLOWER, NO_JOB)
WINDOW = timedelta(hours=1)  # the expectations hold for this window ending at the fleet's last sample


def job_slower(job: dict[str, Any] | None) -> bool:
    """Whether the job runs slower by the policy's floor: a smaller shift is not a slowdown."""
    return job is not None and job["stopped_at"] is None and \
        job["slowdown_pct"] >= defaults().setting("slowdown_min_pct")


def verdict(node: dict[str, Any], job: dict[str, Any] | None) -> str:
    if job is None or job["stopped_at"] is not None:
        return NO_JOB
    if not job_slower(job):
        return NOT_SLOWER
    return EXPLAINS if any(f["slows_job"] for f in node["faults"]) else NOT_THE_FABRIC


def headline(faults: list[dict[str, Any]], explained: bool) -> str | None:
    """The part named first: the one whose fault slows the job, else the most severe, else the furthest over its
    threshold (a zero threshold or a down link counts as furthest)."""
    if not faults:
        return None
    top = min(faults, key=lambda f: (not (explained and f["slows_job"]), -severity_rank(f["severity"]),
                                     -(f["ratio"] if f["ratio"] is not None else float("inf"))))
    return str(top["component"])


def priority(node: dict[str, Any], job: dict[str, Any] | None, *, end: pd.Timestamp,
             window: timedelta = WINDOW) -> Priority:
    """The thresholds file's priority policy over the node's true facts: failing, down (a link seen down, or a
    fatal event that stops one until a restart), warnings, the slowdown its fault explains."""
    faults = node["faults"]
    failing = bool(faults)
    down = any(f["severity"] == Severity.DOWN.value or f.get("fatal", False) for f in faults)
    warned = any(pd.Timestamp(w["from"]) <= end and pd.Timestamp(w["to"]) > end - window
                 for w in node.get("warnings", []))
    explained = job["slowdown_pct"] if verdict(node, job) == EXPLAINS and job else None
    lost = any(f.get("rule") in GPU_LOST_RULES for f in faults)
    holds = {"failing": failing, "down": down, "gpu_lost": lost, "warning": not failing and warned,
             "none": not failing and not warned}
    for row in defaults().priority:
        if not holds[row.when]:
            continue
        if row.min_degradation_pct is not None and (explained is None or explained < row.min_degradation_pct):
            continue
        return row.level
    return Priority.LOW


def part_platform(node: dict[str, Any], fault: dict[str, Any]) -> str | None:
    """The platform whose part the repair should name (`unknown` for a node whose platform nobody gave: the part
    its link implies, with its candidates); None where it should name none (the fabric software, a rack's fan-out,
    a rack incident)."""
    if fault["fault"] in (FaultKind.FABRIC_MANAGER.value, FaultKind.FANOUT.value, FaultKind.RACK_INCIDENT.value):
        return None
    return str(node["platform"]) if node["platform"] is not None else UNKNOWN_PLATFORM


def expectations(node: dict[str, Any], job: dict[str, Any] | None, *, end: pd.Timestamp,
                 caveats: list[tuple[str, str]]) -> dict[str, Any]:
    """The node's expected diagnosis (for a one-hour window ending at `end`)."""
    faults = node["faults"]
    said = verdict(node, job)
    return {
        "detected": bool(faults),
        "localized": sorted({f["component"] for f in faults}),
        "headline": headline(faults, said == EXPLAINS),
        "verdict": said,
        "priority": priority(node, job, end=end).value,
        "parts": {f["component"]: part_platform(node, f) for f in faults},
        "faults": {f["component"]: f["fault"] for f in faults},
        "lanes": sorted([f["component"], lane] for f in faults for lane in f.get("lanes", [])),
        "ends": sorted([f["component"], f["end"]] for f in faults if f.get("end")),
        "caveats": [{"in": where, "says": words} for where, words in caveats],
    }
