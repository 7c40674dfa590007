"""The Claude drafter through pydantic-ai's real Anthropic model class and a local stub of the Messages API."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pydantic_ai import models
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.providers.anthropic import AnthropicProvider

from diagnostics.tickets import ClaudeDrafter, ModelCall
from diagnostics.tickets.tools import TOOLSET
from tests.tickets.anthropic_stub import Script, Stub, output_tool, serve, tool_use
from tests.tickets.helpers import hgx_node

pytestmark = pytest.mark.claude_stub

DRAFT_INPUT_BUDGET = 12_000  # the README's per-draft budget, in the stub's 4-characters-a-token estimate
READ = [("unhealthy_links", {}), ("link_detail", {"link": "gpu2-nvlink2"}), ("same_switch", {"link": "gpu2-nvlink2"}),
        ("list_candidates", {}), ("repair_steps_for", {"candidate_id": "gpu2"})]


@pytest.fixture(autouse=True)
def _allow_the_stub(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(models, "ALLOW_MODEL_REQUESTS", True)  # loopback only: the stub below


def _reads(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [tool_use(name, args, i) for i, (name, args) in enumerate(READ)]


def _answers(body: dict[str, Any]) -> list[dict[str, Any]]:
    answer = {"candidate_id": "gpu2", "why": "GPU 2's three links replay over 1,500/h; no other GPU's do",
              "summary": "The GPU 2 module is failing: three of its NVLinks replay.",
              "cites": ["gpu2-nvlink0", "gpu2-nvlink1", "gpu2-nvlink2"]}
    return [tool_use(output_tool(body), answer, 99)]


@pytest.fixture
def stub() -> Iterator[Stub]:
    script: list[Script] = [_reads, _answers]
    with serve(script) as s:
        yield s


def _drafter(stub: Stub, calls: list[ModelCall]) -> ClaudeDrafter:
    provider = AnthropicProvider(api_key="sk-ant-stub", base_url=stub.base_url)
    return ClaudeDrafter(model=AnthropicModel("claude-stub-1", provider=provider), on_model_call=calls.append)


def test_the_whole_loop_through_the_anthropic_model(stub: Stub) -> None:
    calls: list[ModelCall] = []
    ticket = _drafter(stub, calls).draft(hgx_node())
    assert ticket.drafted_by == "claude-stub-1" and ticket.candidate_id == "gpu2"
    assert ticket.choice is not None and ticket.choice.carried == "model"
    assert [c.outcome for c in calls] == ["ok", "ok"] and len(stub.requests) == 2
    results = [b for m in stub.requests[1]["messages"] for b in (m["content"] if isinstance(m["content"], list)
                                                                  else []) if b.get("type") == "tool_result"]
    assert len(results) == len(READ) and not any(r.get("is_error") for r in results)
    assert "gpu2-nvlink2 | GPU 2 NVLink 2 -> NVSwitch 0 port 10 | failing" in str(results[0]["content"])


def test_the_request_lists_the_tools_and_marks_the_cache(stub: Stub) -> None:
    _drafter(stub, []).draft(hgx_node())
    first = stub.requests[0]
    names = [t["name"] for t in first["tools"]]
    assert set(TOOLSET.tools) <= set(names) and output_tool(first) in names
    assert "cache_control" in first["tools"][-1]  # the tool definitions end in a breakpoint
    assert all("cache_control" not in t for t in first["tools"][:-1])
    assert isinstance(first["system"], list) and "cache_control" in first["system"][-1]  # and the instructions
    assert "unhealthy_links" in first["system"][-1]["text"] and first["max_tokens"] == 2000


def test_the_second_request_reads_the_cache_and_the_draft_stays_in_budget(stub: Stub) -> None:
    _drafter(stub, []).draft(hgx_node())
    first, second = stub.usages
    assert first["cache_creation_input_tokens"] > 1000 and first["cache_read_input_tokens"] == 0
    assert second["cache_read_input_tokens"] == first["cache_creation_input_tokens"]
    assert second["cache_creation_input_tokens"] == 0
    total = sum(u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"]
                for u in stub.usages)
    assert total < DRAFT_INPUT_BUDGET, stub.usages
