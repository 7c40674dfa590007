"""Times as tables and step logs write them: ISO 8601 with any offset, epoch s/ms/us/ns told apart by magnitude
(said once per file), and a time column none of whose values reads refused, naming the column and a value."""

from __future__ import annotations

import pandas as pd
import pytest

from diagnostics.errors import InputError
from diagnostics.ingest.stamps import UNIT_NAMES, epoch_time, read_times
from tests.ingest.helpers import REAL, read_text

INSTANT = pd.Timestamp("2025-11-24 16:00:00.123456", tz="UTC")  # 1764000000.123456 s since the epoch


def test_epoch_units_are_told_apart_by_magnitude() -> None:
    raw = pd.Series(["1764000000.123456", "1764000000123.456", "1764000000123456", "1764000000123456000"])
    times, units = read_times(raw)
    assert units == ["s", "ms", "us", "ns"]
    assert (times - INSTANT).abs().max() < pd.Timedelta("1us")
    assert times.iloc[3] == INSTANT  # whole nanoseconds are read from their digits, exactly
    assert epoch_time(1764000000) == (pd.Timestamp("2025-11-24 16:00:00", tz="UTC"), "s")
    assert epoch_time("1764000000123456000") == (INSTANT, "ns")
    assert epoch_time(True) is None and epoch_time("12:00") is None and epoch_time(float("nan")) is None


def test_iso_8601_with_any_offset_is_utc() -> None:
    raw = pd.Series(["2025-11-24T21:30:00.123456+05:30", "2025-11-24T08:00:00.123456-08:00",
                     "2025-11-24T16:00:00.123456Z", "2025-11-24 16:00:00.123456"])
    times, units = read_times(raw)
    assert units == [] and (times == INSTANT).all()


def test_what_is_no_time_is_nat() -> None:
    times, _ = read_times(pd.Series(["-5e30", "soon", "", None, "1e300", "2025-13-40T00:00:00Z"]))
    assert times.isna().all()


def _links(stamps: list[str]) -> str:
    rows = ["timestamp,node_id,gpu,link_type,link,replay"]
    rows += [f"{t},n1,0,nvlink,0,{i * 100}" for i, t in enumerate(stamps)]
    return "\n".join(rows) + "\n"


def test_a_table_in_epoch_seconds_says_so_once_not_per_row() -> None:
    result = read_text(_links([str(1764000000 + 300 * i) for i in range(40)]), name="links.csv")
    times = result["link_samples"]["timestamp"]
    assert times.notna().all() and times.iloc[1] - times.iloc[0] == pd.Timedelta("5min")
    assert [w.message for w in result.warnings] == ["timestamp: epoch seconds (told by magnitude), read as UTC"]


def test_an_unreadable_time_column_refuses_the_file_naming_the_column_and_a_value() -> None:
    with pytest.raises(InputError) as caught:
        read_text(_links(["t+0", "t+300", "t+600"]), name="links.csv")
    assert caught.value.field == "timestamp" and caught.value.value == "t+0" and caught.value.line == 2
    assert "cannot be read" in str(caught.value)


def test_one_unreadable_time_among_readable_ones_is_that_row_said() -> None:
    result = read_text(_links(["1764000000", "1764000300", "21:25:-0", "1764000900"]), name="links.csv")
    times = result["link_samples"]["timestamp"]
    assert times.isna().tolist() == [False, False, True, False]
    assert any(w.line == 4 and "'21:25:-0'" in w.message for w in result.warnings)


def test_a_step_log_in_epoch_milliseconds() -> None:
    text = "".join(f'{{"ts": {1764000000000 + 1000 * i}, "iter": {i}, "iteration_time_ms": 800}}\n'
                   for i in range(5))
    result = read_text(text, fmt="steplog", name="train.jsonl")
    times = result["step_samples"]["timestamp"]
    assert times.iloc[0] == pd.Timestamp("2025-11-24 16:00:00", tz="UTC")
    assert times.iloc[4] - times.iloc[0] == pd.Timedelta("4s")
    said = ["step times are epoch milliseconds (told by magnitude), read as UTC"]
    assert [w.message for w in result.warnings] == said


def test_a_step_log_whose_times_cannot_be_read_is_refused() -> None:
    text = "time,iteration,iteration_time_ms\n" + "".join(f"later{i},{i},800\n" for i in range(3))
    with pytest.raises(InputError) as caught:
        read_text(text, fmt="steplog", name="train.csv")
    assert (caught.value.field, caught.value.value, caught.value.line) == ("time", "later0", 2)


STAMPS = {"s": "1764000000.123", "ms": "1764000000123", "us": "1764000000123456", "ns": "1764000000123456000"}


@pytest.mark.parametrize("unit", sorted(STAMPS))
def test_scrapes_read_their_timestamps_in_any_epoch_unit(unit: str) -> None:
    """dcgm-exporter and NMX-T scrapes: the exposition format writes milliseconds and OpenMetrics seconds; an
    exporter that writes micro- or nanoseconds is read too, told by magnitude and said once."""
    at = pd.Timestamp("2025-11-24 16:00:00.123", tz="UTC")
    dcgm = "".join(line.rstrip("\n") + f" {STAMPS[unit]}\n" for line in (REAL / "dcgm_metrics_gb200_1.txt")
                   .read_text().splitlines(keepends=True) if line.startswith("DCGM_FI_"))
    nmxt = "".join(line.rsplit(" ", 1)[0] + f" {STAMPS[unit]}\n" for line in (REAL / "nmxt_lid_gb200_1.txt")
                   .read_text().splitlines() if line.startswith("lid{"))  # in place of its own (ms) time
    for text, fmt in ((dcgm, "dcgm"), (nmxt, "nmxt")):
        result = read_text(text, fmt=fmt, name=f"scrape-{fmt}.prom")
        assert set(result["link_samples"]["timestamp"].dt.round("ms")) == {at}, fmt  # dcgm keeps milliseconds
        said = [w.message for w in result.warnings if "epoch" in w.message]
        assert said == ([] if unit in ("s", "ms") else
                        [f"timestamps: epoch {UNIT_NAMES[unit]} (told by magnitude), read as UTC"]), fmt
