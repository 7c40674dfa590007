"""Times as tables and step logs write them: ISO 8601 with any offset, or a number since the Unix epoch.

Exporters and trainers write epoch times in seconds (`time.time()`), milliseconds (JavaScript, Prometheus),
microseconds or nanoseconds (`time.time_ns()`, Go). The unit is told apart by magnitude, as a time of this century
is in each: about 1.7e9 s, 1.7e12 ms, 1.7e15 us, 1.7e18 ns; the reading says which unit it took, once per file.
A time column with values none of which reads as a time is refused, naming the column and one value: a table whose
times are there but unreadable is never taken as read now.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
import pandas as pd

from .. import values
from ..values import TIME_RANGE

UTC_NS = "datetime64[ns, UTC]"
Unit = Literal["s", "ms", "us", "ns"]
# (unit, what it is called, the magnitude at which the next unit starts): 1e11 s is the year 5138, 1e11 ms 1973
EPOCH_UNITS: tuple[tuple[Unit, str, float], ...] = (
    ("s", "seconds", 1e11), ("ms", "milliseconds", 1e14), ("us", "microseconds", 1e17),
    ("ns", "nanoseconds", math.inf))
UNIT_NAMES: dict[str, str] = {unit: name for unit, name, _ in EPOCH_UNITS}


def epoch_unit(value: float) -> Unit:
    """The unit of an epoch time, by its magnitude."""
    size = abs(value)
    return next(unit for unit, _, below in EPOCH_UNITS if size < below)


def read_times(raw: pd.Series) -> tuple[pd.Series, list[Unit]]:
    """A column of times as written (text, numbers or both) as UTC times, NaT where a value is no time or lies
    outside what a UTC nanosecond time holds, and the epoch units it took (in EPOCH_UNITS order)."""
    if isinstance(raw.dtype, pd.DatetimeTZDtype):
        return raw.dt.tz_convert("UTC").astype(UTC_NS), []
    text = raw.astype("string").str.strip()
    numbers = pd.to_numeric(text.where(text.str.fullmatch(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?", na=False)),
                            errors="coerce").astype("float64")
    out = pd.Series(pd.NaT, index=raw.index, dtype=UTC_NS)
    is_number = numbers.notna() & np.isfinite(numbers)
    units: list[Unit] = []
    if is_number.any():
        size = numbers.abs()
        low = 0.0
        for unit, _, below in EPOCH_UNITS:
            mask = is_number & (size >= low) & (size < below)
            low = below
            if not mask.any():
                continue
            units.append(unit)
            out[mask] = _epoch(text[mask], numbers[mask], unit)
    words = text.notna() & ~is_number & (text != "")
    if words.any():  # a year past 2262 parses to another unit than nanoseconds: no time here, as outside TIME_RANGE
        parsed = pd.to_datetime(text[words], utc=True, errors="coerce", format="mixed")
        inside = parsed.notna() & (parsed >= TIME_RANGE[0]) & (parsed <= TIME_RANGE[1])
        out[inside[inside].index] = parsed[inside].dt.as_unit("ns")
    return out.where(out.isna() | out.between(*TIME_RANGE)), units


def _epoch(text: pd.Series, numbers: pd.Series, unit: Unit) -> pd.Series:
    """Epoch numbers of one unit as UTC times; whole nanoseconds are read from their digits (a float holds 1.7e18
    only to a quarter of a microsecond)."""
    if unit == "ns" and bool(text.str.fullmatch(r"[-+]?\d+").all()):
        whole = pd.to_numeric(text, errors="coerce")
        if whole.dtype == np.int64:
            return pd.to_datetime(whole, unit="ns", utc=True, errors="coerce")
    try:
        return pd.to_datetime(numbers, unit=unit, utc=True, errors="coerce")
    except (OverflowError, ValueError, pd.errors.OutOfBoundsDatetime):
        return pd.Series(pd.NaT, index=numbers.index, dtype=UTC_NS)


def epoch_time(raw: Any) -> tuple[pd.Timestamp, Unit] | None:
    """One value that is an epoch number (a JSON number, or text that is only digits): (UTC time, unit); None
    when it is no number or lies outside what a UTC nanosecond time holds."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, str):
        text = raw.strip()
        digits = text.lstrip("+-")
        if digits.isdigit():
            raw = int(text)  # whole: exact to the nanosecond
        elif digits.replace(".", "", 1).isdigit():
            raw = float(text)
        else:
            return None
    if not isinstance(raw, int | float) or not math.isfinite(raw):
        return None
    unit = epoch_unit(raw)
    try:
        stamp = values.time(pd.Timestamp(raw, unit=unit, tz="UTC"))
    except (OverflowError, ValueError):
        return None
    return (stamp, unit) if stamp is not None else None


def epoch_note(column: str, units: list[Unit]) -> str:
    """The once-per-file word on the epoch units a time column was read in."""
    named = " and ".join(UNIT_NAMES[u] for u in units)
    return (f"{column}: epoch {named} (told by magnitude), read as UTC"
            + ("; the column mixes units, each value read in its own" if len(units) > 1 else ""))
