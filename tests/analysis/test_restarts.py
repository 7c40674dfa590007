"""When counters restarted: a reading below the one before on the same series, gaps skipped."""

from __future__ import annotations

import numpy as np
import pandas as pd

from diagnostics.analysis.restarts import counter_drops, last_restarts
from diagnostics.times import ns
from tests.analysis.helpers import T0, link_series, links


def test_a_reading_below_the_last_one_before_a_gap_is_a_restart_and_one_on_another_link_is_not() -> None:
    """GPU 0's link drops across readings it lacks (a restart while its counter went unread); GPU 1's link climbs,
    its first reading below the last of GPU 0's link before it in the table: no restart of its own."""
    gap = link_series([10.0, 12.0, np.nan, np.nan, 3.0, 4.0], gpu=0, link=0)
    other = link_series([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], gpu=1, link=0)
    table = links(gap, other)
    got = last_restarts(table, ns(table["timestamp"]), ["n1"], int(ns(table["timestamp"]).max()))
    assert got == {"n1": {0: int(ns(pd.Series([T0 + pd.Timedelta(minutes=20)]))[0])}}


def test_drops_are_the_consecutive_readings_of_a_series_that_fall() -> None:
    """Compared in place, gaps looked past: the same rows as comparing each series' readings with their gaps taken
    out first."""
    rng = np.random.default_rng(3)
    for _ in range(300):
        size = int(rng.integers(0, 60))
        series = np.sort(rng.integers(0, 4, size))
        values = rng.integers(0, 6, size).astype(float)
        values[rng.random(size) < rng.random()] = np.nan
        ok = np.flatnonzero(~np.isnan(values))
        s, w = series[ok], values[ok]
        expected = ok[np.flatnonzero((s[1:] == s[:-1]) & (w[1:] < w[:-1])) + 1] if len(ok) >= 2 else ok[:0]
        assert sorted(counter_drops(series, values).tolist()) == sorted(expected.tolist())
