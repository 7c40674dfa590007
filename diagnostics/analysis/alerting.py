"""What the alert channel is told after each pass of the watch loop: the parts newly failing, the ones that got worse,
were ticketed or stayed clean for the soak, and whether the new ones together are a storm (one common cause).

Pure decisions over the fleet's diagnoses and the alerts already open; the store keeps the alerts
(`diagnostics.store.alerts`) and the bot posts what is decided here. A part is a localization (`GPU 2 NVLink 5`,
`NVSwitch 1`): what a ticket names. A node in planned work never alerts; a part with an open ticket is the
ticket's business, not a new alert. A node with no reading in the pass's window is not clean: its alerts stay
open, marked as not reporting, and never recover while it is silent.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum

import pandas as pd

from .. import format as fmt
from ..config.alerts import AlertPolicy
from ..config.thresholds import MISSING_RULE, Thresholds, load_thresholds
from ..enums import Priority, Severity, priority_rank
from ..model import Diagnosis
from ..store.alerts import Alert, AlertStatus
from .rules import part_priority

_XID = re.compile(r"\b[XS]?XID ([\d, ]+) on", re.IGNORECASE)
_RANK = {Severity.WARNING: 1, Severity.FAILING: 2, Severity.DOWN: 3}


@dataclass(frozen=True)
class FailingPart:
    """A part failing in this pass: the node, the part as a ticket names it, how bad, and what it shares with
    others (the storm's signatures)."""

    node_id: str
    slug: str
    component: str
    severity: Severity
    priority: Priority
    why: str
    signatures: tuple[str, ...] = ()
    seen_on: str | None = None  # the node whose diagnosis shows it (a tray's, for its rack's part): what is posted
    held: str | None = None  # why its ticket is held (`Localization.held`): no one acts on it yet
    node_held: bool = False  # every part of its node is held (`Diagnosis.held`): the node waits on its inventory

    @property
    def key(self) -> tuple[str, str]:
        return self.node_id, self.slug

    @property
    def rank(self) -> int:
        """Worse is higher: severity first, then the ticket's priority."""
        return _RANK.get(self.severity, 0) * 10 + priority_rank(self.priority)

    @property
    def urgent(self) -> bool:
        """Its level pages, held or not: a held part's fault may be real, and what it waits on (the inventory)
        needs a person as soon as the fault would."""
        return self.priority is Priority.URGENT

    def priority_said(self) -> str:
        """The priority as its ticket says it: held, with the level it takes once released."""
        return fmt.priority(self.priority.value, held=self.held is not None)


def signatures_of(d: Diagnosis, facts: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """What a node's failure may share with others': each Xid code, each switch its failing links land on (the chip
    itself: `NVSwitch 2 on node-05` is no other node's NVSwitch 2; a rack's switch tray chip is named with its rack,
    shared by the rack's trays), an exporter gap (its series stopped), and the inventory's facts (`driver=550.90.07`,
    `rack=r07`)."""
    found: set[str] = set()
    for f in d.findings:
        if f.severity not in _RANK:
            continue
        for c in f.crossed:
            if c.counter in ("xid", "sxid"):  # the codes the rule counted; a message written before they were kept
                said = _XID.search(c.message)
                codes = [str(k) for k in c.codes] or [k.strip() for k in (said[1].split(",") if said else [])]
                found |= {f"{c.counter} {code}" for code in codes if code}
            if c.rule == MISSING_RULE:
                found.add("exporter gap")
        if f.switch:  # one chip: a node's own NVSwitch is its node's, a rack's switch tray chip its rack's
            found.add(f"switch {f.switch} of {d.rack.rack_id}" if d.rack is not None else
                      f"switch {f.switch} on {d.node_id}")
    if d.rack is not None:
        found.add(f"rack {d.rack.rack_id}")
    found |= {f"{k} {v}" for k, v in (facts or {}).items() if v}
    return tuple(sorted(found))


# what a node's versions are called in a storm's factor, and where each is read: an inventory's node record first
# (what the site says it installed), else the telemetry's GPU table (dcgm-exporter's DCGM_FI_DRIVER_VERSION label,
# nvidia-smi -q's Driver Version)
_VERSIONS = {"driver": "driver_version", "vbios": "vbios_version", "fabric manager": "fabric_manager_version"}


def version_facts(windows: Iterable[Mapping[str, pd.DataFrame]]) -> dict[str, dict[str, str]]:
    """Each node's driver, VBIOS and Fabric Manager versions as its tables give them: what a storm's nodes may
    share (`driver 550.90.07`)."""
    out: dict[str, dict[str, str]] = {}
    for tables in windows:
        for table in ("gpus", "nodes"):  # the inventory's word last, so it stands
            frame = tables.get(table)
            if frame is None or not len(frame) or "node_id" not in frame.columns:
                continue
            for name, column in _VERSIONS.items():
                if column not in frame.columns:
                    continue
                known = frame[["node_id", column]].dropna()
                for node, value in zip(known["node_id"].astype(str), known[column].astype(str), strict=True):
                    if value.strip():
                        out.setdefault(node, {})[name] = value.strip()
    return out


def failing_parts(diagnoses: Iterable[Diagnosis], facts: Mapping[str, Mapping[str, str]] | None = None,
                  thresholds: Thresholds | None = None) -> list[FailingPart]:
    """Every part failing in the fleet's diagnoses (a failing or down localization), planned work left out, each
    once under its ticket's owner (a rack's switch tray that nine trays see is one part of the rack), as the worst
    of the diagnoses that show it. `thresholds`: the priority policy the diagnoses were judged by."""
    thresholds = thresholds or load_thresholds()
    out: dict[tuple[str, str], FailingPart] = {}
    for d in diagnoses:
        if d.maintenance or not d.fault_detected:
            continue
        signatures = signatures_of(d, (facts or {}).get(d.node_id))
        for loc in d.localizations:
            if loc.severity not in (Severity.FAILING, Severity.DOWN):
                continue
            prio = part_priority(d, loc.links, headline=loc == d.localization, thresholds=thresholds)
            part = FailingPart(d.owner_of(loc.ref.slug), loc.ref.slug, loc.ref.name, loc.severity, prio,
                               loc.evidence[0] if loc.evidence else d.repair_action, signatures, d.node_id, loc.held,
                               d.held is not None)
            if part.key not in out or part.rank > out[part.key].rank:
                out[part.key] = part
    return sorted(out.values(), key=lambda p: p.key)


class Step(StrEnum):
    KNOWN = "known"  # failing already when the watch began: remembered, not paged
    NEW = "new"
    WORSE = "worse"
    TICKETED = "ticketed"
    RECOVERED = "recovered"
    HELD = "held"
    SILENT = "not reporting"  # its node has no reading in the window: not clean, so the alert stays open
    REPORTING = "reporting again"  # its node reports again: the soak counts from here
    RESTATED = "restated"  # its part's ticket was released (the inventory mended) or held since it was told
    PLANNED = "planned work"  # its node is under planned work: its parts are out of the view, so the alert waits
    PLANNED_ENDED = "planned work ended"  # the work is over: the soak counts from its end


@dataclass(frozen=True)
class Decision:
    step: Step
    alert: Alert  # as it stands after the step
    part: FailingPart | None = None  # the pass's reading of the part (None: it was clean)


def _news(alert: Alert, part: FailingPart | None) -> bool:
    """Whether the part's reading is news to the alert's message: worse than told, its hold changed, or never told."""
    return part is not None and (part.rank > alert.rank or (part.held is not None) != alert.held
                                 or (alert.owed and alert.ts is None))


@dataclass(frozen=True)
class Storm:
    """Many parts newly failing at once, taken for one cause: what they share and which nodes."""

    factor: str
    nodes: list[str]
    parts: int
    reason: str
    sharing: int = 0  # nodes sharing the factor

    def headline(self) -> str:
        shared = f"{self.sharing} of them sharing {self.factor}" if self.sharing else self.factor
        return f"{len(self.nodes)} nodes newly failing at once, {shared}: {self.reason}"


def find_storm(new: list[FailingPart], *, fleet_nodes: int, policy: AlertPolicy,
               racks: Mapping[str, str] | None = None) -> Storm | None:
    """The storm the newly failing parts of one pass make, if any: too large a share of the fleet or too many racks
    at once, or many nodes sharing one signature. The factor named is the signature most of them share."""
    nodes = sorted({p.node_id for p in new})
    if not nodes:
        return None
    shared: Counter[str] = Counter()
    for node in nodes:
        shared.update({s for p in new if p.node_id == node for s in p.signatures})
    common = shared.most_common(1)[0] if shared else None
    on_racks = {racks[n] for n in nodes if racks and n in racks}
    share = len(nodes) / max(fleet_nodes, 1)
    reason = None
    if len(nodes) >= policy.storm_min_nodes and share > policy.storm_share:
        reason = f"{share:.0%} of the fleet's {fleet_nodes} nodes (the limit is {policy.storm_share:.0%})"
    elif len(nodes) >= policy.storm_min_nodes and len(on_racks) >= policy.storm_racks:
        reason = f"on {len(on_racks)} racks at once (the limit is {policy.storm_racks})"
    elif common is not None and common[1] >= policy.signature_min_nodes:
        reason = f"{common[1]} nodes share {common[0]} (the limit is {policy.signature_min_nodes})"
    if reason is None:
        return None
    if common is not None and common[1] >= max(2, (len(nodes) + 1) // 2):
        factor = ", ".join(sorted(sig for sig, n in shared.items() if n == common[1]))  # all the most share
        sharing = common[1]
    else:
        factor, sharing = "no one signature (a fleet-wide cause: check recent changes)", 0
    return Storm(factor, nodes, len(new), reason, sharing)


@dataclass
class Pass:
    """One pass's decisions, the storm it found (its held alerts are in `decisions` as HELD), and the alerts whose
    part is still failing or whose node is not reporting, not known clean (their `failing_at` moves on)."""

    at: datetime
    decisions: list[Decision] = field(default_factory=list)
    storm: Storm | None = None
    failing: list[tuple[str, str]] = field(default_factory=list)
    planned: dict[str, str] = field(default_factory=dict)  # the nodes under planned work, each with its window said

    def count(self, step: Step) -> int:
        return sum(d.step is step for d in self.decisions)


def decide(parts: list[FailingPart], alerts: Mapping[tuple[str, str], Alert], *, at: datetime,
           policy: AlertPolicy, ticket_of: Callable[[str, str], str | None], fleet_nodes: int,
           racks: Mapping[str, str] | None = None, open_storm: int | None = None, baseline: bool = False,
           silent: Collection[str] = (), planned: Mapping[str, str] | Collection[str] = ()) -> Pass:
    """The pass's decisions given the parts failing now and the alerts not yet recovered (keyed by node and part).

    `baseline`: the watch's first pass, whose failing parts are standing faults: each is KNOWN (remembered, not
    paged, no storm) and alerts later only if it gets worse.
    An alert the channel was to be told of but was not (`owed`: its post failed, or the bot stopped before it) is
    told as new while its part fails, until its message is posted.
    A new part with an open ticket is left alone (the ticket speaks for it). New parts that make a storm are held;
    while a storm waits for a person (`open_storm`), every new part joins it, held. A held part whose storm was
    acknowledged alerts on its own if it still fails. An open alert whose part got worse is updated; one whose
    part's ticket was released (or held) since it was told is restated; one that got a ticket says so; one clean for
    the soak is recovered.
    `planned`: the nodes under planned work (a mapping gives each its window as said, kept in the pass), whose
    failing parts the view leaves out (silent or not: a node is often powered off for the work): an alert of theirs
    is not known clean, so it never recovers while the work lasts. An open one's message says so, once, and again
    when the work ends, and its soak counts from the work's end (a held one, which never alerted, recovers when the
    work ends clean).
    `silent`: the nodes with no reading in the window. Silence is not health: an alert of a silent node is marked as
    not reporting (once) and is never recovered while it lasts; when the node reports again the mark is lifted and the
    soak counts from its return, a held alert's too (it opens: the channel was told of it); a held alert whose node
    never went silent and whose part is clean when its storm is acknowledged recovers then, never having alerted.
    """
    quiet_nodes, planned_nodes = set(silent), set(planned)
    out = Pass(at, planned=dict(planned) if isinstance(planned, Mapping) else {n: "" for n in planned})
    now = {p.key: p for p in parts}
    fresh = [p for p in parts if p.key not in alerts and ticket_of(p.node_id, p.slug) is None]
    storm = None if open_storm is not None or baseline else find_storm(fresh, fleet_nodes=fleet_nodes,
                                                                       policy=policy, racks=racks)
    out.storm = storm
    hold = storm is not None or open_storm is not None
    step = Step.KNOWN if baseline else Step.HELD if hold else Step.NEW
    for p in fresh:
        alert = Alert(p.node_id, p.slug, p.component, AlertStatus.HELD if step is Step.HELD else AlertStatus.OPEN,
                      p.rank, opened_at=at, failing_at=at, storm=open_storm if step is Step.HELD else None,
                      held=p.held is not None, owed=step is Step.NEW)
        out.decisions.append(Decision(step, alert, p))
    for key, alert in sorted(alerts.items()):
        part = now.get(key)
        # planned work holds its parts back; a node is often powered off for it: planned, not silent
        hidden = part is None and alert.node_id in planned_nodes
        quiet = part is None and not hidden and alert.node_id in quiet_nodes
        if part is not None or quiet or hidden:  # failing, or not known clean: the soak has not begun
            out.failing.append(key)
            alert = replace(alert, failing_at=at)
        if alert.status is AlertStatus.HELD and alert.storm is not None and alert.storm == open_storm:
            continue  # still waiting for the incident's acknowledgement
        if hidden:
            if alert.planned_since is None and alert.status is AlertStatus.OPEN:  # told once that it waits
                out.decisions.append(Decision(Step.PLANNED, replace(alert, planned_since=at), None))
            continue  # never recovered while planned work keeps its node's parts out of the view
        if alert.planned_since is not None and alert.node_id not in planned_nodes:
            # the work is over: said once, its soak counting from the work's last pass; a part worse than told (or
            # never told) says that instead, below, and a node silent as the work ends is not reporting
            alert = replace(alert, planned_since=None, silent_since=alert.silent_since if quiet else None)
            if not quiet and not _news(alert, part):
                out.decisions.append(Decision(Step.PLANNED_ENDED, alert, part))
                continue
        if quiet:
            if alert.silent_since is None:
                out.decisions.append(Decision(Step.SILENT, replace(alert, silent_since=at), None))
            elif alert.status is AlertStatus.OPEN:
                ticket = ticket_of(alert.node_id, alert.slug)
                if ticket is not None and alert.ticket != ticket:
                    out.decisions.append(Decision(Step.TICKETED, replace(alert, ticket=ticket), None))
            continue  # never recovered while its node is silent
        back = alert.silent_since is not None
        alert = replace(alert, silent_since=None)
        if alert.status is AlertStatus.HELD:
            if part is not None:
                out.decisions.append(Decision(Step.NEW, replace(alert, status=AlertStatus.OPEN, rank=part.rank,
                                                                held=part.held is not None, owed=True), part))
            elif back:  # the channel was told it stays open until clean for the soak: it soaks as an open one does
                out.decisions.append(Decision(Step.REPORTING, replace(alert, status=AlertStatus.OPEN, failing_at=at),
                                              None))
            else:
                out.decisions.append(Decision(Step.RECOVERED, replace(alert, status=AlertStatus.RECOVERED), None))
            continue
        if alert.owed and alert.ts is None and part is not None:  # never told (its post failed): told now, once
            out.decisions.append(Decision(Step.NEW, replace(alert, rank=part.rank, held=part.held is not None,
                                                            ticket=ticket_of(alert.node_id, alert.slug)), part))
            continue
        if part is not None and part.rank > alert.rank:  # a known part with no message yet: this is its first
            out.decisions.append(Decision(Step.WORSE, replace(alert, rank=part.rank, held=part.held is not None,
                                                              owed=alert.ts is None), part))
            continue
        if part is not None and (part.held is not None) != alert.held:  # the inventory mended, or contradicted now
            out.decisions.append(Decision(Step.RESTATED, replace(alert, held=part.held is not None), part))
            continue
        if back:
            out.decisions.append(Decision(Step.REPORTING, replace(alert, failing_at=at), part))  # the soak restarts
            continue
        ticket = ticket_of(alert.node_id, alert.slug)
        if ticket is not None and alert.ticket != ticket:
            out.decisions.append(Decision(Step.TICKETED, replace(alert, ticket=ticket), part))
            continue
        if part is None and at - alert.failing_at >= policy.soak:
            out.decisions.append(Decision(Step.RECOVERED, replace(alert, status=AlertStatus.RECOVERED), None))
    return out
