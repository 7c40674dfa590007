"""The local telemetry store: samples in Parquet by node and day, a SQLite database beside them.

Layout under `root`:
- `link_samples/node=<node>/day=<YYYY-MM-DD>/<file-hash>.parquet` (day `none` for rows without a time);
- `step_samples/job=<job>/day=<YYYY-MM-DD>/<file-hash>.parquet`;
- `fabricbot.db` (sqlite-utils): `ingests` (the manifest: one row per input file by SHA-256, so ingesting the
  same bytes twice adds nothing; the same bytes given another --node or --at are another reading), `nodes`, `gpus`,
  `events`, `topology`, and the catalog of the Parquet files (`parquet_files`, `job_nodes`: see parts.py). Tickets
  and the audit trail live in the same database (`db`).
Each ingested file writes its own Parquet file per partition, named by the input's hash, so a partition is a
folder of immutable files. A read asks for a window (`window`): only the files, row groups and columns that
window needs are read, so a request costs what its window holds, not what the store has gathered.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import sqlite_utils
from sqlite_utils.db import Table

from ..config.thresholds import load_thresholds
from ..errors import InputError
from ..ingest.base import IngestWarning, Source
from ..ingest.nmxt import place_in_racks
from ..model import RackSlot
from ..names import unpadded
from ..progress import Progress, advance
from ..tables import EVENTS, GPUS, LINK_IDENTITY, LINK_SAMPLES, STEP_SAMPLES, TOPOLOGY, naming, run_rows
from ..times import utc_datetime, utc_ns
from .busy import Bars
from .catalog import Catalog
from .columns import frame_of
from .compaction import Compacted, compact
from .database import connect, transaction
from .event_times import end_with_events, events_after, newest_event
from .maintenance import Maintenance, MaintenanceLog
from .parts import ScanStats, read_parts, writing_pool
from .records import read_whole, write_nodes
from .said import clear_refused, keep_refused, said_of
from .said import keep as keep_said
from .same_time import same_time_notes
from .selection import Selection, read_selected
from .sources import (
    At,
    FileOutcome,
    IngestReport,
    ahead_warning,
    cut_nodes,
    placed_on_a_node,
    read_sources,
    untimed_warning,
)
from .window import StoreWindow, rack_slots
from .writing import LINK_ORDER, NO_JOB, PARTED, keep_xid_state, unkeyable, write_result, xid_state

DB_NAME = "fabricbot.db"
LINK_KEYS = ("node_id", *LINK_ORDER)
ALWAYS = ("timestamp", *LINK_KEYS, "peer")  # link columns a window keeps even when no reading fills them
# A reading's provenance ("file:line"): no analysis reads it, and with a value of its own on every row it costs
# more to read than the counters do. A window leaves it out; link_samples() keeps it.
PROVENANCE = ("source",)


class TelemetryStore:
    """Samples in Parquet by node and day; manifest, nodes, GPUs, events and topology in SQLite."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._db = connect(self.root / DB_NAME)
        with transaction(self._db):
            self._table("ingests").create(
                {"sha256": str, "file": str, "format": str, "ingested_at": str, "rows": str, "content": str},
                pk="sha256", if_not_exists=True)
            self._table("nodes").create({"node_id": str, "first_seen": str, "last_seen": str}, pk="node_id",
                                        if_not_exists=True)
            self._catalog = Catalog(self._db, self.root)
        self._touched: dict[str, set[str]] = {}  # the keys an ingest wrote parts of, by table: compacted after it

    def _table(self, name: str) -> Table:
        return self._db.table(name)

    @property
    def db(self) -> sqlite_utils.Database:
        return self._db

    @property
    def maintenance(self) -> MaintenanceLog:
        """The nodes' planned-work windows (kept in the store's database)."""
        return MaintenanceLog(self._db)

    # ---- writing ----
    def ingest(self, sources: Iterable[str | Path | Source], *, fmt: str | None = None,
               node_id: str | None = None, at: At = None, progress: Progress | None = None) -> IngestReport:
        """Read the files (folders recursively) and keep what they hold; an inventory file gives node records.
        `progress` is advanced by one per file read and one per file stored (or passed over)."""
        with writing_pool():
            return self._ingest(sources, fmt=fmt, node_id=node_id, at=at, progress=progress)

    def _ingest(self, sources: Iterable[str | Path | Source], *, fmt: str | None, node_id: str | None, at: At,
                progress: Progress | None) -> IngestReport:
        seen = {str(v) for r in self._table("ingests").rows for v in (r["sha256"], r.get("content")) if v}
        held = self.nodes()
        xid_last = xid_state(self._db)
        thresholds = load_thresholds()
        busy = Bars.of(thresholds)
        outcomes = read_sources(sources, fmt=fmt, node_id=node_id, at=at, seen=seen, xid_last=xid_last,
                                progress=progress, refuse_unread=True)
        # inventories first, wherever their names sort: an NMX-T scrape's trays are placed on the hosts they name
        for outcome in sorted(outcomes, key=lambda o: o.result is not None):
            if outcome.status == "read":
                self._keep(outcome, busy)
            advance(progress)
        refused = [f"{o.name}: {o.error}" for o in outcomes if o.status == "error"]
        with transaction(self._db):
            clear_refused(self._db, [o.name for o in outcomes if o.status == "ingested"])
            keep_refused(self._db, refused, [o.result for o in outcomes if o.status == "ingested" and o.result])
            keep_xid_state(self._db, xid_last)
        report = IngestReport.of(outcomes)
        report.node_warnings += case_apart(held, self.nodes(), str(self.root))
        report.node_warnings += [w for o in outcomes if (w := untimed_warning(o)) is not None]
        tolerance = timedelta(minutes=thresholds.setting("clock_ahead_min"))
        report.node_warnings += [w for o in outcomes if (w := ahead_warning(o, now=datetime.now(UTC),
                                                                           tolerance=tolerance)) is not None]
        touched, self._touched = self._touched, {}
        for table, keys in sorted(touched.items()):  # a node's day grown past a few parts: one part again
            done = self._compact(table, keys=keys, busy=busy)
            report.node_warnings += [IngestWarning(str(self.root), None, f"{table} of {day} not merged into one "
                                                   f"part (the readings are stored): {why}")
                                     for day, why in sorted(done.failed.items())]
        return report

    def compact(self, table: str = "link_samples", *, keys: Collection[str] | None = None, least: int | None = None,
                grace_s: float | None = None) -> Compacted:
        """Each day of the table's keys (default every key) held in more than `least` parts merged into one, the
        parts it retired `grace_s` ago deleted (compaction.py): a store fed scrape by scrape reads as fast as one
        ingested at once."""
        return self._compact(table, keys=keys, least=least, grace_s=grace_s, busy=Bars.of(load_thresholds()))

    def _compact(self, table: str, *, keys: Collection[str] | None = None, least: int | None = None,
                 grace_s: float | None = None, busy: Bars) -> Compacted:
        schema, order = PARTED[table]
        return compact(self._db, self._catalog, schema, order, keys=keys, least=least, grace_s=grace_s, busy=busy)

    def _keep(self, outcome: FileOutcome, busy: Bars) -> None:
        """One file's telemetry and node records written, with its hash, in one transaction (its parts' busy links
        apart by `busy`)."""
        assert outcome.sha256 is not None
        if outcome.result is not None:
            outcome.nodes = place_in_racks(outcome.result, self.racks(), self.platforms(),  # a scrape's trays as
                                           outcome.nodes)  # hosts, in its node records too
            outcome.error = placed_on_a_node(outcome) or unkeyable(outcome.result)
            if outcome.error:
                outcome.status = "error"
                return
        with transaction(self._db):  # the write lock first: a second writer (the bot, another ingest) waits
            if self._table("ingests").count_where("sha256 = ?", [outcome.sha256]):
                outcome.status = "duplicate"  # the same bytes stored by another ingest meanwhile
                return
            if outcome.result is not None:
                write_result(self._db, self._catalog, self.root, outcome.result, outcome.sha256, self._touched,
                             self._table("ingests").count + 1, busy)
                keep_said(self._db, outcome.sha256, outcome.result)  # said again by every analysis of the store
                if not cut_nodes(outcome.result):
                    read_whole(self._db, outcome.result)
            if outcome.nodes is not None:
                write_nodes(self._db, outcome.nodes)
            outcome.status = "ingested"
            self._table("ingests").insert({"sha256": outcome.sha256, "file": outcome.name,
                                           "format": outcome.format, "ingested_at": datetime.now(UTC).isoformat(),
                                           "rows": pd.Series(outcome.rows).to_json(), "content": outcome.content},
                                          replace=True, alter=True)

    # ---- reading ----
    def nodes(self) -> list[str]:
        """The nodes ingested, and those the catalog's link parts hold: a catalog rebuilt from the files (its
        database emptied or moved aside) knows its nodes by their parts."""
        return sorted({*(str(r["node_id"]) for r in self._table("nodes").rows), *self._catalog.keys("link_samples")})

    def platforms(self, nodes: Collection[str] | None = None) -> dict[str, str]:
        """Each node's platform as an inventory file gave it (nodes without one are left out)."""
        frame = self._sql_table("nodes", None if nodes is None else sorted(set(nodes)), lambda f: f)
        if "platform" not in frame.columns:
            return {}
        return {str(n): str(p) for n, p in zip(frame["node_id"], frame["platform"], strict=True)
                if isinstance(p, str) and p}

    def racks(self) -> dict[str, RackSlot]:
        """Each node's rack and tray slot, as a rack inventory gave them (nodes without a rack are left out)."""
        return rack_slots(self._sql_table("nodes", None, lambda f: f))

    def jobs(self) -> list[str]:
        return [k for k in self._catalog.keys("step_samples") if k != NO_JOB]  # rows with no job are no job

    def job_nodes(self, job_id: str) -> list[str]:
        """The nodes a job's step samples name."""
        return sorted(self._catalog.jobs_on(None, None, None).get(job_id, set()))

    def jobs_between(self, *, end: datetime | None, span: timedelta) -> list[set[str]]:
        """The nodes of each job with step samples in (end - span, end] (end None: the newest link reading)."""
        end_ns = self.end_ns(end)
        start_ns = None if end_ns is None else end_ns - int(span.total_seconds() * 1e9)
        return [n for j, n in self._catalog.jobs_on(None, start_ns, end_ns).items() if j != NO_JOB]

    def end_ns(self, end: datetime | None, nodes: Collection[str] | None = None) -> int | None:
        """A window's end: the one asked, else the newest link reading (else the newest step sample). Asked of nodes
        that hold no link reading beside others that do (a host whose kernel log alone was ingested): their own
        newest event, as `analyze FILE` ends their window, not the others' readings, which may be older than it.
        A fleet's window keeps the readings' end: a log whose times are off (`dmesg -T` is local time, read as UTC)
        must not move every node's window. Asked of some nodes, their own newest event ends it where that comes
        later by at most `late_event_min`, and never past the wall clock (`end_with_events`)."""
        if end is not None:
            return utc_ns(end)
        newest = self._catalog.newest("link_samples")
        if nodes is not None and newest is not None:
            own = self.newest_event(nodes)
            if self._catalog.newest("link_samples", sorted(nodes)) is None:  # events alone: at their own time
                return own if own is not None else newest
            newest = end_with_events(newest, own)
        return newest if newest is not None else self._catalog.newest("step_samples")

    def _runs(self, names: list[str] | None, start_ns: int | None, end_ns: int | None, workers: int) -> pd.DataFrame:
        """The step samples of benchmark runs on those nodes (nccl-tests rows: stored under no job); a part written
        before rows named their run is read alone, its rows one run, so a host's runs of several ingests stay apart."""
        parts = self._catalog.parts_naming("step_samples", NO_JOB, names, start_ns, end_ns)
        if not parts:
            return STEP_SAMPLES.empty()
        keyed = [p for p in parts if "run" in p.columns]
        frames = [read_parts(keyed, STEP_SAMPLES, None, None, order=(), keep=STEP_SAMPLES.columns,
                             workers=workers)[0]] if keyed else []
        for part in (p for p in parts if "run" not in p.columns):
            rows, _ = read_parts([part], STEP_SAMPLES, None, None, order=(), keep=STEP_SAMPLES.columns, workers=1)
            frames.append(rows.assign(run=f"part {part.path.stem}"))
        rows = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
        return run_rows(STEP_SAMPLES.conform(rows), names, start_ns, end_ns)

    def newest_event(self, nodes: Collection[str] | None = None) -> int | None:
        """The newest event's time (ns) (of those nodes), from the database; None when no event has a time."""
        return newest_event(self._db, nodes)

    def newest(self, nodes: Collection[str] | None = None) -> datetime | None:
        """The newest link reading the store holds (of those nodes), from the catalog: no file is opened."""
        value = self._catalog.newest("link_samples", None if nodes is None else sorted(set(nodes)))
        return None if value is None else utc_datetime(value)

    def newest_each(self) -> dict[str, int]:
        """Each node's newest link reading (ns), from the catalog: no file is opened."""
        return self._catalog.reach_by_key("link_samples", None)[0]

    def window(self, *, end: datetime | None, span: timedelta, nodes: Collection[str] | None = None,
               peers: bool = False) -> dict[str, pd.DataFrame]:
        """The tables a window needs: link samples of those nodes (all when None) in (end - span, end], each
        node's rows together and each link's in time order; their events up to `end`; the step samples of jobs on
        them within the span; their GPUs, topology and node records. `end=None`: the store's newest reading.
        `peers`: also the nodes that share a job with them in the span (a peer's link may explain the slowdown).

        Link samples hold the link keys, `peer`, and the columns some part in the window fills (a counter no
        reading of the window carries is left out rather than read as a column of nothing), without the
        readings' provenance (`source`)."""
        return self.read_window(end=end, span=span, nodes=nodes, peers=peers).tables

    def read_window(self, *, end: datetime | None, span: timedelta, nodes: Collection[str] | None = None,
                    peers: bool = False, steps: timedelta | None = None, workers: int = 2) -> StoreWindow:
        """`window`, with the window's end, each node's newest reading and what the read touched. `steps`: the
        step samples over this longer span (a job's slowdown is judged on a day of them; they are few). `workers`:
        the threads its files are decoded on."""
        names = None if nodes is None else sorted({str(n) for n in nodes})
        end_ns = self.end_ns(end, names)
        start_ns = None if end_ns is None else end_ns - int(span.total_seconds() * 1e9)
        if peers and names:
            shared = [n for j, n in self._catalog.jobs_on(names, start_ns, end_ns).items() if j != NO_JOB]
            names = sorted(set(names).union(*shared))
        stats = ScanStats()
        links = LINK_SAMPLES.empty()[list(ALWAYS)]
        step_frame = STEP_SAMPLES.empty()
        if end_ns is not None and names != []:
            parts = self._catalog.parts("link_samples", names, start_ns, end_ns)
            links, stats = read_parts(parts, LINK_SAMPLES, start_ns, end_ns, order=LINK_KEYS[1:], keep=ALWAYS,
                                      skip=PROVENANCE, partial=True, workers=workers)
            since = start_ns
            if steps is not None and start_ns is not None:
                since = min(start_ns, end_ns - int(steps.total_seconds() * 1e9))
            jobs = {j for j in self._catalog.jobs_on(names, since, end_ns) if j != NO_JOB}  # runs: `_runs`, once
            if jobs:
                step_parts = self._catalog.parts("step_samples", sorted(jobs), since, end_ns)
                step_rows, _ = read_parts(step_parts, STEP_SAMPLES, since, end_ns, order=(),
                                          keep=STEP_SAMPLES.columns, workers=workers)
                step_frame = STEP_SAMPLES.conform(step_rows)
        runs = self._runs(names, start_ns, end_ns, workers) if names != [] else STEP_SAMPLES.empty()
        if len(runs):  # nccl-tests runs (no job): the window's nodes' own, undated ones always
            step_frame = STEP_SAMPLES.conform(pd.concat([step_frame, runs], ignore_index=True))
        newest, oldest = self._catalog.reach_by_key("link_samples", names) if names != [] else ({}, {})
        tables = {"link_samples": links, "step_samples": step_frame, "events": self._events(names, end_ns),
                  "gpus": self._sql_table(GPUS.name, names, GPUS.conform),
                  "topology": self._sql_table(TOPOLOGY.name, names, TOPOLOGY.conform),
                  "nodes": self._sql_table("nodes", names, lambda f: f)}
        undated = self._catalog.undated_rows("link_samples", names) if names != [] else {}
        undated_events = self._undated_events(names) if names != [] else {}
        planned: dict[str, list[Maintenance]] = {}
        for window in self.maintenance.windows():
            if names is None or window.node_id in names:
                planned.setdefault(window.node_id, []).append(window)
        said = said_of(self._db, names, start_ns, end_ns) if names != [] else {}
        if len(links) and end_ns is not None and names != []:
            twice = self._catalog.overlapping("link_samples", names, start_ns, end_ns)
            for node, note in same_time_notes(links, twice).items():
                said.setdefault(node, []).append(note)
        after = events_after(self._db, names, end_ns, set()) if names != [] and end_ns is not None else {}
        later = {n: t for n, t in after.items() if n not in newest}
        late = {n: t for n, t in after.items() if n in newest}
        return StoreWindow(tables, None if end_ns is None else utc_datetime(end_ns),
                           span, stats, {k: utc_datetime(v) for k, v in newest.items()},
                           undated, planned, said, later, {k: utc_datetime(v) for k, v in oldest.items()},
                           undated_events, late)

    def link_history(self, nodes: Collection[str], *, start: datetime, end: datetime,
                     columns: Collection[str] | None = None,
                     select: Callable[[pd.DataFrame], np.ndarray] | None = None,
                     unreadable: dict[str, str] | None = None, workers: int = 2) -> pd.DataFrame:
        """Those nodes' link samples in [start, end], as a window holds them (each node's rows together, each
        link's in time order): only `columns` (and what names a link, and its time), and given `select` (the
        readings' identities, one row per distinct one -> which to keep), only the rows of the identities it keeps,
        chosen before they are converted. Given `unreadable`, a node with a part that cannot be read is left out
        and said there, as a window's read does, rather than failing the read. `workers`: the threads its files are
        decoded on."""
        start_ns, end_ns = utc_ns(start) - 1, utc_ns(end)
        parts = self._catalog.parts("link_samples", sorted({str(n) for n in nodes}), start_ns, end_ns)
        wanted = None if columns is None else {*columns, *LINK_IDENTITY, "timestamp"}

        def keep(identities: pa.Table) -> np.ndarray:
            assert select is not None
            return np.asarray(select(frame_of(identities)), dtype=bool)

        if select is None:
            got, stats = read_parts(parts, LINK_SAMPLES, start_ns, end_ns, order=LINK_KEYS[1:], keep=ALWAYS,
                                    skip=PROVENANCE, columns=wanted, partial=unreadable is not None, workers=workers)
        else:
            got, stats = read_selected(parts, LINK_SAMPLES, start_ns, end_ns, order=LINK_KEYS[1:],
                                       select=Selection(LINK_IDENTITY, keep), keep=ALWAYS, skip=PROVENANCE,
                                       columns=wanted, partial=unreadable is not None, workers=workers)
        if unreadable is not None:
            unreadable.update(stats.unreadable)
        return got

    def _events(self, names: list[str] | None, end_ns: int | None) -> pd.DataFrame:
        """The events a window places: those with a time, up to its end. One with none (a log printed without dates,
        ingested without --at) would be judged anew at every window's end, a week-old fatal Xid paging as new, so no
        window holds it (`_undated_events` counts them)."""
        extra, args = "timestamp IS NOT NULL", list[object]()
        if end_ns is not None:  # ISO times compare as text: a second's slack here, the exact bound below
            bound = (pd.Timestamp(end_ns, tz="UTC") + pd.Timedelta(seconds=1)).isoformat()
            extra, args = "timestamp IS NOT NULL AND timestamp <= ?", [bound]
        events = self._sql_table(EVENTS.name, names, EVENTS.conform, extra, args)
        if end_ns is not None and len(events):
            late = (events["timestamp"] > pd.Timestamp(end_ns, tz="UTC")).to_numpy(bool, na_value=False)
            events = events[~late].reset_index(drop=True)
        return events

    def _undated_events(self, names: list[str] | None) -> dict[str, int]:
        """Per node (those named, else every one), its stored events with no time, which no window places."""
        if not self._table(EVENTS.name).exists():
            return {}
        where, args = "timestamp IS NULL", list[object](names or [])
        if names is not None:
            where += f" AND node_id IN ({','.join('?' * len(names))})"
        rows = self._db.execute(f"SELECT node_id, count(*) FROM [{EVENTS.name}] WHERE {where} GROUP BY node_id", args)
        return {str(n): int(c) for n, c in rows.fetchall() if n is not None and c}

    def link_samples(self, node_id: str | None = None, start: datetime | None = None,
                     end: datetime | None = None) -> pd.DataFrame:
        """Link samples in [start, end) (all, undated ones too, without bounds), link by link in time order."""
        lo = None if start is None else utc_ns(start) - 1
        hi = None if end is None else utc_ns(end) - 1
        parts = self._catalog.parts("link_samples", None if node_id is None else [node_id], lo, hi)
        rows, _ = read_parts(parts, LINK_SAMPLES, lo, hi, order=LINK_KEYS[1:], keep=LINK_SAMPLES.columns)
        return LINK_SAMPLES.conform(rows)

    def step_samples(self, job_id: str | None = None, node_id: str | None = None) -> pd.DataFrame:
        parts = self._catalog.parts("step_samples", None if job_id is None else [job_id])
        rows, _ = read_parts(parts, STEP_SAMPLES, None, None, order=(), keep=STEP_SAMPLES.columns)
        frame = STEP_SAMPLES.conform(rows)
        if node_id is not None and len(frame):
            frame = frame[naming(frame["node_ids"], [node_id])].reset_index(drop=True)
        return frame

    def events(self, node_id: str | None = None) -> pd.DataFrame:
        return self._sql_table(EVENTS.name, None if node_id is None else [node_id], EVENTS.conform)

    def topology(self, node_id: str | None = None) -> pd.DataFrame:
        return self._sql_table(TOPOLOGY.name, None if node_id is None else [node_id], TOPOLOGY.conform)

    def gpus(self, node_id: str | None = None) -> pd.DataFrame:
        return self._sql_table(GPUS.name, None if node_id is None else [node_id], GPUS.conform)

    def _sql_table(self, table: str, names: list[str] | None, conform: Any, extra: str | None = None,
                   args: list[Any] | None = None) -> pd.DataFrame:
        if not self._table(table).exists():
            return conform(pd.DataFrame())
        where, params = [], list(args or [])
        if names is not None:
            where.append(f"node_id IN ({','.join('?' * len(names))})")
            params = [*names, *params]
        if extra:
            where.append(extra)
        cursor = self._db.execute(f"SELECT * FROM [{table}]" + (f" WHERE {' AND '.join(where)}" if where else ""),
                                  params)
        frame: pd.DataFrame = conform(pd.DataFrame(cursor.fetchall(), columns=[d[0] for d in cursor.description]))
        return frame


def case_apart(before: Collection[str], after: Collection[str], where: str) -> list[IngestWarning]:
    """A node an ingest added whose name is a stored node's but for letter case or a number's leading zeros (`--node
    HPC-GPU-NODE-12` beside hpc-gpu-node-12, `--node hpc-gpu-node-1` beside hpc-gpu-node-01): one machine's
    readings split over two nodes, each judged on half of them, said."""
    known = {unpadded(n): n for n in before}
    out = []
    for new in sorted(set(after) - set(before)):
        old = known.get(unpadded(new))
        if old is None:
            continue
        how = "letter case" if new.casefold() == old.casefold() else "letter case or a number's leading zeros"
        out.append(IngestWarning(where, None, f"node {new!r} is stored apart from {old!r}, which differs from it only "
                                 f"in {how}: if they are one machine, its readings are now split between them; ingest "
                                 f"them again with --node {old}"))
    return out


def open_store(root: Path | str, *, create: bool = True) -> TelemetryStore:
    """A store at `root`; an InputError, not a traceback, when the folder cannot be used. `create=False` (a command
    that only reads) says so when there is no store there, rather than making an empty one at a mistyped path."""
    if Path(root).is_file():  # a telemetry file given as the store: it is read without one
        raise InputError("a file, not a store's folder: --store names the folder a store keeps its readings in "
                         f"(a file is read alone with `fabricbot analyze {root}`)", source=str(root))
    if not create and not (Path(root) / DB_NAME).exists():
        raise InputError(f"no telemetry store here (no {DB_NAME}): ingest into it first with "
                         f"`fabricbot ingest FILE --store {root}`", source=str(root))
    try:
        return TelemetryStore(root)
    except OSError as exc:
        raise InputError(f"cannot use the store folder: {exc.strerror}", source=str(root)) from None
