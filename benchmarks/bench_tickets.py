"""Ticket drafting cost: the rules drafter, and the Claude drafter's own overhead around a scripted model.

The scripted model answers at once, so the second figure is the agent, tools and fact checks alone (no network).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from pydantic_ai import models
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from diagnostics import Diagnosis, Snapshot, diagnose_snapshot
from diagnostics.tickets import ClaudeDrafter, RulesDrafter, candidates_for

models.ALLOW_MODEL_REQUESTS = False
TOOLS = ("unhealthy_links", "list_candidates", "parts_catalog")


def node_diagnosis() -> Diagnosis:
    """An HGX H100 node, 144 NVLinks, three of GPU 2's links failing."""
    links = [
        {"gpu_src": g, "gpu_dst": (g + 1 + i % 7) % 8, "link_id": f"nvlink-{i}", "crc_errors": i * 3,
         "replay_count": 1500 + i if g == 2 and i < 3 else i}
        for g in range(8) for i in range(18)
    ]
    return diagnose_snapshot(Snapshot.model_validate({
        "node_id": "bench-node", "platform": "hgx-h100-8gpu", "fabric_errors": links, "step_time_ms": 210.0,
        "baseline_step_time_ms": 180.0}))


def scripted(candidate_id: str) -> FunctionModel:
    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if not any(isinstance(m, ModelResponse) for m in messages):
            args = {"parts_catalog": {"candidate_id": candidate_id}}
            return ModelResponse(parts=[ToolCallPart(t, args.get(t, {})) for t in TOOLS])
        answer = {"candidate_id": candidate_id, "why": "three failing links share GPU 2", "summary": "GPU 2 module.",
                  "hypotheses": [{"kind": "gpu", "candidate_id": candidate_id, "evidence": ["3 links"]}]}
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, answer)])

    return FunctionModel(respond, model_name="scripted")


def timed(label: str, fn: Callable[[], object], runs: int) -> None:
    fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    print(f"{label}: p50 {statistics.median(times):.2f} ms, p95 {times[int(len(times) * 0.95)]:.2f} ms ({runs} runs)")


def main() -> None:
    d = node_diagnosis()
    target = candidates_for(d)[0].id
    rules, claude = RulesDrafter(), ClaudeDrafter(model=scripted(target))
    timed("candidates_for, 144 links", lambda: candidates_for(d), 200)
    timed("RulesDrafter.draft, 144 links", lambda: rules.draft(d), 200)
    timed("RulesDrafter.draft + to_markdown", lambda: rules.draft(d).to_markdown(), 200)
    timed("ClaudeDrafter.draft, scripted model (agent + tools + checks)", lambda: claude.draft(d), 50)


if __name__ == "__main__":
    main()
