"""Cumulative counters -> increases and rates per link, like Prometheus `increase()`.

Works on prepared rows (prepared.py: ordered once by (link, time)), each counter differenced in one pass, and
windows are sums over contiguous segments. A scrape gap is bridged by the cumulative value (the increase across it
is real); rates divide by the time actually covered, never extrapolated past the data.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd

from ..metrics import COUNTERS
from ..times import utc_ns
from ..values import limits
from .prepared import KEYS, Prepared, deltas, prepare, run_rows

NS_PER_HOUR = 3_600_000_000_000


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
    if len(p.t) == 0:
        return pd.DataFrame(columns=[*KEYS, "samples"])
    end_ns = utc_ns(at) if at is not None else int(p.t.max())
    return increase(p, end_ns=end_ns, span=int(window.total_seconds() * 1e9))


def _times(values: np.ndarray) -> pd.DatetimeIndex:
    """UTC nanoseconds (int64 minimum: none) as UTC times, without `to_datetime`'s parsing and caching."""
    return pd.DatetimeIndex(values.astype(np.int64).view("datetime64[ns]")).tz_localize("UTC")


def increase(p: Prepared, *, end_ns: int, span: int) -> pd.DataFrame:
    """`windowed_increase` on a prepared history, reading only each link's rows in the window plus one before.

    Rows are ordered by time within a link, so the window of a link is the run [w_lo, hi) of its rows: its
    first reading is the only one whose starting point (the reading before) can lie outside the window.
    """
    start_ns = end_ns - span
    seg0, nseg, t = p.segment_starts, p.nseg, p.t
    hi = p.first_after(end_ns)
    w_lo = p.first_after(start_ns)
    n_in = hi - w_lo
    before_t = t[np.maximum(w_lo - 1, 0)]
    # the window's first reading counts from the reading before it when that one is recent enough
    from_before = (n_in > 0) & (w_lo > seg0) & (before_t >= start_ns - span)
    small = np.iinfo(np.int64).min
    newest = t[np.maximum(hi - 1, 0)]
    first = np.where(from_before, before_t, t[np.minimum(w_lo, len(t) - 1)])
    last = np.where(n_in > 0, newest, small)
    n_used = n_in + from_before
    covered_h = np.where(n_used >= 2, last - np.where(n_used >= 2, first, last), 0) / NS_PER_HOUR
    out: dict[str, Any] = {str(k): v.array for k, v in p.heads().items()}  # keys keep their dtypes
    out["samples"] = n_in
    out["readings"] = n_used  # with the reading before the window: two or more give a rate
    out["first"] = _times(np.where(n_in > 0, first, small))
    out["last"] = _times(last)
    out["last_seen"] = _times(np.where(hi > seg0, newest, small))
    out["covered_h"] = covered_h
    # the link's sampling interval over the window: how long a silence must last before the series has stopped
    out["interval_ns"] = np.where(n_used >= 2, (last - first) / np.maximum(n_used - 1, 1), np.nan)
    # counted deltas: rows (c_lo, hi); their values need rows [c_lo - 1, hi), the first being the starting point
    c_lo = w_lo + 1 - from_before
    lo = np.where(hi > c_lo, c_lo - 1, hi)
    idx, owner, run_first = run_rows(lo, hi)
    last_idx = np.maximum(hi - 1, 0)
    at, last_at = p.positions(idx), p.positions(last_idx)
    resets_total = np.zeros(nseg, dtype=np.int64)
    # readings closer than the minimum interval (data/limits.toml [rate]) give counts but no rate
    rated = covered_h * 3600 >= limits().rate_min_interval_s
    safe_h = np.where(rated, covered_h, 1.0)

    unread = np.zeros(nseg, dtype=bool)

    def counted(c: str, d: np.ndarray, reset: np.ndarray) -> np.ndarray:
        """The counter's increase, rate and total per link into `out`; the links it reset on."""
        col = p.column(c)
        values = col[at]
        inc = np.bincount(owner, weights=d, minlength=nseg)
        per_hour = np.where(rated, inc / safe_h, np.nan)
        total = np.where(hi > seg0, col[last_at], np.nan)
        if np.isnan(values).any():  # some of a link's readings lack this counter (another platform's field, a cut)
            inc, per_hour, total = _own_readings(inc, per_hour, total, values, owner, p.t[idx], hi - lo)
            # a counter the link's readings hold, but one of them not (a value refused or cut): its increase unknown
            held = np.bincount(owner[~np.isnan(values)], minlength=nseg)
            hole = (held >= 1) & (held < hi - lo) & np.isnan(inc)
            if hole.any():
                out[f"{c}_unread"] = hole
                unread[hole] = True
        out[f"{c}_increase"] = inc
        out[f"{c}_per_hour"] = per_hour
        out[f"{c}_total"] = total
        return np.bincount(owner[reset], minlength=nseg)  # a few rows, not all

    dropping: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # the counters that drop somewhere: judged together
    for c in p.counters:
        d, reset = deltas(p.column(c)[at], run_first)
        if reset.any():
            dropping[c] = d, reset
        else:
            resets_total = np.maximum(resets_total, counted(c, d, reset))
    damaged = _damaged(p, at, owner, p.t[idx], {c: reset for c, (_, reset) in dropping.items()})
    dropped = np.zeros(nseg, dtype=bool)
    for c, (d, reset) in dropping.items():
        if damaged is not None and (bad := reset & damaged).any():  # a drop no restart explains: no count from it
            d[bad], reset[bad] = 0.0, False
            out[f"{c}_dropped"] = np.bincount(owner[bad], minlength=nseg) > 0
            dropped |= out[f"{c}_dropped"]
        resets_total = np.maximum(resets_total, counted(c, d, reset))
    out["resets"] = resets_total
    out["dropped"] = dropped
    out["unread"] = unread
    return pd.DataFrame(out)


def _damaged(p: Prepared, at: np.ndarray, owner: np.ndarray, t: np.ndarray,
             resets: dict[str, np.ndarray]) -> np.ndarray | None:
    """Of the readings where some counter dropped (`resets`: each counter's), those where another of the link's
    counters held a count above zero (read at least its reading before) and no other link of its GPU (or switch)
    dropped at that time: a restart (a reboot, a GPU reset, a driver reload) zeroes every counter of the links it
    restarts, so such a drop is a damaged or cut number (`50` of `500100`), not a restart; where other links of the
    GPU dropped with it, a counter that reads its old count again counted as much since (one recovery before and
    after a reboot). Another GPU's links dropping then say nothing of this one: a GPU reset restarts its own. None
    when no counter dropped so. Read at the drops alone: a fleet's window has few."""
    if not resets:
        return None
    rows = np.flatnonzero(np.logical_or.reduce(list(resets.values())))  # never a link's first: `deltas` clears those
    held = np.zeros(len(rows), dtype=bool)
    for c in p.counters:
        col = p.column(c)
        now, before = col[at[rows]], col[at[rows - 1]]
        with np.errstate(invalid="ignore"):
            held |= (before > 0) & (now >= before)
    if not held.any():
        return None
    heads = p.heads()
    part = heads["gpu"].astype("string") if "gpu" in heads.columns else pd.Series(pd.NA, index=heads.index)
    if "nvswitch" in heads.columns:  # a switch's own links: restarted with the switch
        part = part.fillna("switch " + heads["nvswitch"].astype("string"))
    device = np.asarray(pd.factorize(heads["node_id"].astype("string") + "/" + part.fillna(""))[0])[owner[rows]]
    moments = pd.DataFrame({"device": device, "t": t[rows], "link": owner[rows]})
    links = moments.groupby(["device", "t"])["link"].transform("nunique").to_numpy()  # its links dropping then
    alone = held & (links < 2)
    if not alone.any():
        return None
    out = np.zeros(len(at), dtype=bool)
    out[rows[alone]] = True
    return out


def _own_readings(inc: np.ndarray, per_hour: np.ndarray, total: np.ndarray, values: np.ndarray, owner: np.ndarray,
                  t: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A counter's increase, rate and total over the readings of a link that hold it (`values`, NaN where one does
    not): no increase where none does, or one alone (the others hold no value to count from, so no zero is made of
    them); a rate over the time between its own first and last reading; its total, its last value."""
    missing = np.isnan(values)
    held = np.bincount(owner[~missing], minlength=len(inc))
    inc = np.where(((held == 0) & (rows > 0)) | ((held == 1) & (rows >= 2)), np.nan, inc)
    mine, at = owner[~missing], t[~missing]
    if not len(mine):
        return inc, np.full(len(inc), np.nan), total
    first = np.flatnonzero(np.r_[True, mine[1:] != mine[:-1]])
    last = np.r_[first[1:], len(mine)] - 1
    covered = np.zeros(len(inc))
    covered[mine[first]] = (at[last] - at[first]) / NS_PER_HOUR
    rated = covered * 3600 >= limits().rate_min_interval_s
    ours = np.where(rated, inc / np.where(rated, covered, 1.0), np.nan)
    total = total.copy()
    short = np.isnan(total)
    newest = np.full(len(inc), np.nan)
    newest[mine[last]] = values[~missing][last]
    total[short] = newest[short]
    return inc, np.where(held < rows, ours, per_hour), total


def window_sums(p: Prepared, counter: str, *, window: timedelta, end_ns: int, windows: int) -> np.ndarray:
    """Increase of `counter` per link in each of the last `windows` windows ending at `end_ns`: [links, windows].

    Column 0 is the newest window. Every delta is placed by the window its later reading falls in; only the rows
    in the windows and the one reading before them are read.
    """
    out = np.zeros((p.nseg, windows))
    if counter not in p.counters:
        return out
    span = int(window.total_seconds() * 1e9)
    hi = p.first_after(end_ns)
    lo = p.first_after(end_ns - windows * span)
    lo = np.where(hi > lo, lo - (lo > p.segment_starts), hi)
    idx, owner, run_first = run_rows(lo, hi)
    d, _ = deltas(p.column(counter)[p.positions(idx)], run_first)
    nz = np.flatnonzero(d)  # most readings add nothing: place only the others
    w = (end_ns - p.t[idx[nz]]) // span  # 0 for (end - span, end], 1 for the window before, ...
    ok = nz[w < windows]
    w = w[w < windows]
    flat = np.bincount(owner[ok] * windows + w, weights=d[ok], minlength=p.nseg * windows)
    return flat.reshape(p.nseg, windows)


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
