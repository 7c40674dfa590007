"""The correlation's statistics on arrays: several jobs' step time per bucket worked out at once."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from diagnostics.analysis.stats import bucket_means, bucket_means_each

NAT = np.iinfo(np.int64).min


def test_bucket_means_of_several_series_at_once_are_each_series_own() -> None:
    """Many jobs' step time per bucket at once is, to the last bit, what pandas' grouped mean (then reindex, ffill,
    bfill) gives each job alone: a bucket's mean never reads another job's rows, nor does a bucket without a value
    take one from the series before it; a series with no value stays empty, a time outside its buckets counts in
    none; series with a NaN value, a time NaT or out of order among them."""
    rng = np.random.default_rng(11)
    width = 300
    joined = alone = 0
    for _ in range(60):
        series = []
        for _ in range(int(rng.integers(1, 8))):
            n = int(rng.integers(1, 25))
            t0 = int(rng.integers(0, width))
            odd = rng.random() < 0.4  # times outside the buckets, values NaN, times NaT
            low, high = (t0 - 2 * width, t0 + (n + 2) * width) if odd else (t0 + 1, t0 + n * width + 1)
            t = np.sort(rng.integers(low, high, int(rng.integers(0, 40))))
            values = rng.normal(100, 5, len(t))
            if odd:
                values[rng.random(len(t)) < 0.2] = np.nan
                t[: len(t) // 4] = NAT
            if rng.random() < 0.1:
                t = t[::-1].copy()
            series.append((t, values, t0, n))
        for (t, values, t0, n), got in zip(series, bucket_means_each(series, width=width), strict=True):
            key = np.where(t == NAT, np.nan, (t - t0 - 1) // width)
            expected = pd.Series(values).groupby(key).mean().reindex(range(n)).ffill().bfill().to_numpy()
            assert np.array_equal(got, expected, equal_nan=True)
            assert np.array_equal(got, bucket_means(t, values, t0=t0, width=width, n=n), equal_nan=True)
            joined, alone = joined + (not np.isnan(values).any()), alone + bool(np.isnan(values).any())
    assert joined > 50 and alone > 20  # both kinds were met


def test_rank_correlation_at_every_lag_at_once_is_each_lag_on_its_own() -> None:
    """Ranking every lag's cut rows in one call (padded past their ends) gives, to the last bit, what ranking each
    lag on its own gives: ties (counts of zero), rows too short to rank at a lag, and a value not finite among them."""
    from diagnostics.analysis.stats import spearman_lags, spearman_rows

    rng = np.random.default_rng(7)
    for _ in range(200):
        m, n = int(rng.integers(1, 6)), int(rng.integers(1, 40))
        series = rng.poisson(1.0, (m, n)).astype(float) if rng.random() < 0.5 else rng.normal(size=(m, n))
        target = np.round(rng.normal(100, 5, n), int(rng.integers(0, 2)))
        if rng.random() < 0.1:
            series[0, int(rng.integers(0, n))] = np.nan
        lags = min(3, max(n - 4, 0))
        expected = np.stack([spearman_rows(series[:, : n - k], target[k:]) for k in range(lags + 1)], axis=1)
        assert np.array_equal(spearman_lags(series, target, lags), expected)


def test_lags_too_many_to_rank_at_once_are_ranked_one_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """A week-long job's thousands of links would need several GB ranked across lags at once: past a bound each lag
    is ranked alone, to the same answer."""
    from diagnostics.analysis import stats

    rng = np.random.default_rng(3)
    series, target = rng.poisson(1.0, (6, 30)).astype(float), rng.normal(100, 5, 30)
    joined = stats.spearman_lags(series, target, 3)
    ranked: list[int] = []
    real = stats.average_ranks
    monkeypatch.setattr(stats, "average_ranks", lambda rows: ranked.append(len(rows)) or real(rows))
    monkeypatch.setattr(stats, "JOINED_MOST", 100)
    assert np.array_equal(stats.spearman_lags(series, target, 3), joined)
    assert max(ranked) <= 6  # no call ranked more than one lag's rows
