"""Every value's unit and text, in one place: the CLI, Block Kit, Markdown tickets and the picture all format here.

A metric's name and unit are the metric table's (`metrics`): counters are rates per hour, `width_lost` is lanes,
`gen_lost_under_load` generations, the Blackwell bit-error ratios are ratios, a lone reading is a total since reset.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

import pandas as pd

from .metrics import SUMS, Unit, label, unit_of
from .times import clockless


def number(value: float, *, compact: bool = False) -> str:
    """8900 -> '8,900' ('8.9k' compact), 0.25 -> '0.25', 2.0 -> '2'; never '8,900.0'. An int is printed exactly
    (2^63 - 1 is no float)."""
    if isinstance(value, int) and not compact:
        return f"{value:,}"
    if not math.isfinite(value):
        return "inf" if value > 0 else "-inf" if value < 0 else "n/a"
    if compact:
        for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
            if abs(value) >= size:
                scaled = value / size
                text = f"{scaled:.1f}" if abs(scaled) < 10 else f"{scaled:.0f}"
                return text.removesuffix(".0") + suffix
    if value == int(value) or abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 1:
        return f"{value:,.1f}".removesuffix(".0")
    return f"{value:.2g}"


def count(amount: float, one: str, many: str | None = None, *, compact: bool = False) -> str:
    """A number of things, the noun singular for exactly one: '1 healthy node', '3 healthy nodes', '1 lane' (the
    one wording of every count; `many` where adding an s is wrong)."""
    return f"{number(amount, compact=compact)} {noun(amount, one, many)}"


def noun(amount: float, one: str, many: str | None = None) -> str:
    """The noun of a count without its number, where the things are listed instead: 'lane 6', 'lanes 0, 3'."""
    return one if amount == 1 else many or one + "s"


def spans(numbers: Iterable[int]) -> str:
    """Numbers as runs: 'GPUs ' + spans([0, 1, 2, 3, 5]) reads 'GPUs 0-3, 5'."""
    runs: list[list[int]] = []
    for n in sorted(set(numbers)):
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def value(amount: float, unit: Unit | str, *, compact: bool = False) -> str:
    """A value with its unit: '8,900/h', '8 lanes', '1 generation', '1.2e-10', '3 events', '45,120 since reset'."""
    unit = Unit(unit)
    if unit is Unit.PER_HOUR:
        return f"{number(amount, compact=compact)}/h"
    if unit is Unit.RATIO:
        return f"{amount:.1e}"
    if unit is Unit.TOTAL:
        return f"{number(amount, compact=compact)} since reset"
    if unit is Unit.BANDWIDTH:
        return f"{number(amount, compact=compact)} GB/s"
    singular = {Unit.LANES: "lane", Unit.GENERATIONS: "generation", Unit.EVENTS: "event", Unit.GPUS: "GPU",
                Unit.LINKS: "link"}[unit]
    return count(amount, singular, unit.value, compact=compact)


def metric(name: str, amount: float, *, compact: bool = False, unit: Unit | str | None = None) -> str:
    """A named metric with its unit: 'replays 8,900/h', '8 lanes lost', 'effective BER 1.2e-10'."""
    chosen = Unit(unit) if unit is not None else unit_of(name)
    if chosen is Unit.LANES and name == "width_lost":
        return f"{value(amount, chosen, compact=compact)} lost"
    if chosen is Unit.GENERATIONS:
        return f"{value(amount, chosen, compact=compact)} lost under load"
    return f"{label(name)} {value(amount, chosen, compact=compact)}"


def metrics(values: Mapping[str, float], *, compact: bool = False, skip_zero: bool = True) -> str:
    """Several metrics, comma-separated, in the order given."""
    return ", ".join(metric(k, v, compact=compact) for k, v in values.items() if not (skip_zero and not v))


def totals(values: Mapping[str, float]) -> str:
    """Lifetime totals of a lone reading: 'replays 8,900, CRC errors 45,120 since reset' (CRC as one sum)."""
    parts = SUMS["crc"] if "crc" in values else ()
    shown = [f"{label(k)} {number(v)}" for k, v in values.items() if v and k not in parts]
    return (", ".join(shown) + " since reset") if shown else "no errors since reset"


PINNED = " pinned at "


def pinned(names: Sequence[str], at: float) -> str:
    """Counters read at the most they hold: they count no further, so their totals and the rates from them are
    lower bounds (the one wording of it, which every answer and ticket shows)."""
    said = " and ".join(label(n) for n in names) or "a counter"
    return (f"{said}{PINNED}{number(at)}, {'their' if len(names) > 1 else 'its'} maximum: "
            f"{'they count' if len(names) > 1 else 'it counts'} no further, so the count since reset and any rate "
            "from it are lower bounds")


DROPPED = " read lower than the reading before"


def dropped(names: Sequence[str], *, at_least: bool = False) -> str:
    """Counters read lower than before while the link's other counters held theirs (the one wording of it): no
    restart, which zeroes every counter, but a damaged or cut number, so their increase is not known; `at_least`:
    said of a rule crossed on what the other readings count, a lower bound."""
    said = " and ".join(label(n) for n in names) or "a counter"
    whose = "their" if len(names) > 1 else "its"
    known = "so the rate is at least this" if at_least else f"and {whose} rate is not known"
    return (f"{said}{DROPPED} while the link's other counters held theirs: a restart zeroes every counter, so this "
            f"is a damaged or cut number, {known}")


UNREAD = " missing from a reading of the window"


def unread(names: Sequence[str]) -> str:
    """Counters a reading of the link's window holds no value of where its others do (a value refused as damaged, a
    line cut): their increase over the window is not known (the one wording of it)."""
    said = " and ".join(label(n) for n in names) or "a counter"
    return f"{said}{UNREAD} that the link's other readings hold (a value refused or cut): the rate is not known"


def totals_noted(values: Mapping[str, float], evidence: Sequence[str]) -> str:
    """A lone reading's totals (`totals`) with a pinned counter's lower bound (`pinned`, found in the link's
    evidence) said beside them: the one line of them every door shows."""
    note = next((e for e in evidence if PINNED in e), None)
    return totals(values) + (f" ({note})" if note else "")


def lanes_lost(width: int, max_width: int) -> str:
    """How many lanes a link lost: its width says how many, never which."""
    return f"lanes lost: {max_width - width} of {max_width} (running x{width} of x{max_width})"


def percent(pct: float | None, *, signed: bool = True) -> str:
    if pct is None:
        return "n/a"
    return f"{pct:+.1f}%" if signed else f"{pct:.1f}%"


def when(moment: datetime | pd.Timestamp | None) -> str:
    """A UTC time as '2026-03-01 08:00 UTC'; a snapshot's placeholder time is "no clock time", never 1970."""
    if moment is None or pd.isna(moment):
        return "n/a"
    if clockless(moment):
        return "no clock time"
    ts = pd.Timestamp(moment)
    ts = ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")
    return f"{ts:%Y-%m-%d %H:%M} UTC"


def hours(amount: float) -> str:
    return f"{number(amount)} h"


def period(seconds: float) -> str:
    """A loop's period: `90 s`, `5 min`, `1.5 min`, `2 h`."""
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{seconds / 3600:g} h"
    return f"{seconds / 60:g} min" if seconds >= 60 else f"{seconds:g} s"


def priority(level: str, *, held: bool = False) -> str:
    """A priority as every door says it: a held one (the input contradicts the platform, so no one acts yet) with
    the level it takes once they agree, never the bare level a queue would rank."""
    return f"held ({level} once the input and the platform agree)" if held else level


def window(span_hours: float, end: datetime | None, *, asked: float | None = None) -> str:
    """'window 1 h to 2026-03-01 08:00 UTC'; a window with no clock time (a snapshot's) says so; `asked`: a longer
    window was asked than the readings cover, said beside the span they do."""
    text = f"window {hours(span_hours)}"
    said = "" if asked is None else f" (the readings' span of a {hours(asked)} window)"
    if end is None:
        return text + said
    if clockless(end):
        return f"{text} (a snapshot: no clock time)"
    return f"{text} to {when(end)}{said}"
