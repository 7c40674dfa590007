from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from diagnostics import Priority, Severity, Snapshot, diagnose_snapshot, load_thresholds
from diagnostics.errors import ConfigError
from diagnostics.ingest.snapshot import read_cases
from tests.conftest import link, snapshot_dict


def diagnose(**overrides: Any):  # type: ignore[no-untyped-def]
    return diagnose_snapshot(Snapshot.model_validate(snapshot_dict(**overrides)))


def test_seed_examples_reproduce_expected_output(seed_cases: list[dict[str, Any]]) -> None:
    for case in seed_cases:
        d = diagnose_snapshot(Snapshot.model_validate(case["input"]))
        want = case["expected_output"]
        assert d.fault_detected is want["fault_detected"]
        assert d.isolated_component == want["isolated_component"]
        assert d.ticket_priority.value == want["ticket_priority"]
        assert d.degradation_pct == pytest.approx(want["degradation_pct"], abs=0.1 + 1e-9)


def test_second_seed_stays_low_with_its_crc_and_replay() -> None:
    d = diagnose(fabric_errors=[link(crc_errors=2, replay_count=1)], step_time_ms=181.2,
                 baseline_step_time_ms=180)
    assert d.ticket_priority is Priority.LOW
    assert d.findings[0].severity is Severity.OK
    assert d.degradation_pct == 0.7  # the formula wins over the seed's 0.6


@pytest.mark.parametrize(("replays", "failing"), [(1000, False), (1001, True)])
def test_replay_threshold_is_strictly_greater(replays: int, failing: bool) -> None:
    d = diagnose(fabric_errors=[link(replay_count=replays)])
    assert d.fault_detected is failing
    assert (d.findings[0].severity is Severity.FAILING) is failing


@pytest.mark.parametrize(("replays", "hours", "failing"), [(2000, 2.0, False), (2002, 2.0, True),
                                                          (600, 0.5, True), (500, 0.5, False)])
def test_window_hours_scales_the_rate(replays: int, hours: float, failing: bool) -> None:
    d = diagnose(fabric_errors=[link(replay_count=replays)], window_hours=hours)
    assert d.findings[0].rates_per_hour["replay"] == pytest.approx(replays / hours)
    assert d.fault_detected is failing


def test_several_failing_links_name_the_worst_and_list_all() -> None:
    d = diagnose(fabric_errors=[
        link(gpu_src=0, gpu_dst=1, link_id="nvlink-0", replay_count=1500),
        link(gpu_src=4, gpu_dst=5, link_id="nvlink-3", replay_count=9000),
        link(gpu_src=6, gpu_dst=7, link_id="nvlink-2", replay_count=10),
    ], step_time_ms=130, baseline_step_time_ms=100)
    assert d.isolated_component == "GPU 4 -> GPU 5 NVLink 3"
    assert [f.severity for f in d.findings] == [Severity.FAILING, Severity.FAILING, Severity.OK]
    assert len(d.failing) == 2
    assert d.ticket_priority is Priority.URGENT


def test_down_link_counts_as_worst_and_is_high_without_slowdown() -> None:
    d = diagnose(fabric_errors=[
        link(gpu_src=0, gpu_dst=1, link_id="nvlink-0", replay_count=50000),
        link(gpu_src=2, gpu_dst=3, link_id="nvlink-5", link_state="down"),
    ])
    assert d.fault_detected
    assert d.isolated_component == "GPU 2 -> GPU 3 NVLink 5"
    assert d.findings[1].severity is Severity.DOWN
    assert d.ticket_priority is Priority.HIGH
    assert "GPU 2" in d.repair_action


def test_pcie_link_with_null_peer() -> None:
    d = diagnose(fabric_errors=[{"gpu_src": 4, "gpu_dst": None, "link_id": "pcie", "crc_errors": 0,
                                 "replay_count": 4000}], step_time_ms=106, baseline_step_time_ms=100)
    assert d.isolated_component == "GPU 4 PCIe"
    assert d.findings[0].link_type.value == "pcie"
    assert d.ticket_priority is Priority.HIGH
    assert "riser" in d.repair_action


def test_the_dcgm_profile_judges_as_dcgm_health_does() -> None:
    dcgm = load_thresholds(profile="dcgm")

    def judged(link: dict[str, object], thresholds: object = None) -> tuple[str, set[str]]:
        d = diagnose_snapshot(Snapshot.model_validate(snapshot_dict(fabric_errors=[link])), thresholds)  # type: ignore[arg-type]
        return d.findings[0].severity.value, {c.rule for c in d.findings[0].crossed}

    one_replay = {"gpu_src": 0, "gpu_dst": 1, "link_id": "nvlink-0", "crc_errors": 0, "replay_count": 1}
    # MonitorNVLink4Fields fails the increase, MonitorNVLinkErrorFields the lifetime total (platform unknown: DCGM's
    # pre-Blackwell fallback)
    assert judged(one_replay) == ("ok", set())
    assert judged(one_replay, dcgm) == ("failing", {"nvlink_replay", "dl_replay_total"})
    recovery = {**one_replay, "replay_count": 0, "recovery_count": 1}
    assert judged(recovery)[0] == "warning" and judged(recovery, dcgm)[0] == "failing"
    crc = {**one_replay, "replay_count": 0, "crc_errors": 50}
    assert judged(crc) == ("ok", set()) and judged(crc, dcgm) == ("failing", {"crc", "dl_crc_total"})
    storm = {**crc, "crc_errors": 400_000}  # over 100 per second: DCGM's fail level, in every profile
    assert judged(storm)[0] == "failing" and "crc_rate" in judged(storm)[1]
    pcie = {"gpu_src": 1, "link_id": "pcie-0", "crc_errors": 0, "replay_count": 970}
    # MonitorPcie needs the link's generation and width, which a snapshot does not give: no DCGM verdict
    assert judged(pcie)[0] == "ok" and judged(pcie, dcgm) == ("ok", set())


def test_a_profile_rejects_what_it_may_not_change() -> None:
    base = load_thresholds()
    with pytest.raises(ConfigError, match="may change above, severity, per_lane_by_gen, not doc"):
        base.with_overrides({"crc": {"doc": "x"}})
    with pytest.raises(ConfigError, match="rule 'crc'"):
        base.with_overrides({"crc": {"severity": "dreadful"}})


def test_warnings_never_set_fault_and_give_medium() -> None:
    d = diagnose(fabric_errors=[link(crc_errors=500, recovery_count=2)], step_time_ms=150,
                 baseline_step_time_ms=100)
    assert not d.fault_detected
    assert d.isolated_component == "None"
    assert d.findings[0].severity is Severity.WARNING
    assert {c.rule for c in d.findings[0].crossed} == {"crc", "recovery"}
    assert d.ticket_priority is Priority.MEDIUM


@pytest.mark.parametrize(("step", "priority"), [(119.9, Priority.HIGH), (120, Priority.URGENT),
                                                (104.9, Priority.MEDIUM), (105, Priority.HIGH)])
def test_priority_policy_boundaries(step: float, priority: Priority) -> None:
    d = diagnose(fabric_errors=[link(replay_count=5000)], step_time_ms=step, baseline_step_time_ms=100)
    assert d.ticket_priority is priority


def test_negative_degradation_is_not_clamped() -> None:
    d = diagnose(step_time_ms=90, baseline_step_time_ms=100)
    assert d.degradation_pct == -10.0


def test_overrides_and_user_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    snap = Snapshot.model_validate(snapshot_dict(fabric_errors=[link(replay_count=600)]))
    assert diagnose_snapshot(snap, load_thresholds(overrides={"nvlink_replay": 500})).fault_detected
    user = tmp_path / "t.toml"
    user.write_text('[[rule]]\nname = "nvlink_replay"\nabove = 100.0\n')
    t = load_thresholds(user)
    assert t.rule("nvlink_replay").above == 100.0
    assert t.rule("nvlink_replay").counter == "replay"  # untouched fields keep their defaults
    assert diagnose_snapshot(snap, t).fault_detected
    with pytest.raises(ConfigError, match="no rule named 'nope'"):
        load_thresholds(overrides={"nope": 1})


def test_every_counter_has_a_stated_default() -> None:
    t = load_thresholds()
    assert {r.counter for r in t.rules} >= {"replay", "crc", "recovery"}
    assert t.rule("nvlink_replay").above == 1000.0


@pytest.mark.parametrize(("fields", "needle"), [
    ({"fabric_errors": [link(replay_count=-1)]}, "fabric_errors[0].replay_count"),
    ({"fabric_errors": [link(gpu_src=8)]}, "GPUs 0-7"),
    ({"fabric_errors": [link(gpu_src=2, gpu_dst=2)]}, "both 2"),
    ({"baseline_step_time_ms": 0}, "baseline_step_time_ms"),
    ({"fabric_errors": [link(crc_errors="12")]}, "crc_errors"),
    ({"fabric_errors": [link(colour="red")]}, "colour"),
    ({"fabric_errors": [link(link_id="ib0")]}, "cannot tell the link type"),
    ({"platform": "hgx-h100-8gpu", "fabric_errors": [link(gpu_dst=9)]}, "platform 'hgx-h100-8gpu'"),
    ({"platform": "no-such"}, "unknown platform"),
])
def test_bad_snapshots_are_rejected_with_the_field(fields: dict[str, Any], needle: str) -> None:
    (case,) = read_cases(json.dumps(snapshot_dict(**fields)), "snap.json")
    assert case.snapshot is None
    message = "; ".join(str(e) for e in case.errors)
    assert needle in message
    assert message.startswith("snap.json node-a")


def test_missing_baseline_is_rejected() -> None:
    data = snapshot_dict()
    del data["baseline_step_time_ms"]
    with pytest.raises(ValidationError, match="baseline_step_time_ms"):
        Snapshot.model_validate(data)


def test_the_seed_wording_is_kept_for_the_snapshot_form_only() -> None:
    """The issue's nit: 'interposer ribbon cable on slot 2-3' when the platform is unknown. The snapshot (the seed's
    form) states the GPU pair and keeps the seed's expected action; the same link read from a normalized table of an
    unknown board names no ribbon cable and says to identify the board."""
    from datetime import timedelta

    import pandas as pd

    from diagnostics.analysis import analyze_tables
    from diagnostics.tables import LINK_SAMPLES

    seed = diagnose(fabric_errors=[link(gpu_src=2, gpu_dst=3, link_id="nvlink-1", replay_count=8900)])
    assert seed.repair_action.startswith("Reseat high-speed mezzanine interconnect or replace interposer ribbon")
    t0 = pd.Timestamp("2026-03-01T00:00:00Z")
    rows = pd.DataFrame({"timestamp": [t0, t0 + timedelta(hours=1)], "node_id": "n1", "gpu": 2, "link_type": "nvlink",
                         "link": 1, "peer": "GPU 3", "replay": [0.0, 8900.0]})
    read = analyze_tables({"link_samples": LINK_SAMPLES.conform(rows)}, node_id="n1")
    assert read.isolated_component == "GPU 2 -> GPU 3 NVLink 1"
    assert "ribbon" not in read.repair_action and read.repair_action.startswith("Platform unknown")
