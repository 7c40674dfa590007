"""The analysis engine: every node's findings, events, localizations and each job's correlation, computed once.

Rates and rules run on arrays across the fleet (`metrics`), only on the rows the windows need (the last window,
the persistence windows and one reading before them); only links that cross a rule become findings; events,
missing links and GPUs and Fabric Manager are judged per node; a job's links are scored against its step time
once, for all its nodes. One node's Diagnosis (`node.analyze_tables`) is this engine run on that node's rows.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import pairwise
from typing import Any

import numpy as np
import pandas as pd

from ..components import ComponentRef
from ..config.platforms import all_platforms, platform_for_model
from ..config.thresholds import GPU_MISSING_RULE, MISSING_RULE, OFF_BUS_RULE, Thresholds, load_thresholds
from ..enums import ComponentKind, LinkType, PortSource, Severity
from ..model import Diagnosis, Finding
from ..tables import COUNTERS
from ..topology import graph_from_topology, platform_graph
from .correlate import JobExplanation, JobSteps, job_slowdown, score_links, steps_span, stopped
from .diagnosis import PLATFORM_UNKNOWN, assemble
from .events import (
    event_findings,
    missing_gpus,
    missing_links,
    node_view,
    replays_before_silence,
    software_finding,
)
from .findings import finding_of, ref_of
from .localize import localize_all
from .metrics import candidates, link_metrics, records
from .rates import Prepared, ns, prepare_rows, utc_ns

PIECE_ROWS = 4_000_000
LINK_KINDS = (ComponentKind.NVLINK, ComponentKind.PCIE, ComponentKind.NVSWITCH)  # what a job's step time is scored on
# A link's history for the correlation: (nodes, start, end) -> their link samples, each node's rows together.
History = Callable[[list[str], datetime, datetime], pd.DataFrame]


@dataclass
class FleetAnalysis:
    """Every analyzed node's Diagnosis and every job's explanation, with what it cost."""

    end: datetime | None
    window: timedelta
    diagnoses: dict[str, Diagnosis] = field(default_factory=dict)
    jobs: dict[str, JobExplanation] = field(default_factory=dict)
    links: int = 0
    rows_used: int = 0
    timings: dict[str, float] = field(default_factory=dict)

    def failing_nodes(self) -> list[str]:
        return sorted(n for n, d in self.diagnoses.items() if d.fault_detected)


def history_needed(window: timedelta, thresholds: Thresholds) -> timedelta:
    """How far back the rules look: the longest persistence span, plus one window for the starting reading."""
    windows = max([r.persist[1] for r in thresholds.rules if r.persist] + [1])
    return window * (windows + 1)


def node_pieces(frame: pd.DataFrame, rows: int) -> list[tuple[int, int]]:
    """Row ranges of about `rows` rows, cut only where the node changes; the whole table as one range unless each
    node's rows lie together (a link split across two pieces would lose its history)."""
    whole = [(0, len(frame))]
    if len(frame) <= rows or not isinstance(frame["node_id"].dtype, pd.CategoricalDtype):
        return whole
    codes = frame["node_id"].cat.codes.to_numpy()
    heads = np.flatnonzero(codes[1:] != codes[:-1]) + 1
    if len(heads) == 0 or len(np.unique(codes[np.concatenate(([0], heads))])) != len(heads) + 1:
        return whole  # some node comes back later in the table
    cuts = np.unique(heads[np.minimum(np.searchsorted(heads, np.arange(rows, len(frame), rows)), len(heads) - 1)])
    bounds = [0, *cuts.tolist(), len(frame)]
    return list(pairwise(bounds))


def _per_link_rows(links: pd.DataFrame) -> np.ndarray | None:
    """Rows the rates read, or None for all. Dropped: a GPU's total over its links where the GPU's per-link rows
    carry every counter it carries (it would count each error twice; kept where it holds a counter they lack, as
    Blackwell's NVLink5 totals do beside the per-link replays), a lane a reader observed failing (`observed_lanes`
    puts it on its link), and a PCIe device that is no GPU."""
    drop = np.zeros(len(links), dtype=bool)
    if "gpu_total" in links.columns:
        total = links["gpu_total"].to_numpy(bool, na_value=False)
        if total.any():
            drop |= _repeated_totals(links, total)
    if "lane_error" in links.columns and "lane" in links.columns:
        drop |= links["lane_error"].notna().to_numpy() & links["lane"].notna().to_numpy()
    pcie = (links["link_type"] == LinkType.PCIE.value).to_numpy(bool, na_value=False)
    drop |= pcie & links["gpu"].isna().to_numpy()
    return np.flatnonzero(~drop) if drop.any() else None


def _repeated_totals(links: pd.DataFrame, total: np.ndarray) -> np.ndarray:
    """The GPU totals whose every counter the same GPU's per-link rows also carry."""
    node = pd.factorize(links["node_id"])[0].astype(np.int64)
    gpu = links["gpu"].to_numpy(np.float64, na_value=-1).astype(np.int64) + 1
    kind = pd.factorize(links["link_type"])[0].astype(np.int64)
    key = (node << 24) | (gpu << 8) | (kind + 1)
    per_link = ~total & links["link"].notna().to_numpy()
    covered = np.isin(key, np.unique(key[per_link])) & total  # a total beside per-link rows of its GPU
    for column in (*COUNTERS, "symbol_ber", "effective_ber"):
        if not covered.any():
            break
        if column not in links.columns:
            continue
        has = links[column].notna().to_numpy()
        own = covered & has
        if own.any():  # a total holding this counter repeats the links only if they hold it too
            covered[own] = np.isin(key[own], np.unique(key[per_link & has]))
    return covered


def observed_lanes(links: pd.DataFrame) -> dict[tuple[str, int], list[int]]:
    """(node, GPU) -> the PCIe lanes a reader saw failing (lspci's LaneErrStat): a lane is named only when seen."""
    if "lane_error" not in links.columns or "lane" not in links.columns:
        return {}
    seen = links[links["lane_error"].fillna(False).to_numpy(bool) & links["lane"].notna().to_numpy()
                 & links["gpu"].notna().to_numpy()]
    out: dict[tuple[str, int], list[int]] = {}
    for node, gpu, lane in zip(seen["node_id"].astype(str), seen["gpu"].astype(int), seen["lane"].astype(int),
                               strict=True):
        out.setdefault((node, gpu), [])
        if lane not in out[(node, gpu)]:
            out[(node, gpu)].append(lane)
    return {k: sorted(v) for k, v in out.items()}


def _metrics(links: pd.DataFrame, t: np.ndarray, *, since_ns: int, end_ns: int, window: timedelta,
             thresholds: Thresholds, piece_rows: int, workers: int) -> tuple[pd.DataFrame, int, int]:
    """Every link's metrics over the window, the table swept in pieces of a few nodes, `workers` at a time (numpy
    works outside the GIL; a piece's arrays stay small enough to be reused rather than paged in afresh)."""
    keep = _per_link_rows(links)
    recent = t > since_ns
    if keep is not None:
        mask = np.zeros(len(t), dtype=bool)
        mask[keep] = True
        recent &= mask

    def piece(bounds: tuple[int, int]) -> tuple[pd.DataFrame, int, int]:
        lo, hi = bounds
        part = links if (lo, hi) == (0, len(links)) else links.iloc[lo:hi]
        chosen = recent[lo:hi]
        p = prepare_rows(part, t[lo:hi], None if chosen.all() else np.flatnonzero(chosen))
        return link_metrics(p, window=window, end_ns=end_ns, thresholds=thresholds), p.nseg, len(p.t)

    bounds = node_pieces(links, piece_rows)
    if len(bounds) == 1 or workers < 2:
        done = list(map(piece, bounds))
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            done = list(pool.map(piece, bounds))
    frames = [m for m, _, _ in done if len(m)]
    metrics = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0] if frames else pd.DataFrame()
    return metrics, sum(n for _, n, _ in done), sum(r for _, _, r in done)


def _placed(f: Finding, graph: Any) -> Finding:
    """A flagged link with its switch, port and identity from the topology graph, where the graph knows the link."""
    if graph is None or f.gpu is None or f.link is None or f.link_type is LinkType.NVSWITCH:
        return f

    port = graph.port_of(f.gpu, f.link, f.link_type.value)
    if port.source is PortSource.UNKNOWN and port.switch_port is None:
        return f
    return f.model_copy(update={"ref": port.ref, "switch": port.switch or f.switch, "switch_port": port.switch_port,
                                "port_source": port.source, "peer_gpu": port.ref.peer_gpu or f.peer_gpu})


class _Graphs:
    """Each node's topology graph and platform: given; else its platform's template (built once per platform); else,
    for a node with flagged links, the graph its own topology rows describe (`topo -m`, NCCL XML, `nvlink -R`)."""

    def __init__(self, platforms: Mapping[str, str], graphs: Mapping[str, Any], gpus: pd.DataFrame | None,
                 topology: pd.DataFrame | None) -> None:
        self.platforms, self.given, self.templates = dict(platforms), graphs, dict[str, Any]()
        self.notes: dict[str, list[str]] = {}
        self.topology = _by_node(topology)
        self.described: dict[str, Any] = {}
        self.buses: dict[str, dict[str, int]] = {}  # node -> PCI address -> GPU index, from its GPU table
        for node, rows in _by_node(gpus).items():
            if "pci_bus_id" in rows:
                known = rows.dropna(subset=["pci_bus_id", "gpu"])
                self.buses[node] = {str(b).lower(): int(g) for b, g in zip(known["pci_bus_id"], known["gpu"],
                                                                           strict=True)}
            if node in self.platforms or "model" not in rows:
                continue
            models = sorted({str(m) for m in rows["model"].dropna()})
            found = {platform_for_model(m) for m in models} - {None}
            if len(found) == 1:
                self.platforms[node] = str(found.pop())
                self.notes[node] = [f"platform {self.platforms[node]} taken from the GPU model "
                                    f"{', '.join(repr(m) for m in models)}; name it with --platform or a nodes.csv"]

    def __call__(self, node: str, *, describe: bool = False) -> Any:
        if node in self.given:
            return self.given[node]
        platform = self.platforms.get(node)
        if platform:
            if platform not in self.templates:
                self.templates[platform] = platform_graph(platform)
            return self.templates[platform]
        if describe and node in self.topology and node not in self.described:
            graph = graph_from_topology(self.topology[node], node_id=node)
            self.described[node] = graph
            self.notes.setdefault(node, []).extend(graph.warnings)
        return self.described.get(node)

    def platform(self, node: str) -> str | None:
        if node in self.platforms:
            return self.platforms[node]
        graph = self.given.get(node) or self.described.get(node)
        return getattr(graph, "platform", None) if graph is not None else None

    def warnings(self, node: str) -> list[str]:
        notes = list(self.notes.get(node, []))
        if self.platform(node) is None:
            notes.append(PLATFORM_UNKNOWN)
        return notes


def _by_node(frame: pd.DataFrame | None) -> dict[str, pd.DataFrame]:
    if frame is None or frame.empty or "node_id" not in frame.columns:
        return {}
    return {str(n): g for n, g in frame.groupby(frame["node_id"].astype("string"), observed=True)}


def _expected_links(graph: Any, gpus: Collection[int]) -> dict[int, int]:
    out = {}
    for gpu in sorted(gpus):
        try:
            out[gpu] = int(graph.expected_links(gpu, LinkType.NVLINK.value))
        except Exception:
            continue
    return out


def _node_rows(frame: pd.DataFrame | None, nodes: Collection[str] | None) -> pd.DataFrame:
    if frame is None or frame.empty or "node_id" not in frame.columns or nodes is None:
        return frame if frame is not None else pd.DataFrame()
    mine = frame["node_id"].isin(list(nodes)).to_numpy(bool, na_value=False)
    return frame if mine.all() else frame[mine]


def analyze_fleet(tables: Mapping[str, pd.DataFrame], *, window: timedelta = timedelta(hours=1),
                  end: datetime | None = None, thresholds: Thresholds | None = None,
                  platforms: Mapping[str, str] | None = None, graphs: Mapping[str, Any] | None = None,
                  nodes: Collection[str] | None = None, full: bool = False,
                  jobs: Mapping[str, str] | None = None, history: History | None = None,
                  expected_gpus: Mapping[str, Collection[int]] | None = None,
                  piece_rows: int = PIECE_ROWS, workers: int = 2) -> FleetAnalysis:
    """Every node's Diagnosis for the window ending at `end` (default: the newest sample), and each job's.

    `nodes` names the nodes whose diagnoses are wanted (default: every node the tables hold; other nodes' rows are
    still analyzed: a peer's link may explain a job's slowdown). `full` keeps a finding for every healthy link too
    (one node's view); otherwise only flagged links become findings. `jobs` chooses a node's job (default: the one
    whose steps are newest). `history` reads the link samples a job's correlation needs beyond the tables' rows.
    `expected_gpus` limits, per node, the GPUs whose absence is a finding (a read of only some GPUs' series).
    """
    started = time.perf_counter()
    thresholds = thresholds or load_thresholds()
    platforms = dict(platforms or {})
    links = tables.get("link_samples", pd.DataFrame())
    links = links if links is not None else pd.DataFrame()
    events = tables.get("events", pd.DataFrame())
    events = events if events is not None else pd.DataFrame()
    steps = tables.get("step_samples", pd.DataFrame())
    steps = steps if steps is not None else pd.DataFrame()
    graph_of = _Graphs(platforms, graphs or {}, tables.get("gpus"), tables.get("topology"))
    t = ns(links["timestamp"]) if len(links) else np.zeros(0, dtype=np.int64)
    end_ns = utc_ns(end) if end is not None else int(t.max()) if len(t) else _events_end(events)
    start_ns = end_ns - int(window.total_seconds() * 1e9)
    since_ns = end_ns - int(history_needed(window, thresholds).total_seconds() * 1e9)
    window_end = pd.Timestamp(end_ns, tz="UTC").to_pydatetime(warn=False)
    result = FleetAnalysis(end=window_end if end_ns else None, window=window)
    metrics, result.links, result.rows_used = (_metrics(
        links, t, since_ns=since_ns, end_ns=end_ns, window=window, thresholds=thresholds, piece_rows=piece_rows,
        workers=workers) if len(links) else (pd.DataFrame(), 0, 0))
    result.timings["metrics_s"] = time.perf_counter() - started
    view = node_view(metrics, end_ns, thresholds)
    found: dict[str, list[Finding]] = {}
    if len(metrics):
        flagged = candidates(metrics, thresholds) | view.stale
        if full:
            flagged[:] = True
        stale = view.stale[flagged]
        lanes = observed_lanes(links)
        for row, s in zip(records(metrics[flagged]), stale.tolist(), strict=True):
            f = finding_of(row, thresholds, stale=s)
            named = lanes.get((str(row["node_id"]), f.gpu)) if f.link_type is LinkType.PCIE and f.gpu is not None \
                else None
            if named:
                f = f.model_copy(update={"lanes": named, "evidence": [*f.evidence, "lspci's lane error status names "
                                         f"lane(s) {', '.join(map(str, named))}"]})
            found.setdefault(str(row["node_id"]), []).append(f)
    node_events = {str(n): g for n, g in events.groupby(events["node_id"].astype("string"), observed=True)} \
        if len(events) and "node_id" in events.columns else {}
    analyzed = sorted(set(view.gpus_seen) | set(found) | set(node_events) | _names(metrics))
    wanted = sorted(nodes) if nodes is not None else analyzed
    warnings: dict[str, list[str]] = {n: [] for n in set(analyzed) | set(wanted)}
    samples = _max_samples(metrics)
    for node in sorted(set(analyzed) | set(wanted)):
        graph = graph_of(node, describe=bool(found.get(node)))
        mine = [_placed(f, graph) for f in found.get(node, [])]
        mine += event_findings(node_events.get(node, pd.DataFrame()), start_ns, end_ns, thresholds,
                               view.silent.get(node), graph_of.buses.get(node))
        stopped = view.silent.get(node, {})
        if stopped:  # a GPU whose every series stopped is one finding, not one per link
            mine = [f for f in mine if f.gpu not in stopped or not _stale(f)]
        seen = view.nvlinks_seen.get(node, {})
        if node in view.gpus_seen:
            reporting = view.gpus_seen[node]
            if graph is not None and samples.get(node, 0) >= 2:  # a lone reading (a paste, maybe cut) proves no absence
                live = {g: s for g, s in view.nvlinks_live.get(node, {}).items() if g not in stopped}
                expected = _expected_links(graph, reporting - set(stopped))
                mine = missing_links(mine, seen, live, expected, warnings[node])
            count = _gpu_count(graph_of.platform(node)) if samples.get(node, 0) >= 2 else None
            if expected_gpus is not None and node in expected_gpus:
                reporting, count = reporting | (set(range(count or 0)) - set(expected_gpus[node])), count
            mine += missing_gpus(reporting, count, stopped)
        for gpu in sorted(stopped):  # a GPU off the bus: what its PCIe link counted before it fell silent
            before = replays_before_silence(links, t, node, gpu, end_ns, end_ns - start_ns, thresholds)
            if before is not None:
                mine = [f.model_copy(update={"evidence": [*f.evidence, before]})
                        if f.gpu == gpu and _off_bus(f) else f for f in mine]
        software = software_finding(node_events.get(node, pd.DataFrame()), view.all_inactive.get(node))
        if software is not None:
            mine.insert(0, software)
        found[node] = mine
    result.timings["findings_s"] = time.perf_counter() - started - result.timings["metrics_s"]
    chosen = {n: jobs[n] for n in wanted if jobs and n in jobs}
    index = JobSteps(steps)
    for node in wanted:
        if node not in chosen:
            names = index.jobs_on(node)
            if names:
                chosen[node] = names[0]
    # a job has stopped only against an end the caller or the data gives, never against the clock
    dated = end is not None or len(t) > 0 or len(events) > 0
    result.jobs = _explain(chosen, index, found, links, t, end_ns, window if dated else None, thresholds, history)
    with_telemetry = set(view.gpus_seen) | _names(metrics)
    for explained in result.jobs.values():
        if explained.nodes and not with_telemetry & set(explained.nodes):
            explained.warnings.append(f"no link telemetry for the nodes of job {explained.job_id} "
                                      f"({', '.join(explained.nodes)})")
    result.timings["jobs_s"] = time.perf_counter() - started - sum(result.timings.values())
    for node in wanted:
        mine = found.get(node, [])
        notes = [*graph_of.warnings(node), *warnings.get(node, [])]
        if node not in view.gpus_seen and node not in _names(metrics):
            notes.insert(0, f"no link telemetry for {node}: its fabric health is unknown, not healthy")
        elif samples.get(node, 2) < 2:
            notes.append("one reading per link: totals since reset only; a rate needs a second reading")
        job = result.jobs.get(chosen[node]) if node in chosen else None
        if job is not None:
            notes.extend(job.warnings)
        failing = [f for f in mine if f.severity in (Severity.FAILING, Severity.DOWN)]
        graph = graph_of(node, describe=bool(failing))
        per_gpu = None if graph is not None else {g: len(s) for g, s in view.nvlinks_seen.get(node, {}).items()}
        locs = localize_all(mine, graph, per_gpu) if failing else []
        result.diagnoses[node] = assemble(
            node, platform=graph_of.platform(node), window_hours=window.total_seconds() / 3600,
            window_end=window_end if node in analyzed else None, findings=mine, localizations=locs, job=job,
            thresholds=thresholds, warnings=notes, rates_known=samples.get(node, 2) >= 2)
    result.timings["total_s"] = time.perf_counter() - started
    return result


def _off_bus(f: Finding) -> bool:
    return any(c.rule in (OFF_BUS_RULE, GPU_MISSING_RULE) for c in f.crossed)


def _stale(f: Finding) -> bool:
    return any(c.rule == MISSING_RULE for c in f.crossed)


def _names(metrics: pd.DataFrame) -> set[str]:
    if metrics.empty:
        return set()
    return {str(n) for n in metrics["node_id"].astype("string").dropna().unique()}


def _max_samples(metrics: pd.DataFrame) -> dict[str, int]:
    if metrics.empty:
        return {}
    most = metrics.groupby(metrics["node_id"].astype("string"), observed=True)["samples"].max()
    return {str(k): int(v) for k, v in most.items()}


def _gpu_count(platform: str | None) -> int | None:
    if not platform:
        return None
    data = all_platforms().get(platform)
    return int(data["gpu_count"]) if data and "gpu_count" in data else None


def _events_end(events: pd.DataFrame) -> int:
    if events.empty:
        return int(pd.Timestamp.now(tz="UTC").value)
    return int(pd.to_datetime(events["timestamp"], utc=True, format="mixed").max().value)


def _explain(chosen: Mapping[str, str], steps: JobSteps, found: Mapping[str, list[Finding]],
             links: pd.DataFrame, t: np.ndarray, end_ns: int, window: timedelta | None, thresholds: Thresholds,
             history: History | None) -> dict[str, JobExplanation]:
    """Each chosen job once: its slowdown from its steps, and, when it is slower (and, given a `window`, still
    running at the end), its nodes' flagged links scored."""
    out: dict[str, JobExplanation] = {}
    for job_id in sorted(set(chosen.values())):
        out[job_id] = job_slowdown(steps.of(job_id), job_id, thresholds=thresholds, cleaned=True,
                                   nodes=steps.nodes.get(job_id))
        if window is not None:
            out[job_id] = stopped(steps.of(job_id), out[job_id], end_ns=end_ns, window=window,
                                  thresholds=thresholds)
    slowed = {j: e for j, e in out.items() if e.slowdown and e.nodes}
    wanted: dict[str, list[tuple[str, ComponentRef]]] = {}
    for job_id, job in slowed.items():
        wanted[job_id] = [(n, f.ref) for n in job.nodes for f in found.get(n, [])
                          if f.severity is not Severity.OK and f.ref.kind in LINK_KINDS]
    needed = sorted({n for refs in wanted.values() for n, _ in refs})
    if not needed:
        return out
    spans = [s for s in (steps_span(steps.of(j), j, cleaned=True) for j in wanted) if s is not None]
    start = min(s[0] for s in spans) - 10 * 60 * 10**9 if spans else end_ns
    p = _history(needed, start, end_ns, links, t, history)
    index = _segments(p)
    for job_id, refs in wanted.items():
        present = [(n, r) for n, r in refs if (n, r.slug) in index]
        segments = np.array([index[(n, r.slug)] for n, r in present], dtype=np.int64)
        out[job_id] = score_links(slowed[job_id], steps.of(job_id), p, segments, present, thresholds, cleaned=True)
    return out


def _history(nodes: list[str], start_ns: int, end_ns: int, links: pd.DataFrame, t: np.ndarray,
             history: History | None) -> Prepared:
    """The chosen nodes' link samples over the jobs' span, prepared: from `history` when given, else the tables."""
    if history is not None:
        frame = history(nodes, pd.Timestamp(start_ns, tz="UTC").to_pydatetime(),
                        pd.Timestamp(end_ns, tz="UTC").to_pydatetime(warn=False))
        times = ns(frame["timestamp"]) if len(frame) else np.zeros(0, dtype=np.int64)
        rows = np.flatnonzero((times >= start_ns) & (times <= end_ns))
        return prepare_rows(frame, times, rows)
    mine = links["node_id"].isin(nodes).to_numpy(bool, na_value=False) & (t >= start_ns) & (t <= end_ns)
    keep = _per_link_rows(links)
    if keep is not None:
        allowed = np.zeros(len(t), dtype=bool)
        allowed[keep] = True
        mine &= allowed
    return prepare_rows(links, t, np.flatnonzero(mine))


def _segments(p: Prepared) -> dict[tuple[str, str], int]:
    """(node, component slug) -> the link's index in the prepared history."""
    if p.nseg == 0:
        return {}
    out: dict[tuple[str, str], int] = {}
    for i, row in enumerate(records(p.heads().assign(gpu_total=_heads_total(p)), skip=())):
        out[(str(row["node_id"]), ref_of(row).slug)] = i
    return out


def _heads_total(p: Prepared) -> Any:
    if "gpu_total" not in p.source.columns:
        return None
    return p.source["gpu_total"].array.take(p.positions(p.segment_starts))
