"""The local mirror of Prometheus' increase(), worked by hand from promql/functions.go, and the local sweep."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd
import pytest

from diagnostics import load_thresholds
from tests.prometheus.helpers import link_samples
from tests.prometheus.mirror import extrapolated_increase, failing_links


def test_extrapolates_to_both_edges_when_samples_are_close_to_them() -> None:
    # 3 counted over 30 s of samples; edges 10 s away (< 1.1 x the 10 s spacing): extended to the full 50 s
    got = extrapolated_increase(np.array([10.0, 20, 30, 40]), np.array([1.0, 2, 3, 4]), 0.0, 50.0)
    assert got == pytest.approx(3 * 50 / 30)


def test_far_edge_extends_by_half_a_spacing_only() -> None:
    # the series starts 100 s into the window: only half a spacing (5 s) is added at the start
    got = extrapolated_increase(np.array([100.0, 110, 120]), np.array([10.0, 12, 14]), 0.0, 125.0)
    assert got == pytest.approx(4 * (20 + 5 + 5) / 20)


def test_never_extrapolates_below_zero() -> None:
    # 0.2 at the first sample, rising 0.1/s: zero is 2 s before it, so the start extends by 2 s, not 8 s
    got = extrapolated_increase(np.array([8.0, 18, 28]), np.array([0.2, 1.2, 2.2]), 0.0, 30.0)
    assert got == pytest.approx(2 * (20 + 2 + 2) / 20)


def test_counter_reset_adds_the_lost_value() -> None:
    assert extrapolated_increase(np.array([0.0, 10, 20, 30]), np.array([5.0, 6, 1, 2]), 0.0, 30.0) == 3.0


def test_one_sample_is_no_increase() -> None:
    assert extrapolated_increase(np.array([5.0]), np.array([7.0]), 0.0, 10.0) is None


def _samples(rows: list[dict[str, object]]) -> pd.DataFrame:
    return link_samples(pd.DataFrame(rows))


def test_local_sweep_applies_the_thresholds_per_link() -> None:
    at = datetime(2026, 3, 2, 1, 0, tzinfo=UTC)
    rows = []
    for minute in range(0, 61):
        ts = at - timedelta(minutes=60 - minute)
        rows.append({"timestamp": ts, "node_id": "n1", "gpu": 0, "link_type": "nvlink", "link": 1,
                     "replay": minute * 30.0, "crc_flit": minute * 1.0, "crc_data": minute * 1.0, "recovery": 0.0})
        rows.append({"timestamp": ts, "node_id": "n1", "gpu": 0, "link_type": "nvlink", "link": 2,
                     "replay": minute * 10.0, "recovery": 0.0})
    found = failing_links(_samples(rows), load_thresholds(), at, 1.0)
    keys = {(o.link, o.rule): o.rate_per_hour for o in found}
    assert keys == {(1, "nvlink_replay"): pytest.approx(1800.0), (1, "crc"): pytest.approx(120.0)}
    stricter = failing_links(_samples(rows), load_thresholds(overrides={"nvlink_replay": 500}), at, 1.0)
    assert {(o.link, o.rule) for o in stricter} == {(1, "nvlink_replay"), (1, "crc"), (2, "nvlink_replay")}


def test_real_server_tests_skip_only_outside_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.prometheus import helpers as prometheus_helpers

    monkeypatch.setattr(prometheus_helpers.shutil, "which", lambda name: None)
    monkeypatch.delenv("CI", raising=False)
    assert "prometheus and promtool not installed" in str(prometheus_helpers.promtool_missing())
    monkeypatch.setenv("CI", "true")
    with pytest.raises(RuntimeError, match="CI is set"):
        prometheus_helpers.promtool_missing()
