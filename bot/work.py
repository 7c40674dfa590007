"""The bot's work queues: analysis, pictures and drafts run here, never on the thread that acknowledges Slack.

A queue has a fixed number of threads and a bound on what may wait; when it is full, `submit` refuses at once
(`Busy`), so the acknowledgement can say "try again" instead of a request waiting minutes behind others.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

log = logging.getLogger("fabricbot")
BUSY = "I am working through many requests right now and cannot take this one; try again in a minute."


class Busy(RuntimeError):
    """The queue holds as much as it may; the request should be tried again later."""


class WorkQueue:
    """`workers` threads and at most `limit` jobs waiting for one; a job's failure is logged, never lost."""

    def __init__(self, name: str, *, workers: int, limit: int) -> None:
        self.name = name
        self.workers = workers
        self.limit = limit
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"fabricbot-{name}")
        self._slots = threading.BoundedSemaphore(workers + limit)

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        """Run `fn(*args)` on the queue; raises `Busy` at once when it is full."""
        if not self._slots.acquire(blocking=False):
            raise Busy(f"the {self.name} queue is full ({self.workers} running, {self.limit} waiting)")
        try:
            return self._pool.submit(self._run, fn, args)
        except BaseException:
            self._slots.release()
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
        """Run `fn(*args)` after what waits already (a picture after the summaries queued before it); at once, on
        this thread, when the queue is full or stopping."""
        try:
            self.submit(fn, *args)
        except (Busy, RuntimeError):  # RuntimeError: the pool is shutting down
            fn(*args)

    def _run(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        try:
            return fn(*args)
        except Exception:
            log.exception("fabricbot: a %s job failed", self.name)
            raise
        finally:
            self._slots.release()

    def shutdown(self, *, wait: bool = True) -> None:
        self._pool.shutdown(wait=wait, cancel_futures=not wait)
