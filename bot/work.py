"""The bot's work queues: analysis, pictures and drafts run here, never on the thread that acknowledges Slack.

A queue has a fixed number of threads and a bound on what may wait; when it is full, `submit` refuses at once
(`Busy`), so the acknowledgement can say "try again" instead of a request waiting minutes behind others.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

log = logging.getLogger("fabricbot")
T = TypeVar("T")
BUSY = "I am working through many requests right now and cannot take this one; try again in a minute."


class Busy(RuntimeError):
    """The queue holds as much as it may; the request should be tried again later."""


class WorkQueue:
    """`workers` threads and at most `limit` jobs waiting for one; a job's failure is logged, never lost.

    Deferred jobs (`later`: a picture after its summary) run one at a time on a thread of their own, and only while
    no other job waits or runs: matplotlib holds the interpreter for most of a draw, so a picture drawn beside a
    burst of commands would slow every summary of it. At most `limit` of them wait as well."""

    def __init__(self, name: str, *, workers: int, limit: int) -> None:
        self.name = name
        self.workers = workers
        self.limit = limit
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"fabricbot-{name}")
        self._slots = threading.BoundedSemaphore(workers + limit)
        self._idle = threading.Condition()  # guards what follows
        self._busy = 0  # jobs queued or running
        self._deferred: deque[tuple[Callable[..., Any], tuple[Any, ...]]] = deque()
        self._stopping = False
        self._painter: threading.Thread | None = None

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        """Run `fn(*args)` on the queue; raises `Busy` at once when it is full."""
        if not self._slots.acquire(blocking=False):
            raise Busy(f"the {self.name} queue is full ({self.workers} running, {self.limit} waiting)")
        with self._idle:
            self._busy += 1
        try:
            return self._pool.submit(self._run, fn, args)
        except BaseException:
            self._done()
            raise

    def offer(self, fn: Callable[..., Any], *args: Any) -> bool:
        """`submit`, for work that may be dropped when the queue is full (a notice): False, logged, when it was."""
        try:
            self.submit(fn, *args)
        except Busy as exc:
            log.warning("fabricbot: dropped a %s job: %s", self.name, exc)
            return False
        return True

    def later(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run `fn(*args)` once no other job waits or runs, after the deferred jobs before it; at once, on this
        thread, when `limit` already wait or the queue is stopping."""
        with self._idle:
            if not self._stopping and len(self._deferred) < self.limit:
                self._deferred.append((fn, args))
                if self._painter is None:  # a thread only while deferred jobs wait: it never holds up an exit
                    self._painter = threading.Thread(target=self._paint, name=f"fabricbot-{self.name}-later")
                    self._painter.start()
                self._idle.notify_all()
                return
        self._call(fn, args)

    def _run(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        try:
            return fn(*args)
        except Exception:
            log.exception("fabricbot: a %s job failed", self.name)
            raise
        finally:
            self._done()

    def _done(self) -> None:
        self._slots.release()
        with self._idle:
            self._busy -= 1
            self._idle.notify_all()

    def _paint(self) -> None:
        while True:
            with self._idle:
                self._idle.wait_for(lambda: not self._busy or self._stopping)
                if not self._deferred:
                    self._painter = None
                    return
                fn, args = self._deferred.popleft()
            self._call(fn, args)

    def _call(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        try:
            fn(*args)
        except Exception:
            log.exception("fabricbot: a deferred %s job failed", self.name)

    def shutdown(self, *, wait: bool = True) -> None:
        """Stop taking work; with `wait`, after every job and deferred job has run, else dropping those waiting."""
        self._pool.shutdown(wait=wait, cancel_futures=not wait)
        with self._idle:
            self._stopping = True
            if not wait:
                self._deferred.clear()
            self._idle.notify_all()
            painter = self._painter
        if wait and painter is not None:
            painter.join()


class InFlight:
    """Identical questions asked while one is being answered share its answer (a burst of `/fabric node-12`
    during an incident is one analysis): a caller joins only work already running, never a finished answer, so
    each answer is read from the data after its question came or at most one analysis earlier."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[Hashable, Future[Any]] = {}
        self._joined: dict[Hashable, int] = {}

    def joined(self, key: Hashable) -> int:
        """How many callers wait on the answer being made for `key` (0 when none is)."""
        with self._lock:
            return self._joined.get(key, 0)

    def run(self, key: Hashable, fn: Callable[[], T]) -> T:
        with self._lock:
            running = self._running.get(key)
            if running is None:
                mine: Future[Any] = Future()
                self._running[key] = mine
                self._joined[key] = 0
            else:
                self._joined[key] += 1
        if running is not None:
            result: T = running.result()
            return result
        try:
            value = fn()
        except BaseException as exc:
            mine.set_exception(exc)
            raise
        else:
            mine.set_result(value)
            return value
        finally:
            with self._lock:
                del self._running[key], self._joined[key]
