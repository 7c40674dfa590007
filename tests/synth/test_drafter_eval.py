"""`fabricbot eval --drafter claude`: a drafter's tickets for the failing nodes, scored against the ground truth."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path

import pandas as pd
import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from bot.cli import main
from diagnostics.analysis import analyze_fleet
from diagnostics.synth.drafter_eval import DrafterReport, score_drafter, score_ticket
from diagnostics.synth.fleet import load
from diagnostics.tickets import ClaudeDrafter, RepairTicket, RulesDrafter

FLEET = Path(__file__).resolve().parents[2] / "fixtures" / "fleet"
FAILING = sum(bool(v["expect"]["localized"])
              for v in json.loads((FLEET / "ground_truth.json").read_text())["nodes"].values())


def _follows_the_analysis() -> FunctionModel:
    """A model that answers at once with the candidate the request says the analysis isolated."""
    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        isolated = re.search(r'"analysis_isolated": "([^"]+)"', repr(messages))
        assert isolated is not None
        answer = {"candidate_id": isolated.group(1), "why": "the analysis's isolation", "summary": "See the facts."}
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, answer)])

    return FunctionModel(respond, model_name="scripted-claude")


@pytest.fixture(scope="module")
def scored() -> DrafterReport:
    return score_drafter(FLEET, ClaudeDrafter(model=_follows_the_analysis()))


def test_every_failing_node_is_drafted_and_scored(scored: DrafterReport) -> None:
    assert scored.drafter == "scripted-claude" and scored.nodes == FAILING and scored.by_rules == 0
    assert scored.component.total == FAILING and scored.component.score is not None
    assert scored.component.score >= 0.9 and scored.part.total > 0
    assert scored.lane.tp >= 2 and scored.end.tp >= 2  # the lane scenarios' lanes and ends reach the tickets
    text = scored.render()
    assert re.search(r"  lane: F1=\d\.\d\d", text) and re.search(r"  end: F1=\d\.\d\d", text)
    assert f"on {FAILING} failing nodes" in text


def _ticket_for(node: str) -> RepairTicket:
    """The rules' ticket for one node of the committed fleet, as the eval analyses it."""
    truth = json.loads((FLEET / "ground_truth.json").read_text())
    tables, inventory = load(FLEET)
    fleet = analyze_fleet(tables, window=timedelta(hours=1), end=pd.Timestamp(truth["end"]), platforms=inventory,
                          nodes=[node])
    return RulesDrafter().draft(fleet.diagnoses[node])


def test_a_wrong_lane_or_part_counts_against_the_drafter() -> None:
    node = "hpc-gpu-node-04"  # the PCIe lane scenario
    expect = json.loads((FLEET / "ground_truth.json").read_text())["nodes"][node]["expect"]
    ticket = _ticket_for(node)
    right = DrafterReport(drafter="x")
    score_ticket(right, node, ticket, expect)
    assert (right.lane.tp, right.lane.fp, right.end.tp, right.part.right) == (1, 0, 1, 1) and node not in right.wrong
    wrong = DrafterReport(drafter="x")
    score_ticket(wrong, node, ticket.model_copy(update={"lanes": [3], "replacement_part": None, "end": None}), expect)
    assert (wrong.lane.tp, wrong.lane.fp, wrong.lane.fn, wrong.end.fn) == (0, 1, 1, 1)
    assert wrong.part.right == 0 and set(wrong.wrong[node]) == {"lane", "end", "part"}


def test_a_model_that_fails_is_counted_as_drafted_by_the_rules(scored: DrafterReport) -> None:
    def broken(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise ConnectionError("unreachable")

    report = score_drafter(FLEET, ClaudeDrafter(model=FunctionModel(broken, model_name="m")))
    assert report.by_rules == report.nodes == FAILING
    assert report.component.right == scored.component.right  # the rules' tickets, as the analysis isolated


def test_cli_without_a_key_says_so_and_exits_2(monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert main(["eval", str(FLEET), "--drafter", "claude"]) == 2
    err = capsys.readouterr().err
    assert "ANTHROPIC_API_KEY is not set" in err and "--drafter claude" in err
