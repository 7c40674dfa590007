"""The telemetry store as a source: each read opens its own connection (listener threads answer at once) and reads
only the files, row groups and columns its window needs, so a node ingested a minute ago is seen now."""

from __future__ import annotations

import copy
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path

import pandas as pd

from ..analysis.jobs import LinkChoice
from ..ingest.snapshot import CUT_OFF, CUT_SHORT, LISTED
from ..model import RackSlot
from ..store.maintenance import MaintenanceLog
from ..store.telemetry import TelemetryStore, open_store
from .source import Window, marked_nodes


class StoreSource:
    """Nodes, jobs and racks of a telemetry store folder (`fabricbot ingest ... --store DIR`)."""

    name = "store"

    def __init__(self, root: Path | str | TelemetryStore, *, create: bool = False, threads: int = 2) -> None:
        self.threads = threads  # each read decodes its files on this many threads
        if isinstance(root, TelemetryStore):
            self.root = root.root
        else:
            self.root = Path(root)
            open_store(self.root, create=create).db.close()  # a mistyped folder is said now, not at the first read
        self._log: MaintenanceLog | None = None

    @contextmanager
    def store(self) -> Iterator[TelemetryStore]:
        store = TelemetryStore(self.root)
        try:
            yield store
        finally:
            store.db.close()

    def nodes(self) -> list[str]:
        with self.store() as store:
            return store.nodes()

    def jobs(self) -> list[str]:
        with self.store() as store:
            return store.jobs()

    def job_nodes(self, job_id: str) -> list[str]:
        with self.store() as store:
            return store.job_nodes(job_id)

    def racks(self) -> dict[str, RackSlot]:
        with self.store() as store:
            return store.racks()

    def newest(self, nodes: Collection[str] | None = None) -> datetime | None:
        with self.store() as store:  # from the catalog: no file is opened
            return store.newest(nodes)

    def newest_each(self) -> dict[str, datetime]:
        """Each node's newest link reading, as the end of a window that holds it (no file is opened)."""
        with self.store() as store:
            return {n: _within(t) for n, t in store.newest_each().items()}

    def window_of(self, node: str) -> timedelta | None:
        return None

    def window_end(self) -> datetime | None:
        """Where a window of the whole store ends when none is asked: its newest link reading, else its newest step
        sample, else its newest event (a store of kernel logs); None when it holds none."""
        with self.store() as store:
            end_ns = store.end_ns(None)
            if end_ns is None:
                end_ns = store.newest_event()
            return None if end_ns is None else _within(end_ns)

    def together(self, *, end: datetime | None, span: timedelta) -> list[set[str]]:
        """The nodes judged together: each job's with steps in (end - span, end] (end None: the newest reading), and
        each rack's hosts."""
        with self.store() as store:
            groups = store.jobs_between(end=end, span=span)
            racks: dict[str, set[str]] = {}
            for host, slot in store.racks().items():
                racks.setdefault(slot.rack, set()).add(host)
        return [*groups, *racks.values()]

    def threaded(self, threads: int) -> StoreSource:
        """The same store, read on `threads` threads (its folder checked once, when this source was made)."""
        twin = copy.copy(self)
        twin.threads, twin._log = threads, None
        return twin

    def __getstate__(self) -> dict[str, object]:
        """Pickled as its folder (a worker process opens its own connections)."""
        return {"root": self.root, "_log": None, "threads": self.threads}

    def maintenance(self) -> MaintenanceLog:
        """The store's planned-work windows, on one connection of their own kept for the source's life."""
        if self._log is None:
            self._log = TelemetryStore(self.root).maintenance
        return self._log

    def read(self, *, nodes: Collection[str] | None, end: datetime | None, span: timedelta, peers: bool = False,
             steps: timedelta | None = None) -> Window:
        with self.store() as store:
            got = store.read_window(end=end, span=span, nodes=nodes, peers=peers, steps=steps, workers=self.threads)
        window_unreadable = dict(got.stats.unreadable)  # and, as the engine reads a job's history, those it could not

        def history(nodes: list[str], start: datetime, end: datetime, *, links: LinkChoice | None = None,
                    unreadable: dict[str, str] | None = None) -> pd.DataFrame:
            left: dict[str, str] = {}  # said to the window (the sweep's view) and to the engine (the job's verdict)
            frame = self.history(nodes, start, end, links=links, unreadable=left)
            window_unreadable.update(left)
            if unreadable is not None:
                unreadable.update(left)
            return frame

        cut_off = marked_nodes(got.tables.get("nodes"), CUT_OFF)
        return Window(tables=got.tables, end=got.end, platforms=got.platforms, racks=got.racks, newest=got.newest,
                      undated=got.undated, maintenance=got.maintenance, history=history,
                      listed=marked_nodes(got.tables.get("nodes"), LISTED),
                      cut=marked_nodes(got.tables.get("nodes"), CUT_SHORT) | cut_off, cut_off=cut_off,
                      unreadable=window_unreadable,
                      said=got.said, later=got.later, oldest=got.oldest, undated_events=got.undated_events,
                      late=got.late)

    def history(self, nodes: list[str], start: datetime, end: datetime, *, links: LinkChoice | None = None,
                unreadable: dict[str, str] | None = None) -> pd.DataFrame:
        """The link samples a job's correlation asks for, read from the store when the engine asks: given `links`,
        only theirs (the rest of those nodes' links are skipped before they are converted). Given `unreadable`, a
        node with a damaged part (often of an earlier day than the window's) is left out and said there."""
        with self.store() as store:
            if links is None:
                return store.link_history(nodes, start=start, end=end, unreadable=unreadable, workers=self.threads)
            return store.link_history(nodes, start=start, end=end, columns=links.columns, select=links.rows,
                                      unreadable=unreadable, workers=self.threads)


def _within(moment_ns: int) -> datetime:
    """A time as the end of a window that holds it: to the microsecond above (a datetime holds no finer), so a
    reading or event a few nanoseconds after the microsecond is not left out."""
    return pd.Timestamp(moment_ns, tz="UTC").ceil("us").to_pydatetime()
