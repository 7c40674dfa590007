"""How the installed command leaves: its answer whole and its code kept, its objects kept from the last collection."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import bot.cli
import bot.launch
from tests.conftest import FIXTURES, ROOT

INSTALLED = [sys.executable, "-m", "bot.launch"]  # what the installed `fabricbot` runs (pyproject's script)


def test_the_command_leaves_with_its_code_and_its_objects_kept_from_the_last_collection(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bot.cli, "main", lambda: 3)
    gc.unfreeze()
    try:
        with pytest.raises(SystemExit) as left:
            bot.cli.run()
        assert left.value.code == 3
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_the_installed_command_is_the_launcher() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    assert scripts == {"fabricbot": "bot.launch:run"}


def test_the_launcher_imports_without_the_collector_and_gives_it_back_frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    """The modules are frozen while the collector is off, and the command runs with it on and them frozen."""
    seen: list[tuple[str, bool, int]] = []
    freeze = gc.freeze

    def frozen() -> None:
        seen.append(("freeze", gc.isenabled(), 0))
        freeze()

    def command() -> None:
        seen.append(("command", gc.isenabled(), gc.get_freeze_count()))
        raise SystemExit(4)

    monkeypatch.setattr(gc, "freeze", frozen)
    monkeypatch.setattr(bot.cli, "run", command)
    gc.unfreeze()
    try:
        with pytest.raises(SystemExit) as left:
            bot.launch.run()
        assert left.value.code == 4
        assert seen[0] == ("freeze", False, 0) and seen[1][:2] == ("command", True) and seen[1][2] > 0
    finally:
        gc.unfreeze()
        gc.enable()


@pytest.mark.parametrize("node", ["hpc-gpu-node-12", "no-such-node"])
def test_a_piped_answer_is_whole_and_its_code_kept(node: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Through the installed command's launcher: the answer to a pipe is the one `main` gives in this process, to
    its end, and so is the exit code the shell sees (an unknown node's 2 among them)."""
    args = ["analyze", str(FIXTURES / "fleet"), "--node", node, "--json"]
    code = bot.cli.main(args)
    here = capsys.readouterr()
    done = subprocess.run([*INSTALLED, *args], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == code, (done.returncode, code, done.stderr)
    assert done.stderr == here.err
    if code == 0:
        assert json.loads(done.stdout) == json.loads(here.out)
        assert done.stdout.endswith("}\n")


def test_a_reader_gone_early_is_no_error(bundled_store: Path) -> None:
    """`fabricbot sweep --json | head -c 1`: the reader leaves long before the answer (most of a megabyte, more than
    a pipe holds) is out; the command ends as it would have, with the status it would have, and nothing is printed
    about it."""
    with subprocess.Popen([*INSTALLED, "sweep", "--store", str(bundled_store), "--json"],
                          cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as child:
        assert child.stdout is not None and child.stderr is not None
        assert child.stdout.read(1) == b"{"
        child.stdout.close()
        err = child.stderr.read().decode()
        code = child.wait(timeout=120)
    assert "Traceback" not in err and "Exception ignored" not in err and "Error" not in err, err
    whole = subprocess.run([*INSTALLED, "sweep", "--store", str(bundled_store), "--json"],
                           cwd=ROOT, capture_output=True, check=False)
    assert code == whole.returncode != 0, (code, err)  # the sweep's own status (offenders), not 0 for the pipe
