"""The engine over the local store: the windows a node, a job or the fleet needs, read as the engine asks, and a
sweep of the whole store reported as the Prometheus sweep reports (`SweepResult`)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import datetime, timedelta
from pathlib import Path

import pandas as pd

from .. import format as fmt
from ..config.thresholds import Thresholds, load_thresholds
from ..config.watch import WatchPolicy, load_watch
from ..enums import Priority
from ..errors import InputError
from ..model import Diagnosis
from ..names import fleet_name_notes
from ..offenders import SweepResult, offenders_of
from ..store.maintenance import Maintenance
from ..store.telemetry import StoreWindow, TelemetryStore, open_store
from ..times import utc_datetime
from .diagnosis import LONE_READING_ACTION, NO_LINKS_ACTION
from .fleet import FleetAnalysis, analyze_fleet, history_needed
from .jobs import History
from .trends import Watch, watch_list

CORRELATION_SPAN = timedelta(days=1)  # how much step-time history a job's correlation wants


def node_span(window: timedelta, thresholds: Thresholds | None = None,
              history: timedelta = CORRELATION_SPAN) -> timedelta:
    """How much history one node's diagnosis reads: what the rules need, and a day for the job correlation."""
    return max(history, window * 4, history_needed(window, thresholds or load_thresholds()))


def read_node(store: TelemetryStore, node_id: str, *, end: datetime | None, window: timedelta,
              thresholds: Thresholds | None = None, history: timedelta = CORRELATION_SPAN) -> StoreWindow:
    """The node's window (and that of the nodes sharing its jobs) from the store; an unknown node is an error."""
    known = store.nodes()
    if node_id not in known:
        listed = ", ".join(known[:10]) or "none"
        raise InputError(f"no node {node_id!r} in the store (nodes: {listed})", source=str(store.root))
    return store.read_window(end=end, span=node_span(window, thresholds, history), nodes=[node_id], peers=True)


def load_store(root: str | Path | TelemetryStore, node_id: str, *, end: datetime | None, window: timedelta,
               history: timedelta = CORRELATION_SPAN, thresholds: Thresholds | None = None) -> dict[str, pd.DataFrame]:
    """The node's samples (and those of the nodes sharing its jobs) over the span its analysis needs."""
    store = root if isinstance(root, TelemetryStore) else open_store(root, create=False)
    return read_node(store, node_id, end=end, window=window, thresholds=thresholds, history=history).tables


def stored_diagnosis(diagnosis: Diagnosis, got: StoreWindow, window: timedelta) -> Diagnosis:
    """A diagnosis from the store's window with what the window could not show said in its warnings: a node
    silent since before the window, and readings without a time (no window can place them)."""
    node = diagnosis.node_id
    notes = []
    newest = got.newest.get(node)
    if got.end is not None and newest is not None and newest <= got.end - window:
        notes.append(f"no link reading from {node} since {newest:%Y-%m-%d %H:%M} UTC: the window ends at the "
                     f"store's newest reading ({got.end:%Y-%m-%d %H:%M} UTC)")
    if got.undated.get(node):
        notes.append(f"{got.undated[node]} link readings of {node} in the store have no time (ingested without "
                     "--at): no window can place them; ingest the file again with --at TIME or --at mtime")
    if notes:
        diagnosis = diagnosis.model_copy(update={"warnings": [*diagnosis.warnings, *notes]})
    if got.end is not None:
        diagnosis = planned(diagnosis, got.maintenance.get(node, []), start=got.end - window, end=got.end)
    return diagnosis


def planned(diagnosis: Diagnosis, windows: list[Maintenance], *, start: datetime, end: datetime) -> Diagnosis:
    """A diagnosis of a node whose planned work overlaps the window: its findings kept and shown, its priority
    low (nothing pages) and `maintenance` set (no ticket is drafted from it)."""
    hits = [w for w in windows if w.start <= end and (w.until is None or w.until > start)]
    if not hits:
        return diagnosis
    window = max(hits, key=lambda w: w.until or end + timedelta(days=3650))
    note = window.note if window.covers(end) else f"{window.note}; it ended inside this window"
    return diagnosis.model_copy(update={
        "maintenance": note, "ticket_priority": Priority.LOW,
        "warnings": [f"{note}: findings are shown, not paged or ticketed", *diagnosis.warnings]})



def history_from(store: TelemetryStore) -> History:
    """The link samples a job's correlation asks for, read from the store when the engine asks."""
    def read(nodes: list[str], start: datetime, end: datetime) -> pd.DataFrame:
        return store.window(end=end, span=end - start + timedelta(microseconds=1), nodes=nodes)["link_samples"]

    return read


def analyze_store(store: TelemetryStore, *, window: timedelta, thresholds: Thresholds,
                  end: datetime | None = None) -> tuple[FleetAnalysis, StoreWindow]:
    """Every stored node over the span the rules need (a day of step samples; a slowed job's links over its day,
    read only for the nodes that need it), by the engine."""
    got = store.read_window(end=end, span=history_needed(window, thresholds), steps=CORRELATION_SPAN)
    result = analyze_fleet(got.tables, window=window, end=got.end, thresholds=thresholds, platforms=got.platforms,
                           nodes=store.nodes(), history=history_from(store), racks=got.racks)
    return result, got


def fleet_result(diagnoses: Mapping[str, Diagnosis], *, window_hours: float,
                 at: datetime | None = None) -> SweepResult:
    """Every node's diagnosis as a sweep result: every offending link, its node's diagnosis, every node swept."""
    result = SweepResult(at=at or datetime.now().astimezone(), window_hours=window_hours, source="store",
                         swept=sorted(diagnoses), warnings=fleet_name_notes(diagnoses))
    for node, diagnosis in sorted(diagnoses.items()):
        found = offenders_of(diagnosis)
        result.offenders.extend(found)
        if found:
            result.diagnoses[node] = diagnosis
            result.confirmed[node] = found
    return result


def result_of(analysis: FleetAnalysis, *, window_hours: float, read_s: float = 0.0) -> SweepResult:
    """The engine's fleet analysis as a sweep result: every offending link, and its node's diagnosis."""
    result = fleet_result(analysis.diagnoses, window_hours=window_hours, at=analysis.end)
    result.timings.fetch_s = read_s
    result.timings.analyze_s = analysis.timings.get("total_s", 0.0)
    return result


def sweep_tables(tables: Mapping[str, pd.DataFrame], *, thresholds: Thresholds, at: datetime | None = None,
                 window_hours: float = 1.0, platforms: Mapping[str, str] | None = None,
                 history: History | None = None, read_s: float = 0.0) -> SweepResult:
    """Every node the tables hold, swept by the engine."""
    analysis = analyze_fleet(tables, window=timedelta(hours=window_hours), end=at, thresholds=thresholds,
                             platforms=platforms, history=history)
    return result_of(analysis, window_hours=window_hours, read_s=read_s)


def sweep_store(store: TelemetryStore, *, thresholds: Thresholds, at: datetime | None = None,
                window_hours: float = 1.0) -> SweepResult:
    """The whole store swept for the window ending at `at` (default: its newest reading). A node of the store with
    no reading in the span the rules need makes the view incomplete: a silent node is not a healthy one."""
    window = timedelta(hours=window_hours)
    started = time.perf_counter()
    newest = store.newest() or _newest_event(store)
    if newest is None:
        return SweepResult(at=at or datetime.now().astimezone(), window_hours=window_hours, source="store",
                           complete=False, incomplete_reasons=["the store holds no link samples and no events"])
    end = at or newest
    analysis, got = analyze_store(store, window=window, thresholds=thresholds, end=end)
    total = time.perf_counter() - started
    engine = analysis.timings.get("total_s", 0.0)
    result = result_of(analysis, window_hours=window_hours, read_s=max(total - engine, 0.0))
    result.diagnoses = {n: stored_diagnosis(d, got, window) for n, d in result.diagnoses.items()}
    held = sorted(n for n, d in result.diagnoses.items() if d.maintenance)
    if held:  # planned work does not page: shown as a warning, left out of the offenders
        result.offenders = [o for o in result.offenders if o.node_id not in held]
        result.confirmed = {n: f for n, f in result.confirmed.items() if n not in held}
        result.warnings.append(f"{len(held)} node(s) in maintenance, their findings not counted as offenders: "
                               + "; ".join(f"{n} {result.diagnoses[n].maintenance}" for n in held[:10]))
    span = history_needed(window, thresholds)
    links = got.tables["link_samples"]
    reporting = {str(n) for n in links["node_id"].dropna().unique()} if len(links) else set()  # categories: fast
    quiet = sorted(set(store.nodes()) - reporting)
    quiet = [n for n in quiet if n not in result.diagnoses]  # a node with events only is not silent
    lone = sorted(n for n, d in analysis.diagnoses.items() if n not in quiet
                  and d.repair_action in (LONE_READING_ACTION, NO_LINKS_ACTION))
    if lone:
        result.complete = False
        result.incomplete_reasons.append(
            f"{len(lone)} node(s) hold one reading per link, or none: totals only, no rates, so their links are not "
            "judged: " + ", ".join(lone[:10]) + (" ..." if len(lone) > 10 else ""))
    result.silent = quiet
    if quiet:
        result.complete = False
        result.incomplete_reasons.append(
            f"{len(quiet)} node(s) of the store have no reading in the {fmt.hours(span.total_seconds() / 3600)} "
            f"before {fmt.when(got.end)}: " + ", ".join(quiet[:10]) + (" ..." if len(quiet) > 10 else ""))
    return result


def _newest_event(store: TelemetryStore) -> datetime | None:
    """The newest event's time, for a store that holds events but no link samples (a kernel log alone)."""
    events = store.events()
    if events.empty:
        return None
    newest = pd.to_datetime(events["timestamp"], utc=True).max()
    return None if pd.isna(newest) else utc_datetime(newest)


def watch_store(store: TelemetryStore, *, nodes: list[str] | None = None, end: datetime | None = None,
                policy: WatchPolicy | None = None, thresholds: Thresholds | None = None,
                chunk: int = 64) -> list[Watch]:
    """The watch list over the store's lookback, read `chunk` nodes at a time so memory follows the chunk, not
    the fleet (a 72 h lookback holds three days of every link)."""
    policy = policy or load_watch()
    names = nodes if nodes is not None else store.nodes()
    end = end or store.newest(names)
    if end is None:
        return []
    found: list[Watch] = []
    for i in range(0, len(names), chunk):
        got = store.read_window(end=end, span=policy.lookback, nodes=names[i:i + chunk])
        found += watch_list(got.tables, end=end, policy=policy, thresholds=thresholds)
    return sorted(found, key=lambda w: (w.hours_left, w.node_id, w.ref.slug))


def analyze_rack(store: TelemetryStore, rack_id: str, *, window: timedelta, thresholds: Thresholds,
                 end: datetime | None = None) -> tuple[Diagnosis, FleetAnalysis]:
    """A rack's Diagnosis from the store: every host the rack inventory puts in it, over the span the rules and
    its job's correlation need, weighed together by the engine (and each host's own, in the analysis)."""
    slots = store.racks()
    hosts = sorted(h for h, s in slots.items() if s.rack == rack_id)
    if not hosts:
        racks = sorted({s.rack for s in slots.values()})
        raise InputError(f"no rack {rack_id!r} in the store's inventory (racks: {', '.join(racks[:10]) or 'none'}; "
                         "ingest a nodes.csv with node_id, platform, rack, tray)", source=str(store.root))
    got = store.read_window(end=end, span=node_span(window, thresholds), nodes=hosts, steps=CORRELATION_SPAN)
    result = analyze_fleet(got.tables, window=window, end=got.end, thresholds=thresholds, platforms=got.platforms,
                           nodes=hosts, history=history_from(store), racks={h: slots[h] for h in hosts})
    if rack_id not in result.racks:
        raise InputError(f"rack {rack_id!r} names no host of a rack platform (gb200-nvl72-compute-tray, ...): give "
                         "its hosts' platforms in the inventory", source=str(store.root))
    # each host as any stored node is told: planned work, a host silent since before the window, undated readings
    result.diagnoses = {h: stored_diagnosis(d, got, window) for h, d in result.diagnoses.items()}
    return result.racks[rack_id], result
