"""Answers to mentions: Claude words them from the facts (checked), the rules answer stands in on failure."""

from __future__ import annotations

from pathlib import Path

from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from bot.answers import ClaudeAnswerer, rules_answer
from bot.nodes import SnapshotNodeSource
from diagnostics.tickets import ModelCall

from .helpers import OPS, SEEDS, local_bot, posted

NODE12 = SnapshotNodeSource.from_files([SEEDS]).diagnose("hpc-gpu-node-12")


def _model(*answers: str) -> tuple[FunctionModel, list[str]]:
    prompts: list[str] = []

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompts.append(str(messages[-1]))
        retries = sum(isinstance(m, ModelResponse) for m in messages)  # earlier answers sent back
        return ModelResponse(parts=[TextPart(answers[min(retries, len(answers) - 1)])])

    return FunctionModel(reply, model_name="test-claude"), prompts


def test_the_model_answers_from_the_facts_and_its_calls_are_reported() -> None:
    model, prompts = _model("GPU 2's NVLink 1 to GPU 3 is failing; file the urgent ticket.")
    calls: list[ModelCall] = []
    answer = ClaudeAnswerer(model=model, on_model_call=calls.append).answer(NODE12, "why is it slow?")
    assert answer.by == "test-claude" and answer.text.startswith("GPU 2's NVLink 1")
    assert "hpc-gpu-node-12" in prompts[0] and "GPU 2 -> GPU 3 NVLink 1" in prompts[0]
    assert [(c.model, c.outcome) for c in calls] == [("test-claude", "ok")]


def test_an_answer_naming_a_gpu_outside_the_facts_is_retried_then_replaced_by_the_rules() -> None:
    model, _ = _model("GPU 7 is the culprit.", "GPU 6 then.")
    calls: list[ModelCall] = []
    answer = ClaudeAnswerer(model=model, on_model_call=calls.append, retries=1).answer(NODE12, "why?")
    assert answer.by == "rules" and answer.text == rules_answer(NODE12)
    assert calls[-1].outcome == "fallback"
    fixed, _ = _model("GPU 7 is the culprit.", "GPU 2 -> GPU 3 NVLink 1 is failing.")
    assert ClaudeAnswerer(model=fixed, retries=1).answer(NODE12, "why?").text.startswith("GPU 2 -> GPU 3")


def test_a_mention_gets_the_model_answer_in_its_thread(tmp_path: Path) -> None:
    model, _ = _model("hpc-gpu-node-12: GPU 2 -> GPU 3 NVLink 1 is failing; step time +89.2%.")
    with local_bot(answerer=ClaudeAnswerer(model=model)) as local:
        asked = local.injector.mention("what is wrong with hpc-gpu-node-12?", user="UBOB", channel=OPS)
        assert local.slack.wait_for(lambda s: posted(s, thread=asked.ts))
        text = posted(local.slack, thread=asked.ts)[0].text
        assert text.startswith("hpc-gpu-node-12: GPU 2 -> GPU 3 NVLink 1 is failing")
        assert "answered by test-claude from the analysis" in text
