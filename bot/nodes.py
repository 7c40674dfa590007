"""The bot's door to the diagnosis service: one source (snapshot files, tables in memory, or the telemetry store read
per request) with the bot's default window and thresholds. Every answer is `diagnostics.service`'s, so `/fabric`
says what the CLI says."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

import pandas as pd

from diagnostics import Diagnosis, Snapshot, SweepResult, outside_ascii
from diagnostics.analysis import Diagnostic, Pass, RepairCheck
from diagnostics.config import AlertPolicy, Thresholds, VerificationPolicy, load_thresholds, load_watch
from diagnostics.prometheus import PrometheusClient, load_config
from diagnostics.render import Drawable, drawable_of
from diagnostics.service import (
    Answer,
    DiagnosisWorkers,
    PrometheusSource,
    Request,
    SnapshotSource,
    Source,
    StoreSource,
    TableSource,
    UnknownName,
    WatchAnswer,
    alert_pass,
    close_matches,
    diagnose,
    graph_of,
    sweep,
    verify_repair,
    watched,
)
from diagnostics.store import Alert, MaintenanceLog
from diagnostics.tickets import Judged
from diagnostics.topology import NodeGraph

from .age import source_readings
from .mrkdwn import esc
from .work import InFlight

DEFAULT_WINDOW_HOURS = 1.0

__all__ = ["DEFAULT_WINDOW_HOURS", "NodeSource", "SnapshotNodeSource", "StoreNodeSource", "TableNodeSource",
           "UnknownName", "close_matches", "unknown_reply"]


class NodeSource:
    """What the bot asks of the data: diagnose a node, explain a job, rank the fleet, and the rest, each through the
    service with this bot's thresholds and default window."""

    def __init__(self, source: Source, *, thresholds: Thresholds | None = None,
                 window_hours: float = DEFAULT_WINDOW_HOURS) -> None:
        self.source = source
        self.thresholds = thresholds or load_thresholds()
        self.window_hours = window_hours
        self._in_flight = InFlight()
        self._workers: DiagnosisWorkers | None = None

    def request(self, *, node: str | None = None, job: str | None = None, rack: str | None = None,
                window_hours: float | None = None) -> Request:
        """A question with this bot's settings; a window nobody chose is the source's own (a snapshot's)."""
        hours = window_hours or (None if self.window_hours == DEFAULT_WINDOW_HOURS else self.window_hours)
        return Request(node=node, job=job, rack=rack, window=timedelta(hours=hours) if hours else None,
                       thresholds=self.thresholds)

    def node_ids(self) -> list[str]:
        return self.source.nodes()

    def job_ids(self) -> list[str]:
        return self.source.jobs()

    def rack_ids(self) -> list[str]:
        return sorted({slot.rack for slot in self.source.racks().values()})

    def start_workers(self, processes: int) -> None:
        """Answer node and job questions in `processes` worker processes (below 2: in this one), so that many asked
        at once use every core rather than this interpreter's one. They start in the background and serve once
        ready; until then, or when they cannot start (said in the log), questions are answered here."""
        if processes < 2 or self._workers is not None:
            return
        self._workers = DiagnosisWorkers(self.source, processes=processes)
        self._workers.start(wait=False)

    def workers_serving(self, timeout: float | None = None) -> bool:
        """Whether worker processes answer, once their start has ended (waiting at most `timeout` seconds for it)."""
        workers = self._workers
        return workers is not None and workers.serving(timeout)

    def stop_workers(self) -> None:
        workers, self._workers = self._workers, None
        if workers is not None:
            workers.close()

    def answer(self, node_id: str, *, window_hours: float | None = None, job_id: str | None = None) -> Answer:
        """A node's (or a rack host's, as its rack sees it) answer: its diagnosis and the graph it was judged on."""
        return diagnose(self.source, self.request(node=node_id, job=job_id, window_hours=window_hours))

    def diagnose(self, node_id: str, *, window_hours: float | None = None, job_id: str | None = None) -> Diagnosis:
        """The node's diagnosis; asked again while it is being made, the same one."""
        return self._in_flight.run(("node", node_id, window_hours, job_id), lambda: self._diagnosis(
            self.request(node=node_id, job=job_id, window_hours=window_hours)))

    def diagnose_rack(self, rack_id: str) -> Diagnosis:
        """The rack's diagnosis, all its trays weighed as one; a name that is no rack is said as a rack's."""
        return self._in_flight.run(("rack", rack_id), lambda: self._diagnosis(self.request(rack=rack_id)))

    def explain_job(self, job_id: str) -> Diagnosis:
        """The node whose link explains the job's slowdown (else its first), judged against that job."""
        return self._in_flight.run(("job", job_id), lambda: self._diagnosis(self.request(job=job_id)))

    def _diagnosis(self, request: Request) -> Diagnosis:
        workers = self._workers
        return workers.diagnosis(request) if workers is not None else diagnose(self.source, request).diagnosis

    def readings_age(self, end: datetime | None, *, now: datetime, asked: str | None = None) -> str | None:
        """How old the readings an answer judged to `end` are, where they are a day old or more, worded as the
        command line says it (a store no longer fed answers as confidently as a live one); `asked`: the node or
        rack the answer is of (None: a job's or the fleet's)."""
        return source_readings(end, self.source, asked=asked, now=now)

    def sweep(self) -> SweepResult:
        """The fleet swept as `fabricbot sweep` does: the offending nodes' diagnoses, planned work held."""
        return sweep(self.source, self.request())

    def sweep_server(self, url: str, *, at: datetime) -> SweepResult:
        """The fleet swept on a Prometheus server as `fabricbot sweep --prometheus` does, with this bot's planned
        work held (the server knows none)."""
        with PrometheusClient(load_config(url)) as client:
            server = PrometheusSource(client, at=at)
            server.hold(self.maintenance())
            return sweep(server, replace(self.request(), end=at))

    def alert_pass(self, *, alerts: Mapping[tuple[str, str], Alert], at: datetime,
                   ticket_of: Callable[[str, str], str | None], open_storm: int | None,
                   policy: AlertPolicy | None = None, baseline: bool = False) -> tuple[SweepResult, Pass]:
        """One pass of the watch loop, asked of the service with this bot's window and thresholds."""
        return alert_pass(self.source, self.request(), alerts=alerts, at=at, ticket_of=ticket_of,
                          open_storm=open_storm, policy=policy, baseline=baseline)

    def maintenance(self) -> MaintenanceLog:
        """Where the nodes' planned-work windows are kept (the store's, or this run's own)."""
        return self.source.maintenance()

    def watch(self, node_id: str | None = None) -> WatchAnswer:
        """The watch list as `fabricbot watch` gives it: the links climbing and the nodes it could not judge."""
        return watched(self.source, nodes=None if node_id is None else [node_id], thresholds=self.thresholds,
                       policy=load_watch())

    def drawable(self, diagnosis: Diagnosis) -> Drawable:
        """What the node's picture is drawn from, as `fabricbot render` draws it: the graph the node was judged on
        (its own topology rows over its platform's template), else its platform's template or a generic graph."""
        graph = graph_of(self.source, diagnosis.node_id, platform=diagnosis.platform) \
            if diagnosis.node_id in self.source.nodes() else None
        return drawable_of(diagnosis, graph)

    def judged_like(self, node_id: str, like: Diagnosis) -> Judged:
        """Another node (a part's owner: a switch tray's rack) judged over the window `like` was: its diagnosis and
        the graph it was judged on, as `fabricbot ticket` asks the owner."""
        hours = like.window_asked_hours or like.window_hours if like.window_end is not None else None
        answer = diagnose(self.source, replace(self.request(node=node_id, window_hours=hours), end=like.window_end))
        return answer.diagnosis, answer.graph

    def graph(self, diagnosis: Diagnosis) -> NodeGraph:
        """The graph a draft checks its facts against: the one its picture is drawn on."""
        return self.drawable(diagnosis).graph

    def newest(self, node_id: str) -> datetime | None:
        """The time of the node's newest link reading (None: it has none with a time)."""
        return self.source.newest([node_id])

    def repair_check(self, *, node_id: str, parts: list[str], repaired_at: datetime,
                     policy: VerificationPolicy | None = None, diagnostic: Diagnostic | None = None) -> RepairCheck:
        return verify_repair(self.source, node=node_id, parts=parts, repaired_at=repaired_at, policy=policy,
                             thresholds=self.thresholds, diagnostic=diagnostic)


class SnapshotNodeSource(NodeSource):
    """Nodes from snapshot JSON (the seed examples); a snapshot carries its own window."""

    def __init__(self, snapshots: Iterable[Snapshot], thresholds: Thresholds | None = None) -> None:
        super().__init__(SnapshotSource(snapshots), thresholds=thresholds)

    @classmethod
    def from_files(cls, paths: Iterable[Path]) -> SnapshotNodeSource:
        return cls(SnapshotSource.from_files(paths).snapshots.values())

    @property
    def snapshots(self) -> dict[str, Snapshot]:
        assert isinstance(self.source, SnapshotSource)
        return self.source.snapshots


class TableNodeSource(NodeSource):
    """Nodes and jobs from normalized tables held in memory (a synthetic fleet) and its inventory (node -> platform)."""

    def __init__(self, tables: Mapping[str, pd.DataFrame], inventory: Mapping[str, str] | None = None,
                 thresholds: Thresholds | None = None, window_hours: float = DEFAULT_WINDOW_HOURS) -> None:
        super().__init__(TableSource(tables, platforms=inventory), thresholds=thresholds, window_hours=window_hours)


class StoreNodeSource(NodeSource):
    """Nodes and jobs from the telemetry store, read per request: a node ingested a minute ago is seen now, and memory
    follows the window, not the store's history."""

    def __init__(self, root: Path | str, thresholds: Thresholds | None = None,
                 window_hours: float = DEFAULT_WINDOW_HOURS) -> None:
        super().__init__(StoreSource(root, create=True), thresholds=thresholds, window_hours=window_hours)
        self.root = Path(root)


def unknown_reply(exc: UnknownName, source: NodeSource) -> str:
    """What a person is told of a name the source does not hold, the same through every door (`/fabric`, a
    mention): its close matches, else a few names the source does hold."""
    odd = outside_ascii(exc.name)  # an invisible character pasted with a name reads as the name offered back
    said = f" ({esc(odd.removeprefix(f'the name `{exc.name}` '))}: retype it)" if odd else ""
    if exc.matches:
        names = ", ".join(f"`{esc(m)}`" for m in exc.matches)
        return f"I don't know a {exc.kind} called `{esc(exc.name)}`{said}. Did you mean {names}?"
    listing = {"node": source.node_ids, "rack": source.rack_ids}
    known = listing.get(exc.kind, source.job_ids)()
    sample = ", ".join(f"`{esc(k)}`" for k in known[:5]) or "none yet"
    note = f" ({esc(exc.note)})" if exc.note and not known else ""
    return f"I don't know a {exc.kind} called `{esc(exc.name)}`{said}. Known {exc.kind}s: {sample}{note}."
