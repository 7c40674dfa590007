"""Claude runs are bounded (requests, tokens, one deadline per run), cache what repeats, and are checked once."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest
from pydantic_ai import models
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from bot.runtime import build_runtime
from bot.settings import Settings
from diagnostics.tickets import (
    ClaudeAnswerer,
    ClaudeDrafter,
    ModelCall,
    ModelCheck,
    RunLimits,
    check_model,
    drafter_from_env,
)
from diagnostics.tickets.model_run import ENV_KEY, ENV_MODEL
from tests.tickets.anthropic_stub import Reply, Script, Stub, final_answer, serve, tool_use
from tests.tickets.helpers import good_answer, hgx_node, scripted, seed_diagnosis


def test_a_model_that_never_stops_calling_tools_is_stopped_by_the_request_limit() -> None:
    calls: list[ModelCall] = []

    def loop(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart("unhealthy_links", {}, tool_call_id=f"t{len(messages)}")])

    drafter = ClaudeDrafter(model=FunctionModel(loop, model_name="looping"), on_model_call=calls.append,
                            limits=RunLimits(requests=3))
    ticket = drafter.draft(seed_diagnosis())
    assert ticket.drafted_by == "rules" and "UsageLimitExceeded" in ticket.fallback_notes[0]
    assert [c.outcome for c in calls] == ["ok", "ok", "ok", "fallback"]


def test_the_token_limit_holds_across_the_run() -> None:
    model = scripted(lambda messages, attempt: good_answer())  # 150 tokens a request, four requests in all
    ticket = ClaudeDrafter(model=model, limits=RunLimits(total_tokens=200)).draft(seed_diagnosis())
    assert ticket.drafted_by == "rules" and "total_tokens_limit" in ticket.fallback_notes[0]
    assert ClaudeDrafter(model=model).draft(seed_diagnosis()).drafted_by == "scripted-claude"


def test_an_answer_past_its_deadline_is_the_rules_answer_at_the_deadline() -> None:
    calls: list[ModelCall] = []

    async def slow(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        await asyncio.sleep(600)
        return ModelResponse(parts=[TextPart("too late")])

    answerer = ClaudeAnswerer(model=FunctionModel(slow, model_name="slow"), on_model_call=calls.append,
                              limits=RunLimits(deadline_s=0.3))
    start = time.monotonic()
    answer = answerer.answer(seed_diagnosis(), "why is it slow?")
    assert time.monotonic() - start < 60  # the deadline cut a ten-minute model run
    assert answer.by == "rules" and calls[-1].outcome == "fallback" and "0.3 s deadline" in calls[-1].detail


def test_every_request_carries_the_cache_marks_and_its_bounds() -> None:
    seen: list[dict[str, Any]] = []

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(dict(info.model_settings or {}))
        return ModelResponse(parts=[TextPart("GPU 2 -> GPU 3 NVLink 1 is failing.")])

    ClaudeAnswerer(model=FunctionModel(reply, model_name="m")).answer(seed_diagnosis(), "why?")
    (settings,) = seen
    assert settings["anthropic_cache_instructions"] is True and settings["anthropic_cache_tool_definitions"] is True
    assert settings["max_tokens"] == 400 and settings["max_retries"] == 1
    assert settings["request_timeout"] <= 20.0  # never longer than the run's deadline
    drafting = dict(ClaudeDrafter(model="claude-x").agent.model_settings or {})
    assert drafting["anthropic_cache_tool_definitions"] is True and drafting["max_tokens"] == 2000


def _anthropic(status: int, body: dict[str, Any] | None = None) -> httpx2.Client:
    def handle(request: httpx2.Request) -> httpx2.Response:
        assert request.url.path == "/v1/models/claude-test"
        return httpx2.Response(status, json=body or {})

    return httpx2.Client(transport=httpx2.MockTransport(handle))


def _error(kind: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": f"{kind} for sk-ant-secret"}}


def test_the_start_up_check_tells_a_refused_key_and_an_unknown_model_from_an_outage(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    ok = check_model("claude-test", "sk-ant-secret", http_client=_anthropic(200, {
        "id": "claude-test", "type": "model", "display_name": "Claude Test", "created_at": "2026-01-01T00:00:00Z"}))
    assert ok.usable and "available" in ok.note
    refused = check_model("claude-test", "sk-ant-secret", http_client=_anthropic(401, _error("authentication_error")))
    assert not refused.usable and "ANTHROPIC_API_KEY was refused" in refused.note and "(401)" in refused.note
    unknown = check_model("claude-test", "sk-ant-secret", http_client=_anthropic(404, _error("not_found_error")))
    assert not unknown.usable and "no model 'claude-test'" in unknown.note and "FABRICBOT_MODEL" in unknown.note

    def down(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("connection refused")

    unreachable = httpx2.Client(transport=httpx2.MockTransport(down))
    outage = check_model("claude-test", "sk-ant-secret", http_client=unreachable)
    assert outage.usable and "could not check" in outage.note
    assert all("sk-ant-secret" not in c.note for c in (ok, refused, unknown, outage))


def test_an_unusable_claude_is_said_once_and_the_rules_draft(tmp_path: Path) -> None:
    checked: list[tuple[str, str]] = []

    def refuse(model: str, key: str) -> ModelCheck:
        checked.append((model, key))
        return ModelCheck(False, "ANTHROPIC_API_KEY was refused by the Anthropic API (401)")

    settings = Settings(anthropic_api_key="sk-ant-x", model="claude-test", store=tmp_path)
    rt = build_runtime(settings, model_check=refuse)
    assert checked == [("claude-test", "sk-ant-x")] and rt.notes == [
        "ANTHROPIC_API_KEY was refused by the Anthropic API (401)"]
    ticket = rt.drafter.draft(seed_diagnosis())
    assert ticket.drafted_by == "rules" and "unusable at start-up" in ticket.fallback_notes[0]
    assert rt.answerer.answer(seed_diagnosis(), "why?").by == "rules"
    assert json.dumps(rt.notes).count("refused") == 1


# -- why a run fell back, through production's construction and a local stub of the Messages API ------------------

KEY = "sk-ant-stub-0123456789abcdefghij"


def _draft(monkeypatch: pytest.MonkeyPatch, script: list[Script]) -> tuple[str, list[ModelCall], Stub]:
    """A draft by `drafter_from_env` (a key in the environment, no model named) against the stub: its one note."""
    monkeypatch.setattr(models, "ALLOW_MODEL_REQUESTS", True)  # loopback only: the stub
    calls: list[ModelCall] = []
    with serve(script) as stub:
        monkeypatch.setenv(ENV_KEY, KEY)
        monkeypatch.delenv(ENV_MODEL, raising=False)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", stub.base_url)
        ticket = drafter_from_env(on_model_call=calls.append).draft(hgx_node())
    assert ticket.drafted_by == "rules" and len(ticket.fallback_notes) == 1, ticket
    return ticket.fallback_notes[0], calls, stub


def _answer(answer: dict[str, Any]) -> Script:
    return lambda body: [final_answer(body, answer, 9)]


def test_drafts_that_keep_contradicting_the_analysis_say_so_and_the_last_reason(
        monkeypatch: pytest.MonkeyPatch) -> None:
    wrong = {"candidate_id": "gpu2", "why": "three links replay", "summary": "The GPU 5 module is failing.",
             "cites": ["gpu2-nvlink0"]}
    note, calls, stub = _draft(monkeypatch, [_answer(wrong)])
    sent_back = json.dumps(stub.requests[1]["messages"][-1])
    assert "summary names GPU 5" in sent_back  # what the model was told, and what the note says
    assert "the drafts kept contradicting the analysis (sent back 2 times, the run's retry limit; the last: " \
           "summary names GPU 5, but candidate gpu2 has GPU 2)" in note, note
    assert [c.outcome for c in calls] == ["retry", "retry", "retry", "fallback"]


@pytest.mark.parametrize(("reply", "last"), [
    (_answer({"candidate": "gpu2", "why": 3}), "candidate_id: Field required"),
    (lambda body: [{"type": "text", "text": "I think GPU 2 is bad."}],
     "plain text where the draft's form was asked for"),
])
def test_answers_that_do_not_fit_the_drafts_form_say_so_and_are_retries(
        monkeypatch: pytest.MonkeyPatch, reply: Script, last: str) -> None:
    note, calls, stub = _draft(monkeypatch, [reply])
    assert len(stub.requests) == 3
    assert f"the answers did not fit the draft's form (sent back 2 times, the run's retry limit; the last: {last})" \
        in note, note
    assert "contradicting" not in note
    assert [(c.outcome, c.detail) for c in calls[:3]] == [("retry", last)] * 3


def test_a_tool_that_does_not_exist_is_named_as_such(monkeypatch: pytest.MonkeyPatch) -> None:
    note, _, _ = _draft(monkeypatch, [lambda body: [tool_use("reset_gpu", {"gpu": 2}, 1)]])
    assert "kept calling reset_gpu, a tool that does not exist (sent back 2 times" in note, note
    assert "arguments" not in note


LONG = ("thinking.type.disabled is not supported for this model; use thinking.type.between_tools, or name a model "
        "that can turn thinking off, such as one listed under the models endpoint for this key, and send the request "
        "again with max_tokens above the thinking budget: " + KEY)


@pytest.mark.parametrize(("status", "message"), [(400, LONG), (401, "invalid x-api-key"),
                                                 (404, "model: claude-sonnet-5-5"), (500, "Internal server error")])
def test_an_api_error_is_said_in_the_apis_own_words_on_one_line(
        monkeypatch: pytest.MonkeyPatch, status: int, message: str) -> None:
    note, _, _ = _draft(monkeypatch, [lambda body: Reply.error(status, message, retry_after_ms="10")])
    said = message.replace(KEY, "")
    assert f"the Anthropic API answered {status}: {said}" in note, note
    assert KEY not in note and "\n" not in note and "body" not in note and "{" not in note


def test_a_refusal_says_the_model_refused_on_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    note, _, _ = _draft(monkeypatch, [lambda body: Reply(content=[], stop_reason="refusal")])
    assert "the model refused to answer (stop reason refusal))" in note, note
    assert "\n" not in note and "{" not in note and "parts" not in note


def test_a_429_asking_to_wait_past_the_request_timeout_falls_back_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    start = time.monotonic()
    note, _, stub = _draft(monkeypatch, [lambda body: Reply.error(429, "Rate limited", retry_after="40")])
    assert time.monotonic() - start < 10 and len(stub.requests) == 1  # no sleep of 40 s into the 30 s timeout
    assert "rate limiting this key (429, retry after 40 s)" in note, note


def test_a_short_wait_is_still_retried_once(monkeypatch: pytest.MonkeyPatch) -> None:
    note, _, stub = _draft(monkeypatch, [lambda body: Reply.error(529, "Overloaded", retry_after="1")])
    assert len(stub.requests) == 2 and "overloaded (529)" in note, note
