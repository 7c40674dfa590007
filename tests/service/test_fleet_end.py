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


def test_a_node_a_zone_ahead_is_left_past_the_fleets_end() -> None:
    newest = _newest(1, 1, 6.5)  # node-3: 5.5 h ahead, IST read as UTC
    found = fleet_end(newest, window=HOUR, thresholds=THRESHOLDS, now=NOW)
    assert found.end == newest["node-1"]
    assert found.ahead == {"node-3": timedelta(hours=5.5)}
    note = found.note()
    assert note is not None and "node-3's readings run 5.5 h ahead of the fleet's" in note


def test_nodes_close_together_keep_the_newest_end() -> None:
    newest = _newest(1, 1, 1 + SPAN.total_seconds() / 3600 - 1)  # late, but within the span the rules read
    found = fleet_end(newest, window=HOUR, thresholds=THRESHOLDS, now=NOW)
    assert found.end == newest["node-3"] and not found.ahead and found.note() is None


def test_a_node_further_ahead_than_any_zone_is_where_the_fleet_is() -> None:
    newest = _newest(1, 1 + 17)  # node-1 renamed: its old name stopped, the new one reads on
    found = fleet_end(newest, window=HOUR, thresholds=THRESHOLDS, now=NOW)
    assert found.end == newest["node-2"] and not found.ahead


def test_readings_after_the_wall_clock_never_end_the_window() -> None:
    now = (T0 + pd.Timedelta(hours=2)).to_pydatetime()
    within = now + clock_tolerance(THRESHOLDS) / 2
    newest = {**_newest(1.5, 1.5), "close": within, "year": now + timedelta(days=365)}
    found = fleet_end(newest, window=HOUR, thresholds=THRESHOLDS, now=now)
    assert found.end == within and set(found.ahead) == {"year"}


def test_a_live_fleet_whose_most_nodes_stopped_is_silent_not_ahead() -> None:
    now = (T0 + pd.Timedelta(hours=10)).to_pydatetime()
    newest = {**_newest(1, 1, 1), "fresh": now - timedelta(minutes=3)}
    found = fleet_end(newest, window=HOUR, thresholds=THRESHOLDS, now=now)
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
    assert any("node-3's readings run" in r and "its clock, or a zone read wrong" in r
               for r in result.incomplete_reasons), result.incomplete_reasons
    answer = watched(source, thresholds=THRESHOLDS)
    assert "past the fleet's newest" in answer.unjudged["node-3"]
