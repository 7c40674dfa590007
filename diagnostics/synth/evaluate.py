"""Score the analysis against a synthetic fleet's ground truth, per scenario, on what an engineer checks.

Per node: detection (a fault found or not), localization (the localized parts by slug: precision, recall, F1), the
headline (the part named first), the verdict on the job (explains / not the fabric / job not slower / no job), the
priority, whether each part found fits (its fault kind is the truth's, the repair plan names a part of the node's
platform or none where none applies, the action has no unfilled placeholder), whether its plan is safe (no step, the
reset among them, stops more than the plan's isolation reaches: a reboot after one GPU excluded, a switch tray after a
few compute trays drained) and the caveats the diagnosis must state (an unknown platform, a lone reading, jobs that
cannot start, the evidence of the headline). A score a scenario cannot have (no node with a headline, no part to fit,
no caveat) is n/a, not 1.00.
"""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, Field

from .. import format as fmt
from ..analysis import JobExplanation, analyze_fleet
from ..enums import Priority
from ..errors import InputError
from ..model import Diagnosis, Localization, RackSlot
from ..progress import Progress, advance
from ..repair import RepairPlan, fault_of, localization_plan
from ..service import TableSource
from ..tickets.isolation import unsafe_steps
from .fleet import load
from .life import load_life
from .life_eval import LifeReport, score_life
from .rack_fleet import load_slots
from .storm import load_storm, score_storm, storm_line
from .truth import EXPLAINS, NO_JOB, NOT_SLOWER, NOT_THE_FABRIC

PLACEHOLDER = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")
SCORES = ("detection", "localization", "headline", "verdict", "priority", "fit", "safety", "caveats")
BELOW = ("lane", "end")  # below the part: the lanes and the end named, as (part, lane) and (part, end) pairs


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


class Tally(BaseModel):
    """How many of the counted answers were right; n/a when none was counted."""

    right: int = 0
    total: int = 0

    def add(self, ok: bool) -> None:
        self.right += int(ok)
        self.total += 1

    def merge(self, other: Tally) -> None:
        self.right, self.total = self.right + other.right, self.total + other.total

    @property
    def score(self) -> float | None:
        return self.right / self.total if self.total else None


class Scores(BaseModel):
    """Set matching: the parts found against the parts to find."""

    tp: int = 0
    fp: int = 0
    fn: int = 0

    def merge(self, other: Scores) -> None:
        self.tp, self.fp, self.fn = self.tp + other.tp, self.fp + other.fp, self.fn + other.fn

    @property
    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    @property
    def f1(self) -> float | None:
        """None when there was nothing to find and nothing was claimed."""
        if self.tp + self.fp + self.fn == 0:
            return None
        return 2 * self.tp / (2 * self.tp + self.fp + self.fn)

    @property
    def score(self) -> float | None:
        return self.f1


class ScenarioScores(BaseModel):
    nodes: int = 0
    detection: Tally = Field(default_factory=Tally)
    localization: Scores = Field(default_factory=Scores)
    headline: Tally = Field(default_factory=Tally)
    verdict: Tally = Field(default_factory=Tally)
    priority: Tally = Field(default_factory=Tally)
    fit: Tally = Field(default_factory=Tally)
    safety: Tally = Field(default_factory=Tally)
    caveats: Tally = Field(default_factory=Tally)
    lane: Scores = Field(default_factory=Scores)
    end: Scores = Field(default_factory=Scores)

    def merge(self, other: ScenarioScores) -> None:
        self.nodes += other.nodes
        for name in (*SCORES, *BELOW):
            getattr(self, name).merge(getattr(other, name))

    def value(self, name: str) -> float | None:
        score: float | None = getattr(self, name).score
        return score


class NodeResult(BaseModel):
    """One node's expected and given answers, and which of them differ."""

    node_id: str
    scenario: str
    benign: bool
    expected: dict[str, Any]
    given: dict[str, Any]
    wrong: list[str] = Field(default_factory=list)


class EvalReport(BaseModel):
    fleet: str
    scenarios: dict[str, ScenarioScores] = Field(default_factory=dict)
    false_urgent_high: int = 0
    nodes: list[NodeResult] = Field(default_factory=list)
    storm: dict[str, Any] | None = Field(default=None, description="The alert loop on the storm: incidents, held.")
    life: LifeReport | None = Field(default=None, description="Restarts, warnings and repairs, where the fleet has "
                                                               "life nodes.")

    def overall(self) -> ScenarioScores:
        total = ScenarioScores()
        for s in self.scenarios.values():
            total.merge(s)
        return total

    def lowest(self) -> float | None:
        """The lowest score of any scenario (n/a scores left out)."""
        values = [v for s in self.scenarios.values() for n in (*SCORES, *BELOW) if (v := s.value(n)) is not None]
        return min(values) if values else None

    def summary(self) -> dict[str, Any]:
        """Per scenario and overall, each score (None for n/a), with the counts behind it: what `--json` prints."""
        def row(s: ScenarioScores) -> dict[str, Any]:
            out: dict[str, Any] = {"nodes": s.nodes}
            for name in (*SCORES, *BELOW):
                out[name] = s.value(name)
            out["counts"] = {name: getattr(s, name).model_dump() for name in (*SCORES, *BELOW)}
            return out

        return {"fleet": self.fleet, "scenarios": {k: row(v) for k, v in sorted(self.scenarios.items())},
                "overall": row(self.overall()), "lowest": self.lowest(), "false_urgent_high": self.false_urgent_high,
                "nodes": [n.model_dump(mode="json") for n in self.nodes],
                "life": None if self.life is None else self.life.model_dump(mode="json") | {
                    "min_lead_hours": self.life.min_lead, "ok": self.life.ok},
                "storm": self.storm}

    def render(self) -> str:
        width = max([len(s) for s in self.scenarios] + [8])
        heads = ["nodes", "detect", "localize", "headline", "verdict", "priority", "fit", "safe", "caveats"]
        lines = [f"{'scenario':<{width}}  " + "  ".join(f"{h:>8}" for h in heads)]

        def line(name: str, s: ScenarioScores) -> str:
            cells = [f"{s.nodes:>8}"] + [f"{_fmt(s.value(n)):>8}" for n in SCORES]
            return f"{name:<{width}}  " + "  ".join(cells)

        for name in sorted(self.scenarios):
            lines.append(line(name, self.scenarios[name]))
        lines.append(line("overall", self.overall()))
        lines.append(f"false urgent/high: {self.false_urgent_high}")
        total = self.overall()
        for name in BELOW:
            got: Scores = getattr(total, name)
            named = got.tp + got.fn
            where = sum(1 for v in self.scenarios.values() if getattr(v, name).tp + getattr(v, name).fn)
            lines.append(f"{name} localization: F1={_fmt(got.f1)} (precision {_fmt(got.precision)}, recall "
                         f"{_fmt(got.recall)}; {fmt.count(named, name)} to name, in {fmt.count(where, 'scenario')})")
        if self.life is not None:
            lines += self.life.lines()
        if self.storm is not None:
            lines.append(storm_line(self.storm))
        shown = {"fit": "faults", "safety": "faults"}  # what the truth says of the part: its fault kind
        for n in self.nodes:
            for what in n.wrong:
                expected = n.expected.get(shown.get(what, what))
                lines.append(f"  {n.node_id} ({n.scenario}) {what}: expected {expected!r}, got {n.given.get(what)!r}")
        return "\n".join(lines)


def verdict_of(d: Diagnosis, job: JobExplanation | None) -> str:
    """The analysis's verdict on the node's job, in the four words the truth uses."""
    if d.job_id is None or job is None or not job.running:
        return NO_JOB
    if not job.slowdown:
        return NOT_SLOWER
    return EXPLAINS if any(f.explains_slowdown for f in d.failing) else NOT_THE_FABRIC


def plan_of(loc: Localization, d: Diagnosis) -> RepairPlan:
    """The repair plan the diagnosis gave the localized part its action by: its node's, rack's and job's facts."""
    return localization_plan(loc, platform=d.platform, node_id=d.node_id, rack=d.rack, job_id=d.job_id)


def fits(loc: Localization, d: Diagnosis, fault: str | None, platform: str | None) -> tuple[bool, str]:
    """Whether a localized part fits: its fault kind is the truth's; the repair plan for the node's platform names a
    part of that platform, or none where the truth expects none; its action leaves no placeholder unfilled."""
    kind = fault_of(loc)
    if kind.value != fault:
        return False, f"fault kind {kind.value}"
    plan = plan_of(loc, d)
    if not plan.applies:
        return False, f"the plan says {kind.value} does not apply to {d.platform}"
    if platform is None and plan.part is not None:
        return False, f"part {plan.part.id} where none applies"
    if platform is not None and (plan.part is None or plan.part.platform != platform):
        return False, f"part {plan.part.id if plan.part else None} not of {platform}"
    for text in (loc.action or "", plan.action, d.repair_action):
        if PLACEHOLDER.search(text):
            return False, f"unfilled placeholder in {text!r}"
    return True, "fits"


def _said(d: Diagnosis, where: str) -> str:
    if where == "warnings":
        return " ".join(d.warnings)
    if where == "verdict":
        return d.verdict or ""
    return " ".join(d.localization.evidence) if d.localization is not None else ""


def score_node(d: Diagnosis, job: JobExplanation | None,
               expect: dict[str, Any]) -> tuple[ScenarioScores, dict[str, Any], list[str]]:
    """One node's scores, its answers in the truth's terms, and the names of the scores it got wrong."""
    s = ScenarioScores(nodes=1)
    found = {loc.ref.slug: loc for loc in d.localizations}
    headline = d.localization.ref.slug if d.localization is not None else None
    given: dict[str, Any] = {"detected": d.fault_detected, "localized": sorted(found), "headline": headline,
                             "verdict": verdict_of(d, job), "priority": d.ticket_priority.value}
    wrong: list[str] = []

    def check(name: str, ok: bool, what: str | None = None) -> None:
        getattr(s, name).add(ok)
        if not ok:
            wrong.append(what or name)

    check("detection", given["detected"] == expect["detected"], "detected")
    truth = set(expect["localized"])
    s.localization = Scores(tp=len(truth & set(found)), fp=len(set(found) - truth), fn=len(truth - set(found)))
    if truth != set(found):
        wrong.append("localized")
    if expect["headline"] is not None or headline is not None:
        check("headline", headline == expect["headline"])
    check("verdict", given["verdict"] == expect["verdict"])
    check("priority", given["priority"] == expect["priority"])
    given["fit"], given["safety"] = {}, {}
    for slug in sorted(truth & set(found)):
        ok, note = fits(found[slug], d, expect["faults"][slug], expect["parts"][slug])
        given["fit"][slug] = note
        check("fit", ok)
        plan = plan_of(found[slug], d)
        if plan.applies:
            unsafe = unsafe_steps(plan)
            given["safety"][slug] = unsafe[0] if unsafe else "safe"
            check("safety", not unsafe)
    for name, pairs in (("lane", sorted([slug, lane] for slug, loc in found.items() for lane in loc.lanes)),
                        ("end", sorted([slug, loc.end.value] for slug, loc in found.items() if loc.end is not None))):
        want = {tuple(p) for p in expect.get(f"{name}s", [])}
        have = {tuple(p) for p in pairs}
        setattr(s, name, Scores(tp=len(want & have), fp=len(have - want), fn=len(want - have)))
        given[f"{name}s"] = pairs
        if want != have:
            wrong.append(f"{name}s")
    given["caveats"] = []
    for c in expect["caveats"]:
        said = c["says"].lower() in _said(d, c["in"]).lower()
        given["caveats"].append(c if said else {"in": c["in"], "missing": c["says"]})
        check("caveats", said)
    return s, given, wrong


EVAL_STEPS = 3  # what `evaluate` advances its progress by: the fleet read, analysed, scored


def evaluate(fleet_dir: Path, *, window: timedelta = timedelta(hours=1),
             progress: Progress | None = None) -> EvalReport:
    """Analyze every node of a written fleet at its last sample and score it against `ground_truth.json`."""
    truth_path = fleet_dir / "ground_truth.json"
    if not truth_path.exists():
        raise InputError("no ground_truth.json: not a fleet written by `fabricbot synth`", source=str(fleet_dir))
    truth = json.loads(truth_path.read_text(encoding="utf-8"))
    tables, inventory = load(fleet_dir)
    advance(progress)
    report = score(tables, truth, inventory, name=fleet_dir.name, window=window, racks=load_slots(fleet_dir),
                   progress=progress)
    life = load_life(fleet_dir)
    if life is not None:
        report.life = score_life(*life)
    storm = load_storm(fleet_dir)
    if storm is not None:
        report.storm = score_storm(*storm)
    return report


def score(tables: dict[str, pd.DataFrame], truth: dict[str, Any], inventory: dict[str, str], *, name: str = "",
          window: timedelta = timedelta(hours=1), racks: dict[str, RackSlot] | None = None,
          progress: Progress | None = None) -> EvalReport:
    """The analysis of `tables` (platforms from the inventory only) scored against `truth`: each node's Diagnosis
    against its truth, and each rack's (a rack fleet's `racks`) against the rack's."""
    old = sorted(n for n, v in [*truth["nodes"].items(), *truth.get("racks", {}).items()] if "expect" not in v)
    if old:
        raise InputError(f"ground truth of {old[0]} (and {len(old) - 1} more) has no 'expect': written by an older "
                         "`fabricbot synth`; write the fleet again", source=name or "ground_truth.json")
    end = pd.Timestamp(truth["end"])
    report = EvalReport(fleet=name)
    hosts = sorted(set(truth["nodes"]) | {h for h, s in (racks or {}).items() if s.rack in truth.get("racks", {})})
    # a slowed job's links read through the sources' history, as every door reads them: the tables' own rows once
    # scored a PCIe lane's job "explains" where every door said "does not track it"
    fleet = analyze_fleet(tables, window=window, end=end, platforms=inventory, nodes=hosts, racks=racks,
                          history=TableSource(tables).history)
    advance(progress)
    units = [(n, v, fleet.diagnoses.get(n)) for n, v in sorted(truth["nodes"].items())]
    units += [(r, v, fleet.racks.get(r)) for r, v in sorted(truth.get("racks", {}).items())]
    for unit_id, unit, d in units:
        if d is None:
            raise InputError(f"{unit_id} was not diagnosed: its inventory (nodes.csv) is missing or does not name it",
                             source=name or "ground_truth.json")
        job = fleet.jobs.get(d.job_id) if d.job_id is not None else None
        scores, given, wrong = score_node(d, job, unit["expect"])
        scenario = unit["scenario"]
        report.scenarios.setdefault(scenario, ScenarioScores()).merge(scores)
        if unit["benign"] and d.ticket_priority in (Priority.URGENT, Priority.HIGH):
            report.false_urgent_high += 1
        report.nodes.append(NodeResult(node_id=unit_id, scenario=scenario, benign=unit["benign"],
                                       expected=unit["expect"], given=given, wrong=wrong))
    advance(progress)
    return report
