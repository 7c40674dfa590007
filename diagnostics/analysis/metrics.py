"""Per-link metrics over a window, for every link at once on arrays: rates, state, derived levels, persistence.

Only links that could cross a rule (`candidates`) are turned into `Finding` objects (`findings`), so a fleet
sweep stays vectorized.
"""

from __future__ import annotations

import functools
from datetime import timedelta
from typing import Any

import numpy as np
import pandas as pd

from ..config.thresholds import Rule, Thresholds
from ..metrics import BUSY_SETTING, GAUGES, SUMS, Unit
from .prepared import Prepared
from .rates import increase, window_sums

STATE_COLUMNS = ("peer", "gpu_total", "link_state", "width", "max_width", "gen", "max_gen", "speed_gbps",
                 "tx_bytes_per_s", "rx_bytes_per_s", "symbol_ber", "effective_ber", "saturated",
                 "pci_bus_id")  # a PCIe link's bus: its GPU's name where no index places it


def last_state(p: Prepared, end_ns: int) -> pd.DataFrame:
    """Each link's state columns (width, generation, state, traffic) at its last reading at or before the end."""
    idx = p.last_upto(end_ns)
    frame = p.take([col for col in STATE_COLUMNS if col in p.source.columns], np.maximum(idx, 0))
    return frame.where(pd.Series(idx >= 0), None) if (idx < 0).any() else frame


def link_metrics(p: Prepared, *, window: timedelta, end_ns: int, thresholds: Thresholds) -> pd.DataFrame:
    """Per link: rates per hour in the window ending at `end_ns`, state, derived metrics, persistence counts.

    A rule with `persist = [k, m]` gets `over_<rule>`: in how many of the last m windows the counter's increase
    per window-hour exceeded the rule's limit; and `unjudged_<rule>`: whether the link's readings begin too late to
    tell (some window over, too few read to reach k, enough unread to: a long window on a short history).
    """
    cur = increase(p, end_ns=end_ns, span=int(window.total_seconds() * 1e9))
    state = last_state(p, end_ns)

    def col(name: str) -> pd.Series | None:
        return cur[name] if name in cur.columns else state[name] if name in state.columns else None

    extra: dict[str, Any] = {"crc_per_hour": _sum(col("crc_flit_per_hour"), col("crc_data_per_hour"), len(cur)),
                             "crc_total": _sum(col("crc_flit_total"), col("crc_data_total"), len(cur))}
    for m in GAUGES.values():  # the losses the metric table defines: a reading below its maximum
        if m.column is None or m.maximum is None or not {m.column, m.maximum} <= set(state.columns):
            continue
        lost = (_float(state[m.maximum]) - _float(state[m.column])).clip(min=0)
        if not m.busy:
            extra[m.name] = lost
            continue
        traffic = functools.reduce(np.fmax, [_float(col(c)) for c in m.busy])  # a missing column: NaN, broadcast
        busy = np.nan_to_num(traffic) >= thresholds.setting(BUSY_SETTING)
        extra[m.name] = np.where(busy, lost, lost * 0)  # NaN (no PCIe reading) stays NaN
        extra[f"{m.column}_lost_idle"] = np.where(~busy, lost, lost * 0)  # said, never judged
    hours = window.total_seconds() / 3600
    span = int(window.total_seconds() * 1e9)
    read = -((p.t[p.segment_starts] - end_ns) // span) if p.nseg else np.zeros(0, dtype=np.int64)  # windows reached
    for rule in thresholds.rules:
        if rule.persist is None:
            continue
        needed, of = rule.persist
        counters = SUMS.get(rule.counter, (rule.counter,))
        sums = sum((window_sums(p, c, window=window, end_ns=end_ns, windows=of) for c in counters),
                   start=np.zeros((p.nseg, of)))
        over = (sums / hours > rule.above).sum(axis=1)
        extra[f"over_{rule.name}"] = over
        extra[f"unjudged_{rule.name}"] = (over > 0) & (over < needed) & (over + np.clip(of - read, 0, of) >= needed)
    return pd.concat([cur, state, pd.DataFrame(extra, index=cur.index)], axis=1)  # one concat, not an insert each


WINDOW_TIMES = ("first", "last", "last_seen")  # when the window's readings were taken: no finding reads them


def records(frame: pd.DataFrame, *, skip: tuple[str, ...] = WINDOW_TIMES) -> list[dict[str, Any]]:
    """The rows as dicts (a missing value as None or NaN), like `to_dict("records")` at about half its cost:
    each column is converted once rather than each cell boxed on its own. Columns in `skip` are left out."""
    names = [str(c) for c in frame.columns if c not in skip]
    columns = [_plain(series) for name, series in frame.items() if name not in skip]
    return [dict(zip(names, values, strict=True)) for values in zip(*columns, strict=True)]


def _plain(series: pd.Series) -> list[Any]:
    if isinstance(series.dtype, np.dtype) and series.dtype.kind in "fiub":
        values: list[Any] = series.to_numpy().tolist()
    else:
        values = series.to_numpy(dtype=object, na_value=None).tolist()  # type: ignore[call-overload]
    return values


def _sum(a: pd.Series | None, b: pd.Series | None, size: int) -> np.ndarray:
    """Row sum of the columns present, NaN where none has a value (pandas' sum(axis=1, min_count=1))."""
    present = [s.to_numpy(np.float64, na_value=np.nan) for s in (a, b) if s is not None]
    if not present:
        return np.full(size, np.nan)
    total = np.nan_to_num(present[0], nan=0.0, posinf=np.inf, neginf=-np.inf)
    for values in present[1:]:
        total = total + np.nan_to_num(values, nan=0.0, posinf=np.inf, neginf=-np.inf)
    none = np.logical_and.reduce([np.isnan(v) for v in present])
    return np.where(none, np.nan, total)


def _float(series: pd.Series | None) -> np.ndarray:
    if series is None:
        return np.array(np.nan)
    return pd.to_numeric(series, errors="coerce").to_numpy(np.float64, na_value=np.nan)


def _rate_column(frame: pd.DataFrame, counter: str, suffix: str = "per_hour") -> pd.Series | None:
    if counter == "crc" and suffix == "per_hour":
        return frame.filter(items=["crc_flit_per_hour", "crc_data_per_hour"]).sum(axis=1, min_count=1)
    col = f"{counter}_{suffix}"
    return frame[col] if col in frame.columns else None


def _limits(m: pd.DataFrame, rule: Rule) -> np.ndarray | float:
    """The rule's limit per link: its `above`, or per link from its generation and width (NaN: not judged)."""
    if rule.per_lane_by_gen is None:
        return rule.above
    gen, width = _float(m.get("gen")), _float(m.get("width"))
    per_lane = np.asarray(rule.per_lane_by_gen)
    known = np.isfinite(gen) & np.isfinite(width) & (gen >= 1) & (width >= 1)
    at = np.clip(np.nan_to_num(gen, nan=1.0).astype(np.int64), 1, len(per_lane)) - 1
    return np.where(known, 60.0 * np.ceil(per_lane[at] * np.nan_to_num(width)), np.nan)


def candidates(m: pd.DataFrame, thresholds: Thresholds) -> np.ndarray:
    """Links that could cross any rule or are not up: the only ones worth a full finding in a fleet sweep."""
    flag = np.zeros(len(m), dtype=bool)
    for rule in thresholds.rules:
        col = m[rule.counter] if rule.counter in m.columns else \
            _rate_column(m, rule.counter, "total" if rule.unit is Unit.TOTAL else "per_hour")
        if col is None:
            continue
        value, limit = col.astype("Float64").fillna(0).to_numpy(np.float64), _limits(m, rule)
        with np.errstate(invalid="ignore"):
            flag |= (value >= limit) if rule.inclusive else (value > limit)
    if "link_state" in m.columns:
        flag |= m["link_state"].astype("string").fillna("up").isin(["down", "inactive", "degraded"]).to_numpy()
    return flag

