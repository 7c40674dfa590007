"""What the model may read: the diagnosis through tools.

Tool results are telemetry: data the model reasons over. Nothing a tool returns becomes a ticket fact.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.toolsets import FunctionToolset

from ..config.thresholds import Thresholds
from ..model import Diagnosis, Finding
from ..topology import NodeGraph
from . import pages
from .calls import CallLog
from .candidates import Candidate
from .catalog import plan_for


@dataclass(kw_only=True)
class DraftDeps(CallLog):
    """What the tools read: the diagnosis and its candidates; and the calls made so far."""

    diagnosis: Diagnosis
    candidates: list[Candidate]
    target: Candidate | None
    graph: NodeGraph | None
    thresholds: Thresholds | None = None  # the policy the diagnosis was judged by: what sets each part's priority
    tools_used: list[str] = field(default_factory=list)

    def candidate(self, candidate_id: str) -> Candidate:
        for c in self.candidates:
            if c.id == candidate_id:
                return c
        raise ModelRetry(f"no candidate {candidate_id!r}; candidates are: {', '.join(c.id for c in self.candidates)}")


TOOLSET: FunctionToolset[DraftDeps] = FunctionToolset()


def _finding(ctx: RunContext[DraftDeps], link: str) -> Finding:
    f = pages.find(ctx.deps.diagnosis, link)
    if f is None:
        raise ModelRetry(f"no link {link!r}; use a ref from unhealthy_links or topology_neighbours")
    return f


@TOOLSET.tool
def unhealthy_links(ctx: RunContext[DraftDeps], page: int = 1) -> dict[str, Any]:
    """The node's summary (platform, slowdown, the analysis's verdict, healthy links counted by type) and its
    unhealthy links worst first, one line each, a page at a time (page 1 first)."""
    ctx.deps.tools_used.append("unhealthy_links")
    return pages.unhealthy_page(ctx.deps.diagnosis, ctx.deps.graph, max(page, 1) - 1)


@TOOLSET.tool
def link_detail(ctx: RunContext[DraftDeps], link: str) -> dict[str, Any]:
    """One link in full, by its ref: counts, rates, thresholds crossed, lanes, width, the end that saw the errors,
    the far end (peer, switch and port), onset and correlation with the job's step time."""
    ctx.deps.tools_used.append("link_detail")
    return pages.detail(_finding(ctx, link), ctx.deps.diagnosis, ctx.deps.graph)


@TOOLSET.tool
def same_switch(ctx: RunContext[DraftDeps], link: str) -> dict[str, Any]:
    """The other links on the NVSwitch or PCIe switch this link lands on: unhealthy ones as lines, healthy ones
    counted; and what the topology attaches to it (GPUs, NICs, the CPU). Many GPUs' bad links on one switch point
    at the switch."""
    ctx.deps.tools_used.append("same_switch")
    return pages.same_switch(_finding(ctx, link), ctx.deps.diagnosis, ctx.deps.graph)


@TOOLSET.tool
def list_candidates(ctx: RunContext[DraftDeps]) -> list[dict[str, Any]]:
    """The components that could explain the unhealthy links, with their facts; `isolated` is the analysis's."""
    ctx.deps.tools_used.append("list_candidates")
    return [c.model_dump(mode="json", exclude_defaults=True) | {"id": c.id} for c in ctx.deps.candidates]


@TOOLSET.tool
def topology_neighbours(ctx: RunContext[DraftDeps], gpu: int) -> list[str]:
    """Every link of `gpu` the analysis read, one line each: where it lands, its severity, lanes and end. Several
    failing links on one GPU point at the GPU module."""
    ctx.deps.tools_used.append("topology_neighbours")
    d = ctx.deps.diagnosis
    own = [f for f in d.findings if f.gpu == gpu]
    if not own:
        raise ModelRetry(f"GPU {gpu} has no links in this diagnosis")
    return [pages.line(f, d, ctx.deps.graph) for f in own]


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
