"""The file door (`fabricbot analyze FILE`) and the store door (`fabricbot ingest FILE --store S` then `analyze
--store S`) answer one question alike: the window its rates are over."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from diagnostics import format as fmt
from tests.bot.commands.conftest import Cli
from tests.conftest import FIXTURES

REAL = FIXTURES / "real"
NODE = "n1"


def _answer(cli: Cli, *argv: str) -> dict[str, Any]:
    code, out, err = cli(*argv, "--json")
    assert code in (0, 1), err
    answer: dict[str, Any] = json.loads(out)
    return answer


def _stored(cli: Cli, path: Path, store: Path, *at: str) -> None:
    code, _, err = cli("ingest", str(path), "--store", str(store), "--node", NODE, *at)
    assert code == 0, err


def _dates(path: Path) -> list[datetime]:
    """The `date` lines that time the file's readings."""
    return [datetime.strptime(line.strip(), "%a %b %d %H:%M:%S UTC %Y")
            for line in path.read_text().splitlines() if re.fullmatch(r"\w{3} \w{3} \d+ [\d:]+ UTC \d{4}", line)]


def test_a_window_longer_than_the_readings_says_the_span_they_cover_through_each_door(cli: Cli,
                                                                                     tmp_path: Path) -> None:
    path = REAL / "nvlink_e_v100_short_form_dated_2.txt"
    times = _dates(path)
    covered = (max(times) - min(times)).total_seconds() / 3600
    store = tmp_path / "store"
    _stored(cli, path, store)
    answers = {"file": _answer(cli, "analyze", str(path), "--node", NODE, "--window", "1000d"),
               "store": _answer(cli, "analyze", "--store", str(store), "--node", NODE, "--window", "1000d")}
    sweep = _answer(cli, "sweep", "--store", str(store), "--window", "1000d")
    for door, answer in [*answers.items(), ("sweep", sweep)]:
        assert answer["window_hours"] == pytest.approx(covered), door
        assert answer["window_asked_hours"] == pytest.approx(24_000), door
    for answer in answers.values():
        assert len([w for w in answer["warnings"] if "window was asked" in w]) == 1
    assert answers["file"]["warnings"][-1] == answers["store"]["warnings"][-1]
    for argv in (["analyze", str(path), "--node", NODE], ["analyze", "--store", str(store), "--node", NODE],
                 ["sweep", "--store", str(store)]):
        _, out, _ = cli(*argv, "--window", "1000d")
        assert f"window {fmt.hours(covered)} to" in out and f"{fmt.hours(24_000)} asked" in out, argv
        assert f"window {fmt.hours(24_000)}" not in out


def test_a_window_the_readings_reach_is_said_as_asked(cli: Cli) -> None:
    path = REAL / "nvlink_e_v100_short_form_dated_2.txt"
    answer = _answer(cli, "analyze", str(path), "--node", NODE, "--window", "15m")
    assert answer["window_hours"] == pytest.approx(0.25)
    assert answer["window_asked_hours"] is None
    assert not [w for w in answer["warnings"] if "window was asked" in w]
