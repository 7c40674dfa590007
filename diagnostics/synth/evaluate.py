"""Score the history analysis against a synthetic fleet's ground truth: detection and localization per scenario."""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import timedelta
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, Field

from ..analysis import analyze_fleet
from ..enums import ComponentKind, Priority
from ..errors import InputError
from ..model import Diagnosis, Localization
from .fleet import load

Key = tuple[Any, ...]


class Scores(BaseModel):
    tp: int = 0
    fp: int = 0
    fn: int = 0

    def add(self, other: Scores) -> None:
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

    def line(self) -> str:
        def fmt(x: float | None) -> str:
            return "n/a" if x is None else f"{x:.2f}"

        return f"P={fmt(self.precision)} R={fmt(self.recall)} F1={fmt(self.f1)}"


class NodeResult(BaseModel):
    node_id: str
    scenario: str
    benign: bool
    truth: list[str]
    found: list[str]
    fault_detected: bool
    priority: Priority


class EvalReport(BaseModel):
    fleet: str
    detection: dict[str, Scores] = Field(default_factory=dict)
    localization: dict[str, Scores] = Field(default_factory=dict)
    false_urgent_high: int = 0
    nodes: list[NodeResult] = Field(default_factory=list)

    def overall(self, which: str) -> Scores:
        total = Scores()
        for s in (self.detection if which == "detection" else self.localization).values():
            total.add(s)
        return total

    def render(self) -> str:
        width = max([len(s) for s in self.detection] + [8])
        lines = [f"{'scenario':<{width}}  nodes  detection                   localization"]
        counts: dict[str, int] = defaultdict(int)
        for n in self.nodes:
            counts[n.scenario] += 1
        for name in sorted(self.detection):
            lines.append(f"{name:<{width}}  {counts[name]:>5}  {self.detection[name].line():<26}  "
                         f"{self.localization[name].line()}")
        lines.append(f"{'overall':<{width}}  {len(self.nodes):>5}  {self.overall('detection').line():<26}  "
                     f"{self.overall('localization').line()}")
        lines.append(f"false urgent/high: {self.false_urgent_high}")
        missed = [n for n in self.nodes if set(n.truth) != set(n.found)]
        for n in missed:
            lines.append(f"  {n.node_id} ({n.scenario}): expected {n.truth or ['nothing']}, "
                         f"found {n.found or ['nothing']}")
        return "\n".join(lines)


def truth_key(fault: dict[str, Any]) -> Key:
    kind = fault["kind"]
    if kind == "nvlink":
        return ("nvlink", fault["gpu"], fault["link"])
    if kind == "nvswitch":
        return ("nvswitch", fault["switch"])
    if kind in ("gpu", "pcie"):
        return (kind, fault["gpu"])
    return (kind,)


def found_key(loc: Localization) -> Key:
    if loc.kind is ComponentKind.NVLINK:
        return ("nvlink", loc.gpu, loc.link)
    if loc.kind is ComponentKind.NVSWITCH:
        return ("nvswitch", loc.switch)
    if loc.kind in (ComponentKind.GPU, ComponentKind.PCIE):
        return (loc.kind.value, loc.gpu)
    return (loc.kind.value,)


def _label(key: Key) -> str:
    return " ".join(str(k) for k in key)


def score_node(diagnosis: Diagnosis, truth: dict[str, Any]) -> tuple[Scores, Scores]:
    expected = {truth_key(f) for f in truth["faults"]}
    found = {found_key(loc) for loc in diagnosis.localizations}
    has_fault = bool(expected)
    detection = Scores(tp=int(has_fault and diagnosis.fault_detected),
                       fp=int(not has_fault and diagnosis.fault_detected),
                       fn=int(has_fault and not diagnosis.fault_detected))
    localization = Scores(tp=len(expected & found), fp=len(found - expected), fn=len(expected - found))
    return detection, localization


def evaluate(fleet_dir: Path, *, window: timedelta = timedelta(hours=1)) -> EvalReport:
    """Analyze every node of a written fleet at its last sample and score it against `ground_truth.json`."""
    truth_path = fleet_dir / "ground_truth.json"
    if not truth_path.exists():
        raise InputError("no ground_truth.json: not a fleet written by `fabricbot synth`", source=str(fleet_dir))
    truth = json.loads(truth_path.read_text(encoding="utf-8"))
    tables, inventory = load(fleet_dir)
    end = pd.Timestamp(truth["end"])
    report = EvalReport(fleet=fleet_dir.name)
    platforms = {n: inventory.get(n, v["platform"]) for n, v in truth["nodes"].items()}
    fleet = analyze_fleet(tables, window=window, end=end, platforms=platforms, nodes=sorted(truth["nodes"]))
    for node_id, node in sorted(truth["nodes"].items()):
        diagnosis = fleet.diagnoses[node_id]
        detection, localization = score_node(diagnosis, node)
        scenario = node["scenario"]
        report.detection.setdefault(scenario, Scores()).add(detection)
        report.localization.setdefault(scenario, Scores()).add(localization)
        if node["benign"] and diagnosis.ticket_priority in (Priority.URGENT, Priority.HIGH):
            report.false_urgent_high += 1
        report.nodes.append(NodeResult(
            node_id=node_id, scenario=scenario, benign=node["benign"],
            truth=sorted(_label(truth_key(f)) for f in node["faults"]),
            found=sorted(_label(found_key(loc)) for loc in diagnosis.localizations),
            fault_detected=diagnosis.fault_detected, priority=diagnosis.ticket_priority))
    return report
