"""The analysis engine: every node's findings, events, localizations and each job's correlation, computed once.

Rates and rules run on arrays across the fleet (`metrics`), only on the rows the windows need (the last window,
the persistence windows and one reading before them); only links that cross a rule become findings; events,
missing links and GPUs and Fabric Manager are judged per node; a job's links are scored against its step time
once, for all its nodes. One node's Diagnosis (`node.analyze_tables`) is this engine run on that node's rows.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import numpy as np
import pandas as pd

from .. import format as fmt
from ..config.ends import default_ends
from ..config.platforms import model_boards
from ..config.racks import rack_of
from ..config.thresholds import (
    LINK_DOWN_RULE,
    MISSING_RULE,
    OFF_BUS_RULE,
    Thresholds,
    load_thresholds,
)
from ..enums import LinkState, LinkType, Severity
from ..ingest.base import LOG_DATES
from ..model import Diagnosis, Finding, RackSlot
from ..times import ns, utc_datetime, utc_ns
from ..topology import NodeGraph
from .absence import (
    gpu_gone,
    missing_gpus,
    missing_links,
    node_view,
    replays_before_silence,
    silent_pcie_rows,
    smaller_board_note,
    unfitted_note,
)
from .applications import application_notes
from .bandwidth import measured_bandwidth
from .boards import Boards, count_fixed, expected_links, gpu_count, no_fabric_manager
from .card_swaps import swapped_cards
from .clock_steps import stepped_back
from .correlate import JobExplanation
from .diagnosis import assemble
from .ends import nvlink_ends, pcie_end, pcie_ends, undated_notes
from .events import event_findings, fabric_states, software_finding
from .evidence import step_evidence
from .findings import finding_of, persistence_unjudged, restart_notes, unrated_links
from .fleet_metrics import PIECE_ROWS, counted_nodes, end_levels, fleet_metrics, max_samples, read_once
from .fold import lanes_on_links, one_per_gone_gpu, peers_of_gone_gpus, switch_ends_on_links, sxids_of_gone_gpus
from .jobs import History, explain_jobs
from .localize import localize_all
from .metrics import candidates, records
from .placed import placed
from .racks import Rack, diagnose_rack, domain_notes, group_racks, rack_job, rack_stopper, tray_view
from .recovery import fleet_recoveries, recovery_notes, with_recovery
from .restarts import last_restarts
from .rows import by_bus_apart, numbered_by_bus, per_link_rows
from .rules import summarize
from .share import traffic_notes
from .span import covered_spans, rate_spans, reach_notes
from .steps import JobSteps
from .undated import events_end, taken_at_end


@dataclass
class FleetAnalysis:
    """Every analyzed node's Diagnosis and every job's explanation, with what it cost."""

    end: datetime | None
    window: timedelta
    diagnoses: dict[str, Diagnosis] = field(default_factory=dict)
    jobs: dict[str, JobExplanation] = field(default_factory=dict)
    racks: dict[str, Diagnosis] = field(default_factory=dict)  # one per rack the inventory names, by rack id
    graphs: dict[str, NodeGraph | None] = field(default_factory=dict)  # each wanted node's, as it was judged on
    links: int = 0
    rows_used: int = 0
    timings: dict[str, float] = field(default_factory=dict)

    def failing_nodes(self) -> list[str]:
        return sorted(n for n, d in self.diagnoses.items() if d.fault_detected)


def history_needed(window: timedelta, thresholds: Thresholds) -> timedelta:
    """How far back the rules look: the longest persistence span, plus one window for the starting reading."""
    windows = max([r.persist[1] for r in thresholds.rules if r.persist] + [1])
    return window * (windows + 1)


def shared_loss(findings: list[Finding]) -> list[str]:
    """Several GPUs of one node off the bus: a cause they share is likelier than each GPU failing, so the GPU swaps
    their own findings plan are not the first step (each finding keeps its own, for the GPU that truly failed)."""
    lost = [f for f in findings if any(c.rule == OFF_BUS_RULE for c in f.crossed)]
    if len(lost) < 2:
        return []
    return [f"{fmt.count(len(lost), 'GPU')} fell off the bus ({', '.join(f.component for f in lost)}): a cause they "
            "share (the PCIe switch or root port above them, the board's power, the platform) is likelier than "
            f"{len(lost)} failing GPUs; check it (`lspci -tv` for what they hang from, the BMC's power and event "
            "log) before swapping any GPU"]


def analyze_fleet(tables: Mapping[str, pd.DataFrame], *, window: timedelta = timedelta(hours=1),
                  end: datetime | None = None, thresholds: Thresholds | None = None,
                  platforms: Mapping[str, str] | None = None, graphs: Mapping[str, NodeGraph] | None = None,
                  nodes: Collection[str] | None = None, full: bool = False,
                  jobs: Mapping[str, str] | None = None, history: History | None = None,
                  expected_gpus: Mapping[str, Collection[int]] | None = None,
                  racks: Mapping[str, RackSlot] | None = None, listed: Collection[str] = (), cut: Collection[str] = (),
                  cut_off: Collection[str] = (),
                  unreadable: Mapping[str, str] | None = None, piece_rows: int = PIECE_ROWS,
                  workers: int = 2, end_option: str | None = None) -> FleetAnalysis:
    """Every node's Diagnosis for the window ending at `end` (default: the newest sample), and each job's.

    `nodes` names the nodes whose diagnoses are wanted (default: every node the tables hold; other nodes' rows are
    still analyzed: a peer's link may explain a job's slowdown). `full` keeps a finding for every healthy link too
    (one node's view); otherwise only flagged links become findings. `jobs` chooses a node's job (default: the one
    whose steps are newest). `history` reads the link samples a job's correlation needs beyond the tables' rows.
    `expected_gpus` limits, per node, the GPUs whose absence is a finding (a read of only some GPUs' series).
    `racks` places hosts in racks (rack, tray slot): each rack with a wanted host (every rack, when `nodes` is None)
    gets a Diagnosis of its own in `racks`, weighed over all its hosts, and its hosts' diagnoses say what it found.
    `listed` names nodes whose readings list only the links a person chose (a snapshot): a link or GPU they leave
    out is not missing; nor is one an input cut short does not reach (`cut`), and where that input is cut inside
    its text (`cut_off`), a node's answer of no fault is no all-clear: what follows the cut was not read.
    `unreadable` names the nodes whose stored readings could not be read (node -> why): a slowed job's links on them
    are not scored, and said so.
    `end_option`: the caller's option that gives readings with no time their time, named in the warning on them
    beside a `date` line (None: the caller has none).
    """
    started = time.perf_counter()
    thresholds = thresholds or load_thresholds()
    platforms = dict(platforms or {})
    links = tables.get("link_samples", pd.DataFrame())
    links = links if links is not None else pd.DataFrame()
    if "link_type" in links and bool((untyped := links["link_type"].isna()).any()):
        links = links[~untyped]  # a row of no link type names no link (a store written before ingest refused them)
    events = tables.get("events", pd.DataFrame())
    events = events if events is not None else pd.DataFrame()
    steps = tables.get("step_samples", pd.DataFrame())
    steps = steps if steps is not None else pd.DataFrame()
    slots = {h: int(s.tray) for h, s in (racks or {}).items() if s.tray is not None and str(s.tray).isdigit()}
    graph_of = Boards(platforms, graphs or {}, tables.get("gpus"), tables.get("topology"), slots)
    links, by_bus = numbered_by_bus(links, graph_of.buses)
    links = by_bus_apart(links)
    old_cards, swapped = swapped_cards(links)
    if old_cards is not None:
        links = links[~old_cards]
    t = ns(links["timestamp"]) if len(links) else np.zeros(0, dtype=np.int64)
    events, t, undated = taken_at_end(events, t, links, end)
    end_ns = utc_ns(end) if end is not None else int(t.max()) if len(t) else events_end(events)
    start_ns = end_ns - int(window.total_seconds() * 1e9)
    since_ns = end_ns - int(history_needed(window, thresholds).total_seconds() * 1e9)
    window_end = utc_datetime(end_ns)
    result = FleetAnalysis(end=window_end if end_ns else None, window=window)
    keep = per_link_rows(links) if len(links) else None  # the rows the rates read, and the restarts
    metrics, result.links, result.rows_used = (fleet_metrics(
        links, t, keep, since_ns=since_ns, end_ns=end_ns, window=window, thresholds=thresholds, piece_rows=piece_rows,
        workers=workers) if len(links) else (pd.DataFrame(), 0, 0))
    # a reading dated before one taken earlier reads as a restart: only nodes whose rates saw one are looked at, and
    # the rates are read again only where such a reading is left out
    out_of_order, stepped = stepped_back(links, _restarted(metrics), rows=keep)
    if out_of_order is not None:
        links = links[~out_of_order]
        t = ns(links["timestamp"])
        keep = per_link_rows(links)
        metrics, result.links, result.rows_used = fleet_metrics(
            links, t, keep, since_ns=since_ns, end_ns=end_ns, window=window, thresholds=thresholds,
            piece_rows=piece_rows, workers=workers)
    result.timings["metrics_s"] = time.perf_counter() - started
    view = node_view(metrics, end_ns, thresholds)
    spans = rate_spans(metrics)  # what each node's rates are over: a window's readings may cover less, or reach back
    covered = covered_spans(spans, start_ns=start_ns, asked_hours=window.total_seconds() / 3600)
    reach = reach_notes(spans, start_ns=start_ns, asked_hours=window.total_seconds() / 3600)
    found: dict[str, list[Finding]] = {}
    sticky: dict[str, list[str]] = {}  # each node's lane statuses no reading dates: what to read to date them
    # each node's links whose readings begin too late to judge a persistence rule: (link type, GPU, link), why
    untold: dict[str, list[tuple[tuple[LinkType, int | None, int | None], str]]] = {}
    policy = default_ends()
    ends = pcie_ends(links, t, since_ns, end_ns, policy)
    if ends and len(metrics):
        metrics = end_levels(metrics, ends)
    if len(metrics):
        shares = traffic_notes(metrics, thresholds)
        flagged = candidates(metrics, thresholds) | view.stale
        if full:
            flagged[:] = True
        stale = view.stale[flagged]
        generation = {str(n): graph_of.nvlink_generation(str(n)) for n in metrics["node_id"].unique()}
        for row, s in zip(records(metrics[flagged]), stale.tolist(), strict=True):
            f = finding_of(row, thresholds, stale=s, nvlink_generation=generation.get(str(row["node_id"])))
            if f.link_state is LinkState.INACTIVE and f.link_type is LinkType.NVLINK and not s \
                    and (why := graph_of.unwired(str(row["node_id"]), f.gpu, f.link)) is not None:
                if not full:
                    continue  # a link the board leaves unused is not down
                crossed = [c for c in f.crossed if c.rule != LINK_DOWN_RULE]
                f = f.model_copy(update={"crossed": crossed, "severity": summarize(crossed)[0],
                                         "evidence": [*f.evidence, why]})
            views = ends.get((str(row["node_id"]), f.gpu)) if f.link_type is LinkType.PCIE and f.gpu is not None \
                else None
            if views and f.gpu is not None:
                sticky.setdefault(str(row["node_id"]), []).extend(undated_notes(views, f.gpu))
                side, lanes, said = pcie_end(views, f.gpu)
                f = f.model_copy(update={"lanes": lanes, "end": side, "evidence": [*f.evidence, *said]})
            note = shares.get((str(row["node_id"]), f.gpu, f.link)) \
                if f.link_type is LinkType.NVLINK and f.gpu is not None and f.link is not None else None
            if note and not f.lanes and f.severity is not Severity.DOWN:
                f = f.model_copy(update={"evidence": [*f.evidence, note]})
            found.setdefault(str(row["node_id"]), []).append(f)
            untold.setdefault(str(row["node_id"]), []).extend(
                ((f.link_type, f.gpu, f.link), said)
                for said in persistence_unjudged(row, thresholds, window.total_seconds() / 3600))
    event_nodes = events["node_id"].astype("string").to_numpy(object) if len(events) and "node_id" in events.columns \
        else np.zeros(0, dtype=object)
    reporting_links = _names(metrics)
    analyzed = sorted(set(view.gpus_seen) | set(found) | _names(event_nodes) | reporting_links)
    wanted = sorted(nodes) if nodes is not None else analyzed
    warnings: dict[str, list[str]] = {n: [] for n in set(analyzed) | set(wanted)}
    restarted = restart_notes(metrics)
    samples = max_samples(metrics)
    counted = counted_nodes(metrics)
    once = read_once(metrics)
    pinned = unrated_links(metrics, thresholds, graph_of.nvlink_generation)
    dropped = unrated_links(metrics, thresholds, graph_of.nvlink_generation, flag="dropped", marker=fmt.DROPPED)
    unread = unrated_links(metrics, thresholds, graph_of.nvlink_generation, flag="unread", marker=fmt.UNREAD)
    early = _names(event_nodes[ns(events["timestamp"]) <= start_ns]) if len(event_nodes) else set()
    restarts = last_restarts(links, t, early, end_ns, rows=keep)  # a fatal event before the window may still hold
    fabric = fabric_states(events)
    judged = event_findings(events, start_ns, end_ns, thresholds, view.silent, graph_of.buses, graph_of.uuids,
                            restarts, view.gpus_seen)
    recoveries = fleet_recoveries(events, start_ns, end_ns, graph_of.buses.get, restarts)
    applications = application_notes(events, start_ns, end_ns, graph_of.buses, thresholds, graph_of.nvlink_generation)
    off_bus = silent_pcie_rows(links, t, view.silent, end_ns)
    measured = measured_bandwidth(steps, graph_of.platform, thresholds)  # nccl-tests all_reduce runs
    for node in sorted(set(analyzed) | set(wanted)):
        graph = graph_of(node, describe=full or bool(found.get(node)))
        mine = nvlink_ends([placed(f, graph) for f in lanes_on_links(found.get(node, []))], policy)
        if node in by_bus:
            warnings[node].append(by_bus[node])
        warnings[node].extend([*swapped.get(node, []), *stepped.get(node, [])])
        mine = switch_ends_on_links([*mine, *judged.get(node, [])])
        short, said = graph_of.short_links(node, view.nvlinks_live.get(node, {}))
        mine, warnings[node] = [*mine, *short], [*warnings[node], *said]
        stopped = view.silent.get(node, {})
        if stopped:  # a GPU whose every series stopped is one finding, not one per link
            mine = [f for f in mine if f.gpu not in stopped or not _stale(f)]
        seen = view.nvlinks_seen.get(node, {})
        if node in cut and node in view.gpus_seen:
            warnings[node].append("its newest readings come from an input that stops short or leaves part out (a "
                                  "file cut inside a line, an elided `[...]`, an nvidia-smi output of some GPUs, a "
                                  "dcgm-exporter excerpt, an NMX-T scrape of some ports of a tray): "
                                  "links and GPUs it does not reach are not judged missing; read the whole output to "
                                  "judge them")
        if node in view.gpus_seen and node not in listed and node not in cut:
            reporting = view.gpus_seen[node]
            if graph is not None and samples.get(node, 0) >= 2:  # a lone reading (a paste, maybe cut) proves no absence
                live = {g: s for g, s in view.nvlinks_live.get(node, {}).items() if g not in stopped}
                expected = expected_links(graph, reporting - set(stopped))
                mine = missing_links(mine, seen, live, expected, warnings[node],
                                     view.nvlink_totals.get(node, set()), node in view.listed_ports)
            count = gpu_count(graph_of.platform(node)) if samples.get(node, 0) >= 2 else None
            if expected_gpus is not None and node in expected_gpus:
                reporting, count = reporting | (set(range(count or 0)) - set(expected_gpus[node])), count
            guess = graph_of.guess(node)
            if count and not count_fixed(graph_of.platform(node)) and set(range(count)) - reporting:
                warnings[node].append(unfitted_note(graph_of.platform(node), count, reporting))
                count = None  # a PCIe server's cards: those never read may never have been fitted
            elif (count and guess is not None and len(reporting) < count and reporting == set(range(len(reporting)))
                  and len(reporting) in model_boards(graph_of.platform(node) or "")):  # a board numbers its GPUs from 0
                warnings[node].append(smaller_board_note(graph_of.platform(node), guess, count, reporting))
                count = None  # a 4-GPU board of the model, never named: its GPUs 4-7 were never there
            mine += missing_gpus(reporting, count, view.last_heard.get(node, {}))
        for gpu in sorted(stopped):  # a GPU off the bus: what its PCIe link counted before it fell silent
            before = replays_before_silence(links, t, off_bus.get((node, gpu), np.zeros(0, np.int64)), gpu,
                                            end_ns - start_ns, thresholds)
            if before is not None:
                mine = [f.model_copy(update={"evidence": [*f.evidence, before]})
                        if f.gpu == gpu and gpu_gone(f) else f for f in mine]
        mine = sxids_of_gone_gpus(peers_of_gone_gpus(one_per_gone_gpu(mine)))
        all_inactive = view.all_inactive.get(node)
        switchless = no_fabric_manager(graph_of.platform(node), graph_of.guess(node),
                                       len(view.gpus_seen.get(node, ())))
        if all_inactive and switchless:
            warnings[node].append(f"{all_inactive}: {switchless}: no Fabric Manager runs there, so judged as what "
                                  "every link shares (the bridge or board, the driver, firmware or power)")
            all_inactive = None
        software = software_finding(fabric.get(node), all_inactive,
                                    domain=rack_of(graph_of.platform(node)) is not None)
        if software is not None:
            mine.insert(0, software)
        mine.extend(measured.findings.get(node, []))
        warnings[node].extend(measured.notes.get(node, []))
        if node in view.restarted:  # a reboot's links down are the reboot: said, not judged
            warnings[node].append(view.restarted[node])
            mine = [j for f in mine if (j := _restart_judged(f)) is not None]
        elif node in restarted:
            warnings[node].append(restarted[node])
        warnings[node].extend(shared_loss(mine))
        found[node] = mine
    result.timings["findings_s"] = time.perf_counter() - started - result.timings["metrics_s"]
    rack_set = _racks_wanted(graph_of, racks, nodes, wanted)
    chosen = {n: jobs[n] for n in wanted if jobs and n in jobs}
    index = JobSteps(steps)
    members = [h for r in rack_set.values() for h in r.hosts("compute")]
    for node in [*wanted, *members]:
        if node not in chosen:
            names = index.jobs_on(node)
            if names:
                chosen[node] = names[0]
    peers = {h: r.hosts("switch") for r in rack_set.values() for h in r.hosts("compute")}
    # a job has stopped only against an end the caller or the data gives, never against the clock
    dated = end is not None or len(t) > 0 or len(events) > 0
    result.jobs = explain_jobs(chosen, index, found, links, t, end_ns, window if dated else None, thresholds, history,
                               peers, unreadable)
    with_telemetry = set(view.gpus_seen) | reporting_links
    for explained in result.jobs.values():
        if explained.nodes and not with_telemetry & set(explained.nodes):
            explained.warnings.append(f"no link telemetry for the nodes of job {explained.job_id} "
                                      f"({', '.join(explained.nodes)})")
    result.timings["jobs_s"] = time.perf_counter() - started - sum(result.timings.values())
    for node in wanted:
        mine = found.get(node, [])
        named = {(f.link_type, f.gpu, f.link): f.component for f in mine}  # placed: a switch port named
        notes = [*(f"{named[key]}: {said}" for key, said in untold.get(node, []) if key in named),  # the verdict's
                 *graph_of.warnings(node), *warnings.get(node, []), *sticky.get(node, [])]  # caveat: said first
        if node in undated:
            readings, logged = undated[node]
            carry = "carries" if readings + logged == 1 else "carry"
            what = " and ".join(fmt.count(n, noun) for n, noun in ((readings, "reading"), (logged, "event")) if n)
            ways = [end_option] if end_option else []
            ways += ["a `date` line before the paste"] if readings else []
            ways += [LOG_DATES] if logged else []  # a log's reader takes no `date` line: its lines carry its times
            notes.append(f"{what} of {node} {carry} no time: taken as read at "
                         f"{fmt.when(window_end)} (give the time with {', or '.join(ways)})")
        span = covered.get(node)
        if span is not None:
            notes.append(span.note())
        if node in reach:
            notes.append(reach[node])
        if node not in view.gpus_seen and node not in reporting_links:
            shown = [f.component for f in mine if f.severity in (Severity.FAILING, Severity.DOWN)]
            notes.insert(0, f"{node}'s description shows a fault ({', '.join(shown)}); its link counters were not "
                            "read, so its other links' health is unknown, not healthy" if shown
                         else f"no link telemetry for {node}: its fabric health is unknown, not healthy")
        elif samples.get(node, 2) < 2 and node not in counted:  # `nvlink -s`: no counter at all
            notes.append("one reading per link, of link states only: no error counter was read, so no total and no "
                         "rate (`nvidia-smi nvlink -e`, read twice a few minutes apart, gives rates)")
        elif samples.get(node, 2) < 2:
            notes.append("one reading per link: totals since reset only; a rate needs a second reading")
        elif once.get(node) and not any(f.severity in (Severity.FAILING, Severity.DOWN) for f in mine):
            notes.append(f"{fmt.count(once[node], 'link')} of {node} {'was' if once[node] == 1 else 'were'} read once "
                         "in the window (a cut or partial second reading?): totals since reset only, so "
                         f"{'it is' if once[node] == 1 else 'they are'} not judged, and finding no fault is no "
                         "all-clear; a rate needs a second reading")
        for stuck in pinned.get(node, []):
            notes.append(f"{stuck}; its true rate is not known and may fail a rule, so finding no fault is no "
                         "all-clear")
        notes.extend(f"{cut}; it may fail a rule, so finding no fault is no all-clear"
                     for cut in [*dropped.get(node, []), *unread.get(node, [])])
        job = result.jobs.get(chosen[node]) if node in chosen else None
        if job is not None:
            notes.extend(job.warnings)
        notes.extend(recovery_notes(recoveries.get(node, {})))
        notes.extend(applications.get(node, []))
        failing = [f for f in mine if f.severity in (Severity.FAILING, Severity.DOWN)]
        graph = graph_of(node, describe=full or bool(failing))
        result.graphs[node] = graph
        per_gpu = None if graph is not None else {g: len(s) for g, s in view.nvlinks_seen.get(node, {}).items()}
        locs = with_recovery(localize_all(mine, graph, per_gpu, thresholds),
                             {node: recoveries.get(node, {})}) if failing else []
        result.diagnoses[node] = assemble(
            node, platform=graph_of.platform(node),
            window_hours=span.hours if span else window.total_seconds() / 3600,
            window_asked_hours=span.asked_hours if span else None,
            window_end=window_end if node in analyzed else None, findings=mine, localizations=locs, job=job,
            thresholds=thresholds, warnings=notes, rates_known=samples.get(node, 2) >= 2, counted=node in counted,
            read_once=once.get(node, 0), pinned=len(pinned.get(node, [])), dropped=len(dropped.get(node, [])),
            unread=len(unread.get(node, [])), cut_off=node in cut_off,
            has_links=node in view.gpus_seen or node in reporting_links,
            job_gpus=_job_gpus(job, graph_of), stated_pairs=node in listed, lists_every_link=full,
            platform_guess=graph_of.guess(node), contradicted=graph_of.contradiction(node),
            platforms_alike=graph_of.alike(node))
        if full and job is not None:  # one node's view: what the correlation read, for its picture
            evidence = step_evidence(result.diagnoses[node], job, index.of(job.job_id), found, links, t,
                                     end_ns=end_ns, thresholds=thresholds, history=history)
            result.diagnoses[node] = result.diagnoses[node].model_copy(update={"evidence": evidence})
    for rack_id, rack in sorted(rack_set.items()):
        split = domain_notes(rack, events)
        rack.warnings.extend(split)
        job = rack_job(rack, result.jobs, chosen)
        notes_of = {h: result.diagnoses[h].warnings for h in rack.hosts() if h in result.diagnoses}
        result.racks[rack_id], _ = diagnose_rack(
            rack, found, job, window_hours=window.total_seconds() / 3600, window_end=window_end,
            thresholds=thresholds, host_warnings=notes_of, job_gpus=_job_gpus(job, graph_of), events=events,
            links=links, recoveries=recoveries, split=split, restarted=set(view.restarted))
        stops = rack_stopper(rack, result.racks[rack_id])
        for host in rack.hosts():
            if host in result.diagnoses:
                result.diagnoses[host] = tray_view(result.diagnoses[host], rack, result.racks[rack_id], host, stops,
                                                   found)
    result.timings["total_s"] = time.perf_counter() - started
    return result


def _racks_wanted(graph_of: Boards, racks: Mapping[str, RackSlot] | None, nodes: Collection[str] | None,
                  wanted: list[str]) -> dict[str, Rack]:
    """The racks to diagnose: those with a wanted host, or every rack the inventory names when no node is asked."""
    if not racks:
        return {}
    platforms = {h: p for h in racks if (p := graph_of.platform(h)) is not None}
    grouped = group_racks(platforms, racks)
    if nodes is None:
        return grouped
    asked = set(wanted)
    return {r: rack for r, rack in grouped.items() if asked & set(rack.kind)}


def _job_gpus(job: JobExplanation | None, graph_of: Boards) -> int | None:
    """Every GPU of the job: each of its nodes' platform's count; None when a node's platform is not known (the
    cost then says it counted what it knows)."""
    if job is None or not job.nodes:
        return None
    counts = [gpu_count(graph_of.platform(n)) for n in job.nodes]
    return None if any(c is None for c in counts) else sum(c for c in counts if c is not None)


def _restart_judged(f: Finding) -> Finding | None:
    """A finding after a restart: its link reading down is the restart, so only its other crossings judge it (none
    left: no finding)."""
    kept = [c for c in f.crossed if c.rule != LINK_DOWN_RULE]
    if len(kept) == len(f.crossed):
        return f
    if not kept:
        return None
    severity, ratio = summarize(kept)
    return f.model_copy(update={"crossed": kept, "severity": severity, "worst_ratio": ratio,
                                "evidence": [*f.evidence, "inactive right after the restart: the restart, not judged"]})


def _stale(f: Finding) -> bool:
    return any(c.rule == MISSING_RULE for c in f.crossed)


def _restarted(metrics: pd.DataFrame) -> set[str]:
    """The nodes with a link whose counters restarted within the rates' span."""
    if "resets" not in metrics.columns or not len(metrics):
        return set()
    return {str(n) for n in metrics["node_id"][metrics["resets"].to_numpy(np.float64, na_value=0.0) > 0].unique()}


def _names(nodes: pd.DataFrame | np.ndarray) -> set[str]:
    """The node names a table's rows (or these values) hold: a row without one names none."""
    if isinstance(nodes, pd.DataFrame):
        if nodes.empty:
            return set()
        nodes = nodes["node_id"].astype("string").to_numpy(object)
    return {str(n) for n in set(nodes.tolist()) if not pd.isna(n)}
