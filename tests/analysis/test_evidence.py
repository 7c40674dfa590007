"""What one node's Diagnosis carries for the correlation picture: its job's step time and the links that explain
the slowdown, or its worst links, on one time axis (the committed fleet: node 12's replay storm, the node whose
slowdown comes from outside the fabric)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest

from diagnostics import analyze_fleet, analyze_tables
from diagnostics.model import Diagnosis, StepEvidence
from diagnostics.synth.fleet import load

FLEET = Path(__file__).resolve().parents[2] / "fixtures" / "fleet"
ONSET = datetime(2026, 9, 17, 3, 10, tzinfo=UTC)


@pytest.fixture(scope="module")
def fleet() -> tuple[dict[str, pd.DataFrame], dict[str, str]]:
    return load(FLEET)


def diagnose(fleet: tuple[dict[str, pd.DataFrame], dict[str, str]], node: str) -> Diagnosis:
    tables, inventory = fleet
    return analyze_tables(tables, node_id=node, platform=inventory.get(node))


def at(evidence: StepEvidence, when: datetime) -> int:
    """The bucket holding `when`."""
    return int((when - evidence.start) / timedelta(minutes=evidence.bucket_minutes))


def test_the_link_that_explains_the_slowdown_is_shown_with_its_threshold(fleet: tuple) -> None:
    d = diagnose(fleet, "hpc-gpu-node-12")
    e = d.evidence
    assert e is not None and e.job_id == "4411" and e.explained
    [link] = e.links
    assert link.ref.name == "GPU 2 -> GPU 3 NVLink 1" and link.counter == "replay"
    assert (link.above, link.rule) == (1000.0, "nvlink_replay") and link.onset == ONSET
    assert link.score == pytest.approx(0.84, abs=0.01)
    assert len(link.rate_per_hour) == len(e.step_time_ms)
    before, after = at(e, ONSET - timedelta(minutes=30)), at(e, ONSET + timedelta(minutes=30))
    assert link.rate_per_hour[before] < 100 < 1000 < link.rate_per_hour[after]
    steps_before, steps_after = e.step_time_ms[before], e.step_time_ms[after]
    assert steps_before is not None and steps_after is not None
    assert steps_before == pytest.approx(180, rel=0.05) and steps_after == pytest.approx(340, rel=0.05)
    assert e.start + timedelta(minutes=e.bucket_minutes) * len(e.step_time_ms) == d.window_end  # to the window's end
    assert e.start <= d.window_end - timedelta(hours=d.window_hours)


def test_a_slowdown_from_outside_the_fabric_shows_the_worst_links_flat(fleet: tuple) -> None:
    truth = json.loads((FLEET / "ground_truth.json").read_text(encoding="utf-8"))
    [node] = [n for n, v in truth["nodes"].items() if v["scenario"] == "outside_slowdown"]
    d = diagnose(fleet, node)
    e = d.evidence
    assert e is not None and not e.explained and "not the fabric" in (d.verdict or "")
    assert len(e.links) == 3
    for link in e.links:
        assert link.above is not None and max(link.rate_per_hour) < link.above, link.ref.name


def test_the_fleet_view_carries_no_series(fleet: tuple) -> None:
    tables, inventory = fleet
    result = analyze_fleet(tables, platforms=inventory)
    assert all(d.evidence is None for d in result.diagnoses.values())
