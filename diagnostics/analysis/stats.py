"""The statistics a job's correlation is built of, on plain arrays: where a series' mean shifts (a least-squares
change point), Spearman rank correlation of many series with one, and a series' means per time bucket."""

from __future__ import annotations

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


def spearman_rows(series: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Spearman rank correlation of each row of `series` with `target` (0 where either is constant)."""
    if series.shape[1] < 4:
        return np.zeros(len(series))
    ra = average_ranks(series)
    rb = average_ranks(target[None, :])[0]
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
    # pandas' grouped mean over every row, to the last bit (its compensated sum rounds by what else it is given):
    # bucket means that tie or not decide the ranks; grouped on arrays, not on the steps' times as a frame
    bucket = np.where(t == np.iinfo(np.int64).min, np.nan, (t - t0 - 1) // width)
    means = pd.Series(values).groupby(bucket).mean().reindex(range(n))
    return means.ffill().bfill().to_numpy(np.float64)
