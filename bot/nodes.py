"""Where the bot gets diagnoses: a small "node source" interface over whatever data the store holds.

`SnapshotNodeSource` diagnoses nodes from snapshot JSON (the seed examples) with the snapshot analyzer;
`TableNodeSource` diagnoses normalized tables held in memory (a synthetic fleet) with the engine;
`StoreNodeSource` reads the window each answer needs from the telemetry store at each call, so a node ingested a
minute ago is seen now and memory follows the window, not the store's history.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Protocol

import pandas as pd

from diagnostics import (
    EVENTS,
    LINK_SAMPLES,
    STEP_SAMPLES,
    Diagnosis,
    InputError,
    Snapshot,
    analyze_snapshot,
    name_notes,
    resolve_name,
)
from diagnostics.analysis import (
    RepairCheck,
    RepairVerdict,
    Watch,
    analyze_fleet,
    analyze_rack,
    analyze_store,
    analyze_tables,
    check_repair,
    check_stored_repair,
    job_nodes,
    jobs_on,
    node_span,
    planned,
    read_node,
    stored_diagnosis,
    watch_list,
    watch_store,
)
from diagnostics.config import Thresholds, VerificationPolicy, load_thresholds, load_verification, load_watch
from diagnostics.ingest import read_cases
from diagnostics.store import MaintenanceLog, TelemetryStore

from .storage import open_db

DEFAULT_WINDOW_HOURS = 1.0


class UnknownName(InputError):
    """A node or job the source does not hold; carries the close matches for a helpful reply."""

    def __init__(self, kind: str, name: str, matches: list[str], known: int) -> None:
        self.kind = kind
        self.name = name
        self.matches = matches
        hint = f"; did you mean {', '.join(matches)}?" if matches else ""
        super().__init__(f"no {kind} named {name!r} among {known} known{hint}")


def close_matches(name: str, names: Iterable[str], n: int = 3) -> list[str]:
    return difflib.get_close_matches(name, list(names), n=n, cutoff=0.5)


def named(diagnosis: Diagnosis, names: Iterable[str], asked: str | None = None) -> Diagnosis:
    """The diagnosis with what its answer must say of the node's name among the source's: another node that is
    one with it once normalised or reads the same but for characters outside ASCII, and a name matched only once
    normalised (the characters outside ASCII are said by the diagnosis itself)."""
    notes = name_notes(diagnosis.node_id, names)
    if asked is not None and asked != diagnosis.node_id:
        notes.insert(0, f"`{asked}` was matched to the node `{diagnosis.node_id}` once Unicode-normalised (NFKC)")
    if not notes:
        return diagnosis
    return diagnosis.model_copy(update={"warnings": [*notes, *(w for w in diagnosis.warnings if w not in notes)]})


class NodeSource(Protocol):
    """What the bot asks of the data: diagnose a node, explain a job, rank the fleet."""

    def node_ids(self) -> list[str]: ...

    def job_ids(self) -> list[str]: ...

    def diagnose(self, node_id: str, *, window_hours: float | None = None) -> Diagnosis: ...

    def explain_job(self, job_id: str) -> Diagnosis: ...

    def fleet(self) -> list[Diagnosis]: ...

    def maintenance(self) -> MaintenanceLog:
        """Where the nodes' planned-work windows are kept (the store's, or this run's own)."""
        ...

    def watch(self, node_id: str | None = None) -> list[Watch]: ...

    def newest(self, node_id: str) -> datetime | None:
        """The time of the node's newest link reading (None: it has none with a time)."""
        ...

    def repair_check(self, *, node_id: str, parts: list[str], repaired_at: datetime,
                     policy: VerificationPolicy | None = None) -> RepairCheck: ...


class _OwnMaintenance:
    """Planned work kept for this run (a source with no store): in memory, gone when the bot stops."""

    _log: MaintenanceLog | None = None

    def maintenance(self) -> MaintenanceLog:
        if self._log is None:
            self._log = MaintenanceLog(open_db(None))
        return self._log

    def _planned(self, diagnosis: Diagnosis, window: timedelta) -> Diagnosis:
        end = diagnosis.window_end
        if self._log is None or end is None:
            return diagnosis
        return planned(diagnosis, self._log.windows(diagnosis.node_id), start=end - window, end=end)


class SnapshotNodeSource(_OwnMaintenance):
    """Nodes from snapshot JSON files; a snapshot carries its own window, so `window_hours` cannot change it."""

    def __init__(self, snapshots: Iterable[Snapshot], thresholds: Thresholds | None = None) -> None:
        self.snapshots = {s.node_id: s for s in snapshots}
        self.thresholds = thresholds or load_thresholds()

    @classmethod
    def from_files(cls, paths: Iterable[Path]) -> SnapshotNodeSource:
        snapshots = []
        for path in paths:
            for case in read_cases(path.read_text(encoding="utf-8"), str(path)):
                if case.snapshot is None:
                    raise case.errors[0]
                snapshots.append(case.snapshot)
        return cls(snapshots)

    def node_ids(self) -> list[str]:
        return sorted(self.snapshots)

    def job_ids(self) -> list[str]:
        return []

    def diagnose(self, node_id: str, *, window_hours: float | None = None) -> Diagnosis:
        asked, node_id = node_id, resolve_name(node_id, self.snapshots) or node_id
        snapshot = self.snapshots.get(node_id)
        if snapshot is None:
            raise UnknownName("node", node_id, close_matches(node_id, self.snapshots), len(self.snapshots))
        diagnosis = named(analyze_snapshot(snapshot, self.thresholds), self.snapshots, asked)
        if window_hours is not None and window_hours != diagnosis.window_hours:
            note = (f"the snapshot covers {diagnosis.window_hours:g}h; "
                    f"a {window_hours:g}h window needs time-series data in the store")
            diagnosis = diagnosis.model_copy(update={"warnings": [*diagnosis.warnings, note]})
        return diagnosis

    def explain_job(self, job_id: str) -> Diagnosis:
        raise UnknownName("job", job_id, [], 0)

    def fleet(self) -> list[Diagnosis]:
        return [self.diagnose(n) for n in self.node_ids()]

    def watch(self, node_id: str | None = None) -> list[Watch]:
        return []  # a snapshot is one window: no trend

    def newest(self, node_id: str) -> datetime | None:
        return None  # a snapshot is a window's totals, read at no stated time

    def repair_check(self, *, node_id: str, parts: list[str], repaired_at: datetime,
                     policy: VerificationPolicy | None = None) -> RepairCheck:
        return check_repair({}, node_id=node_id, parts=parts, repaired_at=repaired_at, now=None, policy=policy)


class TableNodeSource(_OwnMaintenance):
    """Nodes and jobs from normalized tables held in memory (a synthetic fleet) via `analyze_tables`.

    Link samples are split by node once, so a command analyses one node and the nodes sharing its jobs.
    """

    def __init__(self, tables: Mapping[str, pd.DataFrame], inventory: Mapping[str, str] | None = None,
                 thresholds: Thresholds | None = None, window_hours: float = DEFAULT_WINDOW_HOURS) -> None:
        self.inventory = dict(inventory or {})
        self.thresholds = thresholds or load_thresholds()
        self.window_hours = window_hours
        links = tables.get("link_samples", LINK_SAMPLES.empty())
        self.links = {str(k): g for k, g in links.groupby("node_id", observed=True, sort=True)}
        self.steps = tables.get("step_samples", STEP_SAMPLES.empty())
        self.events = tables.get("events", EVENTS.empty())
        self.nodes = sorted(set(self.links) | set(self.inventory))

    def node_ids(self) -> list[str]:
        return list(self.nodes)

    def job_ids(self) -> list[str]:
        return sorted(str(j) for j in self.steps["job_id"].dropna().unique())

    def _tables(self, node_id: str) -> dict[str, pd.DataFrame]:
        steps = self.steps[self.steps["job_id"].astype("string").isin(jobs_on(self.steps, node_id))]
        return self._rows({node_id, *job_nodes(steps)}, steps)

    def diagnose(self, node_id: str, *, window_hours: float | None = None, job_id: str | None = None) -> Diagnosis:
        asked, node_id = node_id, self._known(node_id)
        window = timedelta(hours=window_hours or self.window_hours)
        # the job's other nodes are judged on their own platforms too, as the fleet view judges them
        peers = {n: p for n, p in self.inventory.items() if p}
        diagnosis = analyze_tables(self._tables(node_id), node_id=node_id, window=window, thresholds=self.thresholds,
                                   platform=self.inventory.get(node_id), job_id=job_id, platforms=peers)
        return named(self._planned(diagnosis, window), self.nodes, asked)

    def explain_job(self, job_id: str) -> Diagnosis:
        jobs = self.job_ids()
        job_id = resolve_name(job_id, jobs) or job_id
        if job_id not in jobs:
            raise UnknownName("job", job_id, close_matches(job_id, jobs), len(jobs))
        steps = self.steps[self.steps["job_id"] == job_id]
        nodes = job_nodes(steps)
        result = analyze_fleet(self._rows(nodes, steps), window=timedelta(hours=self.window_hours),
                               thresholds=self.thresholds, platforms=self.inventory, nodes=nodes,
                               jobs=dict.fromkeys(nodes, job_id))
        explanation = result.jobs.get(job_id)
        blamed = [s.node_id for s in explanation.links if s.explains_slowdown] if explanation else []
        node = blamed[0] if blamed else (explanation.nodes if explanation and explanation.nodes else nodes)[0]
        return self.diagnose(node, job_id=job_id)

    def _rows(self, nodes: Iterable[str], steps: pd.DataFrame) -> dict[str, pd.DataFrame]:
        frames = [self.links[n] for n in sorted(set(nodes)) if n in self.links]
        links = pd.concat(frames, ignore_index=True) if frames else LINK_SAMPLES.empty()
        return {"link_samples": links, "step_samples": steps, "events": self.events}

    def fleet(self) -> list[Diagnosis]:
        """Every node, by the fleet engine: each job's step-time correlation computed once for all its nodes."""
        window = timedelta(hours=self.window_hours)
        result = analyze_fleet(self._rows(self.nodes, self.steps), window=window, thresholds=self.thresholds,
                               platforms=self.inventory, nodes=self.nodes)
        return [named(self._planned(result.diagnoses[n], window), self.nodes) for n in self.nodes]

    def watch(self, node_id: str | None = None) -> list[Watch]:
        nodes = self.nodes if node_id is None else [self._known(node_id)]
        return watch_list(self._rows(nodes, STEP_SAMPLES.empty()), thresholds=self.thresholds)

    def repair_check(self, *, node_id: str, parts: list[str], repaired_at: datetime,
                     policy: VerificationPolicy | None = None) -> RepairCheck:
        """The part judged on the readings since the repair, to the newest."""
        rows = self._rows([self._known(node_id)], STEP_SAMPLES.empty())
        since = {k: v[pd.to_datetime(v["timestamp"], utc=True) >= pd.Timestamp(repaired_at)] if len(v) else v
                 for k, v in rows.items()}
        links = since["link_samples"]
        newest = pd.to_datetime(links["timestamp"], utc=True).max() if len(links) else None
        return check_repair(since, node_id=node_id, parts=parts, repaired_at=repaired_at,
                            now=None if newest is None or pd.isna(newest) else newest.to_pydatetime(),
                            policy=policy, thresholds=self.thresholds, platform=self.inventory.get(node_id),
                            platforms=self.inventory)

    def newest(self, node_id: str) -> datetime | None:
        links = self.links.get(self._known(node_id))
        last = pd.to_datetime(links["timestamp"], utc=True).max() if links is not None and len(links) else None
        return None if last is None or pd.isna(last) else last.to_pydatetime()

    def _known(self, node_id: str) -> str:
        node_id = resolve_name(node_id, self.nodes) or node_id
        if node_id not in self.nodes:
            raise UnknownName("node", node_id, close_matches(node_id, self.nodes), len(self.nodes))
        return node_id


class StoreNodeSource:
    """Nodes and jobs from the telemetry store, read per request: each answer reads the window it needs (the node
    and the nodes sharing its job over the span its rules and its job's correlation want; the fleet over the span
    the rules need, a slowed job's links over a day only when the engine asks for them), so a later ingest is seen
    at the next request and memory is bounded by the window. Each call opens its own database connection
    (listener threads answer requests at once)."""

    def __init__(self, root: Path | str, thresholds: Thresholds | None = None,
                 window_hours: float = DEFAULT_WINDOW_HOURS) -> None:
        self.root = Path(root)
        self.thresholds = thresholds or load_thresholds()
        self.window_hours = window_hours
        self._log: MaintenanceLog | None = None

    @contextmanager
    def _store(self) -> Iterator[TelemetryStore]:
        store = TelemetryStore(self.root)
        try:
            yield store
        finally:
            store.db.close()

    def node_ids(self) -> list[str]:
        with self._store() as store:
            return store.nodes()

    def job_ids(self) -> list[str]:
        with self._store() as store:
            return store.jobs()

    def diagnose(self, node_id: str, *, window_hours: float | None = None, job_id: str | None = None) -> Diagnosis:
        """A node's diagnosis; a rack's (by its id in the rack inventory), or a rack host's as its rack sees it."""
        window = timedelta(hours=window_hours or self.window_hours)
        with self._store() as store:
            known, racks = store.nodes(), store.racks()
            asked, node_id = node_id, resolve_name(node_id, [*known, *(s.rack for s in racks.values())]) or node_id
            rack = racks[node_id].rack if node_id in racks else node_id
            if job_id is None and rack in {s.rack for s in racks.values()}:
                diagnosis, result = analyze_rack(store, rack, window=window, thresholds=self.thresholds)
                return named(result.diagnoses.get(node_id, diagnosis), known, asked)
            if node_id not in known:
                raise UnknownName("node", node_id, close_matches(node_id, known), len(known))
            got = read_node(store, node_id, end=None, window=window, thresholds=self.thresholds)
        diagnosis = analyze_tables(got.tables, node_id=node_id, window=window, end=got.end,
                                   thresholds=self.thresholds, platform=got.platforms.get(node_id),
                                   platforms=got.platforms, job_id=job_id)
        return named(stored_diagnosis(diagnosis, got, window), known, asked)

    def explain_job(self, job_id: str) -> Diagnosis:
        """The job's nodes' window read once: its slowdown explained, and the node whose link explains it."""
        window = timedelta(hours=self.window_hours)
        with self._store() as store:
            jobs = store.jobs()
            job_id = resolve_name(job_id, jobs) or job_id
            if job_id not in jobs:
                raise UnknownName("job", job_id, close_matches(job_id, jobs), len(jobs))
            nodes = store.job_nodes(job_id)
            got = store.read_window(end=None, span=node_span(window, self.thresholds), nodes=nodes)
        result = analyze_fleet(got.tables, window=window, end=got.end, thresholds=self.thresholds,
                               platforms=got.platforms, nodes=nodes, jobs=dict.fromkeys(nodes, job_id))
        explanation = result.jobs.get(job_id)
        blamed = [s.node_id for s in explanation.links if s.explains_slowdown] if explanation else []
        node = blamed[0] if blamed else (explanation.nodes if explanation and explanation.nodes else nodes)[0]
        diagnosis = analyze_tables(got.tables, node_id=node, window=window, end=got.end, thresholds=self.thresholds,
                                   platform=got.platforms.get(node), platforms=got.platforms, job_id=job_id)
        return named(stored_diagnosis(diagnosis, got, window), nodes)

    def fleet(self) -> list[Diagnosis]:
        """Every stored node over the span the rules need; a slowed job's links over its steps' day, read when the
        engine asks, so the sweep reads a day only for the nodes that need one."""
        window = timedelta(hours=self.window_hours)
        with self._store() as store:
            result, got = analyze_store(store, window=window, thresholds=self.thresholds)
            nodes = store.nodes()
        return [named(stored_diagnosis(result.diagnoses[n], got, window), nodes) for n in nodes
                if n in result.diagnoses]

    def maintenance(self) -> MaintenanceLog:
        """The store's planned-work windows, on one connection of their own kept for the source's life (each
        request's store is closed after it; the windows are read and set at most once a command)."""
        if self._log is None:
            self._log = MaintenanceLog(open_db(self.root))
        return self._log

    def newest(self, node_id: str) -> datetime | None:
        with self._store() as store:  # from the catalog: no file is opened
            return store.newest([node_id])

    def watch(self, node_id: str | None = None) -> list[Watch]:
        with self._store() as store:
            known = store.nodes()
            node_id = None if node_id is None else resolve_name(node_id, known) or node_id
            if node_id is not None and node_id not in known:
                raise UnknownName("node", node_id, close_matches(node_id, known), len(known))
            return watch_store(store, nodes=None if node_id is None else [node_id], thresholds=self.thresholds,
                               policy=load_watch())

    def repair_check(self, *, node_id: str, parts: list[str], repaired_at: datetime,
                     policy: VerificationPolicy | None = None) -> RepairCheck:
        with self._store() as store:
            if node_id not in store.nodes():
                policy = policy or load_verification()
                return RepairCheck(node_id=node_id, parts=parts, repaired_at=repaired_at, checked_to=None,
                                   soak_hours=policy.soak_hours, windows=0, covered=0, verdict=RepairVerdict.HOLDING,
                                   evidence=[f"the store holds no readings of {node_id}"])
            return check_stored_repair(store, node_id=node_id, parts=parts, repaired_at=repaired_at, policy=policy,
                                       thresholds=self.thresholds)
