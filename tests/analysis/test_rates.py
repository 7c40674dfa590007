"""Counter increases like Prometheus increase(): resets, gaps, irregular and messy timestamps."""

from __future__ import annotations

import math
from datetime import timedelta

import numpy as np
import pandas as pd
import pytest

from diagnostics.analysis.metrics import last_state
from diagnostics.analysis.prepared import _any_value, prepare
from diagnostics.analysis.rates import bucketed_increase, windowed_increase
from tests.analysis.helpers import T0, link_series, links, steady

HOUR = timedelta(hours=1)


def one(frame: pd.DataFrame) -> pd.Series:
    assert len(frame) == 1
    return frame.iloc[0]


def test_steady_counter_gives_its_rate() -> None:
    row = one(windowed_increase(links(link_series(steady(1200.0))), window=HOUR))
    assert row["replay_increase"] == pytest.approx(1200.0)
    assert row["replay_per_hour"] == pytest.approx(1200.0)
    assert row["samples"] == 12  # the reading at the window's start is the baseline, not in the window


def test_reset_counts_from_zero_never_negative() -> None:
    # 100/5min, reboot after the 6th reading: the counter restarts at 0 and keeps climbing
    values = [5000, 5100, 5200, 5300, 5400, 5500, 40, 140, 240, 340, 440, 540, 640]
    row = one(windowed_increase(links(link_series(values)), window=HOUR))
    assert row["replay_increase"] == pytest.approx(500 + 40 + 600)
    assert row["resets"] == 1
    assert row["replay_per_hour"] == pytest.approx(1140.0)  # over the one-hour window


def test_scrape_gap_is_bridged_without_inflation() -> None:
    times = [T0 + pd.Timedelta(minutes=m) for m in (0, 5, 10, 50, 55, 60)]
    values = [0, 100, 200, 1000, 1100, 1200]  # 1200/h throughout, 40 minutes unscraped
    row = one(windowed_increase(links(link_series(values, times=times)), window=HOUR))
    assert row["replay_per_hour"] == pytest.approx(1200.0)


def test_window_ending_earlier() -> None:
    values = steady(100.0, n=25)[:13] + [v + 5000 for v in steady(100.0, n=25)[13:]]
    frame = links(link_series(values))
    early = one(windowed_increase(frame, window=HOUR, at=T0 + pd.Timedelta(hours=1)))
    late = one(windowed_increase(frame, window=HOUR, at=T0 + pd.Timedelta(hours=2)))
    assert early["replay_increase"] == pytest.approx(100.0)
    assert late["replay_increase"] == pytest.approx(5100.0)


def test_single_reading_is_a_total_not_a_rate() -> None:
    row = one(windowed_increase(links(link_series([777.0])), window=HOUR))
    assert row["replay_total"] == 777.0
    assert math.isnan(row["replay_per_hour"])
    assert row["replay_increase"] == 0.0


def test_all_equal_counter_is_zero() -> None:
    row = one(windowed_increase(links(link_series([42.0] * 13)), window=HOUR))
    assert row["replay_per_hour"] == 0.0


def test_out_of_order_and_duplicated_timestamps() -> None:
    frame = links(link_series(steady(600.0)))
    shuffled = pd.concat([frame.iloc[::-1], frame.iloc[[3, 7]]], ignore_index=True)
    row = one(windowed_increase(shuffled, window=HOUR))
    assert row["replay_per_hour"] == pytest.approx(600.0)
    assert row["samples"] == 12


def test_mixed_time_zones_are_one_clock() -> None:
    utc = [T0 + pd.Timedelta(minutes=5 * i) for i in range(13)]
    mixed = [t.tz_convert("Europe/Berlin").isoformat() if i % 2 else t.isoformat() for i, t in enumerate(utc)]
    raw = link_series(steady(300.0), times=mixed)
    row = one(windowed_increase(raw, window=HOUR))
    assert row["replay_per_hour"] == pytest.approx(300.0)


def test_links_stay_apart_and_missing_counter_is_nan_free() -> None:
    frame = links(link_series(steady(100.0), link=0), link_series(steady(5000.0), link=1),
                  link_series(steady(10.0), link_type="pcie", link=None, gpu=3))
    out = windowed_increase(frame, window=HOUR)
    nv = out[out["link_type"] == "nvlink"].set_index("link")["replay_per_hour"]
    pcie = out[out["link_type"] == "pcie"]
    assert nv[0] == pytest.approx(100.0)
    assert nv[1] == pytest.approx(5000.0)
    assert pcie["replay_per_hour"].tolist() == pytest.approx([10.0])
    assert len(out) == 3


def test_a_link_without_a_counter_has_no_rate_for_it_even_beside_links_that_have_it() -> None:
    hopper = link_series(steady(100.0), link=0)
    blackwell = link_series({"replay": steady(2.0), "effective_errors": steady(30.0)}, link=1)
    out = windowed_increase(links(hopper, blackwell), window=HOUR).set_index("link")
    assert out.loc[1, "effective_errors_per_hour"] == pytest.approx(30.0)
    assert math.isnan(out.loc[0, "effective_errors_per_hour"])
    assert math.isnan(out.loc[0, "effective_errors_increase"])
    assert out.loc[0, "replay_per_hour"] == pytest.approx(100.0)


def test_a_link_silent_in_the_window_reads_the_same_beside_any_neighbour() -> None:
    silent = link_series({"replay": steady(5.0), "effective_errors": steady(5.0)}, link=2,
                         start=T0 - pd.Timedelta(hours=3))
    alone = links(silent, link_series({"replay": steady(5.0), "effective_errors": steady(5.0)}, link=1))
    mixed = links(silent, link_series(steady(100.0), link=0))
    at = T0 + pd.Timedelta(hours=1)
    for frame in (alone, mixed):
        row = windowed_increase(frame, window=HOUR, at=at).set_index("link").loc[2]
        assert row["samples"] == 0 and row["effective_errors_increase"] == 0.0
        assert math.isnan(row["effective_errors_per_hour"])


def test_bucketed_increase_places_deltas_and_handles_reset() -> None:
    values = [0, 10, 20, 30, 5, 15]
    p = prepare(links(link_series(values)))
    buckets = bucketed_increase(p, "replay", bucket=timedelta(minutes=10), start=T0, buckets=3)
    assert buckets.shape == (1, 3)
    assert np.allclose(buckets[0], [20, 15, 10])


def test_a_counter_is_collected_when_only_an_old_row_holds_a_reading() -> None:
    column = np.full(10_000, np.nan)
    column[5] = 3.0
    order = np.arange(10_000)[::-1].copy()  # every row, reordered: read without gathering
    assert _any_value(column, None) and _any_value(column, order)
    assert not _any_value(column, order[:9_000])  # the rows in use leave out the only reading
    assert not _any_value(np.full(10, np.nan), None) and not _any_value(np.zeros(0), None)


def test_a_counter_read_on_few_rows_is_found_among_the_rows_in_use_chunk_by_chunk(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Looked for a chunk of rows at a time (the newest first): a reading in the oldest chunk is found, one only
    outside the rows in use is not, and a column with no reading at all is not looked through."""
    import diagnostics.analysis.prepared as prepared

    monkeypatch.setattr(prepared, "ANY_CHUNK", 100)
    column = np.full(10_000, np.nan)
    column[7] = 1.0
    column[9_000] = 2.0
    rows = np.flatnonzero(np.arange(10_000) != 9_000)[:-1]  # all but the one reading the newest rows hold, and one
    assert _any_value(column, rows)
    assert not _any_value(column, rows[rows > 7])
    assert not _any_value(np.full(10_000, np.nan), rows)


@pytest.mark.parametrize(("apart", "rated"), [(pd.Timedelta(microseconds=3), False), (pd.Timedelta(seconds=59), False),
                                              (pd.Timedelta(seconds=60), True)])
def test_readings_closer_than_the_minimum_interval_give_counts_but_no_rate(apart: pd.Timedelta, rated: bool) -> None:
    """Two pastes of `nvlink -e` a few microseconds apart: 45,120 more errors, but no errors per hour (the
    minimum is `[rate] min_interval_s` in data/limits.toml, one minute)."""
    row = one(windowed_increase(links(link_series([0, 45120], times=[T0, T0 + apart])), window=HOUR))
    assert row["replay_increase"] == 45120
    assert math.isnan(row["replay_per_hour"]) is not rated
    if rated:
        assert row["replay_per_hour"] == pytest.approx(45120 * 3600 / apart.total_seconds())


def _paste(at: str, crc: int) -> pd.DataFrame:
    from diagnostics.ingest import detect
    from diagnostics.ingest.base import Source

    text = (f"root@n1:~# date -Ins\n{at}\nroot@n1:~# nvidia-smi nvlink -e\nGPU 0: X (UUID: GPU-0)\n"
            f"  Link 0: Replay Errors: 0\n  Link 0: Recovery Errors: 0\n  Link 0: CRC Errors: {crc}\n")
    return detect.read(Source.from_text(text))["link_samples"]


@pytest.mark.parametrize(("second", "rated"), [("2026-11-29T16:09:49.000003+00:00", False),
                                               ("2026-11-29T16:19:49.000001+00:00", True)])
def test_two_pastes_microseconds_apart_give_no_rate_to_judge(second: str, rated: bool) -> None:
    """The issue's two pastes: 45,120 CRC errors between readings 2 us apart were 45 trillion an hour, failing."""
    from diagnostics.analysis import analyze_tables

    samples = pd.concat([_paste("2026-11-29T16:09:49.000001+00:00", 0), _paste(second, 45120)], ignore_index=True)
    diagnosis = analyze_tables({"link_samples": samples}, node_id="n1")
    finding = next(f for f in diagnosis.findings if f.link == 0)
    assert finding.counts.get("crc_flit") == 45120
    assert ("crc_flit" in finding.rates_per_hour) is rated
    if rated:
        assert finding.rates_per_hour["crc_flit"] == pytest.approx(45120 * 6)
    else:
        assert not diagnosis.fault_detected
        assert any("a rate needs readings at least 60 s apart" in e for e in finding.evidence)


@pytest.mark.parametrize("profile", [None, "dcgm"])
def test_a_recovery_storm_fails_within_one_window_in_every_profile(profile: str | None) -> None:
    """500 recoveries an hour with the step 33% slower was 'fault=no ... warnings only': the persistence rule
    waits for 3 of 4 windows; the rate rule fails in the first (DCGM fails on the first recovery)."""
    from diagnostics.analysis import analyze_tables
    from diagnostics.config.thresholds import load_thresholds
    from tests.analysis.helpers import link_series, links, steady, steps

    thresholds = load_thresholds()
    thresholds = thresholds.with_profile(profile) if profile else thresholds
    frame = links(link_series({"replay": steady(2.0), "recovery": steady(500.0)}, gpu=2, link=1),
                  link_series({"replay": steady(2.0), "recovery": steady(0.0)}, gpu=3, link=1))
    d = analyze_tables({"link_samples": frame, "step_samples": steps([100.0] * 6 + [133.0] * 7)}, node_id="n1",
                       window=pd.Timedelta(hours=1).to_pytimedelta(), thresholds=thresholds)
    assert d.fault_detected
    bad = [f for f in d.findings if f.gpu == 2]
    assert bad and bad[0].severity.value == "failing"
    assert any(c.rule == "recovery_rate" for c in bad[0].crossed) or profile == "dcgm"


@pytest.mark.parametrize("state_first", [True, False])
def test_two_sources_reading_a_link_at_one_time_are_one_reading_whichever_comes_last(state_first: bool) -> None:
    """A table that states the link inactive and a scrape of the same instants that states no state (dcgm-exporter
    has no link-state field): each column is the reading's that holds it, in whichever order the two were read."""
    values = steady(600.0)
    stated = link_series(values, link_state="inactive")
    scraped = link_series(values).assign(link_state=None, source="dcgm")
    frame = links(*((stated, scraped) if state_first else (scraped, stated)))
    p = prepare(frame)
    assert len(p.t) == len(values)  # one reading per instant
    state = last_state(p, int(p.t.max()))
    assert list(state["link_state"]) == ["inactive"]
    row = one(windowed_increase(frame, window=HOUR, prepared=p))
    assert row["replay_per_hour"] == pytest.approx(600.0)


def test_a_reading_without_the_counter_is_bridged_not_counted_as_zero() -> None:
    # 1,200/h throughout; one scrape lost the field: the increase across it is counted at the next reading
    values = steady(1200.0)
    values[6] = math.nan
    row = one(windowed_increase(links(link_series(values)), window=HOUR))
    assert row["replay_increase"] == pytest.approx(1200.0)
    assert row["replay_per_hour"] == pytest.approx(1200.0)


def test_a_restart_across_a_reading_without_the_counter_is_still_a_restart() -> None:
    values = [5000.0, 5100.0, math.nan, 40.0, 140.0]
    row = one(windowed_increase(links(link_series(values)), window=HOUR))
    assert row["replay_increase"] == pytest.approx(100.0 + 40.0 + 100.0)
    assert row["resets"] == 1


def test_a_counter_one_reading_holds_is_a_total_not_a_zero_rate() -> None:
    # the second output was cut before this GPU's replays: 63 is a total, and no rate (not 0/h) is made of it
    row = one(windowed_increase(links(link_series([63.0, math.nan], link_type="pcie", link=None,
                                                  step_min=10.0)), window=HOUR))
    assert row["readings"] == 2
    assert math.isnan(row["replay_increase"]) and math.isnan(row["replay_per_hour"])
    assert row["replay_total"] == 63.0


def test_a_counter_missing_from_the_newest_readings_is_rated_over_its_own() -> None:
    # 600/h over the first 30 minutes, then three readings without the field: its rate is over its 30 minutes
    values = [*steady(600.0, n=7), math.nan, math.nan, math.nan]
    row = one(windowed_increase(links(link_series(values)), window=HOUR))
    assert row["replay_increase"] == pytest.approx(300.0)
    assert row["replay_per_hour"] == pytest.approx(600.0)
    assert row["replay_total"] == pytest.approx(300.0)
