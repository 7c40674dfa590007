"""The work queue: jobs in the order they came, deferred ones (pictures) one at a time once no other job waits or
runs, a full queue refused at once, a failure logged and kept on its future; a question asked twice at once
answered once."""

from __future__ import annotations

import threading
import time

import pytest

from bot.work import Busy, InFlight, WorkQueue


def test_a_deferred_job_waits_for_the_jobs_queued_after_it() -> None:
    queue = WorkQueue("test", workers=1, limit=8)
    gate, ran = threading.Event(), []
    try:
        first = queue.submit(gate.wait, 60)
        queue.later(ran.append, "picture of 1")
        queue.submit(ran.append, "summary 2")
        queue.later(ran.append, "picture of 2")
        last = queue.submit(ran.append, "summary 3")
        gate.set()
        first.result(timeout=60)
        last.result(timeout=60)
    finally:
        queue.shutdown()
    assert ran == ["summary 2", "summary 3", "picture of 1", "picture of 2"]


def test_a_full_queue_refuses_a_job_and_a_full_deferred_lane_runs_the_job_on_the_callers_thread() -> None:
    queue = WorkQueue("test", workers=1, limit=1)
    gate = threading.Event()
    try:
        queue.submit(gate.wait, 60)
        queue.submit(gate.wait, 60)
        with pytest.raises(Busy, match="the test queue is full"):
            queue.submit(print)
        where: list[str] = []
        for _ in range(3):  # one deferred job may wait: the next two run here, now
            queue.later(lambda: where.append(threading.current_thread().name))
        assert where == [threading.current_thread().name] * 2
    finally:
        gate.set()
        queue.shutdown()


def test_a_failed_job_is_logged_and_its_future_holds_the_error(caplog: pytest.LogCaptureFixture) -> None:
    queue = WorkQueue("test", workers=2, limit=4)
    try:
        future = queue.submit(int, "not a number")
        with pytest.raises(ValueError, match="not a number"):
            future.result(timeout=60)
        assert queue.submit(int, "7").result(timeout=60) == 7  # its slot was given back
    finally:
        queue.shutdown()
    assert "a test job failed" in caplog.text


def test_a_question_asked_while_the_same_one_is_answered_shares_its_answer_and_its_error() -> None:
    in_flight, started, gate, calls = InFlight(), threading.Event(), threading.Event(), []

    def slow(value: str) -> str:
        calls.append(value)
        started.set()
        gate.wait(60)
        if value == "bad":
            raise ValueError("no such node")
        return value.upper()

    for value in ("node-12", "bad"):
        calls.clear()
        started.clear()
        gate.clear()
        got: list[object] = []

        def ask(value: str = value, got: list[object] = got) -> None:
            try:
                got.append(in_flight.run(value, lambda: slow(value)))
            except ValueError as exc:
                got.append(str(exc))

        first = threading.Thread(target=ask)
        first.start()
        assert started.wait(60)
        others = [threading.Thread(target=ask) for _ in range(3)]
        for t in others:
            t.start()
        deadline = time.monotonic() + 60
        while in_flight.joined(value) < 3 and time.monotonic() < deadline:  # all three wait on the first
            time.sleep(0.01)
        gate.set()
        for t in [first, *others]:
            t.join(60)
        assert calls == [value]  # one analysis for the four questions
        assert got == ["NODE-12"] * 4 if value == "node-12" else got == ["no such node"] * 4
    assert in_flight.run("node-12", lambda: "asked afresh") == "asked afresh"  # a finished answer is never reused


def test_deferred_jobs_never_take_the_room_of_commands() -> None:
    queue = WorkQueue("test", workers=1, limit=1)
    gate, ran = threading.Event(), []
    try:
        queue.submit(gate.wait, 60)
        queue.later(ran.append, "picture")  # waits in a lane of its own
        last = queue.submit(ran.append, "summary")  # still room for a command
        gate.set()
        last.result(timeout=60)
    finally:
        queue.shutdown()
    assert ran == ["summary", "picture"]


def test_a_deferred_job_runs_without_a_shutdown_and_its_thread_ends_when_none_waits() -> None:
    queue = WorkQueue("idle", workers=1, limit=4)
    done = threading.Event()
    queue.later(done.set)
    assert done.wait(60)
    deadline = time.monotonic() + 60
    while any(t.name == "fabricbot-idle-later" for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not any(t.name == "fabricbot-idle-later" for t in threading.enumerate())  # nothing left to hold an exit
    queue.later(done.clear)  # and a later one starts it again
    deadline = time.monotonic() + 60
    while done.is_set() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not done.is_set()
    queue.shutdown()
