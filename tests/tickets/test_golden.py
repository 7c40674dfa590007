"""Golden rule-drafter tickets for every synthetic scenario, checked against the fleet's ground truth.

Set FABRICBOT_REGEN_GOLDEN=1 to rewrite fixtures/golden_tickets.json after a deliberate change.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pandas as pd
import pytest

from diagnostics.analysis import analyze_tables
from diagnostics.enums import Severity
from diagnostics.model import Diagnosis
from diagnostics.synth.fleet import DEFAULT_NODES, build
from diagnostics.synth.scenarios import SCENARIOS
from diagnostics.tickets import NoFaultError, RepairTicket, RulesDrafter, candidates_for
from diagnostics.tickets.candidates import candidate_for
from tests.conftest import FIXTURES

GOLDEN = FIXTURES / "golden_tickets.json"
# The default node count of seed 0 holds every scenario at least once; 4 hours let the flapping link show.
FLEET = {"seed": 0, "nodes": DEFAULT_NODES, "hours": 4.0}


def _view(t: RepairTicket) -> dict[str, Any]:
    return {"component": t.component, "component_kind": t.component_kind.value, "gpu_index": t.gpu_index,
            "peer": t.peer, "link_id": t.link_id, "switch": t.switch, "switch_port": t.switch_port,
            "port_source": t.port_source.value, "part": t.replacement_part.id if t.replacement_part else None,
            "priority": t.priority.value, "repair_steps": len(t.repair_steps), "fault": t.fault.value,
            "reset": t.reset.scope.value, "next_part": t.next_part.id if t.next_part else None,
            "warnings": len(t.warnings), "lanes": t.lanes, "end": t.end.value if t.end else None}


@pytest.fixture(scope="module")
def fleet() -> list[tuple[str, dict[str, Any], Diagnosis]]:
    tables, truth = build(**FLEET)  # type: ignore[arg-type]
    end = pd.Timestamp(truth["end"])
    seen: set[str] = set()
    out = []
    for node_id, node in sorted(truth["nodes"].items(), key=lambda kv: kv[0]):
        if node["scenario"] in seen:
            continue
        seen.add(node["scenario"])
        out.append((node_id, node, analyze_tables(tables, node_id=node_id, end=end, platform=node["platform"])))
    return out


def _tickets(d: Diagnosis) -> list[RepairTicket]:
    """One ticket per localized fault: the isolated one first."""
    try:
        first = RulesDrafter().draft(d)
    except NoFaultError:
        return []
    found = candidates_for(d)
    rest = [candidate_for(loc, found) for loc in d.localizations[1:]]
    return [first] + [RulesDrafter().draft(d, component=c.id) for c in rest if c is not None]


def test_every_scenario_is_covered(fleet: list[tuple[str, dict[str, Any], Diagnosis]]) -> None:
    assert {node["scenario"] for _, node, _ in fleet} == set(SCENARIOS)


def test_rule_tickets_name_the_true_component(fleet: list[tuple[str, dict[str, Any], Diagnosis]]) -> None:
    for node_id, node, d in fleet:
        truth = {f["component"] for f in node["faults"]}
        parts = node["expect"]["parts"]
        tickets = _tickets(d)
        if node["benign"]:
            assert not tickets, f"{node['scenario']}: a benign node got a ticket"
            continue
        assert tickets, f"{node['scenario']} ({node_id}): no ticket"
        for t in tickets:
            assert t.candidate_id in truth, f"{node['scenario']}: ticket names {t.candidate_id}, truth {truth}"
            # the analysis's own name for the component reaches the same ticket
            if d.localization is not None and t.candidate_id == tickets[0].candidate_id:
                again = RulesDrafter().draft(d, component=d.localization.component)
                assert again.candidate_id == t.candidate_id
            assert t.human_review_required
            if parts[t.candidate_id] is None:  # the fabric software, or a board not known: no part
                assert t.replacement_part is None, f"{node['scenario']}: part {t.replacement_part}"
            else:
                assert t.replacement_part is not None, f"{node['scenario']}: no part"
                assert t.replacement_part.platform == parts[t.candidate_id]


def test_rule_tickets_match_the_golden_file(fleet: list[tuple[str, dict[str, Any], Diagnosis]]) -> None:
    got = {node["scenario"]: [_view(t) for t in _tickets(d)] for _, node, d in fleet}
    if os.environ.get("FABRICBOT_REGEN_GOLDEN"):
        GOLDEN.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        pytest.skip("golden file rewritten; compare on the next run")
    assert got == json.loads(GOLDEN.read_text(encoding="utf-8"))


def test_a_tickets_summary_quotes_the_cause_the_analysis_heads_its_suspect_with(
        fleet: list[tuple[str, dict[str, Any], Diagnosis]]) -> None:
    """The summary's reading is the one `analyze` heads the suspect with: a failing event (a fatal SXid, an Xid 79)
    before the link state it left ("link is inactive"), and the suspect's own failing reading (a Fabric Manager's
    "all 96 NVLinks inactive at once") before one of its links'."""
    checked = set()
    for _, node, d in fleet:
        for t in _tickets(d):
            own = [f for f in d.findings if f.component in set(next(
                c.findings for c in candidates_for(d) if c.id == t.candidate_id))]
            failing = [c.message for f in own for c in f.crossed
                       if c.severity in (Severity.FAILING, Severity.DOWN)]
            mine = [c.message for f in own if f.component == t.component for c in f.crossed if c.message in failing]
            events = [c.message for f in own for c in f.crossed if c.codes and c.message in failing]
            wanted = mine or events
            if wanted:
                checked.add(node["scenario"])
                assert any(f": {m}" in t.summary for m in wanted), (node["scenario"], t.summary, wanted)
    assert len(checked) >= 3, checked
