"""A fleet judged in shards, each in a process of its own, answers as one pass over it does: each shard holds whole
jobs and racks, and what travels back is what the answers need."""

from __future__ import annotations

import gc
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from datetime import datetime, timedelta
from multiprocessing.context import BaseContext
from pathlib import Path
from typing import Any

import pytest

from diagnostics.errors import ConfigError, FabricbotError
from diagnostics.service import Request, StoreSource, fleet, fleetwide, shards, sweep, watch
from diagnostics.service.shards import PROCESSES_ENV, in_processes, process_count, shard_count, split
from diagnostics.store import open_store
from diagnostics.synth.rack_fleet import generate_racks

ROOT = Path(__file__).resolve().parents[2]


def test_a_job_and_a_rack_stay_whole_and_shards_are_balanced() -> None:
    names = [f"n{i:02d}" for i in range(12)]
    shards = split(names, [{"n00", "n05", "n11"}, {"n05", "n07"}, {"n01", "n02"}, {"gone", "n03"}], 3)
    assert sorted(n for s in shards for n in s) == names  # every node once, a name no node has ignored
    where = {n: i for i, s in enumerate(shards) for n in s}
    assert where["n00"] == where["n05"] == where["n11"] == where["n07"]  # two jobs sharing n05 are one group
    assert where["n01"] == where["n02"]
    assert sorted(len(s) for s in shards) == [4, 4, 4]


def test_a_group_larger_than_a_share_is_kept_whole() -> None:
    names = [f"n{i}" for i in range(6)]
    shards = split(names, [set(names[:5])], 2)
    assert [len(s) for s in shards] == [5, 1]


@pytest.mark.parametrize(("nodes", "processes", "least", "count"),
                         [(1024, 2, 128, 2), (190, 2, 128, 1), (1024, 16, 128, 8), (5, 4, 1, 4), (0, 4, 1, 1)])
def test_a_fleet_is_split_only_where_each_shard_is_worth_a_process(nodes: int, processes: int, least: int,
                                                                   count: int) -> None:
    assert shard_count(nodes, processes, least) == count


def test_the_processes_come_from_the_setting_and_a_bad_one_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PROCESSES_ENV, "3")
    assert process_count() == 3 and process_count(1) == 1
    assert process_count(env={PROCESSES_ENV: "12"}) == 12  # as given: the person knows the machine
    for bad in ("two", "0", "-1", "2.0"):
        monkeypatch.setenv(PROCESSES_ENV, bad)
        with pytest.raises(ConfigError, match=f"{PROCESSES_ENV}: expected a positive whole number.*'{bad}'"):
            process_count()
    monkeypatch.delenv(PROCESSES_ENV)
    assert 1 <= process_count() <= 8


@pytest.mark.parametrize(("cores", "count", "threads"), [(2, 2, 1), (8, 2, 2), (4, 3, 1), (1, 1, 1), (16, 8, 2)])
def test_each_shard_reads_and_judges_on_the_cores_left_to_it(cores: int, count: int, threads: int,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shards, "_cores", lambda: cores)
    assert shards.threads_each(count) == threads


def test_a_worker_reads_its_shard_on_the_threads_it_is_given(bundled_store: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Two shards on two cores: each worker's reads, its history and its engine on one thread (a pickled source
    keeps its threads)."""
    import importlib
    import pickle

    diagnose = importlib.import_module("diagnostics.service.diagnose")  # the module: the package names a function so
    monkeypatch.setattr(shards, "_cores", lambda: 2)
    given: list[tuple[int, int]] = []
    engine: list[int] = []
    real = diagnose.analyze_fleet

    def spied(*args: object, **kwargs: Any) -> Any:
        engine.append(kwargs["workers"])
        return real(*args, **kwargs)

    def here(work: Any, calls: Any) -> list[Any]:
        out = []
        for source, *rest in calls:
            source = pickle.loads(pickle.dumps(source))
            given.append((source.threads, rest[-1]))
            out.append(work(source, *rest))
        return out

    monkeypatch.setattr(diagnose, "in_processes", here)
    monkeypatch.setattr(diagnose, "analyze_fleet", spied)
    fleet(StoreSource(bundled_store), Request(), processes=2, shard_nodes=1)
    assert given == [(1, 1), (1, 1)] and engine == [1, 1]
    fleet(StoreSource(bundled_store), Request(), processes=1)
    assert engine[-1] == 2  # one process: the reads and the engine on two threads, as before


@pytest.fixture(scope="module")
def two_racks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two synthetic GB200 NVL72 racks (54 hosts, a job in each) ingested into a store."""
    out = tmp_path_factory.mktemp("two-racks")
    generate_racks(out=out / "fleet", seed=5, racks=2, hours=3)
    store = open_store(out / "store")
    store.ingest([out / "fleet"])
    store.db.close()
    return out / "store"


def _answers(root: Path, processes: int) -> str:
    source = StoreSource(root)
    answered = fleet(source, Request(), processes=processes, shard_nodes=1)
    result = sweep(source, Request()) if processes == 1 else None
    parts = {"diagnoses": {n: d.model_dump(mode="json") for n, d in sorted(answered.diagnoses.items())},
             "jobs": {j: e.model_dump(mode="json") for j, e in sorted(answered.analysis.jobs.items())},
             "racks": {r: d.model_dump(mode="json") for r, d in sorted(answered.analysis.racks.items())},
             "reporting": sorted(answered.reporting), "shards": len(answered.windows),
             "offenders": None if result is None else len(result.offenders)}
    return json.dumps(parts, sort_keys=True)


@contextmanager
def _another_thread() -> Iterator[None]:
    """A thread running beside the caller, as the bot's listeners do."""
    stop = threading.Event()
    waiting = threading.Thread(target=stop.wait, daemon=True)
    waiting.start()
    try:
        yield
    finally:
        stop.set()
        waiting.join()


def _start_methods(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """How each fleet's workers are started from here on, as they are asked for."""
    used: list[str] = []
    chosen = shards.start_context

    def spied() -> BaseContext:
        context = chosen()
        used.append(context.get_start_method())
        return context

    monkeypatch.setattr(shards, "start_context", spied)
    return used


@pytest.mark.parametrize(("which", "start"), [("bundled", "fork"), ("racks", "fork"), ("racks", "forkserver")])
def test_shards_answer_as_one_pass_does(which: str, start: str, bundled_store: Path, two_racks: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Forked from a process of one thread (a command line); from a fork server beside other threads (the bot)."""
    root = bundled_store if which == "bundled" else two_racks
    used = _start_methods(monkeypatch)
    one = json.loads(_answers(root, 1))
    if start == "fork":  # as a command line is; a library's idle thread here (tqdm's monitor) is not the bot's
        monkeypatch.setattr(shards.threading, "active_count", lambda: 1)
    with _another_thread() if start == "forkserver" else nullcontext():
        sharded = json.loads(_answers(root, 2))
    assert used == [start]
    assert one["shards"] == 1 and sharded["shards"] == 2
    assert one["offenders"] > 0
    if which == "racks":
        assert len(one["racks"]) == 2 and any(d["fault_detected"] for d in one["racks"].values())
    else:
        assert any(j["links"] for j in one["jobs"].values())  # a slowed job's links were scored
    for part in ("diagnoses", "jobs", "racks", "reporting"):
        assert sharded[part] == one[part], part


def test_a_command_line_forks_its_shards_and_answers_the_same(two_racks: Path) -> None:
    """A process that runs no other thread forks its workers (the path a `fabricbot sweep` takes)."""
    script = ("import sys, threading; from pathlib import Path; sys.path.insert(0, sys.argv[2]); "
              "from tests.service.test_shards import _answers; "
              "assert threading.active_count() == 1; print(_answers(Path(sys.argv[1]), 2))")
    forked = subprocess.run([sys.executable, "-c", script, str(two_racks), str(ROOT)], capture_output=True,
                            text=True, check=True, cwd=ROOT, timeout=300)
    one, sharded = json.loads(_answers(two_racks, 1)), json.loads(forked.stdout)
    assert sharded["shards"] == 2 and sharded["diagnoses"] == one["diagnoses"] and sharded["racks"] == one["racks"]


def _dies(code: int) -> None:
    os._exit(code)  # as a worker the kernel kills for memory ends: no answer, no exception


def test_a_worker_that_dies_is_said_in_one_line_with_what_to_do() -> None:
    with pytest.raises(FabricbotError, match=f"ended without an answer.*{PROCESSES_ENV}=1 judges the fleet"):
        in_processes(_dies, [(9,), (9,)])


class _Arrival:
    """A worker's answer that, unpickled where it arrives, is whether the collector was on there then."""

    def __reduce__(self) -> tuple[Any, tuple[()]]:
        return gc.isenabled, ()


def _answer() -> _Arrival:
    return _Arrival()


def test_a_worker_makes_its_call_without_the_cycle_collector() -> None:
    assert in_processes(gc.isenabled, [(), ()]) == [False, False]
    assert gc.isenabled()  # this process's is its own


def test_answers_arrive_with_the_collector_off_and_it_is_left_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    """A command (no other thread) forks its workers: its collector is off while their answers arrive."""
    monkeypatch.setattr(shards, "start_context", lambda: multiprocessing.get_context("fork"))
    assert gc.isenabled() and gc.get_freeze_count() == 0
    assert in_processes(_answer, [(), ()]) == [False, False]
    assert gc.isenabled() and gc.get_freeze_count() == 0
    gc.disable()
    try:
        in_processes(_answer, [(), ()])
        assert not gc.isenabled()  # a caller that had it off keeps it off
    finally:
        gc.enable()


def _many() -> list[list[int]]:
    return [[i] for i in range(20_000)]


def test_answers_join_the_oldest_generation_without_a_pass_over_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """Once the collector is back on, its first young collection would walk every object the answers hold (a fleet's
    answers: tens of milliseconds, freeing nothing): they are placed among the long-lived ones instead."""
    monkeypatch.setattr(shards, "start_context", lambda: multiprocessing.get_context("fork"))
    passes: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            passes.append(info["generation"])

    gc.callbacks.append(seen)
    try:
        answers = in_processes(_many, [(), ()])
        during = len(passes)
    finally:
        gc.callbacks.remove(seen)
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    assert all(id(a) in oldest for a in answers) and id(answers[0][-1]) in oldest
    assert during == 0 and gc.isenabled() and gc.get_freeze_count() == 0


def test_a_process_that_starts_workers_otherwise_keeps_its_collector_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bot, whose other threads run on, starts its workers from a fork server: neither its collector nor what
    it holds is touched."""
    monkeypatch.setattr(shards, "start_context", lambda: multiprocessing.get_context("spawn"))
    assert in_processes(_answer, [(), ()]) == [True, True]
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_a_killed_sweep_leaves_no_worker_behind() -> None:
    """A `kill` of the process that asked (a supervisor signals its main pid alone): its workers end too, forked or
    from the fork server (and the server with them), rather than wait forever on the pipes it shared with them."""
    script = ("import sys, threading, time; sys.path.insert(0, sys.argv[1]); "
              "from diagnostics.service.shards import in_processes\n"
              "if __name__ == '__main__':\n"
              "    if sys.argv[2] == 'threads': threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
              "    in_processes(time.sleep, [(60,), (60,)])\n")
    for way in ("fork", "threads"):
        asked = subprocess.Popen([sys.executable, "-c", script, str(ROOT), way], stderr=subprocess.DEVNULL)
        started = 2 if way == "fork" else 4  # the workers; and the fork server and the resource tracker
        workers: list[int] = []
        deadline = time.monotonic() + 60
        while len(workers) < started and time.monotonic() < deadline:
            time.sleep(0.1)
            workers = _descendants(asked.pid)
        assert len(workers) >= started, way
        asked.terminate()
        asked.wait(timeout=30)
        deadline = time.monotonic() + 20
        while any(_running(p) for p in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = [p for p in workers if _running(p)]
        for p in left:
            os.kill(p, signal.SIGKILL)
        assert not left, way


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        at = todo.pop()
        for task in Path(f"/proc/{at}/task").glob("*/children"):
            try:
                found = [int(c) for c in task.read_text().split()]
            except OSError:
                continue
            out += found
            todo += found
    return out


def _running(pid: int) -> bool:
    try:
        return "\nState:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


@pytest.fixture(scope="module")
def kernel_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store of events alone: a real kernel log (Xid 45, 74 and 154 within 0.1 s, nanosecond times) on 4 nodes."""
    root = tmp_path_factory.mktemp("kernel-logs") / "store"
    store = open_store(root)
    for n in range(4):
        store.ingest([ROOT / "fixtures" / "real" / "xid74_link_a100_vllm_1.txt"], node_id=f"node-{n}")
    store.db.close()
    return root


def test_a_store_of_events_alone_is_judged_to_its_newest_event_in_shards_too(kernel_logs: Path) -> None:
    """Each shard judges to the end the fleet's one read would: the newest event, to the microsecond above it (its
    nanoseconds included: the Xid 154 asking for a GPU reset is in the window)."""
    one, sharded = json.loads(_answers(kernel_logs, 1)), json.loads(_answers(kernel_logs, 2))
    assert sharded["shards"] == 2 and sharded["diagnoses"] == one["diagnoses"]
    for d in one["diagnoses"].values():
        assert d["fault_detected"] and any("Xid 154" in w for w in d["warnings"])


def test_a_long_window_keeps_together_the_jobs_its_read_holds(bundled_store: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Over 6 h windows a read holds 30 h of steps (the rules look back 5 windows), more than the correlation's day:
    the jobs kept whole are those of the 30 h."""
    spans: list[timedelta] = []
    asked = StoreSource.together

    def spied(self: StoreSource, *, end: datetime | None, span: timedelta) -> list[set[str]]:
        spans.append(span)
        return asked(self, end=end, span=span)

    monkeypatch.setattr(StoreSource, "together", spied)
    request = Request(window=timedelta(hours=6))
    one = fleet(StoreSource(bundled_store), request, processes=1)
    sharded = fleet(StoreSource(bundled_store), request, processes=2, shard_nodes=1)
    assert spans == [timedelta(hours=30)]  # asked once, by the sharded fleet
    assert {n: d.model_dump() for n, d in sharded.diagnoses.items()} == \
        {n: d.model_dump() for n, d in one.diagnoses.items()}


@pytest.mark.parametrize("start", ["fork", "forkserver"])
def test_the_watch_in_shards_answers_as_one_pass_does(start: str, bundled_store: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Each link's trend is its own: the nodes split across processes give the same watches, the same nodes left
    out and why, and the same nodes already over a rule; forked from a command line, or from a fork server beside
    the bot's threads (`/fabric watch`, the scheduled digest)."""
    calls: list[int] = []
    forked = shards.in_processes

    def spied(work: Any, asked: Any) -> Any:
        calls.append(len(asked))
        return forked(work, asked)

    used = _start_methods(monkeypatch)
    monkeypatch.setattr(fleetwide, "in_processes", spied)
    if start == "fork":
        monkeypatch.setattr(shards.threading, "active_count", lambda: 1)  # as a command line's workers are
    source = StoreSource(bundled_store)
    answers = []
    for processes in (1, 2):
        unjudged: dict[str, str] = {}
        over: set[str] = set()
        with _another_thread() if start == "forkserver" and processes > 1 else nullcontext():
            found = watch(source, unjudged=unjudged, over=over, processes=processes, shard_nodes=1)
        answers.append(([w.model_dump(mode="json") for w in found], unjudged, over))
    assert calls == [2] and used == [start]
    assert answers[1] == answers[0]
    watches, unjudged, over = answers[0]
    assert watches and over and 0 < len(unjudged) < len(source.nodes())  # some judged, some left out and why
