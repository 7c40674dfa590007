"""Which links of a part are busy: those whose readings there break a rule of the thresholds in force when it is
written (a rate at or above the rule's limit between two of its readings, a total or a level above it), or that are
not up.

A slowed job's correlation reads its nodes' flagged links over a day: a few rows in fifty. A part keeps its busy
links' readings in row groups of their own, after the quiet majority's (`parts.write_part`), so that read decodes
the busy groups alone where the flagged links are busy, as they nearly always are (the 1,024-node synthetic fleet's
history read decodes 0.7 million rows a shard, not 9.6 million). Layout only: every read keeps the same rows wherever a
part holds them, and a link flagged under other thresholds (a profile, an edited file) is read from the quiet groups,
as any link was before. A link's rises are taken over its identity's readings (`tables.LINK_IDENTITY`), but the rows
set apart are those of every link that shares a busy one's place in the part's order (`writing.LINK_ORDER`), so the
rows of one time that share it (one port of two switches, a GPU's own PCIe end and the port above it, a link under two
peer names) stay in the order they came, as the engine, which takes the last of them, reads them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..config.thresholds import Thresholds
from ..enums import LinkState
from ..metrics import GAUGES, METRICS, SUMS, Kind, Unit
from ..times import ns

_HOUR_NS = 3_600_000_000_000
_NAT = np.iinfo(np.int64).min
_NOT_UP = [str(s) for s in (LinkState.DOWN, LinkState.DEGRADED, LinkState.INACTIVE)]


@dataclass(frozen=True)
class Bar:
    """One rule's limit on a link metric: on its rise per hour between two readings (`rate`), else on its value
    (a total since reset, or a level read from columns)."""

    metric: str
    link_type: str  # "any", or the link type the rule judges
    above: float
    rate: bool


@dataclass(frozen=True)
class Bars:
    """The limits of the rules in force on link metrics (a level counted only under load is left out: a lower PCIe
    generation at idle is power saving, and every idle link would be busy)."""

    bars: tuple[Bar, ...] = ()

    @classmethod
    def of(cls, thresholds: Thresholds) -> Bars:
        found = []
        for rule in thresholds.rules:
            metric = METRICS.get(rule.counter)
            if metric is None:
                continue
            if metric.kind in (Kind.COUNTER, Kind.SUM):
                found.append(Bar(rule.counter, rule.link_type, rule.above, rate=rule.unit is not Unit.TOTAL))
            elif rule.counter in GAUGES and not metric.busy:
                found.append(Bar(rule.counter, rule.link_type, rule.above, rate=False))
        return cls(tuple(dict.fromkeys(found)))


def busy_rows(frame: pd.DataFrame, identity: list[str], bars: Bars, *, apart: list[str] | None = None) -> np.ndarray:
    """Per row, whether its link (the rows of equal `identity` columns) is busy in the frame: a counter's rise is
    taken between the link's readings that hold it, a reading without it passed over. Given `apart`, whether any link
    of the row's `apart` columns' values is."""
    if not len(frame):
        return np.zeros(0, dtype=bool)
    link = _groups(frame, identity)
    t = ns(frame["timestamp"])
    rows = np.lexsort([t, link])  # each link's readings together, in time order
    link, t = link[rows], t[rows]
    of_type: dict[str, np.ndarray] = {}
    hot = np.zeros(len(rows), dtype=bool)
    with np.errstate(invalid="ignore"):
        for bar in bars.bars:
            values = _values(frame, bar.metric)
            if values is None:
                continue
            values = values[rows]
            if bar.link_type not in of_type:
                of_type[bar.link_type] = np.ones(len(rows), dtype=bool) if bar.link_type == "any" else \
                    _among(frame, "link_type", [bar.link_type])[rows]
            judged = of_type[bar.link_type]
            if not bar.rate:
                hot |= judged & (values > bar.above)
                continue
            held = np.flatnonzero(~np.isnan(values) & (t != _NAT))  # the readings that hold it, dated
            rise, hours = np.diff(values[held]), np.diff(t[held]) / _HOUR_NS
            after = link[held[1:]] == link[held[:-1]]  # a reading and the link's one before it
            hot[held[1:]] |= judged[held[1:]] & after & (rise > 0) & (rise >= bar.above * hours)
    hot |= _among(frame, "link_state", _NOT_UP)[rows]
    heads = np.r_[True, link[1:] != link[:-1]]
    run = np.cumsum(heads) - 1
    busy = np.zeros(int(run[-1]) + 1, dtype=bool)
    np.logical_or.at(busy, run, hot)
    out = np.empty(len(rows), dtype=bool)
    out[rows] = busy[run]
    if apart is None:
        return out
    together = _groups(frame, apart)
    held = np.zeros(int(together.max()) + 1, dtype=bool)
    np.logical_or.at(held, together, out)
    return held[together]


def _groups(frame: pd.DataFrame, columns: list[str]) -> np.ndarray:
    """Per row, a number for its values of those columns (the frame's, NA a value of its own)."""
    named = [c for c in columns if c in frame.columns]
    if not named:
        return np.zeros(len(frame), dtype=np.int64)
    return frame.groupby(named, dropna=False, observed=True, sort=False).ngroup().to_numpy(np.int64)


def _values(frame: pd.DataFrame, metric: str) -> np.ndarray | None:
    """A metric's values per row as floats (NaN where none): a counter's column, a sum's parts added, a level's
    column (how far below its maximum, where it has one). None: the frame holds none of it."""
    gauge = GAUGES.get(metric)
    if gauge is not None and gauge.column:
        level = _column(frame, gauge.column)
        if gauge.maximum is None or level is None:
            return level
        most = _column(frame, gauge.maximum)
        return None if most is None else most - level
    parts = [c for c in (_column(frame, p) for p in SUMS.get(metric, (metric,))) if c is not None]
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    stacked = np.vstack(parts)
    return np.where(np.isnan(stacked).all(axis=0), np.nan, np.nansum(stacked, axis=0))


def _among(frame: pd.DataFrame, name: str, values: list[str]) -> np.ndarray:
    """Per row, whether the column holds one of `values`, case aside (a category's looked up once, not row by
    row)."""
    if name not in frame.columns:
        return np.zeros(len(frame), dtype=bool)
    series = frame[name]
    wanted = [v.lower() for v in values]
    if isinstance(series.dtype, pd.CategoricalDtype):
        held = np.append(series.cat.categories.astype(str).str.lower().isin(wanted), False)  # code -1 (none): last
        return held[series.cat.codes.to_numpy()]
    return series.astype("string").str.lower().isin(wanted).to_numpy(bool, na_value=False)


def _column(frame: pd.DataFrame, name: str) -> np.ndarray | None:
    if name not in frame.columns:
        return None
    return pd.to_numeric(frame[name], errors="coerce").to_numpy(np.float64, na_value=np.nan)
