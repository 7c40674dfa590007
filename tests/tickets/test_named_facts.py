"""What a technician reads as a fact in the model's words: a part by its name or its board's GPU, the GPU a command
runs on; and the catalog's own words, which never contradict the plan they come from."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pandas as pd
import pytest

from diagnostics import Diagnosis
from diagnostics.analysis import analyze_fleet
from diagnostics.enums import Priority
from diagnostics.synth.rack_fleet import build_racks
from diagnostics.tickets import ClaudeDrafter
from diagnostics.tickets.build import select, ticket_priority
from diagnostics.tickets.catalog import plan_for
from diagnostics.tickets.reasoning import DraftReasoning, check
from tests.tickets.helpers import hgx_node, scripted, seed_diagnosis


def _problems(d: Diagnosis, summary: str, steps: list[str] | None = None) -> list[str]:
    target, candidates = select(d, None, None)
    plans = {c.id: plan_for(d, c) for c in candidates}
    prio: dict[str, Priority] = {c.id: ticket_priority(d, c, None) for c in candidates}
    out = DraftReasoning(candidate_id=target.id, why="as the analysis found", summary=summary,
                         repair_steps=steps or [])
    return check(out, d, candidates, prio, plans)


@pytest.mark.parametrize("summary", [
    "GPU 2's NVLink 2 is failing: replace the H200 SXM5 module.",        # another board's module, by its name
    "GPU 2's NVLink 2 is failing: replace its H200 SXM5 GPU module.",    # ... or by its GPU
    "GPU 2's NVLink 2 is failing: replace the PCIe riser assembly.",     # a part an HGX board does not have
    "GPU 2's NVLink 2 is failing: reseat the NVLink bridge.",
    "GPU 2's NVLink 2 is failing: reset it (`nvidia-smi -r -i 3`).",     # a reset of another GPU
    "GPU 2's NVLink 2 is failing: read `nvidia-smi nvlink -e -i 7`.",
])
def test_a_part_or_gpu_the_facts_do_not_hold_is_sent_back(summary: str) -> None:
    assert _problems(hgx_node(), summary)


@pytest.mark.parametrize("summary", [
    "GPU 2's NVLink 2 is failing: reseat GPU 2's H100 SXM5 module, then replace the HGX H100 baseboard if it stays.",
    "GPU 2's NVLink 2 on this H100 board is failing: reset it alone (`nvidia-smi -r -i 2`).",
])
def test_the_candidates_own_part_and_gpu_pass(summary: str) -> None:
    assert _problems(hgx_node(), summary) == []


def test_a_draft_naming_another_boards_part_falls_back_to_the_rules() -> None:
    node = hgx_node()
    target, _ = select(node, None, None)
    answer: dict[str, Any] = {"candidate_id": target.id, "why": "its links replay",
                              "summary": "GPU 2's NVLink 2 is failing: order an H200 SXM5 module."}
    ticket = ClaudeDrafter(model=scripted(lambda m, i: answer), retries=1).draft(node)
    assert ticket.drafted_by == "rules"
    body, notes = ticket.to_markdown().split("## Notes")
    assert "H200" not in body  # said only as the reason the draft was refused
    assert "kept contradicting the analysis" in notes and "names the H200 SXM5 module" in notes, notes


def _racks(scenario: str) -> Diagnosis:
    tables, truth, slots, platforms = build_racks(seed=4, racks=1, hours=6, scenarios=[scenario])
    return analyze_fleet(tables, window=timedelta(hours=1), end=pd.Timestamp(truth["end"]), platforms=platforms,
                         racks=slots).racks["rack-01"]


@pytest.mark.parametrize("diagnosis", [
    lambda: seed_diagnosis(platform="dgx1-v100-8gpu"),  # the reset takes every NVLink peer: GPUs 0 to 7
    lambda: _racks("switch_port"),                      # the repair names the compute tray on the port
    lambda: _racks("fanout_root"),                      # a step says which end a clean switch end points at
], ids=["dgx1-v100-nvlink", "rack-switch-port", "rack-fanout-root"])
def test_the_catalogs_own_steps_as_the_models_wording_pass(diagnosis: Any) -> None:
    d = diagnosis()
    target, _ = select(d, None, None)
    plan = plan_for(d, target)
    assert _problems(d, plan.action, [s.text for s in plan.repair]) == []
