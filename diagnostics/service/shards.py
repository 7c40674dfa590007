"""A fleet judged in shards, each in a process of its own.

The engine's per-node work (findings, events, a job's correlation, each Diagnosis) is Python, and one interpreter
runs Python on one core at a time; a fleet of many nodes is split across the machine's cores instead. A shard holds
whole jobs and whole racks (a job's slowdown is scored over all its nodes' links; a rack is judged over all its
hosts), so each node's answer is the one a single pass over the fleet gives.

On Linux, workers are forked from this process when it runs no other Python thread (a command line), else from a
clean server process (`forkserver`): a fork copies only the forking thread, and a lock another thread held (the bot's
listeners, a logging handler) stays held forever in the child. Elsewhere they are spawned (each imports afresh).
"""

from __future__ import annotations

import errno
import gc
import math
import multiprocessing
import os
import select
import signal
import sys
import threading
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from datetime import datetime, timedelta
from pathlib import Path
from typing import Protocol, TypeVar, runtime_checkable

from ..errors import ConfigError, FabricbotError

SHARD_NODES = 128  # the fewest nodes a shard is worth a process for: a small fleet's answer comes as fast in one
# process (41 bundled nodes: 0.55 s either way), and its tests stay in one
PROCESSES_ENV = "FABRICBOT_PROCESSES"

T = TypeVar("T")
S = TypeVar("S", bound="Shardable")


@runtime_checkable
class Shardable(Protocol):
    """A source a worker process can read by itself (it pickles as where it reads from), that says where a window of
    it ends when none is asked, and which of its nodes must be judged together: the nodes of each job with steps in
    the span, the hosts of each rack; and that can read on fewer threads (a worker with one core to itself)."""

    def window_end(self) -> datetime | None: ...

    def together(self, *, end: datetime | None, span: timedelta) -> list[set[str]]: ...

    def threaded(self: S, threads: int) -> S: ...


def process_count(asked: int | None = None, env: Mapping[str, str] | None = None) -> int:
    """How many processes a fleet may use: `asked`, else FABRICBOT_PROCESSES (as given), else the cores this
    process may run on (its CPU affinity and its control group's CPU quota, as a container sets them), at most 8:
    each holds its shard's rows, and more was never measured."""
    if asked is not None:
        return max(asked, 1)
    said = (os.environ if env is None else env).get(PROCESSES_ENV, "").strip()
    if said:
        try:
            value = int(said)
        except ValueError:
            value = 0
        if value < 1:
            raise ConfigError(f"{PROCESSES_ENV}: expected a positive whole number of processes (got {said!r}; 1 "
                              "judges the fleet in this process)")
        return value
    return max(min(_cores(), 8), 1)


def _cores() -> int:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    try:  # cgroup v2: "max 100000", or a quota and its period ("200000 100000": two cores' worth)
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text(encoding="utf-8").split()[:2]
    except (OSError, ValueError):
        return cores
    if quota == "max":
        return cores
    return max(min(cores, math.ceil(int(quota) / int(period))), 1)


def split(names: Sequence[str], together: Iterable[Collection[str]], count: int) -> list[list[str]]:
    """`names` in at most `count` shards of about equal size, the nodes of each group in `together` (a job, a rack)
    in one shard; each shard's names sorted, the shards in the order of their first name."""
    parent = {n: n for n in names}

    def root(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for group in together:
        members = [root(n) for n in group if n in parent]
        for other in members[1:]:
            parent[root(other)] = root(members[0])
    components: dict[str, list[str]] = {}
    for n in names:
        components.setdefault(root(n), []).append(n)
    shards: list[list[str]] = [[] for _ in range(max(count, 1))]
    for component in sorted(components.values(), key=lambda c: (-len(c), min(c))):  # largest first, to the smallest
        min(shards, key=len).extend(component)
    return sorted((sorted(s) for s in shards if s), key=lambda s: s[0])


def threads_each(shards: int, threads: int = 2) -> int:
    """The threads each of `shards` worker processes reads and judges with: the cores left to each, at most
    `threads` (what one process uses). Measured on 2 cores, a shard whose process has a core of its own is faster on
    one thread: a second one only waits on the first (the 1,024-node sweep 7.6-8.1 s to 7.4-7.45 s)."""
    return max(min(_cores() // max(shards, 1), threads), 1)


def shard_count(nodes: int, processes: int, least: int = SHARD_NODES) -> int:
    """How many shards a fleet of `nodes` is worth: one per process, each of at least `least` nodes."""
    return max(min(processes, nodes // max(least, 1)), 1)


def in_processes(work: Callable[..., T], calls: Sequence[tuple[object, ...]]) -> list[T]:
    """`work(*call)` for each call, each in a worker process of its own, the results in the calls' order. A worker
    ends with the process that started it (a `kill` of a sweep leaves none behind).

    Where the workers are forked from this process (a command, with no other thread), the collector is kept off the
    answers as they arrive: unpickling a shard's thousands of models otherwise runs collections over everything this
    process holds, two thirds of the unpickling's time (a 1,024-node sweep's answers: 0.30 s -> 0.10 s; with the
    collections that follow, this process's work after them 0.72 s -> 0.63 s). What it holds when it forks is frozen
    for the fork: a forked worker's collections then leave the modules it inherited alone (nor copy their pages); it
    thaws its own after. A process with other threads (the bot) starts its workers from a fork server and leaves
    its collector as it is: its other threads keep collecting, and nothing of theirs is frozen."""
    context = start_context()
    quiet = context.get_start_method() == "fork"
    collecting = gc.isenabled()
    if quiet:  # off before the first call: an answer can arrive (and be unpickled) while the rest are submitted
        gc.disable()
        gc.freeze()
    try:
        with ProcessPoolExecutor(max_workers=len(calls), mp_context=context, initializer=started,
                                 initargs=(os.getpid(),)) as pool:
            futures = [pool.submit(work, *call) for call in calls]
            if quiet:
                gc.unfreeze()  # the workers are forked (a fork starts them all at the first call)
            return [f.result() for f in futures]
    except BrokenProcessPool as exc:  # a worker killed (out of memory, a signal), or one that could not start
        raise FabricbotError(
            f"a worker process judging part of the fleet ended without an answer ({exc}): it was killed (the kernel "
            "kills the largest process when memory runs out) or could not start (a script that judges a fleet needs "
            f"its top level under `if __name__ == '__main__':`); {PROCESSES_ENV}=1 judges the fleet in this "
            "process") from None
    finally:
        if quiet:
            # what arrived while the collector was off (the answers, kept by the caller) joins the oldest generation
            # without a pass over it: the first young collection once it is back on walked them all (the 1,024-node
            # sweep's answers: 65-75 ms, freeing nothing)
            gc.freeze()
            gc.unfreeze()
            if collecting:
                gc.enable()


def started(main: int) -> None:
    """In a worker, first: it ends with the process that asked for it (`end_with`), and runs without the cycle
    collector. A worker makes one call and ends, which frees its cycles anyway; the collector's passes over the
    millions of objects a shard's analysis holds were 5% of its time (0.3 s of a 1,024-node sweep shard's 6.5 s)."""
    end_with(main)
    gc.disable()


def end_with(main: int) -> None:
    """In a worker, first: it ends when the process that asked for it does. A worker waits on pipes that process
    shared with it and its siblings, so a `kill` of a sweep would leave it waiting forever, and with it a fork
    server, which lives while any worker holds its pipe. Watched through a pidfd (Linux 5.3), which no later process
    can reuse. Ctrl-C, which a terminal sends to every process of the command, is the asking process's to act on: a
    worker ignores it (and ends with that process), rather than printing a traceback of its own."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        watched = os.pidfd_open(main)
    except OSError as exc:  # it ended already; or no pidfd here (another system): nothing to watch with
        if exc.errno == errno.ESRCH:
            os._exit(1)
        return
    except AttributeError:
        return
    threading.Thread(target=_await_end, args=(watched,), name="end-with-main", daemon=True).start()


def _await_end(watched: int) -> None:
    select.select([watched], [], [])  # readable once the process has ended
    os._exit(1)


def start_context() -> multiprocessing.context.BaseContext:
    """How worker processes are started here (the module's docstring says why)."""
    if not sys.platform.startswith("linux"):  # macOS's own libraries start threads a fork breaks; Windows has no fork
        return multiprocessing.get_context("spawn")
    if threading.active_count() == 1:  # the libraries' own threads (OpenBLAS's, jemalloc's) mend themselves at a fork
        return multiprocessing.get_context("fork")
    context = multiprocessing.get_context("forkserver")
    # the server imports the program (its main module) and the engine once; each worker, a fork of it, has them
    context.set_forkserver_preload(["__main__", "diagnostics.service.diagnose"])
    return context
