"""Value checks at the boundary: a number a reader takes from its input is one its counter, index or gauge can hold.

Every reader takes its numbers through here, so whatever an input spells where a count should be (NaN, inf,
-1, 1e30, 2**64, 0.5) never reaches a table: a counter is a whole number from 0 to its width, an index fits
its component, a gauge is finite, non-negative and below its bound. The bounds are data (`data/limits.toml`,
each with its source). `Refused` says why a value was refused; the reader warns naming the line and the value.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .config.datafiles import DATA_DIR, read_toml
from .errors import ConfigError
from .metrics import AER_COUNTERS, COUNTERS

LIMITS_FILE = DATA_DIR / "limits.toml"
ENV_FILE = "FABRICBOT_LIMITS"
# What tools print where they have no value: no number, and nothing to warn about.
NO_VALUE = frozenset({"", "n/a", "[n/a]", "na", "-", "--", "unknown", "not supported", "[not supported]",
                      "not available", "none", "null"})
_INTEGER = re.compile(r"^\+?\d+$")
# The times a reading may have: from the Unix epoch to the last instant a nanosecond timestamp holds (2262).
TIME_RANGE = (pd.Timestamp("1970-01-01", tz="UTC"), pd.Timestamp.max.tz_localize("UTC"))


class Refused(ValueError):
    """A value an input holds that its column cannot: the message says why."""


@dataclass(frozen=True)
class Limits:
    counter_bits: dict[str, int]
    index: dict[str, int]
    gauge: dict[str, float]
    window_hours: tuple[float, float]
    rate_min_interval_s: float
    paste_max_outputs: int
    asked_hours: tuple[float, float] = (1 / 60, 876_000.0)  # a window a person asks of histories (--window)
    paste_sniff_bytes: int = 4 << 20  # how much of a long input is looked through for a paste's outputs

    def counter_max(self, kind: str) -> int:
        return (1 << self.counter_bits[kind]) - 1


@cache
def _load(path: Path) -> Limits:
    data = read_toml(path, "limits file")
    try:
        bits = {str(k): int(v) for k, v in data["counter"].items()}
        index = {str(k): int(v) for k, v in data["index"].items()}
        gauge = {str(k): float(v) for k, v in data["gauge"].items()}
        window = (float(data["window"]["min_hours"]), float(data["window"]["max_hours"]))
        asked = (window[0], float(data["window"].get("max_asked_hours", Limits.asked_hours[1])))
        rate_min = float(data["rate"]["min_interval_s"])
        outputs = int(data["paste"]["max_outputs"])
        sniff = int(data["paste"].get("sniff_bytes", Limits.paste_sniff_bytes))
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"{path.name}: needs [counter], [index], [gauge], [window], [rate] and [paste] "
                          f"tables: {exc}") from None
    if not all(0 < b <= 64 for b in bits.values()) or not 0 < window[0] < window[1]:
        raise ConfigError(f"{path.name}: counter widths are 1-64 bits and 0 < min_hours < max_hours")
    if not window[1] <= asked[1] <= 2_000_000:  # hours: a window's nanoseconds fit in 64 bits
        raise ConfigError(f"{path.name}: [window] max_asked_hours is at least max_hours and at most 2,000,000")
    if not 0 < rate_min < window[1] * 3600:
        raise ConfigError(f"{path.name}: [rate] min_interval_s is above 0 and below the longest window")
    if outputs < 1:
        raise ConfigError(f"{path.name}: [paste] max_outputs is at least 1")
    if sniff < 0:
        raise ConfigError(f"{path.name}: [paste] sniff_bytes is at least 0 (0: the head alone)")
    return Limits(bits, index, gauge, window, rate_min, outputs, asked, sniff)


def limits() -> Limits:
    """The limits in force: FABRICBOT_LIMITS names a user file, else the shipped one (every value a reader
    takes asks: looked up by the variable's text, not by a Path made each time)."""
    return _named(os.environ.get(ENV_FILE) or "")


@cache
def _named(name: str) -> Limits:
    return _load(Path(name) if name else LIMITS_FILE)


def no_value(raw: str) -> bool:
    """`N/A`, `Unknown`, a blank: the tool says it has no value here."""
    return raw.strip().lower() in NO_VALUE


def number(raw: str | float) -> float:
    """A number as printed (`1,234`, `1.5e+06`, `inf`); Refused when it is none."""
    if isinstance(raw, float | int) and not isinstance(raw, bool):
        return float(raw)
    try:
        return float(str(raw).strip().replace(",", ""))
    except ValueError:
        raise Refused("not a number") from None


def counter(raw: str | float, kind: str) -> float:
    """A cumulative counter as printed (`1,234`, `1.2e+06`): a whole number from 0 to its counter's width."""
    bound = limits()
    top = bound.counter_max(kind)
    text = str(raw).strip().replace(",", "") if isinstance(raw, str) else None
    if text is not None and _INTEGER.match(text):  # exact: 2**64 is refused, 2**64 - 1 is not
        if int(text) > top:
            raise Refused(_wider(bound, kind))
        return float(int(text))
    value = number(raw)
    if not math.isfinite(value):
        raise Refused("not a finite number")
    if value < 0:
        raise Refused("a counter is never negative")
    if value != math.floor(value):
        raise Refused("a counter is a whole number")
    if int(value) > top:
        raise Refused(_wider(bound, kind))
    return value


def _wider(bound: Limits, kind: str) -> str:
    return f"above the {bound.counter_bits[kind]}-bit counter's {bound.counter_max(kind):,}"


def index(raw: str | float, kind: str) -> int:
    """A component index (GPU, link, lane, Xid code): a whole number from 0 to the kind's bound."""
    text = str(raw).strip()
    if _INTEGER.match(text):
        found = int(text)
    elif text.startswith("-"):  # `-0` too: no tool writes an index with a sign
        raise Refused("an index is never negative")
    else:
        value = number(raw)
        if not math.isfinite(value) or value != math.floor(value):
            raise Refused("not a whole number")
        found = int(value)
    top = limits().index[kind]
    if not 0 <= found <= top:
        raise Refused(f"a {kind} index is 0-{top}")
    return found


def gauge(raw: str | float, kind: str) -> float:
    """A reading as it stands (bytes per second, GB/s, a ratio, a step time): finite, 0 or more, within bounds."""
    value = number(raw)
    top = limits().gauge[kind]
    if not math.isfinite(value):
        raise Refused("not a finite number")
    if value < 0:
        raise Refused("never negative")
    if value > top:
        raise Refused(f"above {top:g}, more than it can be")
    return value


def level(raw: str | float, kind: str) -> int:
    """A small whole reading (a PCIe generation, a width in lanes): 0 to the kind's gauge bound."""
    value = gauge(raw, kind)
    if value != math.floor(value):
        raise Refused("not a whole number")
    return int(value)


def time(ts: pd.Timestamp) -> pd.Timestamp | None:
    """A time within TIME_RANGE (a naive one taken as UTC for the check), else None."""
    utc = ts.tz_convert("UTC") if ts.tzinfo is not None else ts.tz_localize("UTC")
    return ts if TIME_RANGE[0] <= utc <= TIME_RANGE[1] else None


def window_hours(value: float) -> float:
    """A snapshot's window in hours, within the limits' [window] (a rate over less, or more, says nothing)."""
    low, high = limits().window_hours
    if not math.isfinite(value) or not low <= value <= high:
        raise Refused(f"the window must be {low * 60:g} min to {high:g} h")
    return value


# What each numeric column of the normalized tables holds, and the limit it is held to.
COLUMNS: dict[str, tuple[str, str]] = {
    **{c: ("counter", "table") for c in (*COUNTERS, *AER_COUNTERS)},
    "count": ("counter", "event"),
    "gpu": ("index", "gpu"), "link": ("index", "link"), "lane": ("index", "lane"), "nvlinks": ("index", "link"),
    "remote_port": ("index", "link"), "code": ("index", "code"), "caused_by": ("index", "code"),
    "step": ("index", "step"), "size_bytes": ("index", "size_bytes"), "root": ("index", "rank"),
    "speed_gbps": ("gauge", "speed_gbps"), "symbol_ber": ("gauge", "ber"), "effective_ber": ("gauge", "ber"),
    "tx_bytes_per_s": ("gauge", "bytes_per_s"), "rx_bytes_per_s": ("gauge", "bytes_per_s"),
    "gen": ("level", "pcie_gen"), "max_gen": ("level", "pcie_gen"), "width": ("level", "pcie_width"),
    "max_width": ("level", "pcie_width"), "step_time_ms": ("gauge", "step_time_ms"),
    "collective_time_us": ("gauge", "collective_time_us"), "algbw_gbps": ("gauge", "bandwidth_gbps"),
    "busbw_gbps": ("gauge", "bandwidth_gbps"),
}


def unheld(column: str, values: np.ndarray) -> np.ndarray:
    """Which of a column's readings (float64, NaN for none) the column cannot hold: infinite, negative, above
    its limit, or a fraction where it counts. A column `COLUMNS` does not name is held to nothing."""
    what = COLUMNS.get(column)
    if what is None:
        return np.zeros(len(values), dtype=bool)
    role, kind = what
    top = float(limits().counter_max(kind) if role == "counter" else limits().index[kind] if role == "index"
                else limits().gauge[kind])
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(values) | (values < 0) | (values > top)
        if role != "gauge":
            bad |= values != np.floor(values)
    return bad & ~np.isnan(values)


def describe(value: Any) -> str:
    """A refused value as the input spelled it, quoted and short."""
    return repr(value if not isinstance(value, str) or len(value) <= 40 else value[:37] + "...")
