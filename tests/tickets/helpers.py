"""Scripted models for the Claude drafter's tests: real agent, no network."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from diagnostics import Diagnosis, Snapshot, diagnose_snapshot

SEED_INPUT: dict[str, Any] = {
    "node_id": "hpc-gpu-node-12",
    "fabric_errors": [
        {"gpu_src": 2, "gpu_dst": 3, "link_id": "nvlink-1", "crc_errors": 45120, "replay_count": 8900},
        {"gpu_src": 0, "gpu_dst": 1, "link_id": "nvlink-0", "crc_errors": 0, "replay_count": 0},
    ],
    "step_time_ms": 340.5,
    "baseline_step_time_ms": 180,
}

TOOLS = ["unhealthy_links", "link_detail", "same_switch", "list_candidates", "topology_neighbours", "parts_catalog",
         "repair_steps_for"]


def seed_diagnosis(**overrides: Any) -> Diagnosis:
    return diagnose_snapshot(Snapshot.model_validate(SEED_INPUT | overrides))


def good_answer(candidate_id: str = "gpu2-nvlink1") -> dict[str, Any]:
    return {
        "candidate_id": candidate_id,
        "why": "GPU 2 -> GPU 3 NVLink 1 replays 8,900 per hour against a 1,000 limit; GPU 0 -> GPU 1 is clean.",
        "alternatives": [{"candidate_id": "gpu2", "why": "only one of GPU 2's links is failing"}],
        "hypotheses": [{"kind": "nvlink", "candidate_id": "gpu2-nvlink1", "evidence": ["one link"]},
                       {"kind": "gpu", "candidate_id": "gpu2", "evidence": ["other links clean"]}],
        "summary": "NVLink 1 between GPU 2 and GPU 3 is failing and explains the slowdown; reseat, then replace.",
        "repair_steps": [],
    }


def _tool_args(name: str) -> dict[str, Any]:
    return {"topology_neighbours": {"gpu": 2}, "parts_catalog": {"candidate_id": "gpu2-nvlink1"},
            "repair_steps_for": {"candidate_id": "gpu2-nvlink1"},
            "link_detail": {"link": "GPU 2 -> GPU 3 NVLink 1"},
            "same_switch": {"link": "gpu2-nvlink1"}}.get(name, {})


def seen_text(messages: list[ModelMessage]) -> str:
    """Everything the model has been shown so far, as one string."""
    return repr(messages)


def scripted(answer: Callable[[list[ModelMessage], int], dict[str, Any]], *, call_tools: bool = True,
             seen: list[str] | None = None) -> FunctionModel:
    """A model that first calls every tool, then answers with `answer(messages, attempt)` (attempt counts from 0)."""
    state = {"answers": 0}

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if seen is not None:
            seen.extend(t.name for t in info.function_tools)
        usage = RequestUsage(input_tokens=120, output_tokens=30)
        if call_tools and len([m for m in messages if isinstance(m, ModelResponse)]) == 0:
            return ModelResponse(parts=[ToolCallPart(n, _tool_args(n), tool_call_id=f"t{i}")
                                        for i, n in enumerate(TOOLS)], usage=usage)
        out = answer(messages, state["answers"])
        state["answers"] += 1
        if not info.output_tools:
            return ModelResponse(parts=[TextPart(json.dumps(out))], usage=usage)
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, out, tool_call_id=f"o{state['answers']}")],
                             usage=usage)

    return FunctionModel(respond, model_name="scripted-claude")


def hgx_node(failing: int = 3, gpus: tuple[int, ...] = (2,)) -> Diagnosis:
    """An HGX H100 node with all 144 NVLinks read, the first `failing` links of each of `gpus` replaying."""
    links = [{"gpu_src": g, "gpu_dst": (g + 1 + i % 7) % 8, "link_id": f"nvlink-{i}", "crc_errors": i * 3,
              "replay_count": 1500 + 10 * g + i if g in gpus and i < failing else i}
             for g in range(8) for i in range(18)]
    return diagnose_snapshot(Snapshot.model_validate({
        "node_id": "hgx-node", "platform": "hgx-h100-8gpu", "fabric_errors": links, "step_time_ms": 210.0,
        "baseline_step_time_ms": 180.0}))


def request_tokens(messages: list[ModelMessage], info: AgentInfo) -> int:
    """A request's input as the API would be sent it (instructions, tool definitions, messages), at 4 characters a
    token: the estimate the README's per-draft budget is stated in."""
    tools = [{"name": t.name, "description": t.description, "input_schema": t.parameters_json_schema}
             for t in [*info.function_tools, *info.output_tools]]
    return (len(info.instructions or "") + len(json.dumps(tools)) + len(repr(messages))) // 4
