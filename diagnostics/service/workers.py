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
    """`processes` worker processes answering node and job requests from copies of `source`. They serve once every
    worker holds its copy (seconds for tables in memory); until then, and while workers that died (killed for
    memory) are replaced in the background, requests are answered in this process."""

    def __init__(self, source: Source, *, processes: int) -> None:
        self.source = source
        self.processes = processes
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None  # serving
        self._launch: threading.Thread | None = None
        self._closed = False

    def start(self, *, wait: bool = True) -> None:
        """Start the workers; `wait=False`: in the background, a failure said in the log (answers are then made
        here), else raised."""
        if wait:
            self._started()
            return
        self._launch = threading.Thread(target=self._started_or_said, name="fabricbot-analysis-workers", daemon=True)
        self._launch.start()

    def serving(self, timeout: float | None = None) -> bool:
        """Whether the workers answer, once a start under way has ended (waiting at most `timeout` s for it)."""
        if self._launch is not None:
            self._launch.join(timeout)
        return self._pool is not None

    def diagnosis(self, request: Request) -> Diagnosis:
        pool = self._pool
        if pool is None:
            return diagnose(self.source, request).diagnosis
        planned = self.source.maintenance().windows() if isinstance(self.source, Unstored) else None
        try:
            return pool.submit(_diagnosis, request, planned).result()
        except BrokenProcessPool as exc:
            log.warning("fabricbot: an analysis worker ended without an answer (%s); answering here and starting "
                        "new workers", exc)
            with self._lock:
                replace = self._pool is pool
                if replace:
                    self._pool = None
            pool.shutdown(wait=False, cancel_futures=True)
            if replace:
                self.start(wait=False)
            return diagnose(self.source, request).diagnosis

    def close(self) -> None:
        with self._lock:
            pool, self._pool, self._closed = self._pool, None, True
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def _started(self) -> None:
        """New workers, serving once each has loaded its copy of the source."""
        pool = ProcessPoolExecutor(max_workers=self.processes, mp_context=start_context(), initializer=_install,
                                   initargs=(self.source, os.getpid()))
        try:
            for done in [pool.submit(_ready) for _ in range(self.processes)]:
                done.result()
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        with self._lock:
            if not self._closed:
                self._pool = pool
                return
        pool.shutdown(wait=False, cancel_futures=True)  # closed while they started

    def _started_or_said(self) -> None:
        try:
            self._started()
        except Exception as exc:  # whatever stops a worker, the answers are still made here
            with self._lock:
                closing = self._closed  # the bot stopping while they started (its fork server gone): nothing to say
            if closing:
                log.debug("fabricbot: analysis workers not started: closed while they started (%s)", exc)
                return
            log.warning("fabricbot: analysis workers could not start (%s); answering in this process", exc)


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
