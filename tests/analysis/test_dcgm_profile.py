"""The `dcgm` profile judges as DCGM 4.6.0's health watch does: one test per rule, with the source's own figures.

The figures are DCGM's (github.com/NVIDIA/DCGM, tag v4.6.0): modules/health/DcgmHealthWatch.cpp (the function named
in each test), common/DcgmGPUHardwareLimits.h (DCGM_LIMIT_MAX_NVLINK_ERROR = 1, DCGM_LIMIT_MAX_NVLINK_CRC_ERROR =
100.0, DCGM_SYMBOL_BER_FLOOR_EXP_AGGREGATED = 238) and common/tests/DcgmUtilitiesTests.cpp (the effective BER cases).
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from diagnostics import Severity, load_thresholds
from diagnostics.analysis.node import analyze_tables
from diagnostics.config.thresholds import Thresholds
from diagnostics.model import Diagnosis
from tests.analysis.helpers import link_series, links, steady

DCGM = load_thresholds(profile="dcgm")
DEFAULT = load_thresholds()
# GetExpectedPcieReplayRate's table: a 1e-12 bit-error ratio at each generation's rate, per lane per minute
PER_LANE = {1: 2.5 / 1000 * 60, 2: 5.0 / 1000 * 60, 3: 8.0 / 1000 * 60, 4: 16.0 / 1000 * 60, 5: 32.0 / 1000 * 60,
            6: 64.0 / 1000 * 60}


def _diagnose(frame: pd.DataFrame, thresholds: Thresholds, platform: str | None = None) -> Diagnosis:
    return analyze_tables({"link_samples": frame}, node_id="n1", thresholds=thresholds, platform=platform)


def _judged(d: Diagnosis, rule: str) -> Severity | None:
    for f in d.findings:
        for c in f.crossed:
            if c.rule == rule:
                return c.severity
    return None


def _pcie(rate_per_hour: float, gen: int, width: int) -> pd.DataFrame:
    return links(link_series(steady(rate_per_hour), link_type="pcie", link=None, peer="CPU 0 root port", gen=gen,
                             max_gen=gen, width=width, max_width=16))


@pytest.mark.parametrize(("gen", "width", "per_minute"), [(4, 16, 16), (5, 16, 31), (5, 8, 16), (3, 8, 4), (1, 1, 1),
                                                          (6, 16, 62), (7, 16, 62)])
def test_monitor_pcie_warns_above_the_links_own_generation_and_width(gen: int, width: int, per_minute: int) -> None:
    """MonitorPcie: replays in the window > ceil(rate per lane x lanes) warn, never fail; Gen7 takes Gen6's rate."""
    assert per_minute == math.ceil(PER_LANE[min(gen, 6)] * width)  # the table's own arithmetic
    limit = per_minute * 60.0
    assert DCGM.rule("pcie_replay").limit(gen, width) == limit
    assert _judged(_diagnose(_pcie(limit, gen, width), DCGM), "pcie_replay") is None  # strictly greater
    assert _judged(_diagnose(_pcie(limit + 12, gen, width), DCGM), "pcie_replay") is Severity.WARNING


def test_an_h100s_1200_replays_an_hour_do_not_even_warn_in_dcgm() -> None:
    """The issue's case: '1,200/h > 960/h failing' on a Gen5 x16 H100 link; DCGM's limit there is 31 a minute."""
    d = _diagnose(_pcie(1200, 5, 16), DCGM, "hgx-h100-8gpu")
    assert _judged(d, "pcie_replay") is None
    d = _diagnose(_pcie(1900, 5, 16), DCGM, "hgx-h100-8gpu")
    pcie = next(f for f in d.findings if f.link_type.value == "pcie")
    assert pcie.severity is Severity.WARNING and "(Gen5 x16)" in pcie.crossed[0].message


def test_a_pcie_link_without_generation_or_width_is_not_judged_by_dcgms_rule() -> None:
    """GetExpectedPcieReplayRate returns DCGM_ST_NO_DATA without them, and MonitorPcie returns OK."""
    frame = links(link_series(steady(50_000), link_type="pcie", link=None, peer="CPU 0 root port"))
    assert _judged(_diagnose(frame, DCGM), "pcie_replay") is None
    assert _judged(_diagnose(frame, DEFAULT), "pcie_replay") is Severity.FAILING


@pytest.mark.parametrize(("counter", "rule"), [
    ("symbol_errors", "nvlink5_symbol_errors"), ("rx_malformed", "nvlink5_malformed"),
    ("rx_dropped", "nvlink5_dropped"), ("rx_errors", "nvlink5_rx_errors"),
    ("rx_remote_errors", "nvlink5_remote_errors"), ("rx_general_errors", "nvlink5_general_errors"),
    ("integrity_errors", "nvlink5_integrity"), ("ecc_errors", "nvlink5_ecc"),
    ("recovery", "recovery"), ("effective_errors", "effective_errors"),
])
def test_monitor_nvlink5_fields_fails_on_any_increase(counter: str, rule: str) -> None:
    """MonitorNVLink5Fields: (end - start) >= DCGM_LIMIT_MAX_NVLINK_ERROR (1) fails, for every counter it lists."""
    flat = links(link_series({counter: [7.0] * 13}, gpu_total=True, link=None))
    once = links(link_series({counter: [7.0] * 12 + [8.0]}, gpu_total=True, link=None))
    assert _judged(_diagnose(flat, DCGM, "hgx-b200-8gpu"), rule) is None
    assert _judged(_diagnose(once, DCGM, "hgx-b200-8gpu"), rule) is Severity.FAILING


def test_node26s_symbol_errors_are_judged_under_dcgm() -> None:
    """The issue's node-26: 'symbol errors 344,845/h' was shown and judged by no rule."""
    frame = links(link_series({"symbol_errors": steady(344_845)}, gpu_total=True, link=None))
    assert _judged(_diagnose(frame, DEFAULT, "hgx-b200-8gpu"), "nvlink5_symbol_errors") is None
    d = _diagnose(frame, DCGM, "hgx-b200-8gpu")
    assert _judged(d, "nvlink5_symbol_errors") is Severity.FAILING
    assert any("symbol errors 344,845/h > 0/h (nvlink5_symbol_errors)" in c.message
               for f in d.findings for c in f.crossed)


@pytest.mark.parametrize(("ber", "fails"), [(1e-12, False), (2e-12, True), (10e-13, False), (11e-13, True),
                                            (1e-11, True)])
def test_monitor_nvlink5_fields_effective_ber(ber: float, fails: bool) -> None:
    """IsEffectiveBerThresholdExceeded: (1, 12) passes, (2, 12) fails, (10, 13) passes, (11, 13) and (1, 11) fail."""
    frame = links(link_series({"replay": [0.0] * 13}, gpu_total=True, link=None, effective_ber=ber))
    assert (_judged(_diagnose(frame, DCGM, "hgx-b200-8gpu"), "effective_ber") is Severity.FAILING) is fails


@pytest.mark.parametrize(("mantissa", "exponent", "fails"), [(15, 238, False), (16, 238, True), (2, 237, True),
                                                             (0, 100, False), (9, 239, False), (1, 9, True)])
def test_monitor_nvlink5_fields_symbol_ber(mantissa: int, exponent: int, fails: bool) -> None:
    """IsSymbolBerThresholdExceeded with the aggregated floor (DCGM_SYMBOL_BER_FLOOR_EXP_AGGREGATED = 238): a BER
    whose mantissa is 0 passes, so does the floor itself; worse than 15e-238 fails. (DCGM compares the encoded
    mantissa and exponent: 1e-237 encoded at exponent 237 fails there; its decoded ratio, below the floor's, passes
    here: the one value the decoded field cannot tell apart.)"""
    frame = links(link_series({"replay": [0.0] * 13}, gpu_total=True, link=None,
                              symbol_ber=mantissa * 10.0 ** -exponent))
    assert (_judged(_diagnose(frame, DCGM, "hgx-b200-8gpu"), "symbol_ber") is Severity.FAILING) is fails


@pytest.mark.parametrize(("counter", "rule"), [("replay", "nvlink_replay"), ("recovery", "recovery")])
def test_monitor_nvlink4_fields_fails_on_one_replay_or_recovery(counter: str, rule: str) -> None:
    """MonitorNVLink4Fields: a replay or recovery increase >= DCGM_LIMIT_MAX_NVLINK_ERROR (1) fails."""
    frame = links(link_series({counter: [0.0] * 12 + [1.0]}))
    assert _judged(_diagnose(frame, DCGM), rule) is Severity.FAILING
    assert _judged(_diagnose(frame, DEFAULT), "nvlink_replay") is None


def test_monitor_nvlink4_fields_crc_warns_then_fails_at_100_a_second() -> None:
    """MonitorNVLink4Fields: any CRC error warns; perSec >= DCGM_LIMIT_MAX_NVLINK_CRC_ERROR (100.0) fails."""
    one = links(link_series({"crc_flit": [0.0] * 12 + [1.0]}))
    assert _judged(_diagnose(one, DCGM), "crc") is Severity.WARNING
    at = links(link_series({"crc_flit": steady(100.0 * 3600)}))  # exactly 100 per second: DCGM's `>=` fails
    assert _judged(_diagnose(at, DCGM), "crc_rate") is Severity.FAILING
    below = links(link_series({"crc_flit": steady(99.0 * 3600)}))
    assert _judged(_diagnose(below, DCGM), "crc_rate") is None


@pytest.mark.parametrize("rule,counter", [("dl_replay_total", "replay"), ("dl_recovery_total", "recovery"),
                                          ("dl_crc_total", "crc_flit")])
def test_monitor_nvlink_error_fields_fails_on_a_lifetime_total_before_blackwell(rule: str, counter: str) -> None:
    """MonitorNVLinkErrorFields: before Blackwell, the latest DL CRC/recovery/replay total > 0 fails, increase or
    not; on Blackwell those fields are not read; with the architecture unknown DCGM falls back to pre-Blackwell."""
    frame = links(link_series({counter: [3.0] * 13}))  # a total of 3, no increase in the window
    assert _judged(_diagnose(frame, DCGM, "hgx-h100-8gpu"), rule) is Severity.FAILING
    assert _judged(_diagnose(frame, DCGM), rule) is Severity.FAILING
    assert _judged(_diagnose(frame, DCGM, "hgx-b200-8gpu"), rule) is None
    assert _judged(_diagnose(frame, DEFAULT, "hgx-h100-8gpu"), rule) is None
    zero = links(link_series({counter: [0.0] * 13}))
    assert _judged(_diagnose(zero, DCGM, "hgx-h100-8gpu"), rule) is None


@pytest.mark.parametrize(("counter", "rule", "severity"), [
    ("recovery_successful", "recovery_successful_total", Severity.WARNING),
    ("recovery_failed", "recovery_failed_total", Severity.FAILING)])
def test_monitor_nvlink_error_fields_on_blackwell(counter: str, rule: str, severity: Severity) -> None:
    """MonitorNVLinkErrorFields on Blackwell: successful recoveries > 0 warn, failed ones fail."""
    frame = links(link_series({counter: [2.0] * 13}, gpu_total=True, link=None))
    assert _judged(_diagnose(frame, DCGM, "hgx-b200-8gpu"), rule) is severity


def test_profile_rules_are_dormant_outside_their_profile() -> None:
    names = {r.name for r in DEFAULT.rules}
    assert not names & {"nvlink5_symbol_errors", "dl_replay_total", "recovery_failed_total"}
    assert {r.name for r in DCGM.rules} >= {"nvlink5_symbol_errors", "dl_replay_total", "recovery_failed_total"}
    every = {r.name for r in DCGM.rules}
    assert all(("MonitorNVLink" in r.doc or "MonitorPcie" in r.doc or "DCGM" in r.doc) for r in DCGM.rules
               if r.profiles)
    assert every >= names


def test_a_gpu_total_is_dropped_only_where_its_own_gpus_links_carry_its_counters() -> None:
    """Rates read a GPU's total only where its per-link rows lack one of its counters: judged GPU by GPU and node by
    node, a node without totals and a GPU with none of its links read apart."""
    from diagnostics.analysis.rows import per_link_rows

    frame = links(
        link_series({"replay": steady(10)}, node="n1", gpu=0, gpu_total=True, link=None),  # its links carry replay
        link_series({"replay": steady(5)}, node="n1", gpu=0, link=0),
        link_series({"replay": steady(10), "symbol_errors": steady(1)}, node="n1", gpu=1, gpu_total=True, link=None),
        link_series({"replay": steady(5)}, node="n1", gpu=1, link=0),  # ... symbol errors only in the total
        link_series({"replay": steady(10)}, node="n2", gpu=0, gpu_total=True, link=None),  # no link of its own
        link_series({"replay": steady(5)}, node="n2", gpu=1, link=0),
        link_series({"replay": steady(5)}, node="n3", gpu=0, link=0),  # no total at all
    )
    kept = per_link_rows(frame)
    assert kept is not None
    dropped = frame.drop(index=kept)
    assert set(zip(dropped["node_id"].astype(str), dropped["gpu"].astype(int), strict=True)) == {("n1", 0)}
    assert len(dropped) == 13 and bool(dropped["gpu_total"].all())
