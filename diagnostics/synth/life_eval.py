"""Score the alert's life on the life nodes (`life`): restarts never ticketed, warnings early and only where due,
repairs judged as they turned out.

- Restarts: every window ending from the restart to two hours after it (each sample) is analyzed; a diagnosis
  that detects a fault there would ticket a planned reboot.
- Warnings: the watch list once an hour over the last 48 hours; a node with no fault warned at any of them is a
  false warning. A slow failure's lead time is from the first warning (held from then to the end) to the hour its
  truth crosses the threshold; one never warned has no lead (0 h).
- Repairs: the verification the tracker runs, on the readings from the repair to the end; right when a repair that
  held is closed and one that failed is reopened.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import pandas as pd
from pydantic import BaseModel, Field

from ..analysis import Step, analyze_fleet, decide, failing_parts
from ..analysis.trends import watch_list
from ..analysis.verify import RepairVerdict, check_repair
from ..config.alerts import load_alerts
from ..config.thresholds import load_thresholds
from ..service.diagnose import node_span
from ..service.request import CORRELATION_SPAN
from ..store.alerts import Alert
from ..times import ns, utc_ns
from .life import RESTARTS

WARN_SPAN = timedelta(hours=48)
WARN_STEP = timedelta(hours=1)  # the watch list is read once an hour, as a scheduled run would
RESTART_SPAN = timedelta(hours=2)
MIN_LEAD_HOURS = 24.0
ALERT_STEP = timedelta(hours=1)  # the watch loop's pass, replayed hourly (5 min in production)


class LifeReport(BaseModel):
    """What `fabricbot eval` prints for the life nodes, with the cases behind each figure."""

    restarts: int = 0
    restarts_ticketed: list[str] = Field(default_factory=list, description="node at window end, per ticketing window")
    quiet_nodes: int = 0
    false_warnings: list[str] = Field(default_factory=list)
    leads: dict[str, float] = Field(default_factory=dict, description="node -> hours of warning (0: never warned)")
    repairs: dict[str, str] = Field(default_factory=dict, description="node -> verdict given")
    repairs_right: list[str] = Field(default_factory=list)
    faults: int = Field(default=0, description="Parts that truly fail within the life nodes' readings.")
    alerted: list[str] = Field(default_factory=list, description="Faults alerted once, on their part.")
    false_alerts: list[str] = Field(default_factory=list, description="An alert on no fault, or a second one.")
    alert_updates: int = 0

    @property
    def min_lead(self) -> float | None:
        return min(self.leads.values()) if self.leads else None

    @property
    def ok(self) -> bool:
        lead = self.min_lead
        return (not self.restarts_ticketed and not self.false_warnings and len(self.repairs_right) == len(self.repairs)
                and (lead is None or lead >= MIN_LEAD_HOURS) and not self.false_alerts
                and len(self.alerted) == self.faults)

    def lines(self) -> list[str]:
        lead = self.min_lead
        warned = sum(v > 0 for v in self.leads.values())
        held = sum(v == RepairVerdict.HELD.value for v in self.repairs.values())
        out = [f"reboots ticketed: {len(self.restarts_ticketed)} (of {self.restarts} planned reboots and driver "
               "reloads, every window to 2 h after each)",
               f"false warnings: {len(self.false_warnings)} (of {self.quiet_nodes} nodes with no fault, over 48 h)",
               "warning lead time: " + ("n/a" if lead is None else f"min {lead:.0f} h") +
               f" ({warned}/{len(self.leads)} slow failures warned)",
               f"repairs verified: {len(self.repairs_right)}/{len(self.repairs)} ({held} closed as held, "
               f"{len(self.repairs) - held} not)"]
        out.append(f"alerts: {len(self.alerted)} for {self.faults} faults, {len(self.false_alerts)} false "
                   f"({self.alert_updates} updates instead of a second alert; the watch loop hourly over every "
                   "node's readings)")
        out += [f"  ticketed after a restart: {x}" for x in self.restarts_ticketed]
        out += [f"  false alert: {x}" for x in self.false_alerts]
        out += [f"  warned with no fault: {x}" for x in self.false_warnings]
        out += [f"  {n} ({v})" for n, v in self.repairs.items() if n not in self.repairs_right]
        return out


def _sample_ends(samples: pd.DataFrame, node: str, start: pd.Timestamp, stop: pd.Timestamp,
                 every: timedelta | None = None) -> list[pd.Timestamp]:
    """The node's sample times from `start` to `stop`, at most one per `every`."""
    t = samples.loc[samples["node_id"] == node, "timestamp"]
    times = sorted(pd.Timestamp(x) for x in t[(t >= start) & (t <= stop)].unique())
    if every is None:
        return times
    kept: list[pd.Timestamp] = []
    for when in times:
        if not kept or when - kept[-1] >= every:
            kept.append(when)
    return kept


class _Reads:
    """The tables as a pass of the watch loop reads them from a store at a time: the span one node's diagnosis reads
    (`node_span`), not the four days whole, which cost every pass a pass over them for the same answer."""

    def __init__(self, tables: Mapping[str, pd.DataFrame]) -> None:
        self.tables = tables
        self.times = {k: ns(v["timestamp"]) for k, v in tables.items() if "timestamp" in v}
        self.span = node_span(timedelta(hours=1), load_thresholds(), CORRELATION_SPAN)

    def __call__(self, at: datetime | pd.Timestamp) -> dict[str, pd.DataFrame]:
        since, upto = utc_ns(at - self.span), utc_ns(at)
        return {k: v[(self.times[k] > since) & (self.times[k] <= upto)] if k in self.times else v
                for k, v in self.tables.items()}


def score_life(tables: Mapping[str, pd.DataFrame], inventory: Mapping[str, str], truth: dict[str, Any]) -> LifeReport:
    report = LifeReport()
    samples = tables["link_samples"]
    end = pd.Timestamp(truth["end"])
    by_node = {n: {k: v[v["node_id"] == n] for k, v in tables.items()} for n in truth["nodes"]}
    for node, t in sorted(truth["nodes"].items()):
        mine = by_node[node]
        if t["scenario"] in RESTARTS:
            report.restarts += 1
            at = pd.Timestamp(t["restart_at"])
            read = _Reads(mine)
            for when in _sample_ends(samples, node, at, at + RESTART_SPAN):
                d = analyze_fleet(read(when), end=when, platforms=inventory, nodes=[node]).diagnoses[node]
                if d.fault_detected:
                    report.restarts_ticketed.append(f"{node} at {when:%Y-%m-%d %H:%M}: {d.isolated_component}")
        if t["scenario"] in (*RESTARTS, "healthy_long", "slow_degradation"):
            ends = _sample_ends(samples, node, end - WARN_SPAN, end, WARN_STEP)
            warned = [bool(_watched(mine, when, t.get("component"))) for when in ends]
            if t["scenario"] != "slow_degradation":
                report.quiet_nodes += 1
                if any(warned):
                    first = ends[warned.index(True)]
                    report.false_warnings.append(f"{node} at {first:%Y-%m-%d %H:%M}: "
                                                 f"{_watched(mine, first, None)[0]}")
            else:
                held = next((i for i, w in enumerate(reversed(warned)) if not w), len(warned))  # warned to the end
                crosses = pd.Timestamp(t["crosses_at"])
                report.leads[node] = (crosses - ends[-held]).total_seconds() / 3600 if held else 0.0
        if t["scenario"] in ("repair_holds", "repair_fails"):
            repaired = pd.Timestamp(t["repaired_at"])
            since = {k: v[v["timestamp"] >= repaired] if "timestamp" in v else v for k, v in mine.items()}
            check = check_repair(since, node_id=node, parts=[t["component"]], repaired_at=repaired.to_pydatetime(),
                                 now=end.to_pydatetime(), platforms=inventory, platform=inventory.get(node))
            report.repairs[node] = check.verdict.value
            want = RepairVerdict.HELD if t["holds"] else RepairVerdict.FAILED
            if check.verdict is want:
                report.repairs_right.append(node)
    score_alerts(report, tables, inventory, truth)
    return report


def score_alerts(report: LifeReport, tables: Mapping[str, pd.DataFrame], inventory: Mapping[str, str],
                 truth: dict[str, Any], every: timedelta = ALERT_STEP) -> None:
    """The watch loop replayed over the life nodes, a pass every `every` from their first day on, no ticket filed:
    each repair's storm is one fault that must alert once on its part (its return after a failed repair, inside the
    soak, is an update); a restart, a healthy node or a slow failure not yet over its threshold must never alert."""
    policy = load_alerts()
    faults = {n: t["component"] for n, t in truth["nodes"].items() if t["scenario"] in ("repair_holds", "repair_fails")}
    report.faults = len(faults)
    alerts: dict[tuple[str, str], Alert] = {}
    new: dict[tuple[str, str], int] = {}
    start, end = pd.Timestamp(truth["start"]) + pd.Timedelta(hours=24), pd.Timestamp(truth["end"])
    nodes = sorted(truth["nodes"])
    read = _Reads(tables)
    for when in pd.date_range(start, end, freq=every):
        at = when.to_pydatetime()
        found = analyze_fleet(read(at), end=at, platforms=inventory, nodes=nodes).diagnoses
        done = decide(failing_parts(found.values()), alerts, at=at, policy=policy, ticket_of=lambda n, s: None,
                      fleet_nodes=len(nodes))
        for d in done.decisions:
            if d.step is Step.NEW:
                new[d.alert.key] = new.get(d.alert.key, 0) + 1
                if new[d.alert.key] > 1 or faults.get(d.alert.node_id) != d.alert.slug:
                    report.false_alerts.append(f"{d.alert.node_id} / {d.alert.component} at {when:%Y-%m-%d %H:%M}")
            report.alert_updates += d.step is Step.WORSE
            if d.step is Step.RECOVERED:
                alerts.pop(d.alert.key, None)
            else:  # told: its post made, as the loop records once it posts
                alerts[d.alert.key] = replace(d.alert, owed=False)
        for key in done.failing:
            if key in alerts:
                alerts[key] = replace(alerts[key], failing_at=at)
    report.alerted = sorted(f"{n} / {s}" for (n, s), count in new.items() if count == 1 and faults.get(n) == s)


def _watched(tables: Mapping[str, pd.DataFrame], when: pd.Timestamp, component: str | None) -> list[str]:
    """The watches at `when` (only those on `component` when one is named)."""
    return [w.summary for w in watch_list(tables, end=when.to_pydatetime())
            if component is None or w.ref.slug == component]
