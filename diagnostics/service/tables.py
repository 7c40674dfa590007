"""Sources held in memory: normalized tables (a synthetic fleet, files read with `load_tables`) and snapshot files.

A snapshot becomes tables (`snapshot_tables`: two readings of each link one window apart, the baseline step time
then the current one) and is read like any other tables: the one engine judges it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd

from ..analysis.jobs import LinkChoice
from ..errors import InputError
from ..ingest.base import Source
from ..ingest.nmxt import rack_named, renamed, tray_hosts
from ..ingest.snapshot import CUT_OFF, CUT_SHORT, LISTED, read_cases, snapshot_record, snapshot_tables
from ..model import RackSlot
from ..snapshots import Snapshot
from ..store.event_times import end_with_events
from ..store.load import load_tables
from ..store.maintenance import Maintenance, MaintenanceLog
from ..store.window import rack_slots
from ..tables import EVENTS, GPUS, LINK_SAMPLES, STEP_SAMPLES, TOPOLOGY, as_text, job_nodes, nodes_named, run_rows
from ..times import ns, utc_datetime, utc_ns
from .source import Unstored, Window, marked_nodes

NO_TIME = np.iinfo(np.int64).min


def _by_node(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    if frame.empty or "node_id" not in frame.columns:
        return {}
    return {str(k): g for k, g in frame.groupby(as_text(frame["node_id"]), observed=True, sort=True)}


class TableSource(Unstored):
    """Normalized tables held in memory, read as the store reads its files: each node's rows split once, a window
    cut by time, the jobs on the asked nodes and, with `peers`, the nodes those jobs share."""

    name = "tables"

    def __init__(self, tables: Mapping[str, pd.DataFrame], *, platforms: Mapping[str, str] | None = None,
                 racks: Mapping[str, RackSlot] | None = None, maintenance: MaintenanceLog | None = None,
                 name: str | None = None) -> None:
        self.name = name or self.name
        self.tables = dict(tables)  # as given: another source can be made of them
        records = tables.get("nodes")
        self._platforms = {**_platforms(records), **dict(platforms or {})}
        self._racks = {**(rack_slots(records) if records is not None and len(records) else {}), **dict(racks or {})}
        links = tables.get("link_samples")
        links = links if links is not None and len(links) else LINK_SAMPLES.empty()
        hosts, placed = tray_hosts(links, self._racks, self._platforms)  # an NMX-T scrape's trays as their hosts,
        links = renamed(links, hosts)  # in every table: a cut scrape's node records name the tray as its links do
        tables = {name: renamed(frame, hosts) if frame is not None else frame for name, frame in tables.items()}
        records = tables.get("nodes")
        self.warnings = [placed] if placed else []
        self._links = {n: (f, ns(f["timestamp"])) for n, f in _by_node(links).items()}
        steps = tables.get("step_samples")
        self._steps = steps if steps is not None and len(steps) else STEP_SAMPLES.empty()
        self._step_t = ns(self._steps["timestamp"]) if len(self._steps) else np.zeros(0, dtype=np.int64)
        jobs = self._steps["job_id"].astype("string")
        self._jobs = np.array([None if pd.isna(j) else str(j) for j in jobs], dtype=object)
        self._named = [set(n.strip() for n in str(v or "").split(",") if n.strip())
                       for v in self._steps["node_ids"].astype("string").fillna("")] if len(self._steps) else []
        self._other = {name: _by_node(tables[name]) if name in tables and tables[name] is not None else {}
                       for name in ("events", "gpus", "topology", "nodes")}
        self._listed = marked_nodes(records, LISTED)
        self._cut_off = marked_nodes(records, CUT_OFF)
        self._cut = marked_nodes(records, CUT_SHORT) | self._cut_off
        named = nodes_named({**tables, "link_samples": links})  # every node any table names, as a store notes
        self._nodes = sorted(set(named) | set(self._platforms) | set(self._racks))
        self._log = maintenance

    # ---- what the source knows ----
    def nodes(self) -> list[str]:
        return list(self._nodes)

    def jobs(self) -> list[str]:
        return sorted({str(j) for j in self._jobs if j is not None})

    def job_nodes(self, job_id: str) -> list[str]:
        return job_nodes(self._steps[self._jobs == job_id]) if len(self._steps) else []

    def racks(self) -> dict[str, RackSlot]:
        return dict(self._racks)

    def platforms(self) -> dict[str, str]:
        return dict(self._platforms)

    def newest(self, nodes: Collection[str] | None = None) -> datetime | None:
        names = self._links if nodes is None else [n for n in nodes if n in self._links]
        dated = [int(t[t != NO_TIME].max()) for n in names if (t := self._links[n][1]).size and (t != NO_TIME).any()]
        return utc_datetime(max(dated)) if dated else None

    # ---- reading a window ----
    def read(self, *, nodes: Collection[str] | None, end: datetime | None, span: timedelta, peers: bool = False,
             steps: timedelta | None = None) -> Window:
        names = sorted(self._links) if nodes is None else sorted({str(n) for n in nodes})
        wanted = None if nodes is None else names
        end_ns = utc_ns(end) if end is not None else self._newest_ns(None)
        if end is None and wanted is not None:  # their own newest event where it comes later, as the store's end
            own = self._newest_event(wanted)
            alone = own is not None and self.newest(wanted) is None  # events alone: at their own time
            end_ns = own if alone else end_with_events(end_ns, own)
        if end_ns is None:  # no reading has a time (a paste): all of them, dated by the engine as read at its end
            return Window(tables=self._frames(names, wanted, None, None), end=None, platforms=self.platforms(),
                          racks=self.racks(), history=self.history, listed=set(self._listed), cut=set(self._cut),
                          cut_off=set(self._cut_off))
        start_ns = end_ns - int(span.total_seconds() * 1e9)
        if peers and wanted:
            shared = self._jobs_of(set(wanted), start_ns, end_ns)
            names = sorted(set(names).union(*(self._job_nodes(j) for j in shared)))
            wanted = names
        since = min(start_ns, end_ns - int(steps.total_seconds() * 1e9)) if steps is not None else start_ns
        tables = self._frames(names, wanted, start_ns, end_ns, since)
        newest = {n: t for n in names if (t := self.newest([n])) is not None}
        oldest = {n: utc_datetime(int(t[t != NO_TIME].min())) for n in newest for t in [self._links[n][1]]}
        maintenance: dict[str, list[Maintenance]] = {}
        if self._log is not None:
            for window in self._log.windows():
                if wanted is None or window.node_id in wanted:
                    maintenance.setdefault(window.node_id, []).append(window)
        late = {n: utc_datetime(last) for n in newest
                if (last := self._newest_event([n])) is not None and last > end_ns}
        return Window(tables=tables, end=utc_datetime(end_ns), platforms=self.platforms(), racks=self.racks(),
                      newest=newest, maintenance=maintenance, history=self.history, listed=set(self._listed),
                      cut=set(self._cut), cut_off=set(self._cut_off), oldest=oldest, late=late)

    def history(self, nodes: list[str], start: datetime, end: datetime, *, links: LinkChoice | None = None,
                unreadable: dict[str, str] | None = None) -> pd.DataFrame:
        """The link samples a job's correlation reads beyond the window: those nodes' rows in [start, end] (given
        `links`, theirs). Tables in memory are read whole: `unreadable` is left as it is."""
        lo, hi = utc_ns(start), utc_ns(end)
        frames = [f[(t >= lo) & (t <= hi)] for n in sorted(set(nodes)) if n in self._links
                  for f, t in [self._links[n]]]
        frame = pd.concat(frames, ignore_index=True) if frames else LINK_SAMPLES.empty()
        return frame[links.rows(frame)].reset_index(drop=True) if links is not None and len(frame) else frame

    def _newest_event(self, nodes: Collection[str]) -> int | None:
        times = [t[t != NO_TIME] for n in nodes if (f := self._other["events"].get(n)) is not None and len(f)
                 for t in [ns(f["timestamp"])]]
        dated = [int(t.max()) for t in times if t.size]
        return max(dated) if dated else None

    def _newest_ns(self, nodes: Collection[str] | None) -> int | None:
        newest = self.newest(nodes)
        if newest is not None:
            return utc_ns(newest)
        dated = self._step_t[self._step_t != NO_TIME]
        return int(dated.max()) if dated.size else None

    def _jobs_of(self, names: set[str], start_ns: int, end_ns: int | None) -> set[str]:
        """Jobs with a step in (start, end] that names one of the nodes."""
        if not len(self._steps):
            return set()
        inside = self._step_t > start_ns
        if end_ns is not None:
            inside &= self._step_t <= end_ns
        return {str(self._jobs[i]) for i in np.flatnonzero(inside) if self._named[i] & names and self._jobs[i]}

    def _job_nodes(self, job_id: str) -> set[str]:
        return set(self.job_nodes(job_id))

    def _frames(self, names: list[str], wanted: list[str] | None, start_ns: int | None, end_ns: int | None,
                since: int | None = None) -> dict[str, pd.DataFrame]:
        links = [f[((t > start_ns) & (t <= end_ns)) | (t == NO_TIME)] if start_ns is not None and end_ns is not None
                 else f for n in names if n in self._links for f, t in [self._links[n]]]
        step_rows = STEP_SAMPLES.empty()
        if len(self._steps):
            lo = since if since is not None else start_ns if start_ns is not None else NO_TIME
            jobs = self._jobs_of(set(names), lo, end_ns)
            keep = np.isin(self._jobs, sorted(jobs)) & (self._step_t > lo)
            if end_ns is not None:
                keep &= self._step_t <= end_ns
            step_rows = self._steps[keep]
            runs = run_rows(self._steps, names, lo if lo != NO_TIME else None, end_ns)  # nccl-tests runs: no job
            step_rows = pd.concat([step_rows, runs]) if len(runs) else step_rows
        out = {"link_samples": pd.concat(links, ignore_index=True) if links else LINK_SAMPLES.empty(),
               "step_samples": step_rows}
        for name, schema_empty in (("events", EVENTS.empty), ("gpus", GPUS.empty), ("topology", TOPOLOGY.empty),
                                   ("nodes", lambda: pd.DataFrame({"node_id": pd.Series(dtype="string")}))):
            split = self._other[name]
            frames = [split[n] for n in (names if wanted is not None else sorted(split)) if n in split]
            frame = pd.concat(frames, ignore_index=True) if frames else schema_empty()
            if name == "events" and end_ns is not None and len(frame):
                t = ns(frame["timestamp"])
                frame = frame[(t <= end_ns) | (t == NO_TIME)].reset_index(drop=True)
            out[name] = frame
        return out


def _platforms(records: pd.DataFrame | None) -> dict[str, str]:
    if records is None or not len(records) or "platform" not in records.columns:
        return {}
    return {str(n): str(p) for n, p in zip(records["node_id"], records["platform"], strict=True)
            if isinstance(p, str) and p}


class SnapshotSource(TableSource):
    """Snapshot JSON (the seed examples): each snapshot's tables, its window and its platform. A snapshot carries no
    clock time, so each node's window ends at its own readings (see `snapshot_tables`)."""

    name = "snapshot"

    def __init__(self, snapshots: Iterable[Snapshot], *, label: str = "snapshot",
                 maintenance: MaintenanceLog | None = None) -> None:
        self.snapshots = {s.node_id: s for s in snapshots}
        frames: dict[str, list[pd.DataFrame]] = {}
        for node, snap in self.snapshots.items():
            for name, frame in snapshot_tables(snap, f"{label} {node}").items():
                frames.setdefault(name, []).append(frame)
        tables = {name: pd.concat(parts, ignore_index=True) for name, parts in frames.items()}
        tables["nodes"] = pd.DataFrame([snapshot_record(s) for s in self.snapshots.values()],
                                       columns=["node_id", "reading", "platform"])
        super().__init__(tables, maintenance=maintenance)

    @classmethod
    def from_files(cls, paths: Iterable[str | Path]) -> SnapshotSource:
        """Every snapshot of the files; the first case that does not parse is the error."""
        snapshots = []
        for path in paths:
            for case in read_cases(Path(path).read_text(encoding="utf-8"), str(path)):
                if case.snapshot is None:
                    raise case.errors[0] if case.errors else InputError("not a snapshot", source=str(path))
                snapshots.append(case.snapshot)
        return cls(snapshots, label=", ".join(Path(p).name for p in paths) if paths else "snapshot")

    def window_of(self, node: str) -> timedelta | None:
        snap = self.snapshots.get(node)
        return timedelta(hours=float(snap.window_hours)) if snap is not None else None

    def read(self, *, nodes: Collection[str] | None, end: datetime | None, span: timedelta, peers: bool = False,
             steps: timedelta | None = None) -> Window:
        if end is None:  # each snapshot's window ends at its own last reading, not at the newest of all
            newest = self.newest(nodes)
            end = newest
        return super().read(nodes=nodes, end=end, span=span, peers=peers, steps=steps)


UNNAMED_NODE = "unnamed-node"  # the node of a paste that names none, where a door answers it without a name


def files_source(paths: Iterable[str | Path | Source], *, node: str | None = None,
                 fmt: str | None = None, until: datetime | None = None,
                 unnamed: str | None = None) -> tuple[TableSource, str, list[str]]:
    """Telemetry files and folders (any format `ingest` reads, inventories included) as tables in memory, the node
    asked about (`node`, else the one node the input names) and what reading them said. Rows whose input names no
    node (an `nvidia-smi` paste) are that node's. `until`: the end asked, the latest the files were taken
    (`read_sources`). `unnamed`: the name such rows take when nothing names the node (one node's paste, answered and
    said so), where a door writes nothing under it; else such an input is refused."""
    paths = list(paths)
    # an NMX-T scrape's rack is the --node given, as ingest reads it
    loaded = load_tables(paths, fmt=fmt, asked=node, until=until)
    named = named_nodes(loaded.tables)
    if node is not None and len(named) == 1 and node not in named and set(named) <= loaded.banner_nodes:
        named = []  # a capture banner's node alone: the node asked about wins over it (the banner's warning says so)
        loaded.tables = {name: _renamed(frame, loaded.banner_nodes) for name, frame in loaded.tables.items()}
    stepped = [] if named else step_nodes(loaded.tables)  # an nccl-tests log names its ranks' hosts alone
    where = ", ".join(p.name if isinstance(p, Source) else str(p) for p in paths[:3])
    chosen = node or (named[0] if len(named) == 1 else stepped[0] if len(stepped) == 1 else None)
    said_unnamed = []
    if chosen is None and unnamed is not None and not named and not stepped and _unnamed_rows(loaded.tables):
        chosen = unnamed
        said_unnamed = [f"the input names no node: its readings are answered as {unnamed!r}; give --node NODE to "
                        "name them (a ticket or a store needs the name)"]
    if chosen is None:
        both = named or stepped
        listed = ", ".join(both[:10]) + (f" and {len(both) - 10} more" if len(both) > 10 else "")
        said = (f"names {len(named)} nodes ({listed})" if named
                else f"names no node's link telemetry; its steps run on {len(stepped)} nodes ({listed})" if stepped
                else "names no node")
        raise InputError(f"the input {said}: give --node NODE", source=where, field="--node")
    named_as = chosen  # what the files' rows call it: their warnings are its (another node's file's are not)
    if node is not None and named and chosen not in named:  # a paste taken as the node asked, beside a log naming
        # its own host: that host's readings are not this answer's, and are never dropped unsaid
        listed = ", ".join(named[:5]) + (f" and {len(named) - 5} more" if len(named) > 5 else "")
        said_unnamed.append(f"the input also holds readings that name another node ({listed}): this answer about "
                            f"{chosen} leaves them out (`--node {named[0]}` answers them; `ingest --node {chosen}` "
                            f"stores every file's readings as {chosen}'s, one machine's)")
    source = TableSource(unnamed_as(loaded.tables, chosen), name="files")
    if chosen not in source.nodes() and len(source.nodes()) == 1:  # an NMX-T tray's place, renamed once placed
        only = source.nodes()[0]
        slot = source.racks().get(only)
        if node is None or node in (rack_named(only)[0], slot.rack if slot else None):  # --node its rack
            chosen = only
    return source, chosen, [*said_unnamed, *loaded.said_of(named_as), *source.warnings]


def _unnamed_rows(tables: Mapping[str, pd.DataFrame]) -> bool:
    """Whether some telemetry row names no node (a paste's readings or events, a one-node run's steps, to answer
    under a name)."""
    return any(column in frame.columns and bool(frame[column].isna().any())
               for name, frame in tables.items() if name != "nodes" for column in ("node_id", "node_ids"))


def _renamed(frame: pd.DataFrame, banner: frozenset[str]) -> pd.DataFrame:
    """Rows a capture banner named, as naming no node (`unnamed_as` gives them the node asked about)."""
    if "node_id" not in frame.columns or not frame["node_id"].isin(list(banner)).any():
        return frame
    ids = frame["node_id"].astype("string").where(~frame["node_id"].isin(list(banner)))
    return frame.assign(node_id=ids.astype(frame["node_id"].dtype) if str(frame["node_id"].dtype) != "category"
                        else pd.Categorical(ids))


def tables_source(paths: Iterable[str | Path | Source], *, fmt: str | None = None,
                  until: datetime | None = None) -> tuple[TableSource, list[str]]:
    """Telemetry files and folders as tables in memory, no node chosen (a job is asked of them), and what reading
    them said (`until`: as `files_source`'s)."""
    loaded = load_tables(list(paths), fmt=fmt, until=until)
    source = TableSource(loaded.tables, name="files")
    return source, [*loaded.warnings, *source.warnings]


def unnamed_as(tables: Mapping[str, pd.DataFrame], node: str) -> dict[str, pd.DataFrame]:
    """Rows whose input names no node are the node the person asked about: a paste's readings, and the steps of a
    job whose log names no host (an nccl-tests run on one node, a training log)."""
    out = {}
    for name, frame in tables.items():
        for column in ("node_id", "node_ids"):
            if column in frame.columns and frame[column].isna().any():
                ids = frame[column].astype("string").fillna(node)
                frame = frame.assign(**{column: ids.astype(frame[column].dtype) if str(frame[column].dtype) !=
                                        "category" else pd.Categorical(ids)})
        out[name] = frame
    return out


def step_nodes(tables: Mapping[str, pd.DataFrame]) -> list[str]:
    """Every node the step samples' jobs run on (`node_ids`, comma-separated)."""
    steps = tables.get("step_samples")
    if steps is None or "node_ids" not in steps.columns:
        return []
    return sorted({n.strip() for v in steps["node_ids"].dropna().unique() for n in str(v).split(",") if n.strip()})


def named_nodes(tables: Mapping[str, pd.DataFrame]) -> list[str]:
    """Every node the tables' telemetry rows name (an inventory's records name nodes too, but hold no readings)."""
    return sorted({str(n) for name, frame in tables.items() if name != "nodes" and "node_id" in frame.columns
                   for n in frame["node_id"].dropna().unique()})
