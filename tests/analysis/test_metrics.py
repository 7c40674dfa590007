"""Each detection rule over histories, missing series, software that looks like hardware."""

from __future__ import annotations

import math
from datetime import timedelta

import pandas as pd
import pytest
from freezegun import freeze_time
from pydantic import BaseModel

from diagnostics.analysis import analyze_tables
from diagnostics.enums import ComponentKind, FaultKind, Priority, Severity
from diagnostics.model import Diagnosis, Finding
from tests.analysis.helpers import T0, events, link_series, links, node_links, steady


def diagnose(tables: dict[str, pd.DataFrame], **kw: object) -> Diagnosis:
    return analyze_tables(tables, node_id="n1", **kw)  # type: ignore[arg-type]


def finding(d: Diagnosis, component: str) -> Finding:
    return next(f for f in d.findings if f.component == component)


def rules(f: Finding) -> set[str]:
    return {c.rule for c in f.crossed}


def test_nvlink_replay_above_1000_per_hour_fails() -> None:
    d = diagnose({"link_samples": links(link_series(steady(1500.0)), link_series(steady(900.0), link=1))})
    assert rules(finding(d, "GPU 0 NVLink 0 -> NVSwitch 0")) == {"nvlink_replay"}
    assert finding(d, "GPU 0 NVLink 1 -> NVSwitch 0").severity is Severity.OK
    assert d.fault_detected and d.isolated_component == "GPU 0 NVLink 0 -> NVSwitch 0"


def test_pcie_replays_have_their_own_rule_and_rollovers_are_severe() -> None:
    frame = links(link_series({"replay": steady(2000.0), "replay_rollovers": [0] * 12 + [1]}, link_type="pcie",
                              link=None, gpu=4, peer="CPU 1 root port"))
    f = finding(diagnose({"link_samples": frame}), "GPU 4 PCIe")
    assert {"pcie_replay", "pcie_replay_rollover"} <= rules(f)
    assert f.severity is Severity.FAILING


def test_crc_warning_and_crc_data_failing() -> None:
    frame = links(link_series({"replay": steady(0), "crc_flit": steady(300.0), "crc_data": steady(0)}),
                  link_series({"replay": steady(0), "crc_flit": steady(0), "crc_data": steady(2000.0)}, link=1))
    d = diagnose({"link_samples": frame})
    assert rules(finding(d, "GPU 0 NVLink 0 -> NVSwitch 0")) == {"crc"}
    assert finding(d, "GPU 0 NVLink 0 -> NVSwitch 0").severity is Severity.WARNING
    assert {"crc", "nvlink_crc_data"} <= rules(finding(d, "GPU 0 NVLink 1 -> NVSwitch 0"))


def test_any_recovery_warns_and_persistent_recoveries_fail_even_at_9_per_hour() -> None:
    once = [0] * 48 + [1]
    rising = [int(9 * i / 12) for i in range(49)]  # 9 per hour for four hours
    frame = links(link_series({"replay": steady(0, n=49), "recovery": once}),
                  link_series({"replay": steady(0, n=49), "recovery": rising}, link=1))
    d = diagnose({"link_samples": frame})
    assert finding(d, "GPU 0 NVLink 0 -> NVSwitch 0").severity is Severity.WARNING
    flapping = finding(d, "GPU 0 NVLink 1 -> NVSwitch 0")
    assert "recovery_persistent" in rules(flapping) and flapping.severity is Severity.FAILING


@pytest.mark.parametrize("hours", [2, 4])
def test_a_flapping_link_read_too_briefly_for_its_persistence_rule_says_so(hours: int) -> None:
    """9 recoveries an hour fail once 3 of the last 4 windows show them; read for 2 hours, only 2 windows can: the
    link warns, and the answer says the persistence rule was not judged, where it said nothing."""
    n = 12 * hours + 1
    rising = [int(9 * i / 12) for i in range(n)]
    d = diagnose({"link_samples": links(link_series({"replay": steady(0, n=n), "recovery": rising}))})
    (f,) = d.findings
    said = [w for w in d.warnings if "recovery_persistent" in w]
    if hours == 2:
        assert rules(f) == {"recovery"} and f.severity is Severity.WARNING
        assert said == [f"{f.component}: recoveries above 0/h in 2 of the last 4 windows of 1 h, and its readings "
                        "reach too few of them to tell whether 3 are (recovery_persistent needs 4 h of readings): "
                        "not judged; a shorter window judges it"]
    else:
        assert "recovery_persistent" in rules(f) and f.severity is Severity.FAILING and said == []


def test_persistence_needs_k_of_m_windows() -> None:
    # recoveries only in the last hour: warning, not the persistent rule
    values = [0] * 37 + [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
    d = diagnose({"link_samples": links(link_series({"replay": steady(0, n=49), "recovery": values}))})
    assert rules(d.findings[0]) == {"recovery"}


def test_pcie_width_downtrain_says_how_many_lanes_not_which() -> None:
    frame = links(link_series(steady(0), link_type="pcie", link=None, gpu=2, width=8, max_width=16, gen=5,
                              max_gen=5, tx_bytes_per_s=5e9))
    d = diagnose({"link_samples": frame})
    f = finding(d, "GPU 2 PCIe")
    assert "pcie_width" in rules(f) and f.lanes == [] and (f.width, f.max_width) == (8, 16)
    assert "lanes lost: 8 of 16 (running x8 of x16)" in f.evidence
    assert f.levels == {"width_lost": 8.0, "gen_lost_under_load": 0.0} and "width_lost" not in f.rates_per_hour
    assert d.localization is not None and d.localization.lanes == []
    assert d.localization.fault is FaultKind.PCIE_DOWNTRAIN


def test_a_lane_a_reader_observed_is_named() -> None:
    frame = links(link_series(steady(0), link_type="pcie", link=None, gpu=2, width=8, max_width=16, gen=5,
                              max_gen=5, tx_bytes_per_s=5e9, lane=6))
    f = finding(diagnose({"link_samples": frame}), "GPU 2 PCIe")
    assert f.lanes == [6]


def test_pcie_gen_drop_is_a_fault_only_under_load() -> None:
    busy = link_series(steady(0), link_type="pcie", link=None, gpu=1, gen=3, max_gen=5, width=16, max_width=16,
                       tx_bytes_per_s=8e9)
    idle = link_series(steady(0), link_type="pcie", link=None, gpu=2, gen=1, max_gen=5, width=16, max_width=16,
                       tx_bytes_per_s=1e6)
    d = diagnose({"link_samples": links(busy, idle)})
    assert rules(finding(d, "GPU 1 PCIe")) == {"pcie_gen_under_load"}
    quiet = finding(d, "GPU 2 PCIe")
    assert quiet.severity is Severity.OK and any("power saving" in e for e in quiet.evidence)


def test_inactive_link_is_down() -> None:
    d = diagnose({"link_samples": links(link_series(steady(0), link_state="inactive"),
                                        link_series(steady(0), link=1))})
    assert finding(d, "GPU 0 NVLink 0 -> NVSwitch 0").severity is Severity.DOWN


def test_series_that_stops_is_down() -> None:
    d = diagnose({"link_samples": links(link_series(steady(0, n=6)), link_series(steady(0), link=1))})
    f = finding(d, "GPU 0 NVLink 0 -> NVSwitch 0")
    assert f.severity is Severity.DOWN and "series stopped" in f.crossed[0].message


def test_missing_links_against_the_platform_and_sku_awareness() -> None:
    frame = node_links(per_gpu=17, switches=(4, 5, 5, 3))  # link 17 of every GPU lacks a series
    d = diagnose({"link_samples": frame}, platform="hgx-h100-8gpu")
    missing = [f for f in d.findings if any(c.rule == "links_below_expected" for c in f.crossed)]
    assert len(missing) == 8 and all(f.link == 17 and f.severity is Severity.DOWN for f in missing)
    assert missing[0].crossed[0].message == "GPU 0 reports 17 of its 18 NVLinks: no series for link 17"
    twelve = node_links(per_gpu=12, switches=(12,))
    d12 = diagnose({"link_samples": twelve}, platform="dgx-a100-8gpu")  # 12 links by design
    assert not [f for f in d12.findings if f.severity is not Severity.OK]


def test_a_link_with_no_series_says_why_as_the_input_s_reader_has_it() -> None:
    """An NMX-T scrape (its GPU ports name a rack's switch chip as their far end) lists a down port as DOWN: its
    missing port's evidence said 'dcgm-exporter drops the series of a link that is down'."""
    def gb200(peer: str) -> pd.DataFrame:
        return links(*[link_series(steady(0.0), gpu=g, link=k, peer=peer.format(k=k)) for g in range(4)
                       for k in range(18) if (g, k) != (1, 5)])

    said = {}
    for peer in ("Switch tray {k} chip 1", "NVSwitch 0"):
        d = diagnose({"link_samples": gb200(peer)}, platform="gb200-nvl72-compute-tray")
        said[peer] = next(f for f in d.findings if (f.gpu, f.link) == (1, 5)).evidence
    assert any("NMX-T lists every port" in e for e in said["Switch tray {k} chip 1"])
    assert not any("dcgm-exporter" in e for e in said["Switch tray {k} chip 1"])
    assert any("dcgm-exporter drops the series" in e for e in said["NVSwitch 0"])


def test_counters_not_collected_is_not_healthy() -> None:
    frame = links(*[link_series(steady(0), link_type="pcie", link=None, gpu=g) for g in range(8)])
    d = diagnose({"link_samples": frame}, platform="hgx-h100-8gpu")
    assert any("not collected" in w for w in d.warnings)


def test_gpu_nvlink_totals_alone_are_judged_and_only_the_failing_link_is_unknown() -> None:
    """A pre-Blackwell exporter given only the GPU-wide NVLink totals: the totals are collected and judged (GPU 3's
    fail), so the node's NVLink counters are not "not collected"; what is unknown is the link within each GPU."""
    def total(gpu: int, rate: float, **counters: list[float]) -> pd.DataFrame:
        return link_series(counters or steady(rate), gpu=gpu, link=None, gpu_total=True, peer=None)

    d = diagnose({"link_samples": links(*[total(g, 30000.0 if g == 3 else 0.0) for g in range(8)])},
                 platform="hgx-h100-8gpu")
    assert [(f.component, rules(f)) for f in d.findings if f.severity is not Severity.OK] == \
        [("GPU 3 NVLinks", {"nvlink_replay"})]
    assert not any("NVLink health is unknown" in w or w.startswith("NVLink counters not collected")
                   for w in d.warnings), d.warnings
    assert any(w.startswith("per-link NVLink counters not collected on this node, only each GPU's total") and
               "which of its links fails, or whether one is down, is unknown" in w for w in d.warnings), d.warnings
    # a GPU with no NVLink error total beside them is not collected; its bandwidth total counts no error
    seven = diagnose({"link_samples": links(*[total(g, 0.0) for g in range(7)],
                                            total(7, 0.0, tx_bytes_per_s=[1e9] * 13))}, platform="hgx-h100-8gpu")
    assert "GPU 7: NVLink counters not collected" in seven.warnings
    # per-link series elsewhere on the node: the GPU read only as its total says so alone
    mixed = diagnose({"link_samples": links(*[link_series(steady(0), gpu=g, link=k) for g in range(7) for k in
                                              range(18)], total(7, 0.0))}, platform="hgx-h100-8gpu")
    assert [w for w in mixed.warnings if "not collected" in w] == [
        "GPU 7: per-link NVLink counters not collected, only its total over its NVLinks: which of its links fails, "
        "or whether one is down, is unknown"]
    # bandwidth totals alone carry no NVLink error counter: the counters are not collected
    quiet = diagnose({"link_samples": links(*[total(g, 0.0, tx_bytes_per_s=[1e9] * 13) for g in range(8)])},
                     platform="hgx-h100-8gpu")
    assert any(w.startswith("NVLink counters not collected on this node") for w in quiet.warnings), quiet.warnings


def test_lone_reading_gives_totals_and_says_so() -> None:
    d = diagnose({"link_samples": links(link_series([12345.0]))})
    assert d.findings[0].counts["replay"] == 12345.0
    assert not d.findings[0].rates_per_hour
    assert any("second reading" in w for w in d.warnings)


def test_xid_rules() -> None:
    evts = events([{"timestamp": T0 + pd.Timedelta(minutes=50), "kind": "xid", "gpu": 3, "code": 74,
                    "text": "Xid 74"},
                   {"timestamp": T0 + pd.Timedelta(minutes=55), "kind": "sxid", "code": 20034, "text": "SXid",
                    "severity": "non-fatal", "nvswitch": "1", "link": 7},
                   {"timestamp": T0 + pd.Timedelta(minutes=56), "kind": "sxid", "code": 24007, "text": "SXid",
                    "severity": "fatal", "nvswitch": "2", "link": 12}])
    d = diagnose({"link_samples": links(link_series(steady(0))), "events": evts})
    by_rule = {c.rule: f for f in d.findings for c in f.crossed}
    assert {"xid_nvlink", "sxid", "sxid_fatal"} <= set(by_rule)
    assert by_rule["sxid"].severity is Severity.WARNING and by_rule["sxid"].component == "NVSwitch 1 port 7"
    fatal = by_rule["sxid_fatal"]
    assert fatal.severity is Severity.FAILING and fatal.component == "NVSwitch 2 port 12"
    assert any(e.startswith("SXid 24007 (sourcetrack timeout error)") for e in fatal.evidence)
    assert d.localization is not None and d.localization.fault is FaultKind.NVSWITCH_FATAL
    assert (d.localization.switch, d.localization.switch_port) == ("NVSwitch 2", 12)


def test_a_fatal_sxid_is_fatal_by_its_catalog_when_the_line_does_not_say() -> None:
    evts = events([{"timestamp": T0 + pd.Timedelta(minutes=56), "kind": "sxid", "code": 24007, "text": "SXid",
                    "nvswitch": "0", "link": 3}])
    d = diagnose({"link_samples": links(link_series(steady(0))), "events": evts})
    assert [c.rule for f in d.findings for c in f.crossed] == ["sxid_fatal"]


def test_xid_79_makes_the_gpu_the_suspect() -> None:
    frame = node_links({(5, k): 3000.0 for k in range(4)})
    evts = events([{"timestamp": T0 + pd.Timedelta(minutes=58), "kind": "xid", "gpu": 5, "code": 79,
                    "text": "GPU has fallen off the bus"}])
    d = diagnose({"link_samples": frame, "events": evts})
    assert d.localization is not None
    assert d.localization.kind is ComponentKind.GPU and d.localization.gpu == 5
    assert len(d.localizations) == 1


def test_blackwell_effective_errors_ber_and_failed_recoveries() -> None:
    frame = links(link_series({"effective_errors": steady(5.0), "recovery_failed": [0] * 12 + [1]},
                              effective_ber=3e-11, symbol_ber=1e-9))
    names = rules(diagnose({"link_samples": frame}).findings[0])
    assert {"effective_errors", "recovery_failed", "effective_ber"} <= names and "symbol_ber" not in names


def test_all_links_inactive_on_all_gpus_is_fabric_software() -> None:
    frame = node_links(state={(g, k): "inactive" for g in range(8) for k in range(18)})
    d = diagnose({"link_samples": frame})
    assert d.localization is not None and d.localization.kind is ComponentKind.FABRIC_SOFTWARE
    assert "fabricmanager" in d.repair_action and "No part" in d.repair_action


def test_fabric_state_not_complete_is_fabric_software() -> None:
    evts = events([{"timestamp": T0, "kind": "fabric_state", "text": "Fabric State: In Progress"}])
    d = diagnose({"link_samples": node_links(), "events": evts})
    assert d.localization is not None and d.localization.kind is ComponentKind.FABRIC_SOFTWARE


def test_an_unhealthy_fabric_says_which_health_field_says_why() -> None:
    """`Health Summary: Unhealthy` was said alone, though the Health lines below it name the cause (NVML's fabric
    health mask): a route unhealthy, a recovery in progress, an incorrect configuration."""
    text = ("State: Completed; Status: Success; Health Summary: Unhealthy; Health Bandwidth: Full; Health Route "
            "Recovery in progress: False; Health Route Unhealthy: True; Health Access Timeout Recovery: False; "
            "Health Incorrect Configuration: None")
    d = diagnose({"link_samples": node_links(), "events": events([{"timestamp": T0, "kind": "fabric_state",
                                                                     "text": text}])})
    fabric = next(f for f in d.findings if f.ref.kind is ComponentKind.FABRIC_SOFTWARE)
    assert fabric.evidence == ["fabric health summary is 'Unhealthy'", "fabric health: Route Unhealthy is 'True'"]


def test_congestion_is_said_not_flagged() -> None:
    frame = links(link_series(steady(0), speed_gbps=26.562, tx_bytes_per_s=25.5e9))
    f = diagnose({"link_samples": frame}).findings[0]
    assert f.severity is Severity.OK and any("congestion" in e for e in f.evidence)


def test_thresholds_set_overrides_history_rules() -> None:
    from diagnostics.config.thresholds import load_thresholds

    frame = links(link_series(steady(600.0)))
    strict = load_thresholds(overrides={"nvlink_replay": 500.0})
    assert diagnose({"link_samples": frame}, thresholds=strict).fault_detected
    assert not diagnose({"link_samples": frame}).fault_detected



def all_finite(value: object) -> bool:
    """Every number in a model's fields is finite (JSON would hide a NaN as null)."""
    if isinstance(value, BaseModel):
        return all_finite(value.model_dump())
    if isinstance(value, dict):
        return all(all_finite(v) for v in value.values())
    if isinstance(value, list | tuple):
        return all(all_finite(v) for v in value)
    return not isinstance(value, float) or math.isfinite(value)


@freeze_time("2026-03-01T01:00:00Z")
def test_node_without_link_telemetry_is_unknown_not_healthy() -> None:
    evts = events([{"timestamp": T0 + pd.Timedelta(minutes=30), "kind": "xid", "gpu": 1, "code": 74,
                    "text": "Xid 74"}])
    d = diagnose({"events": evts}, window=timedelta(hours=1))
    assert any("unknown, not healthy" in w for w in d.warnings)
    assert any(c.rule == "xid_nvlink" for f in d.findings for c in f.crossed)
    assert d.ticket_priority is Priority.HIGH  # a fatal Xid stops its link until a reset, whatever else is unknown
    assert all_finite(d)


@pytest.mark.parametrize("values", [[5.0], [3.0] * 13, [10, 5, 2, 1, 0, 0]])
def test_odd_series_never_produce_nan(values: list[float]) -> None:
    d = diagnose({"link_samples": links(link_series(values))})
    assert all_finite(d)
