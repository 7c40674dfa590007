"""One node's or one job's diagnosis made in a worker process, for a server that answers many at once.

An analysis is mostly Python, and one interpreter runs Python on one core at a time: twenty `/fabric` commands at once
on a bot's threads take their turns at that one core while the others stay idle. Here each worker holds its own copy
of the source (a store pickles as its folder, tables as their rows) and answers a request as `diagnose` does in the
asking process; the answer, a `Diagnosis`, comes back. Planned work an in-memory source keeps for its process (set
with `/fabric maintenance`) travels with each request, so a worker judges with the windows the asker holds now.
"""

from __future__ import annotations

import logging
import os
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from ..model import Diagnosis
from ..store.maintenance import Maintenance
from .diagnose import diagnose
from .request import Request
from .shards import end_with, start_context
from .source import Source, Unstored, memory_log

log = logging.getLogger("fabricbot")

_SOURCE: Source | None = None  # in a worker: the source it answers from


class DiagnosisWorkers:
    """`processes` worker processes answering node and job requests from copies of `source`. A worker that dies
    (killed for memory) is replaced at the next request; that request is answered in this process meanwhile."""

    def __init__(self, source: Source, *, processes: int) -> None:
        self.source = source
        self.processes = processes
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None

    def start(self) -> None:
        """Start the workers and have each load its copy of the source, so the first request does not wait for it."""
        pool = self._executor()
        for done in [pool.submit(_ready) for _ in range(self.processes)]:
            done.result()

    def diagnosis(self, request: Request) -> Diagnosis:
        planned = self.source.maintenance().windows() if isinstance(self.source, Unstored) else None
        pool = self._executor()
        try:
            return pool.submit(_diagnosis, request, planned).result()
        except BrokenProcessPool as exc:
            log.warning("fabricbot: an analysis worker ended without an answer (%s); answering here and starting "
                        "new workers", exc)
            with self._lock:
                if self._pool is pool:
                    self._pool = None
            pool.shutdown(wait=False, cancel_futures=True)
            return diagnose(self.source, request).diagnosis

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def _executor(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ProcessPoolExecutor(max_workers=self.processes, mp_context=start_context(),
                                                 initializer=_install, initargs=(self.source, os.getpid()))
            return self._pool


def _install(source: Source, asker: int) -> None:
    """In a worker, first: it ends with the process that asks it (a killed bot leaves no worker waiting), and it
    answers from this copy of the source."""
    global _SOURCE
    end_with(asker)
    _SOURCE = source


def _ready() -> bool:
    return _SOURCE is not None


def _diagnosis(request: Request, planned: list[Maintenance] | None) -> Diagnosis:
    """In a worker: the request's diagnosis from the worker's source, with the asker's planned work."""
    assert _SOURCE is not None
    if isinstance(_SOURCE, Unstored) and planned is not None:
        kept = memory_log()
        kept.keep(planned)
        _SOURCE.hold(kept)
    return diagnose(_SOURCE, request).diagnosis
