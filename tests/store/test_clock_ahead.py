"""Ingest says readings dated after the wall clock: a clock ahead, or a zone read as UTC, is seen when it lands."""

from __future__ import annotations

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
