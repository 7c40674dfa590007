"""A drafter's tickets for a synthetic fleet's failing nodes, scored against the ground truth.

For each node the truth says is failing, the drafter drafts the ticket and it is held against what the truth
expects first: the component (the truth's headline, else one of the parts it localizes), the lanes and the end of
that component (as (component, lane) and (component, end) pairs, scored by F1 as `fabricbot eval` scores the
analysis), and the part (of the node's platform, or none where none applies). Drafts the rules wrote after the model
failed are counted apart, so the agreement is the model's own.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, Field

from ..analysis import analyze_fleet
from ..errors import InputError
from ..tickets.drafter import Drafter
from ..tickets.ticket import RepairTicket
from .evaluate import Scores, Tally
from .fleet import load


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


class DrafterReport(BaseModel):
    """How often the drafter's tickets agree with the truth on the failing nodes."""

    drafter: str
    nodes: int = 0
    by_rules: int = Field(default=0, description="Tickets the rules wrote because the model's draft was not usable.")
    component: Tally = Field(default_factory=Tally)
    part: Tally = Field(default_factory=Tally)
    lane: Scores = Field(default_factory=Scores)
    end: Scores = Field(default_factory=Scores)
    wrong: dict[str, list[str]] = Field(default_factory=dict)

    def render(self) -> str:
        def tally(name: str, t: Tally) -> str:
            return f"  {name}: {_fmt(t.score)} ({t.right}/{t.total})"

        def f1(name: str, s: Scores) -> str:
            return f"  {name}: F1={_fmt(s.f1)} P={_fmt(s.precision)} R={_fmt(s.recall)}"

        lines = [f"drafter {self.drafter} on {self.nodes} failing nodes ({self.by_rules} drafted by the rules after "
                 "the model's draft was not usable)", tally("component", self.component), f1("lane", self.lane),
                 f1("end", self.end), tally("part", self.part)]
        lines += [f"  {node}: wrong {', '.join(what)}" for node, what in sorted(self.wrong.items())]
        return "\n".join(lines)


def _pairs(component: str, values: list[Any]) -> set[tuple[str, str]]:
    return {(component, str(v)) for v in values}


def score_ticket(report: DrafterReport, node_id: str, ticket: RepairTicket, expect: dict[str, Any]) -> None:
    """Add one ticket's agreement with the node's expectations to `report`."""
    report.nodes += 1
    report.by_rules += ticket.drafted_by == "rules"
    wanted = expect["headline"] or (expect["localized"][0] if len(expect["localized"]) == 1 else None)
    got = ticket.candidate_id
    wrong = []
    ok = got == wanted if wanted is not None else got in expect["localized"]
    report.component.add(ok)
    if not ok:
        wrong.append("component")
    target = wanted or got
    for name, have, want in (
            ("lane", _pairs(got, ticket.lanes), {(c, str(v)) for c, v in expect["lanes"] if c == target}),
            ("end", _pairs(got, [ticket.end.value] if ticket.end else []),
             {(c, str(v)) for c, v in expect["ends"] if c == target})):
        getattr(report, name).merge(Scores(tp=len(have & want), fp=len(have - want), fn=len(want - have)))
        if have != want:
            wrong.append(name)
    if target in expect["parts"]:
        platform = expect["parts"][target]
        part = ticket.replacement_part
        ok = part is None if platform is None else part is not None and part.platform == platform
        report.part.add(ok)
        if not ok:
            wrong.append("part")
    if wrong:
        report.wrong[node_id] = wrong


def score_drafter(fleet_dir: Path, drafter: Drafter, *, window: timedelta = timedelta(hours=1)) -> DrafterReport:
    """Draft a ticket for every failing node of a written fleet and score each against `ground_truth.json`."""
    truth_path = fleet_dir / "ground_truth.json"
    if not truth_path.exists():
        raise InputError("no ground_truth.json: not a fleet written by `fabricbot synth`", source=str(fleet_dir))
    truth = json.loads(truth_path.read_text(encoding="utf-8"))
    tables, inventory = load(fleet_dir)
    failing = sorted(n for n, v in truth["nodes"].items() if v.get("expect", {}).get("localized"))
    fleet = analyze_fleet(tables, window=window, end=pd.Timestamp(truth["end"]), platforms=inventory, nodes=failing)
    report = DrafterReport(drafter=drafter.name)
    for node_id in failing:
        d = fleet.diagnoses.get(node_id)
        if d is None or not d.fault_detected:
            report.nodes += 1
            report.component.add(False)
            report.wrong[node_id] = ["not diagnosed as failing"]
            continue
        score_ticket(report, node_id, drafter.draft(d), truth["nodes"][node_id]["expect"])
    return report
