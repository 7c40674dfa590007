"""Early warning: a link climbing toward a failing threshold is watched with its projected time; noise is not."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from diagnostics.analysis.trends import watch_list
from diagnostics.config.watch import load_watch
from diagnostics.format import Unit

from .helpers import T0, link_series, links

N = 72 * 12 + 1  # three days at 5 min
END = T0 + pd.Timedelta(hours=72)


def _climbing(start: float, stop: float, *, seed: int = 1, n: int = N) -> np.ndarray:
    """A cumulative counter whose rate per hour rises from `start` to `stop`, with Poisson noise per reading."""
    rng = np.random.default_rng(seed)
    rates = np.linspace(start, stop, n)
    return np.concatenate(([0.0], np.cumsum(rng.poisson(rates[1:] * 5 / 60)))).astype(float)


def test_a_link_climbing_toward_the_replay_threshold_is_watched_days_ahead() -> None:
    frame = links(link_series(_climbing(0, 500), gpu=3, link=7, peer="NVSwitch 2"),
                  link_series(_climbing(20, 20, seed=2), gpu=0, link=0))
    (watch,) = watch_list({"link_samples": frame})
    assert (watch.node_id, watch.ref.slug, watch.rule) == ("n1", "gpu3-nvlink7", "nvlink_replay")
    assert 60 < watch.hours_left < 85 and 450 < watch.now < 550 and watch.fit > 0.9
    assert watch.projected_at == pytest.approx(END + pd.Timedelta(hours=watch.hours_left), abs=pd.Timedelta(seconds=1))
    # the counter in the words every answer uses ("replays", as the rule's breach says it), not its column's name
    assert "GPU 3 NVLink 7 -> NVSwitch 2: replays " in watch.summary and "(nvlink_replay)" in watch.summary


@pytest.mark.parametrize(("series", "why"), [
    (_climbing(600, 600), "flat, however high"),
    (_climbing(800, 1400), "already over: the rules' business"),
    (_climbing(10, 20), "climbing, but a year away"),
    (_climbing(0, 500, n=12 * 12 + 1), "half a day of history"),
    (_climbing(0, 40), "under a twentieth of the threshold"),
])
def test_no_watch_for(series: np.ndarray, why: str) -> None:
    assert watch_list({"link_samples": links(link_series(series, gpu=1, link=2))}) == [], why


def test_a_node_is_judged_only_on_enough_buckets_for_a_line() -> None:
    """Half a day of readings, or one reading, fits no line: the node is not judged, so its empty list is no
    all-clear; three flat days are judged."""
    for series, lined in ((_climbing(600, 600), True), (_climbing(0, 500, n=12 * 12 + 1), False),
                          (np.array([5.0]), False)):
        judged: set[str] = set()
        assert watch_list({"link_samples": links(link_series(series, gpu=1, link=2))}, judged=judged) == []
        assert judged == ({"n1"} if lined else set()), len(series)


def test_a_bit_error_ratio_is_projected_on_its_order_of_magnitude() -> None:
    ber = np.logspace(-15, -13, N)  # two decades in three days: one more (1e-12) in about 36 h
    frame = links(link_series({"effective_ber": ber}, gpu=4, link=1))
    (watch,) = watch_list({"link_samples": frame})
    assert watch.rule == "effective_ber" and watch.unit is Unit.RATIO
    assert 30 < watch.hours_left < 42 and watch.now == pytest.approx(1e-13, rel=0.1)


def test_each_rule_watches_its_own_link_type_and_the_policy_can_narrow_it() -> None:
    frame = links(link_series(_climbing(0, 500), gpu=5, link=None, link_type="pcie", peer="CPU 0"))
    (watch,) = watch_list({"link_samples": frame})
    assert watch.rule == "pcie_replay" and watch.ref.slug == "gpu5-pcie"
    shorter = load_watch(horizon_hours=24)
    assert watch_list({"link_samples": frame}, policy=shorter) == []
