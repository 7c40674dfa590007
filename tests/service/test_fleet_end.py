"""A fleet's window ends where the fleet's readings are: a node whose clock runs ahead (or whose zone was read as
UTC) is left past the end and named, not allowed to make every other node read as silent."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
from freezegun import freeze_time

from diagnostics import load_thresholds
from diagnostics.analysis.fleet import history_needed
from diagnostics.service import Request, StoreSource, sweep
from diagnostics.service.fleet_end import clock_tolerance, fleet_end
from diagnostics.service.fleetwide import watched
from diagnostics.store import open_store
from tests.analysis.helpers import T0, link_series, links, steady

THRESHOLDS = load_thresholds()
HOUR = timedelta(hours=1)
NOW = datetime(2026, 12, 1, tzinfo=UTC)
SPAN = history_needed(HOUR, THRESHOLDS)  # past this, the other nodes read as silent


def _newest(*hours_after_t0: float) -> dict[str, datetime]:
    return {f"node-{i + 1}": (T0 + pd.Timedelta(hours=h)).to_pydatetime() for i, h in enumerate(hours_after_t0)}


def test_old_readings_a_node_dates_ahead_of_the_others_keep_the_newest_end() -> None:
    """Read today, readings a node dates hours after the others' (its zone read wrong, or the others stopped
    reporting) cannot be told apart: the others read as silent, as a node that stopped must, never a stopped node
    as live."""
    for hours in (1 + SPAN.total_seconds() / 3600 - 1, 6.5, 18):
        newest = _newest(1, 1, hours)
        found = fleet_end(newest, thresholds=THRESHOLDS, now=NOW)
        assert found.end == newest["node-3"] and not found.ahead and found.note() is None


def test_readings_after_the_wall_clock_never_end_the_window() -> None:
    now = (T0 + pd.Timedelta(hours=2)).to_pydatetime()
    within = now + clock_tolerance(THRESHOLDS) / 2
    newest = {**_newest(1.5, 1.5), "close": within, "year": now + timedelta(days=365)}
    found = fleet_end(newest, thresholds=THRESHOLDS, now=now)
    assert found.end == within and set(found.ahead) == {"year"}


def test_a_live_fleet_whose_most_nodes_stopped_is_silent_not_ahead() -> None:
    now = (T0 + pd.Timedelta(hours=10)).to_pydatetime()
    newest = {**_newest(1, 1, 1), "fresh": now - timedelta(minutes=3)}
    found = fleet_end(newest, thresholds=THRESHOLDS, now=now)
    assert found.end == newest["fresh"] and not found.ahead


def _store(tmp_path: Path) -> Path:
    """node-1 fails (2,400 replays an hour), node-2 is clean, node-3's clock runs a year ahead."""
    csv = tmp_path / "links.csv"
    links(link_series(steady(2400.0), node="node-1"), link_series(steady(0.0), node="node-2"),
          link_series(steady(0.0), node="node-3", start=T0 + pd.Timedelta(days=365))).to_csv(csv, index=False)
    store = tmp_path / "store"
    assert open_store(store).ingest([csv], fmt="tables").files[0].status == "ingested"
    return store


@freeze_time("2026-06-01")
def test_a_clock_a_year_ahead_does_not_blind_the_sweep(tmp_path: Path) -> None:
    source = StoreSource(_store(tmp_path))
    result = sweep(source, Request(thresholds=THRESHOLDS))
    assert result.at < datetime(2026, 6, 1, tzinfo=UTC)
    assert {o.node_id for o in result.offenders} == {"node-1"}
    assert not result.complete and "node-3" not in result.silent
    assert any("node-3's readings run" in r and "its clock runs ahead, or its zone was read wrong" in r
               for r in result.incomplete_reasons), result.incomplete_reasons
    answer = watched(source, thresholds=THRESHOLDS)
    assert "past the fleet's newest" in answer.unjudged["node-3"]
