"""A lane is a fact like a GPU or a port: model text naming a lane the analysis did not observe is sent back."""

from __future__ import annotations

from diagnostics.enums import LinkEnd, Priority
from diagnostics.tickets.reasoning import ALL_PARTS, contradictions, end_problems

FACTS = {"GPU": {0}, "NVLink": set(), "NVSwitch": set(), "port": set(), "lane": {6}}


def test_a_lane_the_analysis_observed_passes() -> None:
    assert contradictions("Lane 6 of GPU 0 receives errors.", FACTS, "the candidate", Priority.MEDIUM,
                          ALL_PARTS) == []


def test_a_lane_it_did_not_observe_is_a_contradiction() -> None:
    problems = contradictions("GPU 0 lane 3 is failing", FACTS, "the candidate", Priority.MEDIUM, ALL_PARTS)
    assert problems == ["names lane 3, but the candidate has lane 6"]


def test_a_width_is_not_a_lane() -> None:
    assert contradictions("running 8 lanes of 16; lanes 8 of 16 lost", FACTS, "the candidate", Priority.MEDIUM,
                          ALL_PARTS) == []


def test_an_end_the_analysis_did_not_name_is_a_contradiction() -> None:
    assert end_problems("The errors reach the GPU end; reseat the module.", LinkEnd.GPU, "the candidate") == []
    assert end_problems("the NVSwitch's end receives them", LinkEnd.GPU, "the candidate") == [
        "names the nvswitch end, but the candidate has the gpu end"]
    assert end_problems("errors at the upstream end", None, "the candidate") == [
        "names the upstream end, but the candidate has no end (the counters of both ends do not name one)"]
    assert end_problems("the end of the replay storm", None, "the candidate") == []
