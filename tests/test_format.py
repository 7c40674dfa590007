"""One formatter for every value: a unit per metric, the same text in every output."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from diagnostics import format as fmt
from diagnostics.metrics import AER_COUNTERS, COUNTERS, METRICS, Kind, applies, unit_of


@pytest.mark.parametrize(("value", "plain", "compact"), [
    (8900.0, "8,900", "8.9k"), (45120.0, "45,120", "45k"), (1_250_000.0, "1,250,000", "1.2M"),
    (12.0, "12", "12"), (0.25, "0.25", "0.25"), (2.5, "2.5", "2.5"), (1500.4, "1,500", "1.5k"),
])
def test_numbers_never_show_a_trailing_zero(value: float, plain: str, compact: str) -> None:
    assert (fmt.number(value), fmt.number(value, compact=True)) == (plain, compact)


def test_an_int_past_a_floats_precision_is_printed_exactly() -> None:
    assert fmt.number(2**63 - 1) == "9,223,372,036,854,775,807"  # as a float: ...808


def test_each_metric_is_shown_in_its_own_unit() -> None:
    assert fmt.metric("replay", 8900.0) == "replays 8,900/h"
    assert fmt.metric("width_lost", 8.0) == "8 lanes lost"
    assert fmt.metric("width_lost", 1.0) == "1 lane lost"
    assert fmt.metric("gen_lost_under_load", 1.0) == "1 generation lost under load"
    assert fmt.metric("effective_ber", 3e-12) == "effective BER 3.0e-12"
    assert fmt.value(2.0, "events") == "2 events" and fmt.value(7.0, "GPUs") == "7 GPUs"
    assert fmt.value(232.04, "GB/s") == "232 GB/s" and fmt.value(23.2, "GB/s") == "23.2 GB/s"
    assert fmt.metrics({"replay": 8771.0, "crc": 0.0, "width_lost": 8.0}) == "replays 8,771/h, 8 lanes lost"


def test_a_count_of_one_is_worded_in_the_singular() -> None:
    assert fmt.count(1, "healthy node") == "1 healthy node" and fmt.count(3, "healthy node") == "3 healthy nodes"
    assert fmt.count(0, "node") == "0 nodes" and fmt.count(1, "GPU", "GPUs") == "1 GPU"
    assert fmt.count(2, "more degraded link") == "2 more degraded links"
    assert fmt.noun(1, "lane") == "lane" and fmt.noun(2, "lane") == "lanes" and fmt.noun(2, "GPU", "GPUs") == "GPUs"


def test_numbers_are_listed_as_runs() -> None:
    assert fmt.spans([5, 0, 1, 2, 3, 3]) == "0-3, 5" and fmt.spans([7]) == "7" and fmt.spans([]) == ""
    assert fmt.spans([0, 2, 4, 5]) == "0, 2, 4-5"


def test_a_pcie_counter_is_not_an_nvlink_figure() -> None:
    assert not applies("replay_rollovers", "nvlink") and applies("replay_rollovers", "pcie")
    assert not applies("width_lost", "nvlink") and not applies("effective_ber", "pcie")
    assert applies("replay", "nvlink") and applies("replay", "pcie")


def test_totals_lanes_times_and_windows() -> None:
    assert fmt.totals({"replay": 9000.0, "crc_flit": 45000.0, "crc": 45000.0}) == \
        "replays 9,000, CRC errors 45,000 since reset"
    assert fmt.totals({"replay": 0.0}) == "no errors since reset"
    assert fmt.lanes_lost(8, 16) == "lanes lost: 8 of 16 (running x8 of x16)"
    end = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
    assert fmt.window(1.0, end) == "window 1 h to 2026-03-01 08:00 UTC"
    assert fmt.window(0.5, None) == "window 0.5 h"
    assert fmt.percent(88.84) == "+88.8%" and fmt.percent(None) == "n/a"


def test_one_table_of_metrics_is_what_the_tables_the_engine_prometheus_and_the_rules_read() -> None:
    """A metric is added in one place: the link samples' columns, the engine's rates, the gauges the server reads
    and each rule's unit are the metric table's."""
    from diagnostics.config import load_thresholds
    from diagnostics.prometheus.gauges import GAUGES
    from diagnostics.tables import LINK_SAMPLES

    assert [c for c in LINK_SAMPLES.columns if c in METRICS] == [*COUNTERS, "symbol_ber", "effective_ber",
                                                                  *AER_COUNTERS]
    assert {n: m for n, m in METRICS.items() if m.kind is Kind.LEVEL and m.column} == GAUGES
    assert all(c in LINK_SAMPLES.columns for m in GAUGES.values() for c in m.columns)
    for rule in load_thresholds().rules:
        if rule.counter in METRICS:
            assert rule.unit is unit_of(rule.counter), rule.name
    assert {unit_of(c) for c in COUNTERS} == {fmt.Unit.PER_HOUR} and unit_of("width_lost") is fmt.Unit.LANES


def test_a_rule_in_another_unit_than_its_metric_is_refused(tmp_path: Path) -> None:
    from diagnostics.config import load_thresholds
    from diagnostics.errors import ConfigError

    path = tmp_path / "t.toml"
    path.write_text('[[rule]]\nname = "lanes"\ncounter = "width_lost"\nabove = 1.0\nseverity = "warning"\n'
                    'unit = "/h"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="width_lost is judged in 'lanes', not '/h'"):
        load_thresholds(path)


def test_a_lone_readings_totals_say_a_pinned_counters_lower_bound_beside_them() -> None:
    """The note `pinned` writes is found among a link's evidence and said after its totals; other evidence is not."""
    note = fmt.pinned(["crc_flit"], 65535)
    counts = {"replay": 148.0, "crc_flit": 65535.0}
    assert fmt.totals_noted(counts, ["one reading: lifetime totals only", note]) == f"{fmt.totals(counts)} ({note})"
    assert fmt.totals_noted(counts, ["one reading: lifetime totals only"]) == fmt.totals(counts)
