"""`diagnose`: one question in, one answer out, whichever door asks and whichever source holds the data.

Each kind of question reads one window from its source and runs the one engine once: a node with the nodes its
job shares (a peer's link may explain the slowdown), a rack with every host the inventory puts in it (a tray is
always answered through its rack), a job with its nodes, the fleet with everything. What the source could not show
(planned work, a node silent since before the window, readings without a time) is said on each answer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

import pandas as pd

from .. import format as fmt
from ..analysis import FleetAnalysis, JobExplanation, analyze_fleet, history_needed, node_tables, places
from ..analysis.boards import Boards
from ..analysis.identity import gpu_identities, switch_buses
from ..config.thresholds import Thresholds
from ..enums import Priority, priority_rank
from ..errors import InputError
from ..model import Diagnosis
from ..names import matched_note, name_notes
from ..offenders import Offender, offenders_of, worst_first
from ..snapshots import Snapshot
from ..store.event_times import late_note
from ..store.maintenance import Maintenance
from ..tables import rows_of
from ..times import ns, utc_datetime, utc_ns
from ..topology import NodeGraph
from .fleet_end import source_end
from .request import Asked, Request
from .shards import SHARD_NODES, Shardable, in_processes, process_count, shard_count, split, threads_each
from .source import Source, Window, known
from .tables import SnapshotSource
from .unheard import (
    before_readings,
    gone_silent,
    hosts_showed,
    last_faults,
    last_showed,
    rack_before_readings,
    stopped_inside,
    unheard,
    unheard_hosts,
    unjudged,
    untimed_alone,
    untimed_held,
    untimed_note,
    untimed_only,
)

NO_RACKS = "give a nodes.csv with node_id, platform, rack, tray: its racks are the ones known"


@dataclass
class Answer:
    """A question's answer: the diagnosis, the graph the engine judged the node on (None: its platform is unknown
    and the source holds no topology for it), and the analysis and window behind it."""

    diagnosis: Diagnosis
    graph: NodeGraph | None
    analysis: FleetAnalysis
    window: Window
    job: JobExplanation | None = None
    unheard: list[str] = field(default_factory=list)  # the node asked holds link readings, none in the window

    @property
    def incomplete(self) -> list[str]:
        """What the answer could not read, a line per node whose stored readings could not be (its health, or whether
        its links slow the job, is unknown), and the node asked when none of its readings is in the span a sweep
        reads, or the node's links were not judged (one reading per link, or none read) and no fault was found: every
        door calls such an answer incomplete, as a sweep over it is."""
        lines = [*(unreadable_note(n, why) for n, why in sorted(self.window.unreadable.items())), *self.unheard]
        if not lines and (why := unjudged(self.diagnosis)) is not None:  # held, read, and still nothing judged
            lines.append(why)
        node = self.diagnosis.node_id
        if not lines and not self.diagnosis.fault_detected and self.window.undated_events.get(node):
            lines.append(untimed_note(node, 0, self.window.undated_events[node], alone=False))  # a fatal Xid, maybe
        return lines


@dataclass
class Fleet:
    """Every node of a source, each as its answer would say it, and the analysis behind them."""

    analysis: FleetAnalysis
    windows: list[Window]
    diagnoses: dict[str, Diagnosis] = field(default_factory=dict)
    reporting: set[str] = field(default_factory=set)  # the nodes with link readings in the windows read
    stopped: dict[str, datetime] = field(default_factory=dict)  # nodes whose every series stopped inside the window
    ahead: dict[str, timedelta] = field(default_factory=dict)  # nodes whose readings run past the end (`fleet_end`)
    offenders: dict[str, list[Offender]] = field(default_factory=dict)  # each node's, most urgent first (`ranked`)

    @property
    def racks(self) -> dict[str, Diagnosis]:
        return self.analysis.racks


def node_span(window: timedelta, thresholds: Thresholds, history: timedelta) -> timedelta:
    """How much history one node's diagnosis reads: what the rules need, and a day for the job correlation."""
    return max(history, window * 4, history_needed(window, thresholds))


def diagnose(source: Source, request: Request) -> Answer:
    """The answer to a node, rack or job question (the fleet is `fleet`)."""
    asked = request.asked
    if asked is Asked.FLEET:
        raise InputError("name a node, a job or a rack (the whole fleet is `fleet`)", source=source.name)
    if asked is Asked.RACK:
        return _rack(source, request)
    if asked is Asked.JOB:
        return explain_job(source, request)
    assert request.node is not None
    racks = source.racks()
    slot = racks.get(request.node)
    if slot is not None:  # a tray is answered through its rack: one diagnosis weighs all its hosts
        return _rack(source, replace(request, node=None, job=None, rack=slot.rack), host=request.node,
                     job=request.job)
    names = source.nodes()
    if request.node not in names and request.job is None and request.node in {s.rack for s in racks.values()}:
        return _rack(source, replace(request, node=None, rack=request.node))  # a rack named where a node may be
    node = known("node", request.node, names, where=source.name)
    length, notes = _length(source, node, request)
    thresholds = request.thresholds
    got = source.read(nodes=[node], end=request.end, span=node_span(length, thresholds, request.history),
                      peers=True)
    rows, job = node_tables(got.tables, node, request.job)
    result = analyze_fleet(rows, window=length, end=got.end, thresholds=thresholds,
                           platforms=_platforms(got, node, request.platform), nodes=[node], full=True,
                           jobs={node: job} if job else None, history=got.history,
                           expected_gpus=got.expected_gpus, listed=got.listed, cut=got.cut, cut_off=got.cut_off,
                           unreadable=got.unreadable,
                           end_option=request.end_option)
    then = last_window(source, request, node, got.newest.get(node), _before(got, length)) \
        if silent_since(got, node, length) else None
    stopped = stopped_inside(got, [node], length, thresholds.setting("stale_after_intervals"),
                             result.diagnoses).get(node)
    seen = viewed(result.diagnoses[node], got, length, [*notes, *got.warnings], asked_end=_asked(request), then=then,
                  stopped=stopped)
    diagnosis = identified(named(seen, names, request.node), rows, node)
    diagnosis, silent = _heard(diagnosis, got, history_needed(length, thresholds), then)
    if stopped is not None:  # its health since is unknown, as a sweep over the window says of it
        silent.append(stopped_line(node, stopped, got))
    return Answer(diagnosis, result.graphs.get(node), result, got, result.jobs.get(job) if job else None, silent)


def diagnose_snapshot(snapshot: Snapshot, thresholds: Thresholds | None = None) -> Diagnosis:
    """One snapshot's diagnosis: its tables judged by the engine over its own window."""
    request = Request(node=snapshot.node_id, thresholds=thresholds) if thresholds else Request(node=snapshot.node_id)
    return diagnose(SnapshotSource([snapshot]), request).diagnosis


def graph_of(source: Source, node: str, *, platform: str | None = None) -> NodeGraph | None:
    """The graph the engine judges the node on (its own topology rows over its platform's template; a rack host's
    tray in its rack), without judging it: for a draft made later from a stored diagnosis."""
    got = source.read(nodes=[node], end=None, span=timedelta(0))
    slot = got.racks.get(node)
    slots = {node: int(slot.tray)} if slot is not None and slot.tray is not None and slot.tray.isdigit() else {}
    graph: NodeGraph | None = Boards(_platforms(got, node, platform), {}, got.tables.get("gpus"),
                                     got.tables.get("topology"), slots)(node, describe=True)
    return graph


def explain_job(source: Source, request: Request) -> Answer:
    """The job's slowdown explained over its nodes by one engine pass, answered as the node whose link explains it
    (else its first), each node judged against the job as its own question would judge it (a rack's host with its
    whole rack)."""
    assert request.job is not None
    job = known("job", request.job, source.jobs(), where=source.name)
    nodes = source.job_nodes(job)
    if not nodes:
        raise InputError(f"job {job!r} names no node in its step samples", source=source.name, field="job")
    slots = source.racks()
    racked = {slots[n].rack for n in nodes if n in slots}
    hosts = sorted(set(nodes) | {h for h, s in slots.items() if s.rack in racked})
    length, notes = _length(source, nodes[0], request)
    got = source.read(nodes=hosts, end=request.end, span=node_span(length, request.thresholds, request.history))
    result = analyze_fleet(got.tables, window=length, end=got.end, thresholds=request.thresholds,
                           platforms=_platforms(got, None, None), nodes=hosts, full=True,
                           jobs=dict.fromkeys(nodes, job), history=got.history, expected_gpus=got.expected_gpus,
                           racks={h: slots[h] for h in hosts if h in slots} or None, listed=got.listed, cut=got.cut,
                           cut_off=got.cut_off, unreadable=got.unreadable,
                           end_option=request.end_option)
    explanation = result.jobs.get(job)
    blamed = [s.node_id for s in explanation.links if s.explains_slowdown] if explanation else []
    members = explanation.nodes if explanation and explanation.nodes else nodes
    node = blamed[0] if blamed else max(enumerate(members), key=lambda m: _gravity(result.diagnoses.get(m[1]),
                                                                                  -m[0]))[1]
    others = _other_faults(result, explanation, job, node, nodes)
    if node in slots:  # as its rack answers it
        diagnosis = viewed(result.diagnoses[node], got, length, [*got.warnings, *others], asked_end=_asked(request))
    else:
        seen = viewed(result.diagnoses[node], got, length, [*notes, *got.warnings, *others],
                      asked_end=_asked(request))
        diagnosis = named(seen, source.nodes())
    return Answer(diagnosis, result.graphs.get(node), result, got, explanation)


def _gravity(d: Diagnosis | None, order: int) -> tuple[bool, int, int]:
    """How grave a job's node's answer is: a fault first, then its priority; the job's first node on a tie (a job
    no link explains is answered as its gravest node, not a healthy one beside a failing one)."""
    return (d is not None and d.fault_detected, priority_rank(d.ticket_priority) if d is not None else -1, order)


def _other_faults(result: FleetAnalysis, job: JobExplanation | None, job_id: str, answered: str,
                  nodes: list[str]) -> list[str]:
    """The job's other nodes with a fault, each with its part and whether its errors track the job's slowdown (a
    job is answered as one node, and a second failing node went unnamed); trays of the answer's rack are the rack's
    to name."""
    said = []
    mine = result.diagnoses.get(answered)
    rack = mine.rack if mine is not None else None
    for node in nodes:
        d = result.diagnoses.get(node)
        if node == answered or d is None or not d.fault_detected or d.localization is None \
                or (rack is not None and d.rack == rack):  # the rack's own answer names its trays' parts
            continue
        score = job.for_link(node, d.localization.ref) if job is not None and job.slowdown else None
        tracks = "" if score is None else (f": its errors track the slowdown (score {score.score:.2f})"
                                           if score.explains_slowdown else
                                           f": its errors do not track the slowdown (score {score.score:.2f})")
        said.append(f"{node} {d.isolated_said()}, priority {d.ticket_priority}{tracks}")
    return [f"job {job_id}'s other nodes with a fault: {'; '.join(said)}"] if said else []


_Judged = tuple[Window, FleetAnalysis]  # a rack's window and its engine pass
_Pass = tuple[timedelta | None, datetime | None, timedelta]  # a pass's window, end and history, under one policy


def _rack(source: Source, request: Request, *, host: str | None = None, job: str | None = None,
          judged: dict[_Pass, _Judged] | None = None) -> Answer:
    """A rack's diagnosis over every host the inventory puts in it, each host's as its rack sees it; `host` names
    the tray asked about (the answer is its view, with the rack's verdict). `judged`: the rack's passes already made
    for its hosts' questions under one policy, by window (its hosts' views of one window are one pass)."""
    assert request.rack is not None
    slots = source.racks()
    named = known("rack", request.rack, sorted({s.rack for s in slots.values()}), where=source.name, field="--rack",
                  note=NO_RACKS)
    request = replace(request, rack=named)
    hosts = sorted(h for h, s in slots.items() if s.rack == named)
    length = request.length
    shared = judged is not None and host is not None and not job and request.platform is None
    key = (request.window, request.end, request.history)
    if shared and judged is not None and key in judged:
        got, result = judged[key]
    else:
        got = source.read(nodes=hosts, end=request.end, span=node_span(length, request.thresholds, request.history),
                          steps=request.history)
        result = analyze_fleet(got.tables, window=length, end=got.end, thresholds=request.thresholds,
                               platforms=_platforms(got, host, request.platform), nodes=hosts, full=host is not None,
                               jobs={host: job} if host and job else None, history=got.history,
                               racks={h: slots[h] for h in hosts}, listed=got.listed, cut=got.cut, cut_off=got.cut_off,
                               unreadable=got.unreadable,
                               end_option=request.end_option)
        if shared and judged is not None:
            judged[key] = got, result
    if request.rack not in result.racks:
        raise InputError(f"rack {request.rack!r} names no host of a rack platform (gb200-nvl72-compute-tray, ...): "
                         "give its hosts' platforms in the inventory", source=source.name)
    then = last_window(source, request, host, got.newest.get(host), _before(got, length)) \
        if host is not None and silent_since(got, host, length) else None
    result.diagnoses = {h: viewed(d, got, length, got.warnings, asked_end=_asked(request),
                                  then=then if h == host else None) for h, d in result.diagnoses.items()}
    if host is not None:
        diagnosis, silent = _heard(identified(result.diagnoses[host], got.tables, host), got,
                                   history_needed(length, request.thresholds), then)
        return Answer(diagnosis, result.graphs.get(host), result, got, unheard=silent)
    rack = rack_before_readings(result.racks[request.rack], hosts, result.diagnoses, got,
                                why="as asked" if _asked(request) else "the source's newest reading")
    span = history_needed(length, request.thresholds)
    passes: dict[_Pass, _Judged] = {}  # silent hosts whose last readings end together are judged in one pass

    def ask(asked: Request) -> Answer:
        assert asked.node is not None
        return _rack(source, replace(asked, node=None, rack=named), host=asked.node, judged=passes)

    lasts = last_faults(hosts, got, span,
                        lambda h: last_window(source, request, h, got.newest.get(h), _before(got, length), ask=ask))
    return Answer(rack.model_copy(update={"warnings": [*rack.warnings, *hosts_showed(lasts), *got.warnings]}), None,
                  result, got, unheard=unheard_hosts(request.rack, hosts, got, span, lasts))


def fleet(source: Source, request: Request, *, processes: int | None = None,
          shard_nodes: int = SHARD_NODES) -> Fleet:
    """Every node of the source over the span the rules need (a day of step samples; a slowed job's links over its
    day, read only for the nodes that need it), by the engine; nodes whose readings fix another window (snapshots
    of other lengths) are judged in a pass of their own. A source a worker can read by itself (the store) is judged
    in shards of at least `shard_nodes` nodes, one per process (`processes`, default: FABRICBOT_PROCESSES, else the
    cores), each shard whole jobs and racks: the same answers, on every core."""
    names = source.nodes()
    passes: dict[timedelta, list[str]] = {}
    for node in names:
        passes.setdefault(source.window_of(node) or request.length, []).append(node)
    end = request.end
    ahead: dict[str, timedelta] = {}
    if end is None:  # where the fleet's readings are, not where one runaway clock is
        found = source_end(source, thresholds=request.thresholds)
        end, ahead = found.end, found.ahead
    if len(passes) == 1 and isinstance(source, Shardable):
        end = end or source.window_end()  # once: every shard judges to the same end, whatever lands meanwhile
        count = shard_count(len(names), process_count(processes), shard_nodes)
        span = max(request.history, history_needed(request.length, request.thresholds))  # the steps a read holds
        shards = split(names, source.together(end=end, span=span), count) if count > 1 else []
        if len(shards) > 1:
            threads = threads_each(len(shards))
            return replace(_merged(in_processes(_shard, [(source.threaded(threads), request, group, end, threads)
                                                         for group in shards]), at_once=True), ahead=ahead)
    done = [_pass(source, request, length, group, end=end, whole=len(passes) == 1)
            for length, group in sorted(passes.items())]
    if not done:
        return Fleet(FleetAnalysis(end=None, window=request.length), [Window(tables={}, end=None)])
    return replace(_merged(done, at_once=False), ahead=ahead)


def _pass(source: Source, request: Request, length: timedelta, group: list[str], *, end: datetime | None,
          whole: bool, threads: int = 2) -> Fleet:
    """One read of the nodes judged over `length` to `end` (the whole source's, when `whole`) and one engine run over
    it; whether the person named the end is the request's."""
    got = source.read(nodes=None if whole else group, end=end,
                      span=history_needed(length, request.thresholds), steps=request.history)
    result = analyze_fleet(got.tables, window=length, end=got.end, thresholds=request.thresholds,
                           platforms=got.platforms, nodes=group, history=got.history, racks=got.racks or None,
                           listed=got.listed, cut=got.cut, cut_off=got.cut_off,
                           unreadable=got.unreadable, workers=threads,
                           end_option=request.end_option)
    stopped = stopped_inside(got, group, length, request.thresholds.setting("stale_after_intervals"),
                             result.diagnoses)
    viewed_ = {n: viewed(result.diagnoses[n], got, length, asked_end=_asked(request), stopped=stopped.get(n))
               for n in group if n in result.diagnoses}
    links = got.tables.get("link_samples")
    reporting = {str(n) for n in links["node_id"].dropna().unique()} if links is not None and len(links) else set()
    return Fleet(result, [got], viewed_, reporting, stopped,
                 offenders={n: ranked(d, request.thresholds) for n, d in viewed_.items()})


def ranked(diagnosis: Diagnosis, thresholds: Thresholds) -> list[Offender]:
    """A node's offenders as a sweep lists them, most urgent first (`analysis.places`: the order every door keeps):
    ranked where the node is judged, so a fleet's shards rank their own nodes side by side."""
    found = offenders_of(diagnosis)
    return worst_first(found, places(diagnosis, thresholds)) if found else found


def _shard(source: Source, request: Request, group: list[str], end: datetime | None, threads: int) -> Fleet:
    """One shard's pass, in a worker process, on `threads` threads: what the answers need travels back, not the rows
    read nor the graphs (sent back, a fleet's rows would cost more than judging them)."""
    done = _pass(source, request, request.length, group, end=end, whole=False, threads=threads)
    done.analysis.graphs = {}
    done.windows = [replace(w, tables={k: v for k, v in w.tables.items() if k in SMALL_TABLES}, history=None)
                    for w in done.windows]
    return done


SMALL_TABLES = ("events", "gpus", "topology", "nodes")  # what a window's answers read after the engine (versions)


def _merged(done: list[Fleet], *, at_once: bool) -> Fleet:
    """Passes or shards as one fleet: their answers together; their cost the sum of theirs, or the longest when they
    ran `at_once`."""
    out = done[0]
    for other in done[1:]:
        out.analysis.diagnoses.update(other.analysis.diagnoses)
        out.analysis.jobs.update(other.analysis.jobs)
        out.analysis.racks.update(other.analysis.racks)
        out.analysis.graphs.update(other.analysis.graphs)
        out.analysis.links += other.analysis.links
        out.analysis.rows_used += other.analysis.rows_used
        for key, value in other.analysis.timings.items():
            mine = out.analysis.timings.get(key, 0.0)
            out.analysis.timings[key] = max(value, mine) if at_once else value + mine
        out.windows.extend(other.windows)
        out.diagnoses.update(other.diagnoses)
        out.reporting |= other.reporting
        out.stopped.update(other.stopped)
        out.offenders.update(other.offenders)
    return out


def _length(source: Source, node: str, request: Request) -> tuple[timedelta, list[str]]:
    """The window to judge the node over: a snapshot's own (said when another was asked), else the request's."""
    fixed = source.window_of(node)
    if fixed is None:
        return request.length, []
    if request.window is not None and request.window != fixed:
        asked = fmt.hours(request.window.total_seconds() / 3600)
        return fixed, [f"the snapshot covers {fmt.hours(fixed.total_seconds() / 3600)}; a {asked} window needs "
                       "time-series data in the store"]
    return fixed, []


def _heard(diagnosis: Diagnosis, got: Window, span: timedelta,
           then: Diagnosis | None) -> tuple[Diagnosis, list[str]]:
    """The asked node's diagnosis with its window's end (where the source holds its readings, none in the window,
    as a node with readings in it says it), and why it is incomplete when the `span` a sweep reads holds none, with
    what its last readings (`then`) showed."""
    node = diagnosis.node_id
    if diagnosis.window_end is None and got.end is not None and node in got.newest:
        diagnosis = diagnosis.model_copy(update={"window_end": got.end})
    silent = unheard(node, got, span, last_showed(then) if then is not None else None)
    return diagnosis, [silent] if silent else []


def identified(diagnosis: Diagnosis, tables: Mapping[str, pd.DataFrame], node: str) -> Diagnosis:
    """The node's diagnosis with who its parts are, as its readings name them: its GPUs' serials, UUIDs and bus
    addresses (a ticket's part history follows the serial, not the index) and its NVSwitches' bus addresses."""
    ids, alone = gpu_identities(tables, node)
    update: dict[str, object] = {"gpu_ids": ids, "bus_gpu_ids": alone} if ids or alone else {}
    if buses := switch_buses(tables, node):
        update["switch_buses"] = buses
    return diagnosis.model_copy(update=update) if update else diagnosis


def silent_since(got: Window, node: str, length: timedelta) -> bool:
    """Whether the node's newest link reading comes before the window (of `length`) its answer reads."""
    newest = got.newest.get(node)
    return got.end is not None and newest is not None and newest <= got.end - length


def last_window(source: Source, request: Request, node: str, newest: datetime | None,
                before: datetime | None, *, ask: Callable[[Request], Answer] | None = None) -> Diagnosis | None:
    """A silent node's last readings as its answer to a question ending then would judge them (what they showed:
    `last_showed`; how they rank and act on the node: `gone_silent`): one window of the request's length ending at
    its `newest` link reading, drawn on to its newest event where that comes later (up to `before`, where the window
    its answer reads begins and judges those after): a kernel log goes on being read after the exporter stops, and an
    Xid logged then is the most important thing to say. Drawn on, the window still begins a window's length before
    the newest link reading, so it holds those readings (their rates over the span they cover) and every event
    since. None where the node has no reading."""
    if newest is None:
        return None
    end = _last_event(source, node, newest, before) or newest
    window = request.window if end == newest else request.length + (end - newest)
    asked = Request(node=node, window=window, end=end, thresholds=request.thresholds, platform=request.platform,
                    history=request.history)
    return (ask(asked) if ask is not None else diagnose(source, asked)).diagnosis


def _last_event(source: Source, node: str, newest: datetime, before: datetime | None) -> datetime | None:
    """The node's newest event after its `newest` link reading, up to `before`; None where it has none."""
    if before is None or before <= newest:
        return None
    events = source.read(nodes=[node], end=before, span=before - newest).tables.get("events")
    if events is None or not len(events) or not {"node_id", "timestamp"} <= set(events.columns):
        return None
    mine = rows_of(events["node_id"], node)
    t = ns(events["timestamp"][mine])
    t = t[(t > utc_ns(newest)) & (t <= utc_ns(before))]
    return utc_datetime(t.max()) if len(t) else None


def _before(got: Window, length: timedelta) -> datetime | None:
    """Where the window an answer reads (of `length`) begins: what happened after it is that answer's."""
    return got.end - length if got.end is not None else None


def _platforms(got: Window, node: str | None, platform: str | None) -> dict[str, str]:
    """The source's platforms, with the one a person named for the asked node over its own."""
    return {**got.platforms, **({node: platform} if node and platform else {})}


def _asked(request: Request) -> bool:
    """Whether the person named the window's end (else it is the source's newest reading)."""
    return request.end is not None


def stopped_line(node: str, stopped: datetime, got: Window) -> str:
    """What a node whose every series stopped inside the window (`stopped_inside`) is said with."""
    return (f"no link reading from {node} since {stopped:%Y-%m-%d %H:%M} UTC, inside the window to "
            f"{got.end:%Y-%m-%d %H:%M} UTC: every series stopped at once (the exporter or the node went away), so its "
            "links are not judged since")


def viewed(diagnosis: Diagnosis, got: Window, length: timedelta, notes: list[str] | None = None, *,
           asked_end: bool = False, then: Diagnosis | None = None, stopped: datetime | None = None) -> Diagnosis:
    """A diagnosis with what its source's window could not show said in its warnings: a node silent since before
    the window (which ends where the person asked, else at the source's newest reading), with what its last
    readings (`then`, `last_window`) showed and the priority and action they give it (`gone_silent`), or one whose
    every series stopped inside it (`stopped`, `stopped_inside`), readings without a time (no window can place
    them), planned work overlapping the window."""
    node = diagnosis.node_id
    said = list(notes or [])
    diagnosis = before_readings(diagnosis, got, why="as asked" if asked_end else "the source's newest reading")
    diagnosis = untimed_only(diagnosis, got)
    newest = got.newest.get(node)
    silent = silent_since(got, node, length)
    last = last_showed(then) if then is not None and silent else None
    if got.end is not None and newest is not None and silent:
        why = "as asked" if asked_end else "the source's newest reading"
        said.append(f"no link reading from {node} since {newest:%Y-%m-%d %H:%M} UTC: the window ends at "
                    f"{got.end:%Y-%m-%d %H:%M} UTC ({why})" + (f"; {last}" if last else ""))
    elif stopped is not None:
        said.append(stopped_line(node, stopped, got))
    if node in got.later and got.end is not None:
        why = "as asked" if asked_end else ("the other nodes' newest reading: `fabricbot analyze --store ... --node "
                                            f"{node}` judges them at their own time")
        said.append(f"{node} has no link reading, and events up to {got.later[node]:%Y-%m-%d %H:%M} UTC, after the "
                    f"window's end at {got.end:%Y-%m-%d %H:%M} UTC ({why})")
    if node in got.late and not asked_end:  # past a window the readings end (`end_with_events`): said, not judged
        said.append(late_note(node, got.late[node], newest))
    if any(untimed_held(node, got)) and not untimed_alone(node, got):  # else `untimed_only` says it first
        said.append(untimed_note(node, *untimed_held(node, got), alone=False))
    first = [unreadable_note(node, got.unreadable[node])] if node in got.unreadable else []
    first += shown_said(got.said.get(node, []), STORED_MORE)  # what reading its files said, as a file's answer
    if said or first:  # unreadable readings first: they are why its health is unknown
        diagnosis = diagnosis.model_copy(update={"warnings": [*first, *diagnosis.warnings, *said]})
    if got.end is not None:
        diagnosis = planned(diagnosis, got.maintenance.get(node, []), start=got.end - length, end=got.end)
    if silent and newest is not None:
        diagnosis = gone_silent(diagnosis, then, newest)
    return diagnosis


READ_WARNINGS_SHOWN = 10  # of what reading the files said, ahead of the diagnosis's own warnings
FILES_MORE = "from reading the files (`fabricbot ingest FILE` lists every one)"
STORED_MORE = "said when its files were ingested (`fabricbot ingest` listed every one)"


def shown_said(said: list[str], more: str) -> list[str]:
    """What reading a node's files said, as every door shows it: the first few, the rest counted, never dropped
    unsaid (`more` says where each is listed)."""
    shown = said[:READ_WARNINGS_SHOWN]
    if len(said) > len(shown):
        shown.append(f"... and {len(said) - len(shown)} more {more}")
    return shown


def unreadable_note(node: str, why: str) -> str:
    """Why a node's health is unknown: its stored readings could not be read (a damaged part, named in `why`)."""
    return f"{node}'s link readings could not be read: {why}"


def named(diagnosis: Diagnosis, names: list[str], asked: str | None = None) -> Diagnosis:
    """The diagnosis with what its answer must say of the node's name among the source's, first: another node
    that is one with it once normalised or reads the same but for characters outside ASCII, and a name matched
    only once normalised (the characters outside ASCII themselves the diagnosis says as it is built)."""
    notes = name_notes(diagnosis.node_id, names)
    if asked is not None and asked != diagnosis.node_id:
        notes.insert(0, matched_note(asked, diagnosis.node_id))
    if not notes:
        return diagnosis
    return diagnosis.model_copy(update={"warnings": [*notes, *(w for w in diagnosis.warnings if w not in notes)]})


def planned_note(windows: list[Maintenance], *, start: datetime, end: datetime) -> str | None:
    """How a node's planned work overlapping the window from `start` to `end` is said (None: none does)."""
    hits = [w for w in windows if w.start <= end and (w.until is None or w.until > start)]
    if not hits:
        return None
    window = max(hits, key=lambda w: w.until or end + timedelta(days=3650))
    return window.note if window.covers(end) else f"{window.note}; it ended inside this window"


def planned(diagnosis: Diagnosis, windows: list[Maintenance], *, start: datetime, end: datetime) -> Diagnosis:
    """A diagnosis of a node whose planned work overlaps the window: its findings kept and shown, its priority
    low (nothing pages) and `maintenance` set (no ticket is drafted from it)."""
    note = planned_note(windows, start=start, end=end)
    if note is None:
        return diagnosis
    return diagnosis.model_copy(update={
        "maintenance": note, "ticket_priority": Priority.LOW,
        "warnings": [f"{note}: findings are shown, not paged or ticketed", *diagnosis.warnings]})
