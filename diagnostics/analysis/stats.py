"""The statistics a job's correlation is built of, on plain arrays: where a series' mean shifts (a least-squares
change point), Spearman rank correlation of many series with one, and a series' means per time bucket."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

MIN_SEGMENT = 3  # steps on each side of a change point


def change_point(values: np.ndarray, min_size: int = MIN_SEGMENT) -> int | None:
    """Index where a single shift in mean best splits the series (least squares), or None if too short."""
    n = len(values)
    if n < 2 * min_size:
        return None
    c1, c2 = np.cumsum(values), np.cumsum(values ** 2)
    k = np.arange(min_size, n - min_size + 1)
    left = c2[k - 1] - c1[k - 1] ** 2 / k
    right = (c2[-1] - c2[k - 1]) - (c1[-1] - c1[k - 1]) ** 2 / (n - k)
    return int(k[np.argmin(left + right)])


JOINED_MOST = 4_000_000  # values (32 MB) ranked at once across lags; ranking makes several arrays that size


def spearman_rows(series: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Spearman rank correlation of each row of `series` with `target` (0 where either is constant)."""
    if series.shape[1] < 4:
        return np.zeros(len(series))
    return _rho(average_ranks(series), average_ranks(target[None, :])[0])


def spearman_lags(series: np.ndarray, target: np.ndarray, lags: int) -> np.ndarray:
    """`spearman_rows` of `series` leading `target` by 0..`lags` columns: [rows, lags + 1]. Every lag's rows are
    ranked in one call, each cut short by its lag padded with +inf past its end (ranking after every value, they
    leave the others' ranks as they were); a series with a value not finite, or lags too many to hold at once, is
    ranked a lag at a time."""
    m, n = series.shape
    if n < 4:
        return np.zeros((m, lags + 1))
    if (lags + 1) * (m + 1) * n > JOINED_MOST or not (np.isfinite(series).all() and np.isfinite(target).all()):
        return np.stack([spearman_rows(series[:, : n - k], target[k:]) for k in range(lags + 1)], axis=1)
    padded = np.full((lags + 1, m + 1, n), np.inf)
    for k in range(lags + 1):
        padded[k, :m, : n - k] = series[:, : n - k]
        padded[k, m, : n - k] = target[k:]
    ranks = average_ranks(padded.reshape(-1, n)).reshape(padded.shape)
    return np.stack([_rho(ranks[k, :m, : n - k].copy(), ranks[k, m, : n - k]) if n - k >= 4 else np.zeros(m)
                     for k in range(lags + 1)], axis=1)


def _rho(ra: np.ndarray, rb: np.ndarray) -> np.ndarray:
    """Pearson correlation of each row of ranks `ra` with the ranks `rb` (0 where either is constant)."""
    ra -= ra.mean(axis=1, keepdims=True)
    rb = rb - rb.mean()
    denom = np.sqrt((ra ** 2).sum(axis=1) * (rb ** 2).sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (ra @ rb) / denom
    return np.nan_to_num(rho, nan=0.0)


def average_ranks(rows: np.ndarray) -> np.ndarray:
    """Each row's values ranked 1..n within the row, ties given their mean rank (pandas' `rank(axis=1)`, a NaN kept
    as NaN), over the whole array at once: ranking a job's links a row at a time was most of its scoring."""
    if np.isnan(rows).any():
        return pd.DataFrame(rows).rank(axis=1).to_numpy(copy=True)
    m, k = rows.shape
    order = np.argsort(rows, axis=1, kind="stable")
    ordered = np.take_along_axis(rows, order, axis=1)
    at = np.broadcast_to(np.arange(k), (m, k))
    first = np.ones((m, k), dtype=bool)  # where a run of equal values starts, and ends
    first[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    last = np.ones((m, k), dtype=bool)
    last[:, :-1] = first[:, 1:]
    start = np.maximum.accumulate(np.where(first, at, 0), axis=1)
    end = np.minimum.accumulate(np.where(last, at, k - 1)[:, ::-1], axis=1)[:, ::-1]
    ranks = np.empty((m, k))
    np.put_along_axis(ranks, order, (start + end) / 2 + 1, axis=1)
    return ranks


def bucket_means(t: np.ndarray, values: np.ndarray, *, t0: int, width: int, n: int) -> np.ndarray:
    """The mean of `values` in each of `n` buckets of `width` ns after `t0` (a time on a bucket's end belongs to it;
    a time NaT in none), a bucket without a value taking the one before it (the first ones the first value): a job's
    step time per bucket of its links' errors."""
    return bucket_means_each([(t, values, t0, n)], width=width)[0]


def bucket_means_each(series: Sequence[tuple[np.ndarray, np.ndarray, int, int]], *, width: int) -> list[np.ndarray]:
    """`bucket_means` of several series (times, values, t0, n) at once (a fleet scores a few hundred jobs): those in
    time order with every value and time read inside their buckets in one grouped mean, the rest one at a time."""
    # pandas' grouped mean, to the last bit: bucket means that tie or not decide the ranks. It sums a group in one
    # pass when the groups come in order and no value is NaN (each group on its own, whatever is grouped beside it),
    # else with a compensated sum that rounds by what else it is given: only series that take the first are joined
    buckets = [(t - t0 - 1) // width for t, _, t0, _ in series]
    joined = [i for i, ((t, values, _, n), b) in enumerate(zip(series, buckets, strict=True))
              if len(t) and b[0] >= 0 and b[-1] < n and (np.diff(b) >= 0).all() and not np.isnan(values).any()]
    out: list[np.ndarray] = [np.zeros(0)] * len(series)
    if joined:
        sizes = np.array([series[i][3] for i in joined], dtype=np.int64)
        offsets = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        means = pd.Series(np.concatenate([series[i][1] for i in joined])).groupby(
            np.concatenate([buckets[i] + offset for i, offset in zip(joined, offsets.tolist(), strict=True)])).mean()
        for i, filled in zip(joined, _filled(means, sizes), strict=True):
            out[i] = filled
    for i in sorted(set(range(len(series))) - set(joined)):
        t, values, _, n = series[i]
        key = np.where(t == np.iinfo(np.int64).min, np.nan, buckets[i])  # a time NaT in no bucket
        out[i] = _filled(pd.Series(values).groupby(key).mean(), np.array([n], dtype=np.int64))[0]
    return out


def _filled(means: pd.Series, sizes: np.ndarray) -> list[np.ndarray]:
    """Bucket means (by bucket number, the series laid end to end) as series of `sizes` buckets, a bucket without a
    value taking the one before it, the first ones the first value, each within its own series (pandas' reindex,
    ffill, bfill on each)."""
    total = int(sizes.sum())
    out = np.full(total, np.nan)
    keys = means.index.to_numpy(np.float64)
    inside = (keys >= 0) & (keys < total)
    out[keys[inside].astype(np.int64)] = means.to_numpy(np.float64)[inside]
    ends = np.cumsum(sizes)
    if total:
        at = np.arange(total)
        start, end = np.repeat(ends - sizes, sizes), np.repeat(ends, sizes)
        have = ~np.isnan(out)
        before = np.maximum.accumulate(np.where(have, at, -1))
        after = np.minimum.accumulate(np.where(have, at, total)[::-1])[::-1]
        source = np.where(before >= start, before, after[start])
        out = np.where(source < end, out[np.minimum(source, total - 1)], np.nan)
    return np.split(out, ends[:-1].tolist())
