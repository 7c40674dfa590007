"""Values a person types (durations, times, threshold overrides), read the same way by every command and the bot."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from diagnostics import InputError, Thresholds, limits, load_thresholds
from diagnostics import format as fmt

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|min|h|d)\s*$", re.IGNORECASE)
_UNITS = {"s": "seconds", "m": "minutes", "min": "minutes", "h": "hours", "d": "days"}


def parse_duration(text: str) -> timedelta:
    """`90m`, `6h`, `2d` -> a positive timedelta; ValueError otherwise."""
    match = _DURATION.match(text)
    backwards = match is None and _DURATION.match(text.strip().removeprefix("-")) is not None  # -2h
    if backwards or (match is not None and float(match[1]) <= 0):
        raise ValueError(f"a duration is longer than zero, like 6h, 90m or 2d: {text!r}")
    if not match:
        raise ValueError(f"not a duration like 6h, 90m or 2d: {text!r}")
    return timedelta(**{_UNITS[match[2].lower()]: float(match[1])})


def parse_window(text: str) -> timedelta:
    """A window: a duration (`6h`, `90m`, `2d`) or a bare number of hours (`1.5`), within the limits file's asked
    window (one minute to a century); ValueError otherwise, naming the value."""
    try:
        hours = float(text)
    except ValueError:
        hours = parse_duration(text).total_seconds() / 3600
    least, most = limits().asked_hours
    if not least <= hours <= most:  # NaN and infinity included
        raise ValueError(f"not a window: {text!r} (wanted: {window_wanted()})")
    return timedelta(hours=hours)


def window_wanted(quote: str = "") -> str:
    """What a window option takes, as every refusal of one says it (`quote`: how each example is quoted)."""
    least, most = limits().asked_hours
    return (f"a duration like {quote}6h{quote}, {quote}90m{quote} or {quote}2d{quote}, or a number of hours, from "
            f"{fmt.period(least * 3600)} to {fmt.hours(most)}")


def time_of_day(text: str) -> tuple[int, int]:
    """`08:30` -> (8, 30), a UTC time of day; ValueError otherwise."""
    hours, _, minutes = text.strip().partition(":")
    if not (hours.isdigit() and minutes.isdigit() and int(hours) < 24 and int(minutes) < 60):
        raise ValueError(f"not a time of day like 08:30: {text!r}")
    return int(hours), int(minutes)


def window_type(text: str) -> timedelta:
    """`parse_window` as an argparse type."""
    try:
        return parse_window(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def hours_type(text: str) -> float:
    """`window_type` in hours, for the options that take a number of hours."""
    return window_type(text).total_seconds() / 3600


def parse_time(text: str, *, field: str) -> datetime:
    """An ISO time (`2026-03-02T12:00:00Z`); UTC when it names no zone."""
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InputError("expected an ISO time such as 2026-03-02T12:00:00Z", field=field, value=text) from None
    return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)


END_OPTION = "--end TIME"  # as the warning on readings with no time names it


def add_end_option(parser: argparse.ArgumentParser) -> None:
    """`--end`, one option for every command that answers a node's window (`analyze`, `ticket`, `render`): the same past
    window asked of each door."""
    parser.add_argument("--end", help="the window's end (ISO time, UTC if no zone); default: the newest sample")


def end_of(args: argparse.Namespace) -> datetime | None:
    """The window's end `--end` asks for; None: the newest sample."""
    return parse_time(args.end, field="--end") if args.end else None


def add_threshold_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--thresholds", metavar="FILE", help="a thresholds TOML file overriding the defaults")
    parser.add_argument("--profile", help="a named threshold profile from the thresholds file (e.g. dcgm)")
    parser.add_argument("--set", action="append", default=[], metavar="RULE=VALUE",
                        help="override one rule's threshold for this run (repeatable)")


def parse_overrides(values: Sequence[str]) -> dict[str, float]:
    out = {}
    for item in values:
        name, sep, value = item.partition("=")
        try:
            if not sep:
                raise ValueError
            out[name.strip()] = float(value)
        except ValueError:
            raise InputError("expected RULE=NUMBER", field="--set", value=item) from None
        if math.isnan(out[name.strip()]) or out[name.strip()] < 0:
            raise InputError("a threshold is a number of 0 or more", field="--set", value=item)
    return out


def thresholds_from(args: argparse.Namespace) -> Thresholds:
    """The thresholds `add_threshold_options` asked for."""
    return load_thresholds(args.thresholds, overrides=parse_overrides(args.set), profile=args.profile)
