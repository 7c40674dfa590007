"""Cumulative counters -> increases and rates per link, like Prometheus `increase()`.

Works on sorted numpy arrays: rows are ordered once by (link, time), each counter is differenced in one pass,
and windows are sums over contiguous segments. A value that drops is a counter reset (reboot, driver reload):
the new value counts from zero, never a negative increase. A scrape gap is bridged by the cumulative value
(the increase across it is real); rates divide by the time actually covered, never extrapolated past the data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd

from .schema import COUNTERS

KEYS: tuple[str, ...] = ("node_id", "gpu", "link_type", "link", "lane")
NS_PER_HOUR = 3_600_000_000_000


def _codes(series: pd.Series) -> np.ndarray:
    """Small non-negative integer codes for one key column (NA -> 0)."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        return series.cat.codes.to_numpy(np.int64) + 1
    if pd.api.types.is_integer_dtype(series.dtype):
        return series.fillna(-1).to_numpy(np.int64) + 1
    codes, _ = pd.factorize(series, use_na_sentinel=True)
    return codes.astype(np.int64) + 1


@dataclass
class Prepared:
    """Link samples ordered by (link, time) with one row per (link, timestamp), ready for array work.

    Counter values, their per-row deltas and the links' key columns are computed once and cached, so several
    windows over the same history cost only the masks and sums.
    """

    frame: pd.DataFrame
    key: np.ndarray  # int64 link key per row
    t: np.ndarray  # int64 ns UTC per row
    starts: np.ndarray  # bool: first row of a link
    _cache: dict[str, Any] = field(default_factory=dict)

    @property
    def segment_starts(self) -> np.ndarray:
        return self._cached("heads_idx", lambda: np.flatnonzero(self.starts))

    @property
    def seg(self) -> np.ndarray:
        """The link number (0..links-1) of each row."""
        return self._cached("seg", lambda: np.cumsum(self.starts) - 1)

    @property
    def nseg(self) -> int:
        return len(self.segment_starts)

    @property
    def counters(self) -> list[str]:
        return self._cached("counters", lambda: counters_in(self.frame))

    def heads(self) -> pd.DataFrame:
        """One row per link: its key columns."""
        return self._cached("heads", lambda: self.frame[[k for k in KEYS if k in self.frame.columns]]
                            .iloc[self.segment_starts].reset_index(drop=True))

    def values(self, column: str) -> np.ndarray:
        return self._cached(f"v:{column}", lambda: self.frame[column].to_numpy(np.float64, na_value=np.nan))

    def delta(self, counter: str) -> tuple[np.ndarray, np.ndarray]:
        return self._cached(f"d:{counter}", lambda: deltas(self.values(counter), self.starts))

    def _cached(self, name: str, make: Any) -> Any:
        if name not in self._cache:
            self._cache[name] = make()
        return self._cache[name]


def _utc(series: pd.Series) -> pd.Series:
    if str(series.dtype) == "datetime64[ns, UTC]":
        return series
    return pd.to_datetime(series, utc=True, errors="coerce", format="mixed").astype("datetime64[ns, UTC]")


def utc_ns(when: datetime | pd.Timestamp) -> int:
    """A time as UTC nanoseconds; a naive time is taken as UTC."""
    ts = pd.Timestamp(when)
    ts = ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")
    return int(ts.value)


def ns(series: pd.Series) -> np.ndarray:
    """UTC nanoseconds of a datetime column, whatever its unit."""
    return _utc(series).to_numpy("datetime64[ns]").view(np.int64)


def prepare(samples: pd.DataFrame) -> Prepared:
    """Order rows by link then time, drop rows without a time and duplicated (link, time) rows (last wins)."""
    frame = samples
    ts = _utc(frame["timestamp"])
    if ts is not frame["timestamp"]:
        frame = frame.assign(timestamp=ts)
    t = frame["timestamp"].array.asi8 if frame["timestamp"].dtype == "datetime64[ns, UTC]" else \
        frame["timestamp"].to_numpy("datetime64[ns]").view(np.int64)
    valid = t != np.iinfo(np.int64).min
    key = np.zeros(len(frame), dtype=np.int64)
    for col, bits in zip(KEYS, (20, 12, 4, 12, 8), strict=True):
        key = (key << bits) | (_codes(frame[col]) if col in frame.columns else 0)
    if not valid.all():
        frame, key, t = frame[valid], key[valid], t[valid]
    if len(key) > 1:
        dk = np.diff(key)
        ordered = bool((dk >= 0).all() and (np.diff(t)[dk == 0] > 0).all())
    else:
        ordered = True
    if not ordered:
        order = np.lexsort((t, key))
        key, t = key[order], t[order]
        frame = frame.iloc[order]
        same = (key[1:] == key[:-1]) & (t[1:] == t[:-1])
        if same.any():
            keep = np.ones(len(key), dtype=bool)
            keep[:-1] = ~same  # of equal (link, time) rows keep the last
            frame, key, t = frame[keep], key[keep], t[keep]
    starts = np.ones(len(key), dtype=bool)
    if len(key) > 1:
        starts[1:] = key[1:] != key[:-1]
    return Prepared(frame, key, t, starts)  # positional access only: the index is left as it came


def deltas(values: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-row increase since the link's previous row (0 on a link's first row) and a reset flag.

    A drop is a reset: the counter restarted at zero, so the increase is the new value. Missing readings
    (NaN) contribute nothing.
    """
    d = np.empty_like(values, dtype=np.float64)
    if len(values) == 0:
        return d, np.zeros(0, dtype=bool)
    d[0] = 0.0
    np.subtract(values[1:], values[:-1], out=d[1:])
    reset = d < 0
    d[reset] = values[reset]
    reset &= ~starts
    d[starts] = 0.0
    np.nan_to_num(d, copy=False, nan=0.0)
    return d, reset


def counters_in(frame: pd.DataFrame) -> list[str]:
    """The cumulative counters this table actually carries (a column of only NA is not collected)."""
    return [c for c in COUNTERS if c in frame.columns and frame[c].notna().any()]


def windowed_increase(samples: pd.DataFrame, *, window: timedelta = timedelta(hours=1),
                      at: datetime | None = None, prepared: Prepared | None = None) -> pd.DataFrame:
    """Increase and rate per hour of every counter, per link, over the window ending at `at` (default: newest).

    One row per link seen in the table. Columns: the link keys, `samples` (readings in the window), `first`,
    `last` (times of the readings used), `covered_h`, `resets`, `last_seen` (the link's newest reading at or
    before `at`), and per counter `<c>_increase`, `<c>_per_hour` (NaN when fewer than two readings: a lone
    reading is a total, not a rate) and `<c>_total` (the last cumulative value).
    The reading just before the window is the starting point when it lies within one window of the start.
    """
    p = prepared or prepare(samples)
    if len(p.frame) == 0:
        return pd.DataFrame(columns=[*KEYS, "samples"])
    end_ns = utc_ns(at) if at is not None else int(p.t.max())
    span = int(window.total_seconds() * 1e9)
    start_ns = end_ns - span
    t, seg, nseg = p.t, p.seg, p.nseg
    upto = t <= end_ns
    inwin = upto & (t > start_ns)
    prev_t = np.empty_like(t)
    prev_t[1:] = t[:-1]
    prev_t[0] = t[0]
    # a row's delta counts when the row is in the window and its previous reading is recent enough
    counted = inwin & ~p.starts & (prev_t >= start_ns - span)
    big, small = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    first = _seg_reduce(np.minimum, p, np.where(counted, prev_t, np.where(inwin, t, big)), big)
    last = _seg_reduce(np.maximum, p, np.where(inwin, t, small), small)
    last_seen = _seg_reduce(np.maximum, p, np.where(upto, t, small), small)
    n_in = np.bincount(seg, weights=inwin, minlength=nseg).astype(np.int64)
    baseline = counted & ~_prev_in(inwin, p.starts)
    n_used = n_in + np.bincount(seg, weights=baseline, minlength=nseg).astype(np.int64)
    covered_h = np.where(n_used >= 2, last - first, 0) / NS_PER_HOUR
    out: dict[str, Any] = {str(k): v.to_numpy() for k, v in p.heads().items()}
    out["samples"] = n_in
    out["first"] = pd.to_datetime(np.where(n_in > 0, first, small), utc=True)
    out["last"] = pd.to_datetime(np.where(n_in > 0, last, small), utc=True)
    out["last_seen"] = pd.to_datetime(last_seen, utc=True)
    out["covered_h"] = covered_h
    resets_total = np.zeros(nseg, dtype=np.int64)
    last_idx = _seg_reduce(np.maximum, p, np.where(upto, np.arange(len(t)), -1), -1)
    safe_h = np.where(covered_h > 0, covered_h, 1.0)
    for c in p.counters:
        d, reset = p.delta(c)
        inc = np.bincount(seg, weights=np.where(counted, d, 0.0), minlength=nseg)
        resets_total = np.maximum(resets_total, np.bincount(seg, weights=reset & counted, minlength=nseg)
                                  .astype(np.int64))
        out[f"{c}_increase"] = inc
        out[f"{c}_per_hour"] = np.where(covered_h > 0, inc / safe_h, np.nan)
        v = p.values(c)
        out[f"{c}_total"] = np.where(last_idx >= 0, v[np.maximum(last_idx, 0)], np.nan)
    out["resets"] = resets_total
    return pd.DataFrame(out)


def window_sums(p: Prepared, counter: str, *, window: timedelta, end_ns: int, windows: int) -> np.ndarray:
    """Increase of `counter` per link in each of the last `windows` windows ending at `end_ns`: [links, windows].

    Column 0 is the newest window. One pass: every delta is placed by the window its later reading falls in.
    """
    out = np.zeros((p.nseg, windows))
    if counter not in p.counters:
        return out
    d, _ = p.delta(counter)
    span = int(window.total_seconds() * 1e9)
    w = (end_ns - p.t) // span  # 0 for (end - span, end], 1 for the window before, ...
    ok = (p.t <= end_ns) & (w < windows) & (d != 0)
    flat = np.bincount(p.seg[ok] * windows + w[ok], weights=d[ok], minlength=p.nseg * windows)
    return flat.reshape(p.nseg, windows)


def _prev_in(inwin: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """True where the previous row of the same link is itself in the window."""
    prev = np.zeros_like(inwin)
    prev[1:] = inwin[:-1]
    return prev & ~starts


def _seg_reduce(op: Any, p: Prepared, values: np.ndarray, empty: int) -> np.ndarray:
    """Per-link reduction (np.minimum / np.maximum) of a row array; links are contiguous row runs."""
    if len(values) == 0:
        return np.full(p.nseg, empty, dtype=np.int64)
    result: np.ndarray = op.reduceat(values, p.segment_starts)
    return result


def bucketed_increase(p: Prepared, counter: str, *, bucket: timedelta, start: datetime,
                      buckets: int) -> np.ndarray:
    """Increase of `counter` per link and per time bucket: an array [links, buckets] (resets handled).

    Bucket i covers (start + i*bucket, start + (i+1)*bucket]; a delta is placed in the bucket of its later reading.
    """
    nseg = p.nseg
    out = np.zeros((nseg, buckets))
    if counter not in p.counters or nseg == 0:
        return out
    d, _ = p.delta(counter)
    width = int(bucket.total_seconds() * 1e9)
    b = (p.t - utc_ns(start) - 1) // width
    ok = (b >= 0) & (b < buckets) & (d != 0)
    flat = np.bincount(p.seg[ok] * buckets + b[ok], weights=d[ok], minlength=nseg * buckets)
    return flat.reshape(nseg, buckets)
