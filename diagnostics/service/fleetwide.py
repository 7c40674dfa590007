"""The service's other questions, asked of any source: the fleet swept for offenders, the links climbing toward a
threshold, and whether a repaired part stayed clean."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from .. import format as fmt
from ..analysis import (
    Diagnostic,
    Pass,
    RepairCheck,
    RepairVerdict,
    Watch,
    check_repair,
    decide,
    events_said,
    failing_parts,
    gpu_faults_said,
    history_needed,
    uuids,
    watch_list,
)
from ..analysis.alerting import version_facts
from ..analysis.bandwidth import all_reduce_runs
from ..analysis.diagnosis import LONE_READING_ACTION, NO_LINKS_ACTION, STATES_ONLY_ACTION
from ..config.alerts import AlertPolicy, load_alerts
from ..config.thresholds import Thresholds, load_thresholds
from ..config.verification import VerificationPolicy, load_verification
from ..config.watch import WatchPolicy, load_watch
from ..enums import ComponentKind, priority_rank
from ..model import Diagnosis
from ..names import fleet_name_notes
from ..offenders import Offender, SweepResult
from ..prometheus.config import load_limits
from ..prometheus.sweep import sweep as pushed_down
from ..store.alerts import Alert
from ..store.maintenance import Maintenance
from ..store.sources import UNTIMED_ADVICE
from .diagnose import Fleet, fleet, last_window, planned, planned_note, ranked
from .fleet_end import FleetEnd, source_end
from .prometheus import PrometheusSource
from .request import Request
from .shards import SHARD_NODES, Shardable, in_processes, process_count, shard_count, split, threads_each
from .source import Source, Window, known
from .unheard import SILENT_READ_BACK, gone_silent, last_showed, untimed_held, untimed_note


def fleet_result(diagnoses: Mapping[str, Diagnosis], *, window_hours: float, at: datetime | None = None,
                 source: str = "store", thresholds: Thresholds | None = None,
                 offenders: Mapping[str, list[Offender]] | None = None) -> SweepResult:
    """Every node's diagnosis as a sweep result: every offending link, its node's diagnosis, every node swept. Each
    node's offenders are listed most urgent first (`analysis.urgent_first`, by `thresholds`' priority policy: the
    one the diagnoses were judged by), the order every door keeps: as `offenders` has them ranked already (`ranked`,
    where the nodes were judged), else ranked here."""
    result = SweepResult(at=at or datetime.now().astimezone(), window_hours=window_hours, source=source,
                         swept=sorted(diagnoses), warnings=fleet_name_notes(diagnoses),
                         platforms={n: d.platform for n, d in sorted(diagnoses.items()) if d.platform})
    _say_covered(result, diagnoses)
    policy = thresholds or load_thresholds()
    for node, diagnosis in sorted(diagnoses.items()):
        found = offenders[node] if offenders is not None and node in offenders else ranked(diagnosis, policy)
        result.offenders.extend(found)
        if found:
            result.diagnoses[node] = diagnosis
            result.confirmed[node] = found
    return result


def _say_covered(result: SweepResult, diagnoses: Mapping[str, Diagnosis]) -> None:
    """Nodes whose readings cover less than the window asked, said once (each node's diagnosis says its own span);
    where no node's readings reach the window's start, the sweep's window is the longest span they cover."""
    short = {n: d.window_hours for n, d in sorted(diagnoses.items()) if d.window_asked_hours is not None}
    if not short:
        return
    asked = fmt.hours(result.window_hours)
    nodes = fmt.count(len(short), "node's", "nodes'")
    result.warnings.append(f"{nodes} readings cover less than the {asked} window, their rates "
                           "per hour over the span they cover: " + "; ".join(
                               f"{n} {fmt.hours(h)}" for n, h in list(short.items())[:10])
                           + (" ..." if len(short) > 10 else ""))
    if all(n in short for n, d in diagnoses.items() if d.window_end is not None):
        result.window_asked_hours, result.window_hours = result.window_hours, max(short.values())


def sweep(source: Source, request: Request, *, read_back: bool = True) -> SweepResult:
    """The fleet swept for the window ending at `request.end` (default: the source's newest reading); on Prometheus,
    pushed down to the server, which reads the offending nodes back (`read_back=False`: the offenders only). A node
    the source holds with no reading in the span the rules need makes the view incomplete: a silent node is not a
    healthy one."""
    return _swept(source, request, read_back=read_back)[0]


def _swept(source: Source, request: Request, *, read_back: bool = True) -> tuple[SweepResult, list[Window]]:
    """`sweep`'s result and the windows it read (none from Prometheus, which reads back offenders only)."""
    hours = request.length.total_seconds() / 3600
    if isinstance(source, PrometheusSource):
        pushed = pushed_down(source.client, request.thresholds, at=request.end, window_hours=hours,
                             analyze=read_back, step_s=source.step_s, dmap=source.dmap)
        _say_held(pushed, _planned_on(source, pushed, request.length))
        return pushed, []
    started = time.perf_counter()
    answered = fleet(source, request)
    ends = [w.end for w in answered.windows if w.end is not None]
    held = any(len(w.tables.get(t, ())) for w in answered.windows for t in ("events", "topology"))
    if not ends and held and answered.analysis.end is not None:  # dated events alone (a kernel log), or a node's
        ends = [answered.analysis.end]  # description (`topo -m`): judged at the newest, or now, as a node's answer is
    if not ends:
        at = request.end or datetime.now().astimezone()
        held_nodes = source.nodes()
        if request.end is None or not held_nodes:
            undated = _undated(answered)
            why = "the source holds no link samples and no events"
            if undated:  # it holds some, none with a time
                why = "; ".join(untimed_note(n, *c) for n, c in sorted(undated.items())[:10]) + (
                    f" ({fmt.count(len(undated) - 10, 'more node')} alike)" if len(undated) > 10 else "")
            return SweepResult(at=at, window_hours=hours, source=source.name, complete=False,
                               incomplete_reasons=[why], unjudged=sorted(undated)), []  # named, as a script reads
        silent = SweepResult(at=at, window_hours=hours, source=source.name)
        silent.no_reading(held_nodes, history_needed(request.length, request.thresholds), every=True)
        return silent, []  # none of its nodes reports in the span
    engine = answered.analysis.timings.get("total_s", 0.0)
    result = fleet_result(answered.diagnoses, window_hours=hours, at=max(ends), source=source.name,
                          thresholds=request.thresholds, offenders=answered.offenders)
    result.timings.fetch_s = max(time.perf_counter() - started - engine, 0.0)
    result.timings.analyze_s = engine
    _say_held(result, {n: d.maintenance for n, d in result.diagnoses.items() if d.maintenance})
    _say_unjudged(result, answered, source, request)
    _say_ahead(result, answered)
    result.stopped_reporting(sorted(n for n in answered.stopped if n not in result.silent), request.length)
    later = {n: t for got in answered.windows for n, t in got.later.items()}
    if later:  # a host whose kernel log alone was ingested, newer than the readings: judged at its own time alone
        result.warnings.append(
            f"{fmt.count(len(later), 'node')} with no link reading {_have(len(later))} events after the window's "
            "end, not judged here: "
            + "; ".join(f"{n} (to {fmt.when(t)})" for n, t in sorted(later.items())[:10])
            + (" ..." if len(later) > 10 else "") + "; `fabricbot analyze --store ... --node NODE` judges them")
    late = {n: t for got in answered.windows for n, t in got.late.items()}
    if late and request.end is None:  # logged after the fleet's newest reading: a node's own answer may judge them
        result.warnings.append(
            f"{fmt.count(len(late), 'node')} {_have(len(late))} events after the window's end, not judged here: "
            + "; ".join(f"{n} (to {fmt.when(t)})" for n, t in sorted(late.items())[:10])
            + (" ..." if len(late) > 10 else "") + "; `fabricbot analyze --store ... --node NODE` judges a node's "
            "events up to an hour after its readings")
    _say_gpu_faults(result, answered.diagnoses)  # after the view's own notes, which a short list shows first
    return result, answered.windows


def _say_ahead(result: SweepResult, answered: Fleet) -> None:
    """Nodes whose readings run past the fleet's end (a clock ahead, a zone read wrong): judged to the fleet's end,
    not past it, and said, so the view is incomplete rather than silent about them."""
    note = FleetEnd(result.at, answered.ahead).note()
    if note is None:
        return
    result.complete = False
    result.unjudged = sorted({*result.unjudged, *(n for n in answered.ahead if n not in answered.reporting)})
    result.incomplete_reasons.append(note)


def _undated(answered: Fleet) -> dict[str, tuple[int, int]]:
    """Per node, its stored link readings and events with no time (ingested without `--at`), which no window can
    place."""
    out: dict[str, tuple[int, int]] = {}
    for got in answered.windows:
        for node in {*got.undated, *got.undated_events}:
            held = untimed_held(node, got)
            if any(held):
                out[node] = held
    return out


def _rate_unknown(result: SweepResult, nodes: list[str], link: str) -> None:
    """Nodes holding a link (`link`: what is wrong with it) whose true rate is unknown and what it shows fails no
    rule: not judged, so the view is incomplete."""
    if not nodes:
        return
    result.complete = False
    result.incomplete_reasons.append(
        f"{fmt.count(len(nodes), 'node')} {'holds' if len(nodes) == 1 else 'hold'} a link {link}, what it shows "
        "failing no rule: its true rate is unknown, so not judged: " + ", ".join(nodes[:10])
        + (" ..." if len(nodes) > 10 else ""))


def _untimed(result: SweepResult, nodes: list[str], held: str, judged: str) -> None:
    """Nodes holding only `held` (readings or events no window can place): not judged, said with how to date them."""
    if not nodes:
        return
    one = len(nodes) == 1
    result.complete = False
    result.unjudged = sorted({*result.unjudged, *nodes})
    result.incomplete_reasons.append(
        f"{fmt.count(len(nodes), 'node')} {'holds' if one else 'hold'} only {held}, so {'its' if one else 'their'} "
        f"{judged}: {UNTIMED_ADVICE}: " + ", ".join(nodes[:10]) + (" ..." if len(nodes) > 10 else ""))


def _say_untimed_events(result: SweepResult, undated: Mapping[str, tuple[int, int]], judged: Collection[str]) -> None:
    """Judged nodes that also hold events with no time: those events judge nothing in any window (a week-old fatal
    Xid would otherwise page anew at every window's end), and one may be a fault now (a GPU fallen off the bus), so
    the view is no all-clear, as each such node's own answer is incomplete where it found no fault."""
    nodes = sorted(n for n in judged if undated.get(n, (0, 0))[1])
    if nodes:
        result.complete = False
        result.incomplete_reasons.append(
            f"{fmt.count(len(nodes), 'node')} also {'holds' if len(nodes) == 1 else 'hold'} events with no time (a "
            f"log printed without dates, ingested without --at), not judged: {UNTIMED_ADVICE}: "
            + ", ".join(f"{n} ({fmt.count(undated[n][1], 'event')})" for n in nodes[:10])
            + (" ..." if len(nodes) > 10 else ""))


def _ran(answered: Fleet) -> set[str]:
    """The nodes a benchmark run in the span read (its bus bandwidth, judged or not): read, though no link was, so
    not silent, as `analyze` answers such a node with its run."""
    hosts = {h for got in answered.windows for run in all_reduce_runs(got.tables.get("step_samples"))
             for h in run.hosts}
    return hosts | {n for n, d in answered.diagnoses.items()
                    if any(f.ref.kind is ComponentKind.GPU_FABRIC for f in d.findings)}


def _say_held(result: SweepResult, notes: Mapping[str, str]) -> None:
    """Planned work does not page: the nodes under it (`notes`: each one's, as its answer says it) shown as a
    warning, left out of the offenders."""
    held = sorted(notes)
    if not held:
        return
    result.offenders = [o for o in result.offenders if o.node_id not in notes]
    result.confirmed = {n: f for n, f in result.confirmed.items() if n not in notes}
    result.warnings.append(f"{fmt.count(len(held), 'node')} in maintenance, their findings not counted as offenders: "
                           + "; ".join(f"{n} {notes[n]}" for n in held[:10]))


def _planned_on(source: Source, result: SweepResult, length: timedelta) -> dict[str, str]:
    """A pushed-down sweep's nodes under planned work overlapping its window, each said as its answer says it (the
    server knows no planned work: the source holds it, from the store the bot or `--store` names); their read-back
    diagnoses say it too."""
    windows: dict[str, list[Maintenance]] = {}
    for w in source.maintenance().windows():
        windows.setdefault(w.node_id, []).append(w)
    start = result.at - length
    notes = {n: note for n in {o.node_id for o in result.offenders} | set(result.diagnoses)
             if (note := planned_note(windows.get(n, []), start=start, end=result.at)) is not None}
    result.diagnoses = {n: planned(d, windows.get(n, []), start=start, end=result.at)
                        for n, d in result.diagnoses.items()}
    return notes


def _say_gpu_faults(result: SweepResult, diagnoses: Mapping[str, Diagnosis]) -> None:
    """The GPUs' own faults the window's Xids show (a GSP timeout, an uncontained memory error), each node's as its
    answer says it with NVIDIA's action: no link is judged on them, so no offender lists them, yet the GPU may need a
    reset (the first ten nodes, then how many more)."""
    said = {n: notes for n, d in sorted(diagnoses.items()) if (notes := gpu_faults_said(d.warnings))}
    for node, notes in list(said.items())[:10]:
        result.warnings.extend(f"{node}: {note}" for note in notes)
    if len(said) > 10:
        result.warnings.append(f"{fmt.count(len(said) - 10, 'more node')} with a GPU fault of its own in the window "
                               f"(their answers say which): {', '.join(list(said)[10:20])}"
                               + (" ..." if len(said) > 20 else ""))


def _say_unjudged(result: SweepResult, answered: Fleet, source: Source, request: Request) -> None:
    """Nodes whose links were not judged: one reading (totals only), or none in the span the rules need."""
    reporting = answered.reporting
    unreadable = {n: why for got in answered.windows for n, why in got.unreadable.items()}
    for nodes, what in (({n for n in unreadable if n not in reporting}, "whose stored readings could not be read, "
                         "so not judged"),
                        (reporting & set(unreadable), "judged on their window, but a stored part of a slowed job's "
                         "history could not be read, so its slowdown is not scored on their links")):
        if nodes:
            result.complete = False
            result.incomplete_reasons.append(f"{fmt.count(len(nodes), 'node')} {what}: " + "; ".join(
                f"{n} ({unreadable[n]})" for n in sorted(nodes)[:3]) + (" ..." if len(nodes) > 3 else ""))
    ran = _ran(answered)
    held = source.nodes()
    linked = {n for got in answered.windows for n in got.newest}  # nodes the store holds link readings of
    # a node of Xids alone (a kernel log, none a link's fault) spoke; one whose link readings stopped stays silent
    spoke = {n for n, d in answered.diagnoses.items() if n not in linked and events_said(d.warnings)}
    quiet = [n for n in sorted(set(held) - reporting)
             if n not in result.diagnoses and n not in unreadable and n not in ran  # events or a run only: not silent
             and n not in spoke and n not in answered.ahead]  # past the fleet's end: said as such (`_say_ahead`)
    lone = sorted(n for n, d in answered.diagnoses.items() if n not in quiet and n not in unreadable
                  and (d.repair_action in (LONE_READING_ACTION, STATES_ONLY_ACTION, NO_LINKS_ACTION)
                       or (n in ran and n not in reporting and d.health_unknown())))
    pinned = sorted(n for n, d in answered.diagnoses.items() if d.pinned and not d.fault_detected and n not in lone)
    dropped = sorted(n for n, d in answered.diagnoses.items()
                     if d.dropped and not d.fault_detected and n not in lone and n not in pinned)
    unread = sorted(n for n, d in answered.diagnoses.items()
                    if d.unread and not d.read_once and not d.fault_detected and n not in lone and n not in pinned
                    and n not in dropped)
    cut = sorted(n for n, d in answered.diagnoses.items()
                 if d.cut_unjudged() and n not in {*lone, *pinned, *dropped, *unread})
    result.unjudged = sorted({*lone, *pinned, *dropped, *unread, *cut,
                              *(n for n in unreadable if n not in reporting)})
    # a rate unknown, what it shows failing no rule: a reading without a value its others hold (refused as damaged,
    # cut), a count read lower with no restart (a damaged or cut number), a counter stuck at its maximum
    _rate_unknown(result, unread, "with a counter missing from a reading of the window that its other readings hold "
                                  "(a value refused or cut)")
    _rate_unknown(result, dropped, "with a counter read lower than before while its others held (a damaged or cut "
                                   "reading, no restart)")
    _rate_unknown(result, pinned, "whose counter is pinned at its maximum")
    if cut:
        result.complete = False
        result.incomplete_reasons.append(
            f"the newest input of {fmt.count(len(cut), 'node')} {'was' if len(cut) == 1 else 'were'} cut off "
            "before its end, what it shows failing no rule: what followed the cut is not read, so not judged: "
            + ", ".join(cut[:10]) + (" ..." if len(cut) > 10 else ""))
    if lone:
        result.complete = False
        kinds = {NO_LINKS_ACTION if n in ran and n not in reporting else answered.diagnoses[n].repair_action
                 for n in lone}  # `nvlink -s` reads states, no counter
        runs_only = all(n in ran and n not in reporting for n in lone)  # a benchmark's figure, no link read
        read = ("a benchmark run's bus bandwidth only, no link reading" if runs_only else
                "link states only, no error counters" if kinds == {STATES_ONLY_ACTION} else
                "no link reading" if kinds == {NO_LINKS_ACTION} else  # events alone (an SXid that warns)
                "totals or link states only, no rates" if STATES_ONLY_ACTION in kinds else "totals only, no rates")
        some = " (or of some links)" if any(answered.diagnoses[n].read_once for n in lone if n in answered.diagnoses) \
            else ""  # a cut or partial second reading leaves the links it did not reach with one
        result.incomplete_reasons.append(
            f"{fmt.count(len(lone), 'node')} {'holds' if len(lone) == 1 else 'hold'} one reading per link{some}, or "
            "none: "
            f"{read}, so their links are not judged: " + ", ".join(lone[:10]) + (" ..." if len(lone) > 10 else ""))
    undated = _undated(answered)
    dated = linked
    placed = [n for n in quiet if n in undated and n not in dated]  # held, but no window can place any of them
    untimed = [n for n in placed if undated[n][0]]
    logs = [n for n in placed if not undated[n][0]]
    _untimed(result, untimed, "link readings with no time (ingested without --at)", "links are not judged")
    _untimed(result, logs, "events with no time (a log printed without dates, ingested without --at)",
             "events judge nothing")
    _say_untimed_events(result, undated, [n for n in held if n not in placed])
    read_back: dict[str, Diagnosis | None] = {}  # a silent node's last window, read once for both below
    quiet = _say_retired(result, [n for n in quiet if n not in placed], answered, request, source, read_back)
    result.silent = quiet
    if quiet:
        result.no_reading(quiet, history_needed(request.length, request.thresholds),
                          every=set(quiet) == set(held))
        _say_last(result, source, request, quiet, answered.diagnoses, read_back)


def _say_retired(result: SweepResult, quiet: list[str], answered: Fleet, request: Request,
                 source: Source, read_back: dict[str, Diagnosis | None]) -> list[str]:
    """The silent nodes less those silent since `limits.known_nodes_hours` before the span the rules read, as the
    server's sweep knows no node past it (a node renamed or removed), whose last readings showed no fault: listed
    once as a warning, with how long each has been silent, not an incomplete view. One gone silent on a fault is
    never retired (silence is not health: its alert stays open, not reporting). The rest, returned, stay silent;
    each last window read is kept in `read_back`."""
    newest = {n: t for got in answered.windows for n, t in got.newest.items()}
    known = load_limits().known_nodes_hours
    cut = result.at - history_needed(request.length, request.thresholds) - timedelta(hours=known)
    old = [n for n in quiet if n in newest and newest[n] < cut][:SILENT_READ_BACK]  # beyond: kept silent

    def healthy(node: str) -> bool:
        then = read_back[node] = last_window(source, request, node, newest[node], result.at - request.length)
        return then is not None and last_showed(then) is None

    retired = [n for n in old if healthy(n)]
    if retired:
        result.warnings.append(
            f"{fmt.count(len(retired), 'node')} with no link reading since before {fmt.when(cut)} (limits."
            f"known_nodes_hours, {fmt.hours(known)}, before the span the rules read), taken as retired (renamed or "
            "removed), not counted: " + "; ".join(
                f"{n} (silent {fmt.number(round((result.at - newest[n]).total_seconds() / 86400, 1))} days)"
                for n in retired[:10]) + (" ..." if len(retired) > 10 else ""))
    return [n for n in quiet if n not in retired]


def _say_last(result: SweepResult, source: Source, request: Request, quiet: list[str],
              diagnoses: Mapping[str, Diagnosis], read_back: Mapping[str, Diagnosis | None]) -> None:
    """The silent nodes (the first the reason names) whose last link readings showed a fault, each with what they
    showed and the priority its own answer gives it (`gone_silent`), the most urgent first and ahead of the other
    reasons: one gone silent on a failing link is more urgent than one gone silent healthy, or than a node not
    judged. `read_back`: the last windows already read."""
    said: list[tuple[int, str, str]] = []
    for node in quiet[:SILENT_READ_BACK]:
        newest = source.newest([node])
        if newest is None or node not in diagnoses:  # nothing to judge, or no answer to weigh it against
            continue
        then = read_back[node] if node in read_back else last_window(source, request, node, newest,
                                                                      result.at - request.length)
        last = last_showed(then) if then is not None else None
        if then is None or last is None:
            continue
        seen = gone_silent(diagnoses[node], then, newest)
        said.append((-priority_rank(seen.ticket_priority), node, (
            f"no link reading from {node} since {fmt.when(newest)}: {last}; {seen.priority_said()} priority: find "
            f"why it stopped reporting, then repair that fault (`fabricbot analyze --store ... --node {node}`)")))
    result.incomplete_reasons[:0] = [line for _, _, line in sorted(said)]


def watch(source: Source, *, nodes: Collection[str] | None = None, end: datetime | None = None,
          policy: WatchPolicy | None = None, thresholds: Thresholds | None = None, chunk: int = 64,
          unjudged: dict[str, str] | None = None, over: set[str] | None = None,
          processes: int | None = None, shard_nodes: int = SHARD_NODES) -> list[Watch]:
    """The links climbing toward a failing threshold over the policy's lookback (of `nodes`, default all), read
    `chunk` nodes at a time so memory follows the chunk, not the fleet (a 72 h lookback holds three days of every
    link). `unjudged` is given each node left out of the list, and why: its stored readings could not be read, or
    they are too few to fit a line (none in the lookback, one per link, less than the policy's buckets): an empty
    list over those says nothing of them. `over` is given each node with a link already over a watched rule. Each
    link's line is its own, so a source a worker can read by itself (the store) is watched in shards of at least
    `shard_nodes` nodes, one per process (`processes`, default: FABRICBOT_PROCESSES, else the cores), as a sweep is:
    the same watches (1,024 stored nodes over 24 h on 2 cores: 19.1 s -> 11.8 s)."""
    policy = policy or load_watch()
    held = source.nodes()
    names = held if not nodes else [known("node", n, held, where=source.name) for n in nodes]
    ahead: dict[str, datetime] = {}
    if end is None and not nodes:  # the fleet's: where its readings are, as the sweep's (`fleet_end`)
        at = source_end(source, thresholds=thresholds or load_thresholds())
        end = at.end
        ahead = {n: at.end + d for n, d in at.ahead.items() if at.end is not None}
    end = end or source.newest(names)
    if end is None:
        if unjudged is not None:
            unjudged.update((n, f"the {source.name} holds no link reading of it") for n in names)
        return []
    count = shard_count(len(names), process_count(processes), shard_nodes)
    if count > 1 and isinstance(source, Shardable):
        shards = split(names, [], count)
        threaded = source.threaded(threads_each(len(shards)))
        done = in_processes(_watched, [(threaded, group, end, policy, thresholds, chunk) for group in shards])
    else:
        done = [_watched(source, names, end, policy, thresholds, chunk)]
    found = [w for shard, _, _ in done for w in shard]
    for _, left, high in done:
        if unjudged is not None:
            unjudged.update(left)
        if over is not None:
            over.update(high)
    if unjudged is not None:  # their readings past the end are not read
        unjudged.update((n, f"its readings run to {fmt.when(t)}, past the fleet's newest at {fmt.when(end)}: its "
                            "clock, or a zone read wrong") for n, t in ahead.items())
    return sorted(found, key=lambda w: (w.hours_left, w.node_id, w.ref.slug))


def _watched(source: Source, names: list[str], end: datetime, policy: WatchPolicy, thresholds: Thresholds | None,
             chunk: int) -> tuple[list[Watch], dict[str, str], set[str]]:
    """The nodes' watches, `chunk` nodes at a time, with those left out and why, and those already over a rule."""
    found: list[Watch] = []
    unjudged: dict[str, str] = {}
    over: set[str] = set()
    few = (f"too few readings for a trend: a line needs readings (two for a rate) in {policy.min_buckets} buckets "
           f"of {fmt.hours(policy.bucket_hours)} in the {fmt.hours(policy.lookback_hours)} before {fmt.when(end)}, "
           "and no link has them")
    for i in range(0, len(names), chunk):
        got = source.read(nodes=names[i:i + chunk], end=end, span=policy.lookback)
        judged: set[str] = set()
        found += watch_list(got.tables, end=end, policy=policy, thresholds=thresholds, judged=judged, over=over)
        unjudged.update(got.unreadable)
        unjudged.update((n, few) for n in names[i:i + chunk] if n not in judged and n not in got.unreadable)
    return found, unjudged, over


@dataclass(frozen=True)
class WatchAnswer:
    """The watch list as every door shows it: the links climbing, the nodes it could not judge and why, and what an
    empty list says (no evidence is not an all-clear)."""

    watches: list[Watch]
    asked: int  # the nodes asked about (the source's, when none was named)
    where: str  # the source's name
    policy: WatchPolicy
    unjudged: dict[str, str] = field(default_factory=dict)  # node -> why it is left out of the list
    over: set[str] = field(default_factory=set)  # nodes with a link already over a watched rule: failing, not climbing

    @property
    def complete(self) -> bool:
        return self.asked > 0 and not self.unjudged

    def quiet(self) -> str:
        """What an empty list says: nothing climbing among the nodes judged, or that it cannot judge yet."""
        judged = self.asked - len(self.unjudged)
        if not self.asked:
            return f"cannot judge yet: the {self.where} holds no readings"
        if not judged:
            return (f"cannot judge yet: no node holds enough readings for a trend (last "
                    f"{fmt.hours(self.policy.lookback_hours)})")
        failing = sorted(self.over)
        already = (f"; already over a failing threshold, not climbing: {', '.join(failing[:10])}"
                   + (f" and {len(failing) - 10} more" if len(failing) > 10 else "")
                   + " (`fabricbot analyze` diagnoses each)") if failing else ""
        among = f" among the {fmt.count(judged, 'node')} judged" if self.unjudged else ""
        return (f"nothing climbing toward a failing threshold within {fmt.hours(self.policy.horizon_hours)} (last "
                f"{fmt.hours(self.policy.lookback_hours)} of readings){among}{already}")

    def not_judged(self, shown: int = 5) -> list[str]:
        """Why the list is not the fleet's (or the empty source): the nodes left out for one reason on one line, the
        first `shown` named (a fleet too new for a trend is one line, not a line a node)."""
        if not self.asked:
            return [f"the {self.where} holds no readings"]
        by_why: dict[str, list[str]] = {}
        for node, why in sorted(self.unjudged.items()):
            by_why.setdefault(why, []).append(node)
        return [", ".join(nodes[:shown]) + (f" and {len(nodes) - shown} more" if len(nodes) > shown else "")
                + f" not judged: {why}" for why, nodes in by_why.items()]


def watched(source: Source, *, nodes: Collection[str] | None = None, end: datetime | None = None,
            policy: WatchPolicy | None = None, thresholds: Thresholds | None = None) -> WatchAnswer:
    """`watch`'s list with the nodes it could not judge: the answer the CLI, `/fabric watch` and the digest show."""
    policy = policy or load_watch()
    unjudged: dict[str, str] = {}
    over: set[str] = set()
    watches = watch(source, nodes=nodes, end=end, policy=policy, thresholds=thresholds, unjudged=unjudged, over=over)
    return WatchAnswer(watches, len(nodes) if nodes else len(source.nodes()), source.name, policy, unjudged, over)


def verify_repair(source: Source, *, node: str, parts: Collection[str], repaired_at: datetime,
                  policy: VerificationPolicy | None = None, thresholds: Thresholds | None = None,
                  diagnostic: Diagnostic | None = None) -> RepairCheck:
    """The repaired parts judged window by window on the node's readings from the repair to its newest (at most
    the soak), each GPU followed by the UUID it had in the window before the repair (a swap test moves modules)."""
    policy = policy or load_verification()
    if node not in source.nodes():
        return RepairCheck(node_id=node, parts=sorted(parts), repaired_at=repaired_at, checked_to=None,
                           soak_hours=policy.soak_hours, windows=0, covered=0, verdict=RepairVerdict.HOLDING,
                           evidence=[f"the {source.name} holds no readings of {node}"])
    newest = source.newest([node])
    if newest is None or newest <= repaired_at:
        return check_repair({}, node_id=node, parts=parts, repaired_at=repaired_at, now=None, policy=policy,
                            diagnostic=diagnostic)  # a failed diagnostic needs no readings to reopen
    end = min(newest, repaired_at + policy.soak)
    got = source.read(nodes=[node], end=end, span=end - repaired_at)
    before = uuids(source.read(nodes=[node], end=repaired_at, span=policy.window).tables, node, before=repaired_at)
    return check_repair(got.tables, node_id=node, parts=parts, repaired_at=repaired_at, now=end, policy=policy,
                        thresholds=thresholds, platform=got.platforms.get(node), platforms=got.platforms,
                        uuids_before=before, diagnostic=diagnostic)


def alert_pass(source: Source, request: Request, *, alerts: Mapping[tuple[str, str], Alert], at: datetime,
               ticket_of: Callable[[str, str], str | None], open_storm: int | None = None,
               policy: AlertPolicy | None = None, baseline: bool = False) -> tuple[SweepResult, Pass]:
    """One pass of the watch loop: the fleet swept as `sweep` does (planned work held), its failing parts, and what
    the alert channel is told given the alerts still open (new, worse, ticketed, recovered, or held in a storm;
    on the watch's first pass, `baseline`, known). The pass judges the window ending at the source's newest reading,
    or at `at` when even that reading is older than the span the rules need: a fleet that stopped reporting is
    silent, not judged on its last hour. An alert of a node with no reading in the window stays open (`decide`)."""
    if request.end is None:
        newest = source_end(source, thresholds=request.thresholds, now=at).end
        newest = newest or source.newest()
        if newest is not None and newest <= at - history_needed(request.length, request.thresholds):
            request = replace(request, end=at)
    swept, windows = _swept(source, request)
    racks = {n: d.rack.rack_id for n, d in swept.diagnoses.items() if d.rack is not None}
    racks.update({r: r for r in racks.values()})  # a rack's own part alerts under the rack
    facts = version_facts(w.tables for w in windows)  # the driver, VBIOS, Fabric Manager a storm may share
    parts = failing_parts(swept.diagnoses.values(), facts, request.thresholds)
    silent = _no_links(source, swept, windows)
    done = decide(parts, alerts, at=at, policy=policy or load_alerts(),
                  ticket_of=ticket_of, fleet_nodes=len(swept.swept) or len(source.nodes()), racks=racks,
                  open_storm=open_storm, baseline=baseline, silent=silent, planned=_planned(source, swept, silent, at))
    return swept, done


def _planned(source: Source, swept: SweepResult, silent: Collection[str], at: datetime) -> dict[str, str]:
    """The nodes under planned work, each with its window as said: those whose diagnosis says so, and the silent ones
    (no diagnosis to say it) with a window covering the pass or the fleet's newest reading: a node is often powered
    off for its work."""
    planned = {n: d.maintenance for n, d in swept.diagnoses.items() if d.maintenance}
    if silent:
        planned.update((w.node_id, w.note) for w in source.maintenance().windows()
                       if w.node_id in silent and w.node_id not in planned and (w.covers(at) or w.covers(swept.at)))
    return planned


def _no_links(source: Source, swept: SweepResult, windows: list[Window]) -> set[str]:
    """The nodes the pass holds no link reading of: the sweep's silent ones, and those only a held event (a fatal
    Xid stands until a reset is seen) keeps among the offenders. A part of theirs no longer failing is not clean."""
    if not windows:
        return set(swept.silent)
    reporting = {str(n) for w in windows if (links := w.tables.get("link_samples")) is not None and len(links)
                 for n in links["node_id"].dropna().unique()}
    return set(swept.silent) | (set(swept.diagnoses) - reporting)


def _have(n: int) -> str:
    """The verb after a count of nodes: '1 node has', '2 nodes have'."""
    return "has" if n == 1 else "have"
