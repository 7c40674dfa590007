from __future__ import annotations

import argparse
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.listeners.commands import UsageError, parse
from bot.options import hours_type, parse_duration, parse_overrides, parse_time, window_type
from diagnostics import InputError, load_thresholds
from diagnostics.errors import ConfigError


@pytest.mark.parametrize(("text", "want"), [("90m", timedelta(minutes=90)), ("6h", timedelta(hours=6)),
                                            ("2d", timedelta(days=2)), (" 30 min ", timedelta(minutes=30))])
def test_durations(text: str, want: timedelta) -> None:
    assert parse_duration(text) == want


@pytest.mark.parametrize("text", ["0h", "-1h", "h", "6w", "0", "-1", "nan", "inf", "1e9", "30s", "0.5m",
                                  "99999999d", "36501d"])
def test_bad_windows_are_refused_everywhere_naming_the_value(text: str) -> None:
    """A window out of one minute to a century (the limits file's), or no window at all, is refused alike by every
    command's `--window` and by `/fabric`: `sweep --window nan` (or `inf`, `1e9`) once ended in a traceback."""
    with pytest.raises(argparse.ArgumentTypeError, match=re.escape(repr(text))):
        window_type(text)
    with pytest.raises(argparse.ArgumentTypeError, match=re.escape(repr(text))):
        hours_type(text)
    with pytest.raises(UsageError, match="--window"):
        parse(f"node-1 --window {text}")


@pytest.mark.parametrize(("text", "hours"), [("2", 2.0), ("1.5", 1.5), ("2h", 2.0), ("90m", 1.5), ("1d", 24.0),
                                             ("1m", 1 / 60), ("8784", 8784.0), ("1000d", 24_000.0)])
def test_every_door_reads_a_window_alike(text: str, hours: float) -> None:
    """A duration or a bare number of hours: `sweep --window 2` read 2 h, `analyze --window 2` refused it."""
    from bot.cli import build_parser

    for command in (["analyze", "--store", "s", "--node", "n"], ["sweep"], ["ticket", "n"]):
        args = build_parser(command[0]).parse_args([*command, "--window", text])
        got = args.window if isinstance(args.window, float) else args.window.total_seconds() / 3600
        assert got == pytest.approx(hours), command
    assert parse(f"node-1 --window {text}").window_hours == pytest.approx(hours)


def test_a_duration_names_its_unit() -> None:
    with pytest.raises(ValueError):
        parse_duration("6")


def test_the_bot_and_the_command_line_read_a_window_alike() -> None:
    assert parse("node-1 --window 90m").window_hours == 1.5


@pytest.mark.parametrize("text", ["node-12 --window=6h", "node-12 --window 6h", "--window=6h node-12",
                                  "--window 6h node-12"])
def test_the_bot_takes_an_option_in_every_form_the_command_line_does(text: str) -> None:
    """`/fabric node-12 --window=6h` was refused while `fabricbot analyze --window=6h` (argparse) takes it."""
    from bot.cli import build_parser

    options = [word for word in text.split() if word != "node-12"]  # the same option, as typed
    cli = build_parser().parse_args(["analyze", "--store", "s", "--node", "node-12", *options])
    request = parse(text)
    assert (request.verb, request.target) == ("node", "node-12")
    assert request.window_hours == cli.window.total_seconds() / 3600 == 6.0


@pytest.mark.parametrize("text", ["node-12 --window", "node-12 --window="])
def test_a_window_with_no_duration_is_said_to_want_one(text: str) -> None:
    with pytest.raises(UsageError, match="`--window` wants a duration"):
        parse(text)


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


@pytest.mark.parametrize("value", ["-1", "nan", "NaN"])
def test_a_threshold_that_would_judge_every_link_failing_or_none_is_refused(value: str, tmp_path: Path) -> None:
    """`--set nvlink_replay=-1` made every link fail (0/h > -1/h) and `=nan` judged 8,900 replays/h healthy: both are
    refused with the field and value, through `--set` and through a thresholds file's profile; infinity turns a rule
    off and is taken."""
    with pytest.raises(InputError, match="a threshold is a number of 0 or more") as caught:
        parse_overrides([f"nvlink_replay={value}"])
    assert "--set" in str(caught.value) and f"nvlink_replay={value}" in str(caught.value)
    assert parse_overrides(["nvlink_replay=inf"]) == {"nvlink_replay": float("inf")}
    own = tmp_path / "mine.toml"
    own.write_text(f'[profile.mine]\nnvlink_replay = "{value}"\n')
    with pytest.raises(ConfigError, match="rule 'nvlink_replay': a threshold is a number of 0 or more"):
        load_thresholds(own, profile="mine")


def test_two_nodes_in_one_command_are_told_to_ask_one_at_a_time() -> None:
    """`/fabric rack-01-c01 rack-01-c02` said "unexpected `rack-01-c02`": nothing told the person to send one command
    per node, or how to ask about a rack or every node."""
    with pytest.raises(UsageError, match=r"one node a command: `/fabric rack-01-c01`, then `/fabric rack-01-c02`"):
        parse("rack-01-c01 rack-01-c02")
    with pytest.raises(UsageError, match="unexpected `--frobnicate`"):
        parse("rack-01-c01 --frobnicate")


def test_a_mistyped_command_with_its_argument_is_offered_the_command() -> None:
    """`/fabric rakc rack-12` was read as two nodes, and `jbo` was not close enough to `job`: a word that is no node
    name and close to a command is offered it, with the argument typed; a name with digits never is."""
    for typed, meant in (("rakc rack-12", "rack rack-12"), ("jbo 4411", "job 4411"),
                         ("mainteance n1", "maintenance n1")):
        with pytest.raises(UsageError, match=rf"did you mean `/fabric {meant}`\? `/fabric help` lists the commands"):
            parse(typed)
    with pytest.raises(UsageError, match="one node a command"):
        parse("rack-12 rack-13")
