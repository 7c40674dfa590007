"""The Claude drafter through pydantic-ai's real Anthropic model class and a local stub of the Messages API."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pandas as pd
import pytest
from pydantic_ai import models
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.providers.anthropic import AnthropicProvider

from diagnostics import Diagnosis
from diagnostics.analysis import analyze_fleet
from diagnostics.synth.rack_fleet import build_racks
from diagnostics.tickets import ClaudeDrafter, ModelCall, RunLimits, drafter_from_env
from diagnostics.tickets.build import select
from diagnostics.tickets.model_run import DEFAULT_MODEL, ENV_KEY, ENV_MODEL
from diagnostics.tickets.tools import TOOLSET
from tests.tickets.anthropic_stub import (
    Reply,
    Script,
    Stub,
    final_answer,
    native_output,
    output_tool,
    serve,
    thinking,
    tool_use,
)
from tests.tickets.helpers import hgx_node, seed_diagnosis

pytestmark = pytest.mark.claude_stub

DRAFT_INPUT_BUDGET = 12_000  # the README's per-draft budget, in the stub's 4-characters-a-token estimate
READ = [("unhealthy_links", {}), ("link_detail", {"link": "gpu2-nvlink2"}), ("same_switch", {"link": "gpu2-nvlink2"}),
        ("list_candidates", {}), ("repair_steps_for", {"candidate_id": "gpu2"})]


@pytest.fixture(autouse=True)
def _allow_the_stub(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(models, "ALLOW_MODEL_REQUESTS", True)  # loopback only: the stub below


def _reads(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [tool_use(name, args, i) for i, (name, args) in enumerate(READ)]


ANSWER = {"candidate_id": "gpu2", "why": "GPU 2's three links replay over 1,500/h; no other GPU's do",
          "summary": "The GPU 2 module is failing: three of its NVLinks replay.",
          "cites": ["gpu2-nvlink0", "gpu2-nvlink1", "gpu2-nvlink2"]}


def _answers(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [tool_use(output_tool(body), ANSWER, 99)]


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


# -- the default model, as production builds it ---------------------------------------------------------------


@pytest.fixture
def default_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stub]:
    """Production's construction: a key in the environment, no model named, the SDK pointed at the stub."""
    def thinks_then_reads(body: dict[str, Any]) -> list[dict[str, Any]]:
        return [thinking("GPU 2 has three failing links; read them."), *_reads(body)]

    def answers(body: dict[str, Any]) -> list[dict[str, Any]]:
        return [thinking("All three land on GPU 2."), final_answer(body, ANSWER, 99)]

    with serve([thinks_then_reads, answers]) as s:
        monkeypatch.setenv(ENV_KEY, "sk-ant-stub")
        monkeypatch.delenv(ENV_MODEL, raising=False)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", s.base_url)
        yield s


def test_the_default_model_drafts_with_thinking_set_on_purpose_and_room_for_it(default_env: Stub) -> None:
    calls: list[ModelCall] = []
    drafter = drafter_from_env(on_model_call=calls.append)
    ticket = drafter.draft(hgx_node())
    assert ticket.drafted_by == DEFAULT_MODEL and ticket.candidate_id == "gpu2", ticket.fallback_notes
    assert [c.outcome for c in calls] == ["ok", "ok"]
    first, second = default_env.requests
    assert first["model"] == DEFAULT_MODEL
    # Sonnet 5.5 thinks unless told otherwise and refuses `disabled`: off is `between_tools`, which still thinks
    # between tool calls, so max_tokens leaves the answer its 2,000 beyond the thinking room.
    assert first["thinking"] == {"type": "between_tools"}
    assert first["max_tokens"] == 2000 + 6000
    # The path pydantic-ai takes for this name: the output tool, chosen by the model (it refuses a forced choice).
    assert native_output(first) is None and first["tool_choice"] == {"type": "auto"}
    assert output_tool(first) in [t["name"] for t in first["tools"]]
    replayed = [b for m in second["messages"] if m["role"] == "assistant" for b in m["content"]]
    assert any(b["type"] == "thinking" and b["signature"] for b in replayed)  # thinking sent back with its signature


def test_a_model_told_to_think_takes_the_native_output_path(stub: Stub) -> None:
    def answers(body: dict[str, Any]) -> list[dict[str, Any]]:
        return [thinking("weighing"), final_answer(body, ANSWER, 99)]

    with serve([_reads, answers]) as s:
        provider = AnthropicProvider(api_key="sk-ant-stub", base_url=s.base_url)
        drafter = ClaudeDrafter(model=AnthropicModel(DEFAULT_MODEL, provider=provider),
                                limits=RunLimits(thinking="low"))
        ticket = drafter.draft(hgx_node())
    assert ticket.drafted_by == DEFAULT_MODEL and ticket.candidate_id == "gpu2", ticket.fallback_notes
    first = s.requests[0]
    assert first["thinking"] == {"type": "adaptive"} and first["output_config"]["effort"] == "low"
    assert native_output(first) is not None and not any(t["name"].startswith("final_result") for t in first["tools"])
    assert first["max_tokens"] == 8000


def test_a_model_that_can_turn_thinking_off_gets_no_thinking_room() -> None:
    with serve([_reads, _answers]) as s:
        provider = AnthropicProvider(api_key="sk-ant-stub", base_url=s.base_url)
        ClaudeDrafter(model=AnthropicModel("claude-sonnet-5", provider=provider)).draft(hgx_node())
    assert s.requests[0]["thinking"] == {"type": "disabled"} and s.requests[0]["max_tokens"] == 2000


# -- what the API does besides answering: each a clear note in the rules ticket --------------------------------


def _fallback(script: list[Script], **limits: Any) -> tuple[str, Stub]:
    with serve(script) as s:
        provider = AnthropicProvider(api_key="sk-ant-stub", base_url=s.base_url)
        drafter = ClaudeDrafter(model=AnthropicModel(DEFAULT_MODEL, provider=provider), retries=1,
                                limits=RunLimits(**limits))
        ticket = drafter.draft(hgx_node())
    assert ticket.drafted_by == "rules" and ticket.fallback_notes, ticket
    return ticket.fallback_notes[0], s


def test_overloaded_is_said_as_overloaded() -> None:
    note, s = _fallback([lambda b: Reply.error(529, "Overloaded", retry_after_ms="10")])
    assert "overloaded (529)" in note and len(s.requests) == 2  # the SDK's one retry, then the rules


def test_rate_limited_says_when_to_retry() -> None:
    note, s = _fallback([lambda b: Reply.error(429, "Number of requests exceeded", retry_after="20",
                                               retry_after_ms="10")])
    assert "rate limiting this key (429, retry after 20 s)" in note and len(s.requests) == 2


def test_a_refusal_is_said_as_a_refusal() -> None:
    note, _ = _fallback([lambda b: Reply(content=[], stop_reason="refusal")])
    assert "refused to answer (stop reason refusal)" in note


def test_an_answer_cut_at_max_tokens_names_the_limit() -> None:
    note, _ = _fallback([lambda b: Reply(content=[thinking("long " * 50)], stop_reason="max_tokens")])
    assert "output limit (max_tokens 8,000, thinking included)" in note


def test_invalid_tool_arguments_are_sent_back_then_named() -> None:
    note, s = _fallback([lambda b: [tool_use("link_detail", {"nope": 1}, 1)]])
    assert len(s.requests) == 2, note  # the call, one retry (retries=1), then pydantic-ai gives up
    results = [b for m in s.requests[1]["messages"] if isinstance(m["content"], list) for b in m["content"]
               if b.get("type") == "tool_result"]
    assert results and results[0].get("is_error") and "link" in str(results[0]["content"])
    assert "kept calling link_detail with arguments it does not take (sent back 1 time, the run's retry limit; " \
           "the last: link_detail's arguments: link: Field required)" in note, note


def test_a_cut_response_is_a_connection_failure() -> None:
    note, s = _fallback([lambda b: Reply(content=[tool_use("unhealthy_links", {}, 1)], cut=True)])
    assert "cut mid-answer" in note and len(s.requests) == 2


def test_the_run_limit_names_itself() -> None:
    note, _ = _fallback([_reads], requests=2)
    assert "usage limit (2 requests" in note and "request_limit" in note


def test_the_declared_minimums_are_the_versions_whose_apis_the_drafter_uses() -> None:
    """pydantic-ai 2.68 (per-model thinking settings, capabilities) and anthropic 2.14, as locked; a lower minimum
    would install a library the drafter cannot run on."""
    import re
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    declared = tomllib.loads((root / "pyproject.toml").read_text())["project"]["dependencies"]
    minimums = {m[1]: m[2] for d in declared if (m := re.match(r"([a-z0-9-]+)(?:\[[^\]]*\])?>=([\d.]+)", d))}
    locked = dict(re.findall(r"^([a-z0-9-]+)==([\d.]+)", (root / "requirements.lock").read_text(), re.MULTILINE))
    for name in ("pydantic-ai-slim", "anthropic"):
        assert locked[name].startswith(minimums[name]), (name, minimums[name], locked[name])


# -- a board's own GPU names, through the default model --------------------------------------------------------


def _gb200_rack() -> Diagnosis:
    tables, truth, slots, platforms = build_racks(seed=4, racks=1, hours=6, scenarios=["one_gpu"])
    return analyze_fleet(tables, window=timedelta(hours=1), end=pd.Timestamp(truth["end"]), platforms=platforms,
                         racks=slots).racks["rack-01"]


@pytest.mark.parametrize(("board", "gpu", "kept"), [
    ("gb200", "B200", True),   # a GB200 superchip's GPUs are B200s: the rack's own GPUs by their own name
    ("gb200", "H200", False),  # another board's GPU
    ("hgx-h100", "H200", False),
    ("hgx-h100", "H100", True),
    ("hgx-h100", "B200", False),
    ("hgx-b200", "GB200", False),  # a B200 board is no GB200 superchip's
    ("hgx-b200", "B200", True),
])
def test_a_draft_naming_the_boards_own_gpus_is_kept_and_another_boards_is_not(
        monkeypatch: pytest.MonkeyPatch, board: str, gpu: str, kept: bool) -> None:
    """A GB200 NVL72 rack's draft that called its GPUs B200 was sent back as naming another board, every retry,
    and the rules drafted every GB200 ticket: the platform file lists the GPU names a board answers to."""
    d = _gb200_rack() if board == "gb200" else hgx_node() if board == "hgx-h100" else \
        seed_diagnosis(platform="hgx-b200-8gpu")
    target, _ = select(d, None, None)
    answer = {"candidate_id": target.id, "why": "its NVLinks fail and no other GPU's do",
              "summary": f"{target.component}'s NVLinks fail: the {gpu} GPU is the suspect."}

    def answers(body: dict[str, Any]) -> list[dict[str, Any]]:
        return [thinking("one GPU's links"), final_answer(body, answer, 99)]

    with serve([answers]) as s:
        monkeypatch.setenv(ENV_KEY, "sk-ant-stub")
        monkeypatch.delenv(ENV_MODEL, raising=False)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", s.base_url)
        ticket = drafter_from_env().draft(d)
    assert s.requests[0]["model"] == DEFAULT_MODEL
    assert (ticket.drafted_by == DEFAULT_MODEL) is kept, ticket.fallback_notes
    assert (f"the {gpu} GPU" in ticket.to_markdown()) is kept
