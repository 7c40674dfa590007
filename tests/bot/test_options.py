from __future__ import annotations

import argparse
from datetime import UTC, datetime, timedelta

import pytest

from bot.listeners.commands import UsageError, parse
from bot.options import parse_duration, parse_overrides, parse_time, window_type
from diagnostics import InputError


@pytest.mark.parametrize(("text", "want"), [("90m", timedelta(minutes=90)), ("6h", timedelta(hours=6)),
                                            ("2d", timedelta(days=2)), (" 30 min ", timedelta(minutes=30))])
def test_durations(text: str, want: timedelta) -> None:
    assert parse_duration(text) == want


@pytest.mark.parametrize("text", ["0h", "-1h", "6", "h", "6w"])
def test_bad_durations_are_refused_everywhere(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)
    with pytest.raises(argparse.ArgumentTypeError):
        window_type(text)
    with pytest.raises(UsageError, match="--window"):
        parse(f"node-1 --window {text}")


def test_the_bot_and_the_command_line_read_a_window_alike() -> None:
    assert parse("node-1 --window 90m").window_hours == 1.5


def test_times_are_utc() -> None:
    assert parse_time("2026-03-02T12:00:00+02:00", field="--at") == datetime(2026, 3, 2, 10, tzinfo=UTC)
    assert parse_time("2026-03-02T12:00:00Z", field="--at") == datetime(2026, 3, 2, 12, tzinfo=UTC)
    assert parse_time("2026-03-02 12:00", field="--end").tzinfo == UTC
    with pytest.raises(InputError, match="--end"):
        parse_time("yesterday", field="--end")


def test_overrides() -> None:
    assert parse_overrides(["nvlink_replay=500", " crc = 7"]) == {"nvlink_replay": 500.0, "crc": 7.0}
    with pytest.raises(InputError, match="RULE=NUMBER"):
        parse_overrides(["nvlink_replay"])
