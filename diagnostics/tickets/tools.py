"""What the model may read: the diagnosis through tools.

Tool results are telemetry: data the model reasons over. Nothing a tool returns becomes a ticket fact.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.toolsets import FunctionToolset

from ..model import Diagnosis
from ..topology import NodeGraph
from .calls import CallLog
from .candidates import Candidate
from .catalog import plan_for
from .facts import port_for


@dataclass(kw_only=True)
class DraftDeps(CallLog):
    """What the tools read: the diagnosis and its candidates; and the calls made so far."""

    diagnosis: Diagnosis
    candidates: list[Candidate]
    target: Candidate | None
    graph: NodeGraph | None
    tools_used: list[str] = field(default_factory=list)

    def candidate(self, candidate_id: str) -> Candidate:
        for c in self.candidates:
            if c.id == candidate_id:
                return c
        raise ModelRetry(f"no candidate {candidate_id!r}; candidates are: {', '.join(c.id for c in self.candidates)}")


_FINDING_FIELDS = {"component", "link_type", "link_id", "gpu", "peer", "link_state", "rates_per_hour", "severity",
                   "worst_ratio", "switch", "switch_port", "port_source", "lanes", "explains_slowdown",
                   "correlation_score", "evidence"}

TOOLSET: FunctionToolset[DraftDeps] = FunctionToolset()


@TOOLSET.tool
def list_findings(ctx: RunContext[DraftDeps]) -> dict[str, Any]:
    """Every link the analysis read, with rates per hour, thresholds crossed and severity; and the slowdown."""
    ctx.deps.tools_used.append("list_findings")
    d = ctx.deps.diagnosis
    findings = [f.model_dump(mode="json", include=_FINDING_FIELDS) | {"crossed": [c.message for c in f.crossed]}
                for f in d.findings]
    return {"node_id": d.node_id, "platform": d.platform, "degradation_pct": d.degradation_pct,
            "isolated_by_analysis": d.isolated_component, "verdict": d.verdict, "findings": findings}


@TOOLSET.tool
def list_candidates(ctx: RunContext[DraftDeps]) -> list[dict[str, Any]]:
    """The components that could explain the unhealthy links, with their facts; `isolated` is the analysis's."""
    ctx.deps.tools_used.append("list_candidates")
    return [c.model_dump(mode="json") for c in ctx.deps.candidates]


@TOOLSET.tool
def topology_neighbours(ctx: RunContext[DraftDeps], gpu: int) -> list[dict[str, Any]]:
    """Where each link of `gpu` the analysis read lands (peer, switch, port and whether the port is known)."""
    ctx.deps.tools_used.append("topology_neighbours")
    own = [f for f in ctx.deps.diagnosis.findings if f.gpu == gpu]
    if not own:
        raise ModelRetry(f"GPU {gpu} has no links in this diagnosis")
    out = []
    for f in own:
        port = port_for(f, ctx.deps.diagnosis, ctx.deps.graph)
        out.append({"link": f.component, "peer": f.peer, "switch": port.switch, "switch_port": port.switch_port,
                    "port_source": port.source.value, "find_with": port.find_with, "severity": f.severity.value})
    return out


@TOOLSET.tool
def parts_catalog(ctx: RunContext[DraftDeps], candidate_id: str) -> dict[str, Any]:
    """The part the repair catalog names for this candidate on this platform, the next one, or why there is none;
    and whether the platform can have this fault at all (the warnings say when the input contradicts it)."""
    ctx.deps.tools_used.append("parts_catalog")
    plan = plan_for(ctx.deps.diagnosis, ctx.deps.candidate(candidate_id))
    return {"part": plan.part.model_dump(mode="json") if plan.part else None,
            "next_part": plan.next_part.model_dump(mode="json") if plan.next_part else None,
            "why_no_part": plan.part_note, "fault": plan.fault.value, "applies": plan.applies,
            "warnings": plan.warnings}


@TOOLSET.tool
def repair_steps_for(ctx: RunContext[DraftDeps], candidate_id: str) -> dict[str, Any]:
    """The catalog's plan for this candidate: captures (before anyone touches the node), isolation, the reset the
    platform allows and the repair steps in order. You may reword the repair steps, keeping count and order; name
    no command the plan does not hold."""
    ctx.deps.tools_used.append("repair_steps_for")
    plan = plan_for(ctx.deps.diagnosis, ctx.deps.candidate(candidate_id))
    return {"capture_first": [c.command for c in plan.captures], "isolate": [s.text for s in plan.isolation],
            "reset": plan.reset.model_dump(mode="json"), "repair_steps": [s.text for s in plan.repair]}


@TOOLSET.tool
def link_history(ctx: RunContext[DraftDeps], component: str) -> dict[str, Any]:
    """One link's counts, rates, onset and correlation with the job's step time."""
    ctx.deps.tools_used.append("link_history")
    d = ctx.deps.diagnosis
    for f in d.findings:
        if component in (f.component, f.link_id):
            return f.model_dump(mode="json", include={"component", "counts", "rates_per_hour", "onset",
                                                      "correlation_score", "explains_slowdown", "evidence"}) | {
                "window_hours": d.window_hours, "slowdown_onset": str(d.slowdown_onset or "unknown")}
    raise ModelRetry(f"no link {component!r}; use a component name from list_findings")
