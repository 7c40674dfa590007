"""Ingest says readings dated after the wall clock: a clock ahead, or a zone read as UTC, is seen when it lands."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
from freezegun import freeze_time

from diagnostics.store import open_store
from tests.analysis.helpers import T0, link_series, links, steady


def _ingest(tmp_path: Path, start: pd.Timestamp) -> list[str]:
    csv = tmp_path / "links.csv"
    links(link_series(steady(0.0), node="node-1", start=start)).to_csv(csv, index=False)
    report = open_store(tmp_path / "store").ingest([csv], fmt="tables")
    assert report.files[0].status == "ingested"
    return [str(w) for w in report.warnings]


@freeze_time("2026-03-01T00:30:00Z")
def test_readings_dated_after_the_wall_clock_are_said(tmp_path: Path) -> None:
    said = [w for w in _ingest(tmp_path, T0 + pd.Timedelta(hours=5.5)) if "after this machine's clock" in w]
    assert len(said) == 1 and "13 link readings" in said[0] and "6 h ahead" in said[0], said


@freeze_time("2026-03-01T00:55:00Z")
def test_readings_within_the_tolerance_are_not(tmp_path: Path) -> None:
    assert not [w for w in _ingest(tmp_path, T0) if "after this machine's clock" in w]


@freeze_time("2026-03-01T00:30:00Z")
def test_events_given_a_time_in_the_future_are_said_too(tmp_path: Path) -> None:
    """A kernel log ingested with `--at 2030-01-01` stored its SXid dated years ahead without a word: a time ahead of
    the clock is said for events as for link readings, in days where it is that far."""
    real = Path(__file__).parents[2] / "fixtures" / "real" / "sxid_22013_h100_1.txt"
    report = open_store(tmp_path / "store").ingest([real], node_id="h1", at=datetime(2030, 1, 1, tzinfo=UTC))
    said = [str(w) for w in report.warnings if "after this machine's clock" in str(w)]
    assert len(said) == 1 and "event" in said[0] and "1,402 days ahead (2030-01-01 00:00 UTC)" in said[0], said
    assert "--at is in the future" in said[0]
