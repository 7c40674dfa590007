"""The progress bar of long commands: drawn on a terminal, silent into a pipe or a file and with --json."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from bot.cli import main
from bot.progress import progress_bar
from tests.conftest import snapshot_dict


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_the_bar_and_a_pipe_gets_nothing() -> None:
    tty, pipe = Terminal(), io.StringIO()
    for stream in (tty, pipe):
        with progress_bar(3, "ingest", unit="file", stream=stream) as advance:
            for _ in range(3):
                advance(1)
    assert "ingest" in tty.getvalue() and "3/3" in tty.getvalue()
    assert pipe.getvalue() == ""


def test_quiet_draws_nothing_even_on_a_terminal() -> None:
    tty = Terminal()
    with progress_bar(2, "eval", quiet=True, stream=tty) as advance:
        advance(2)
    assert tty.getvalue() == ""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    inputs = tmp_path / "in"
    inputs.mkdir()
    for i in range(3):
        (inputs / f"snap-{i}.json").write_text(json.dumps(snapshot_dict(node_id=f"node-{i}")))
    return inputs


def test_ingest_of_many_files_shows_its_progress_on_a_terminal(folder: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    tty = Terminal()
    monkeypatch.setattr(sys, "stderr", tty)
    assert main(["ingest", str(folder), "--store", str(tmp_path / "store")]) == 0
    drawn = tty.getvalue()
    assert "ingest" in drawn and "6/6" in drawn  # three files read, three kept
    capsys.readouterr()


def test_ingest_with_json_or_into_a_pipe_prints_no_bar(folder: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    tty = Terminal()
    monkeypatch.setattr(sys, "stderr", tty)
    assert main(["ingest", str(folder), "--json"]) == 0
    assert tty.getvalue() == ""
    json.loads(capsys.readouterr().out)  # the JSON is whole
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert main(["ingest", str(folder)]) == 0
    assert "ingest" not in sys.stderr.getvalue()  # type: ignore[attr-defined]


def test_synth_advances_once_per_node_and_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    tty = Terminal()
    monkeypatch.setattr(sys, "stderr", tty)
    assert main(["synth", "--out", str(tmp_path / "fleet"), "--nodes", "3", "--hours", "6", "--scrapes", "0",
                 "--no-life"]) == 0
    assert "synth" in tty.getvalue() and "8/8" in tty.getvalue()  # 3 nodes, 4 tables, nodes.csv
    capsys.readouterr()
