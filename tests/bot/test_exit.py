"""How the installed command leaves: its answer whole and its code kept, exit handlers run, without the teardown."""

from __future__ import annotations

import atexit
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import bot.cli
from tests.conftest import FIXTURES, ROOT


class _Left(Exception):
    def __init__(self, how: str, code: object) -> None:
        super().__init__(how, code)
        self.how, self.code = how, code


def _leaving(monkeypatch: pytest.MonkeyPatch, code: int) -> list[str]:
    said: list[str] = []

    def quick(value: int) -> None:
        raise _Left("quick", value)

    def usual(value: object = None) -> None:
        raise _Left("usual", value)

    monkeypatch.setattr(bot.cli, "main", lambda: code)
    monkeypatch.setattr(bot.cli.os, "_exit", quick)
    monkeypatch.setattr(bot.cli.sys, "exit", usual)
    return said


def test_the_command_runs_its_exit_handlers_then_leaves_with_its_code(monkeypatch: pytest.MonkeyPatch) -> None:
    said = _leaving(monkeypatch, 3)
    atexit.register(said.append, "handler")
    try:
        with pytest.raises(_Left) as left:
            bot.cli.run()
    finally:
        atexit.unregister(said.append)
    assert (left.value.how, left.value.code) == ("quick", 3)
    assert said == ["handler"]


def test_a_thread_still_running_gets_the_usual_ending(monkeypatch: pytest.MonkeyPatch) -> None:
    _leaving(monkeypatch, 0)
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait, daemon=False)
    worker.start()
    try:
        with pytest.raises(_Left) as left:
            bot.cli.run()
    finally:
        stop.set()
        worker.join()
    assert (left.value.how, left.value.code) == ("usual", 0)


def test_a_profiled_command_writes_its_profile(tmp_path: Path) -> None:
    """`python -m cProfile -o FILE -m bot.cli ...` (as bench_store_window.py runs it): the profiler writes its figures
    after the command returns, so the command must return."""
    out = tmp_path / "analyze.prof"
    done = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(out), "-m", "bot.cli", "analyze",
                           str(FIXTURES / "fleet"), "--node", "hpc-gpu-node-12", "--json"], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert out.stat().st_size > 0


@pytest.mark.parametrize("node", ["hpc-gpu-node-12", "no-such-node"])
def test_a_piped_answer_is_whole_and_its_code_kept(node: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Through `python -m bot.cli`, as the installed command runs: the answer to a pipe is the one `main` gives in
    this process, to its end, and so is the exit code the shell sees (an unknown node's 2 among them)."""
    args = ["analyze", str(FIXTURES / "fleet"), "--node", node, "--json"]
    code = bot.cli.main(args)
    here = capsys.readouterr()
    done = subprocess.run([sys.executable, "-m", "bot.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          check=False)
    assert done.returncode == code, (done.returncode, code, done.stderr)
    assert done.stderr == here.err
    if code == 0:
        assert json.loads(done.stdout) == json.loads(here.out)
        assert done.stdout.endswith("}\n")


def test_a_reader_gone_early_is_no_error(bundled_store: Path) -> None:
    """`fabricbot sweep --json | head -c 1`: the reader leaves long before the answer (most of a megabyte, more than
    a pipe holds) is out; the command ends as it would have, and nothing is printed about it."""
    with subprocess.Popen([sys.executable, "-m", "bot.cli", "sweep", "--store", str(bundled_store), "--json"],
                          cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as child:
        assert child.stdout is not None and child.stderr is not None
        assert child.stdout.read(1) == b"{"
        child.stdout.close()
        err = child.stderr.read().decode()
        code = child.wait(timeout=120)
    assert "Traceback" not in err and "Exception ignored" not in err and "Error" not in err, err
    assert code == 0, (code, err)
