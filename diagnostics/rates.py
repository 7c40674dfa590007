"""Cumulative counters -> increases and rates per link, like Prometheus `increase()`.

Works on sorted numpy arrays: rows are ordered once by (link, time), each counter is differenced in one pass,
and windows are sums over contiguous segments. A value that drops is a counter reset (reboot, driver reload):
the new value counts from zero, never a negative increase. A scrape gap is bridged by the cumulative value
(the increase across it is real); rates divide by the time actually covered, never extrapolated past the data.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

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
    """Link samples ordered by (link, time) with one row per (link, timestamp), ready for array work."""

    frame: pd.DataFrame
    key: np.ndarray  # int64 link key per row
    t: np.ndarray  # int64 ns UTC per row
    starts: np.ndarray  # bool: first row of a link

    @property
    def segment_starts(self) -> np.ndarray:
        return np.flatnonzero(self.starts)


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
    t = frame["timestamp"].to_numpy("datetime64[ns]").view(np.int64)
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
    return Prepared(frame.reset_index(drop=True), key, t, starts)


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
    f = p.frame
    counters = counters_in(f)
    if len(f) == 0:
        return pd.DataFrame(columns=[*KEYS, "samples"])
    end_ns = utc_ns(at) if at is not None else int(p.t.max())
    start_ns = end_ns - int(window.total_seconds() * 1e9)
    t = p.t
    upto = t <= end_ns
    inwin = upto & (t > start_ns)
    prev_t = np.empty_like(t)
    prev_t[1:] = t[:-1]
    prev_t[0] = t[0] if len(t) else 0
    has_prev = ~p.starts
    # a row's delta counts when the row is in the window and its previous reading is recent enough
    counted = inwin & has_prev & (prev_t >= start_ns - (end_ns - start_ns))
    seg = np.cumsum(p.starts) - 1
    nseg = int(seg[-1]) + 1 if len(seg) else 0
    first_used = np.where(counted, prev_t, np.where(inwin, t, np.iinfo(np.int64).max))
    first = np.full(nseg, np.iinfo(np.int64).max, dtype=np.int64)
    _segmin(first, seg, first_used)
    last = np.full(nseg, np.iinfo(np.int64).min, dtype=np.int64)
    _segmax(last, seg, np.where(inwin, t, np.iinfo(np.int64).min))
    last_seen = np.full(nseg, np.iinfo(np.int64).min, dtype=np.int64)
    _segmax(last_seen, seg, np.where(upto, t, np.iinfo(np.int64).min))
    n_in = np.bincount(seg, weights=inwin, minlength=nseg).astype(np.int64)
    n_used = n_in + np.bincount(seg, weights=counted & ~_prev_in(inwin, p.starts), minlength=nseg).astype(np.int64)
    covered_ns = np.where(n_used >= 2, last - first, 0)
    covered_h = covered_ns / NS_PER_HOUR
    head = p.segment_starts
    out: dict[str, object] = {k: f[k].to_numpy()[head] if k in f.columns else pd.NA for k in KEYS}
    out["samples"] = n_in
    out["first"] = pd.to_datetime(np.where(n_in > 0, first, np.iinfo(np.int64).min), utc=True)
    out["last"] = pd.to_datetime(np.where(n_in > 0, last, np.iinfo(np.int64).min), utc=True)
    out["last_seen"] = pd.to_datetime(last_seen, utc=True)
    out["covered_h"] = covered_h
    resets_total = np.zeros(nseg, dtype=np.int64)
    for c in counters:
        v = f[c].to_numpy(np.float64, na_value=np.nan)
        d, reset = deltas(v, p.starts)
        inc = np.bincount(seg, weights=np.where(counted, d, 0.0), minlength=nseg)
        resets_total = np.maximum(resets_total, np.bincount(seg, weights=reset & counted, minlength=nseg)
                                  .astype(np.int64))
        out[f"{c}_increase"] = inc
        with np.errstate(divide="ignore", invalid="ignore"):
            out[f"{c}_per_hour"] = np.where(covered_h > 0, inc / np.where(covered_h > 0, covered_h, 1), np.nan)
        out[f"{c}_total"] = _last_value(v, seg, upto, nseg)
    out["resets"] = resets_total
    return pd.DataFrame(out)


def _prev_in(inwin: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """True where the previous row of the same link is itself in the window."""
    prev = np.zeros_like(inwin)
    prev[1:] = inwin[:-1]
    return prev & ~starts


def _segmax(out: np.ndarray, seg: np.ndarray, values: np.ndarray) -> None:
    """Per-segment maximum of values (segments contiguous and ordered)."""
    if len(seg) == 0:
        return
    bounds = np.flatnonzero(np.r_[True, seg[1:] != seg[:-1]])
    out[seg[bounds]] = np.maximum.reduceat(values, bounds)


def _segmin(out: np.ndarray, seg: np.ndarray, values: np.ndarray) -> None:
    if len(seg) == 0:
        return
    bounds = np.flatnonzero(np.r_[True, seg[1:] != seg[:-1]])
    out[seg[bounds]] = np.minimum.reduceat(values, bounds)


def _last_value(v: np.ndarray, seg: np.ndarray, upto: np.ndarray, nseg: int) -> np.ndarray:
    """The last non-missing reading per link at or before the window's end (NaN if none)."""
    ok = upto & ~np.isnan(v)
    idx = np.full(nseg, -1, dtype=np.int64)
    _segmax(idx, seg, np.where(ok, np.arange(len(v)), -1))
    return np.where(idx >= 0, v[np.maximum(idx, 0)], np.nan)


def bucketed_increase(p: Prepared, counter: str, *, bucket: timedelta, start: datetime,
                      buckets: int) -> np.ndarray:
    """Increase of `counter` per link and per time bucket: an array [links, buckets] (resets handled).

    Bucket i covers (start + i*bucket, start + (i+1)*bucket]; a delta is placed in the bucket of its later reading.
    """
    nseg = int(p.starts.sum())
    out = np.zeros((nseg, buckets))
    if counter not in p.frame.columns or nseg == 0:
        return out
    v = p.frame[counter].to_numpy(np.float64, na_value=np.nan)
    d, _ = deltas(v, p.starts)
    width = int(bucket.total_seconds() * 1e9)
    b = (p.t - utc_ns(start) - 1) // width
    ok = (b >= 0) & (b < buckets) & (d != 0)
    seg = np.cumsum(p.starts) - 1
    flat = np.bincount(seg[ok] * buckets + b[ok], weights=d[ok], minlength=nseg * buckets)
    return flat.reshape(nseg, buckets)
