"""Events once each, whichever sources report them; GPUs and links that stop or never report are never healthy; a
GPU off the bus with the PCIe history before it; Fabric Manager down; a GPU's NVLink totals beside its links."""

from __future__ import annotations

import pandas as pd
import pytest

from diagnostics import format as fmt
from diagnostics.analysis import analyze_tables
from diagnostics.enums import FaultKind, Severity
from diagnostics.offenders import offenders_of
from tests.analysis.helpers import T0, events, link_series, links, node_links, steady, steps


def _xid79(minute: float, source: str, count: int | None = None) -> dict[str, object]:
    row: dict[str, object] = {"timestamp": T0 + pd.Timedelta(minutes=minute), "kind": "xid", "gpu": 5, "code": 79,
                              "text": "GPU has fallen off the bus", "source": source}
    if count is not None:
        row["count"] = count
    return row


def _xid79_count(rows: list[dict[str, object]]) -> float:
    d = analyze_tables({"link_samples": node_links(), "events": events(rows)}, node_id="n1")
    found = [c for f in d.findings for c in f.crossed if c.rule == "xid_off_bus"]
    assert len(found) == 1
    return float(found[0].rate_per_hour or 0)


def test_one_xid_seen_by_the_kernel_log_and_by_dcgm_counts_once() -> None:
    assert _xid79_count([_xid79(50, "kern.log:812"), _xid79(51, "scrape-0851.prom:40", count=1)]) == 1


def test_a_counter_increase_beside_fewer_lines_counts_its_size() -> None:
    """DCGM counted two where the kernel logged one: two, however the sources fall in time."""
    for minute in (48, 52):
        assert _xid79_count([_xid79(50, "kern.log:812"), _xid79(minute, "scrape-0851.prom:40", count=2)]) == 2


def test_two_lines_of_one_log_are_two_events_and_a_counter_increase_counts_its_size() -> None:
    assert _xid79_count([_xid79(40, "kern.log:800"), _xid79(50, "kern.log:812")]) == 2
    assert _xid79_count([_xid79(50, "scrape-0850.prom:40", count=3)]) == 3
    # far apart in time, two sources see two events
    assert _xid79_count([_xid79(10, "kern.log:700"), _xid79(55, "scrape-0855.prom:40", count=1)]) == 2


def test_a_gpu_whose_series_all_stop_is_one_finding_not_one_per_link() -> None:
    frame = node_links()
    late = (frame["gpu"] == 3) & (frame["timestamp"] > T0 + pd.Timedelta(minutes=30))
    d = analyze_tables({"link_samples": frame[~late].reset_index(drop=True)}, node_id="n1",
                       platform="hgx-h100-8gpu")
    gone = [f for f in d.findings if f.gpu == 3 and f.severity.value != "ok"]
    assert [c.rule for f in gone for c in f.crossed] == ["gpus_missing"]
    last = frame[~late & (frame["gpu"] == 3)]["timestamp"].max()  # its last reading, not the staleness limit
    assert gone[0].crossed[0].message == f"GPU 3 stopped reporting after {fmt.when(last)}: 7 of 8 GPUs report"
    assert d.localization is not None and d.localization.component == "GPU 3"


@pytest.mark.parametrize(("gpus", "said"), [(2, "while 1 other GPU reports"), (3, "while 2 other GPUs report")])
def test_a_stopped_gpu_of_an_unknown_platform_counts_the_others_in_words_that_agree(gpus: int, said: str) -> None:
    frame = node_links(gpus=gpus, per_gpu=2)
    late = (frame["gpu"] == 1) & (frame["timestamp"] > T0 + pd.Timedelta(minutes=30))
    d = analyze_tables({"link_samples": frame[~late].reset_index(drop=True)}, node_id="n1")  # no GPU count known
    (gone,) = [c for f in d.findings if f.gpu == 1 for c in f.crossed if c.rule == "gpus_missing"]
    assert gone.message.startswith("GPU 1 stopped reporting after ") and gone.message.endswith(said), gone.message


def test_one_reading_is_not_called_within_threshold() -> None:
    frame = node_links()
    first = frame[frame["timestamp"] == frame["timestamp"].min()].reset_index(drop=True)
    d = analyze_tables({"link_samples": first}, node_id="n1")
    assert not d.fault_detected and "within allowable" not in d.repair_action
    assert d.repair_action.startswith("Read the counters again in a few minutes")


N = 6 * 12 + 1  # six hours of 5-minute samples
GONE = 50  # GPU 3's series stop after this sample


def _off_bus(replays_per_hour: float) -> dict[str, pd.DataFrame]:
    nv = node_links(n=N)
    nv = nv[~((nv["gpu"] == 3) & (nv["timestamp"] > T0 + pd.Timedelta(minutes=5 * GONE)))]
    pcie = [link_series(steady(replays_per_hour if g == 3 else 0.0, GONE + 1 if g == 3 else N), gpu=g, link=None,
                        link_type="pcie", peer="PCIe switch 0") for g in range(8)]
    xid = events([{"timestamp": T0 + pd.Timedelta(minutes=5 * GONE), "gpu": 3, "kind": "xid", "code": 79,
                   "text": "NVRM: Xid (PCI:0000:1b:00): 79, GPU has fallen off the bus."}])
    return {"link_samples": links(nv, *pcie), "events": xid}


def test_the_pcie_replays_before_a_gpu_fell_off_the_bus_are_its_evidence_not_a_second_fault() -> None:
    d = analyze_tables(_off_bus(4000.0), node_id="n1", platform="hgx-h100-8gpu")
    assert [(loc.ref.slug, loc.fault) for loc in d.localizations] == [("gpu3", FaultKind.GPU_OFF_BUS)]
    evidence = " ".join(d.localizations[0].evidence)
    assert "PCIe replay history before the Xid 79" in evidence and "4,000" in evidence
    quiet = analyze_tables(_off_bus(0.0), node_id="n1", platform="hgx-h100-8gpu")
    assert quiet.localizations[0].ref.slug == "gpu3"
    assert "PCIe replay" not in " ".join(quiet.localizations[0].evidence)  # nothing counted: nothing claimed


def test_a_gpu_off_the_bus_is_one_finding_its_xid_and_its_silence_both_its_evidence() -> None:
    d = analyze_tables(_off_bus(4000.0), node_id="n1", platform="hgx-h100-8gpu")
    gone = [f for f in d.findings if f.gpu == 3 and f.severity is not Severity.OK]
    assert len(gone) == 1 and gone[0].severity is Severity.DOWN
    assert {c.rule for c in gone[0].crossed} == {"xid_off_bus", "gpus_missing"}
    said = " ".join(gone[0].evidence)
    assert "fallen off the bus" in said and "PCIe replay history before the Xid 79" in said
    assert len(gone[0].evidence) == len(set(gone[0].evidence))
    # the sweep lists it once, as the GPU, with each rule it broke
    (row,) = [o for o in offenders_of(d) if o.gpu == 3]
    assert sorted(row.rules) == ["gpus_missing", "xid_off_bus"] and row.component.startswith("GPU 3 (Xid")


@pytest.mark.parametrize("hours_before", [1, 30])
def test_an_xid_79_of_a_gpu_the_read_never_hears_counts_however_long_before_it(hours_before: int) -> None:
    """GPU 3 logged an Xid 79 before the readings begin and reports none of them: it has been off the bus since, so
    the Xid is its evidence. A GPU that reports again after its Xid 79 came back: its Xid is history."""
    xid = events([{"timestamp": T0 - pd.Timedelta(hours=hours_before), "gpu": 3, "kind": "xid", "code": 79,
                   "text": "NVRM: Xid (PCI:0000:1b:00): 79, GPU has fallen off the bus.", "source": "kern.log:4"}])
    every = node_links()
    gone = analyze_tables({"link_samples": every[every["gpu"] != 3].reset_index(drop=True), "events": xid},
                          node_id="n1", platform="hgx-h100-8gpu")
    (found,) = [f for f in gone.findings if f.gpu == 3 and f.severity is not Severity.OK]
    assert {c.rule for c in found.crossed} == {"xid_off_bus", "gpus_missing"}
    assert "fallen off the bus" in " ".join(found.evidence)
    assert [(loc.ref.slug, loc.fault) for loc in gone.localizations] == [("gpu3", FaultKind.GPU_OFF_BUS)]
    back = analyze_tables({"link_samples": every, "events": xid}, node_id="n1", platform="hgx-h100-8gpu")
    assert not [c for f in back.findings for c in f.crossed if c.rule == "xid_off_bus"]


def test_fabric_manager_down_says_jobs_cannot_start_and_names_no_part() -> None:
    down = node_links(n=N, state={(g, k): "inactive" for g in range(8) for k in range(18)})
    fm = events([{"timestamp": T0, "kind": "fabric_state", "text": "Fabric State: In Progress"}])
    job = steps([200.0] * 6)  # the job ran half an hour, then could not run
    d = analyze_tables({"link_samples": down, "events": fm, "step_samples": job}, node_id="n1",
                       platform="hgx-h100-8gpu")
    assert d.localization is not None and d.localization.fault is FaultKind.FABRIC_MANAGER
    assert d.verdict is not None and "jobs cannot start" in d.verdict and "error 802" in d.verdict
    assert "not running" in d.verdict  # its job logged no step since


def test_a_gpu_total_with_counters_its_links_lack_is_read_and_one_that_repeats_them_is_not() -> None:
    per_link = node_links(gpus=8)
    total = link_series({"effective_errors": steady(30.0), "replay": steady(5000.0)}, gpu=2, link=None, peer="",
                        gpu_total=True)
    repeat = link_series({"replay": steady(5000.0)}, gpu=5, link=None, peer="", gpu_total=True)
    d = analyze_tables({"link_samples": links(per_link, total, repeat)}, node_id="n1", platform="hgx-h100-8gpu")
    assert [(loc.ref.slug, loc.fault) for loc in d.localizations] == [("gpu2-nvlinks", FaultKind.NVLINK_AGGREGATE)]


def test_the_gpu_link_on_a_port_a_fatal_sxid_stopped_is_that_sxid_not_a_second_part() -> None:
    from diagnostics.topology import platform_graph

    port = platform_graph("hgx-h100-8gpu").port_of(4, 3, "nvlink")
    switch = str(port.switch).split()[-1]
    down = node_links(state={(4, 3): "inactive"})
    sxid = events([{"timestamp": T0 + pd.Timedelta(minutes=30), "kind": "sxid", "code": 24007, "severity": "fatal",
                    "nvswitch": switch, "link": port.switch_port,
                    "text": f"nvidia-nvswitch{switch}: SXid (PCI:0000:a0:00.0): 24007, Fatal, Link "
                            f"{port.switch_port} sourcetrack timeout error (First)"}])
    d = analyze_tables({"link_samples": down, "events": sxid}, node_id="n1", platform="hgx-h100-8gpu")
    assert [(loc.fault, loc.ref.slug) for loc in d.localizations] == \
        [(FaultKind.NVSWITCH_FATAL, f"nvswitch-{switch}-port{port.switch_port}")]
    assert any("GPU 4 NVLink 3" in e and "same link" in e for e in d.localizations[0].evidence)
    alone = analyze_tables({"link_samples": down}, node_id="n1", platform="hgx-h100-8gpu")
    assert [loc.fault for loc in alone.localizations] == [FaultKind.NVLINK]  # no SXid: the link is the part


def _rebooted(down_until: int, *, n: int = 37) -> pd.DataFrame:
    """A healthy switched node rebooted at reading 12 (an hour in): a 15-minute gap, every counter restarts, and
    every NVLink reads down from the first reading back up to reading `down_until`."""
    frames = []
    for g in range(8):
        for k in range(18):
            rows = [i for i in range(n) if not 12 < i < 15]
            frame = link_series([2.0 * 5 / 60 * (i if i <= 12 else i - 15) for i in rows], gpu=g, link=k,
                                peer=f"NVSwitch {k % 4}", times=[T0 + pd.Timedelta(minutes=5 * i) for i in rows])
            frame["link_state"] = ["down" if 15 <= i <= down_until else "up" for i in rows]
            frames.append(frame)
    return links(*frames)


@pytest.mark.parametrize("end_min", [75, 90, 120])
def test_a_reboot_is_said_not_judged(end_min: int) -> None:
    """NVSentinel raised NVLINK_DOWN on 214 of 288 nodes from planned reboots: links down together right after
    every counter restarted are the reboot."""
    frame = _rebooted(down_until=16)
    d = analyze_tables({"link_samples": frame}, node_id="n1", end=(T0 + pd.Timedelta(minutes=end_min)).to_pydatetime(),
                       platform="hgx-h100-8gpu")
    assert not d.fault_detected and d.ticket_priority.value == "low" and d.failing == []
    assert any("a reboot or driver reload" in w for w in d.warnings)


def test_links_still_down_a_window_after_the_restart_are_a_fault() -> None:
    frame = _rebooted(down_until=36)  # never came back up
    d = analyze_tables({"link_samples": frame}, node_id="n1", end=(T0 + pd.Timedelta(minutes=180)).to_pydatetime(),
                       platform="hgx-h100-8gpu")
    assert d.fault_detected and d.isolated_component == "Fabric Manager / NVIDIA driver"
    assert not any("a reboot or driver reload" in w for w in d.warnings)


def test_a_link_warning_before_a_reboot_keeps_its_warning_not_a_down() -> None:
    """A link already over the CRC warning is still warned after a reboot; its inactive reading is the reboot."""
    frame = _rebooted(down_until=16)
    marginal = (frame["gpu"] == 0) & (frame["link"] == 8)
    order = frame.loc[marginal, "timestamp"].rank(method="first").to_numpy()
    frame.loc[marginal, "crc_data"] = [5.0 * i if i <= 13 else 40.0 * (i - 13) for i in order]  # 480/h after it
    d = analyze_tables({"link_samples": frame}, node_id="n1", end=(T0 + pd.Timedelta(minutes=80)).to_pydatetime(),
                       platform="hgx-h100-8gpu")
    assert not d.fault_detected and d.failing == []
    warned = [f for f in d.findings if f.gpu == 0 and f.link == 8]
    assert [f.severity for f in warned] == [Severity.WARNING]
    assert [c.rule for c in warned[0].crossed] == ["crc"]
    assert "the restart, not judged" in warned[0].evidence[-1]


def test_an_nvlink_xid_naming_its_link_is_that_link_on_a_board_that_reads_each_link() -> None:
    """`NVLink: fatal error detected on link 5` on an HGX H100: the suspect is GPU 1 NVLink 5 with the NVLink plan,
    never a GPU's NVLink5 totals, which an H100 does not report (that plan would say the input contradicts it)."""
    xid = {"timestamp": T0 + pd.Timedelta(minutes=50), "kind": "xid", "gpu": 1, "code": 74, "link": 5,
           "text": "NVLink: fatal error detected on link 5(0x0, 0x0, 0x10000, 0x0)", "source": "kern.log:3"}
    d = analyze_tables({"link_samples": node_links(), "events": events([xid])}, node_id="n1",
                       platform="hgx-h100-8gpu")
    loc = d.localization
    assert loc is not None and (loc.gpu, loc.link, loc.fault) == (1, 5, FaultKind.NVLINK)
    assert d.isolated_component.startswith("GPU 1 NVLink 5") and "contradicts" not in d.repair_action


def test_a_fleets_events_judged_at_once_give_each_node_what_it_gets_alone() -> None:
    """Xids from two sources merged, a cause inferred from a later line once per GPU, an Xid named by its bus
    alone, a GPU off the bus before the window, a fatal SXid: the same GPU and codes on three nodes, each node's
    findings as when its events are judged alone (no key of one node reaches another's)."""
    from diagnostics.analysis.events import event_findings
    from diagnostics.config.thresholds import load_thresholds

    def at(minute: float) -> pd.Timestamp:
        return T0 + pd.Timedelta(minutes=minute)

    rows = [_xid79(50, "kern.log:812"), _xid79(51, "scrape-0851.prom:40", count=1),
            {"timestamp": at(55), "kind": "xid", "gpu": 2, "code": 45, "caused_by": 74, "text": "Xid 45 caused by 74",
             "source": "kern.log:900"},
            {"timestamp": at(56), "kind": "xid", "gpu": 2, "code": 45, "caused_by": 74, "text": "again",
             "source": "kern.log:901"},
            {"timestamp": at(57), "kind": "xid", "pci_bus_id": "0000:1B:00.0", "code": 74, "text": "NVLink error",
             "source": "kern.log:902"},
            {"timestamp": at(-200), "kind": "xid", "gpu": 6, "code": 79, "text": "fell off", "source": "kern.log:10"},
            {"timestamp": at(57), "kind": "xid", "gpu_uuid": "GPU-AB12", "code": 74, "text": "NVLink error",
             "source": "kern.log:904"},
            {"timestamp": at(58), "kind": "sxid", "code": 24007, "severity": "fatal", "nvswitch": "2", "link": 7,
             "text": "SXid 24007 Fatal", "source": "kern.log:903"},
            {"timestamp": at(58), "kind": "fabric_state", "text": "Fabric State: Completed", "source": "smi:1"}]
    fleet = pd.concat([events(rows, node=n) for n in ("n1", "n2", "n3", "n4")], ignore_index=True)
    fleet = fleet.astype({"node_id": "category"})
    start, end = int(at(0).value), int(at(60).value)
    silent = {"n1": {6: int(at(-210).value)}, "n3": {6: int(at(-210).value)}}
    buses = {"n2": {"0000:1b:00.0": 3}, "n3": {"0000:1b:00.0": 1}}
    uuids = {"n3": {"gpu-ab12": 4}}
    heard = {n: set(range(8)) for n in ("n1", "n2", "n3")}  # n4: its kernel log alone, no counter read
    thresholds = load_thresholds()
    together = event_findings(fleet, start, end, thresholds, silent, buses, uuids, reporting=heard)
    for node in ("n1", "n2", "n3", "n4"):
        alone = event_findings(fleet[fleet["node_id"] == node].reset_index(drop=True), start, end, thresholds,
                               {node: silent[node]} if node in silent else {}, {node: buses.get(node, {})},
                               {node: uuids.get(node, {})}, reporting={n: g for n, g in heard.items() if n == node})
        assert together[node] == alone[node]
    named = {n: sorted((f.ref.slug, c.rate_per_hour) for f in found for c in f.crossed)
             for n, found in together.items()}
    assert ("gpu5", 1.0) in named["n1"] and ("gpu6", 1.0) in named["n1"]  # two sources, one event; before the window
    assert ("gpu6", 1.0) not in named["n2"]  # n2's GPU 6 did not fall silent: its old Xid 79 is history
    assert ("gpu6", 1.0) in named["n4"]  # no reading of n4 says its GPU 6 came back: it holds until a restart
    held = next(f for f in together["n4"] if f.ref.slug == "gpu6")
    assert any("before this window: it holds until" in e for e in held.evidence), held.evidence
    assert ("gpu3", 1.0) in named["n2"] and ("gpu1", 1.0) in named["n3"]  # each node's own GPU table names the bus
    assert ("gpu4", 1.0) in named["n3"] and ("gpu4", 1.0) not in named["n2"]  # ... and the UUID
    assert ("gpu2", 1.0) in named["n1"]  # the cause two Xid 45 lines name, counted once for the GPU
    assert ("gpu-0000-1b-00-0", 1.0) in named["n1"]  # no GPU table: the line's bus names it


def test_each_nodes_newest_fabric_state_is_read_once_for_the_fleet() -> None:
    """The newest fabric state per node (the first of two at one time), other kinds and nodes apart."""
    from diagnostics.analysis.events import fabric_states

    rows = [{"timestamp": T0, "kind": "fabric_state", "text": "Fabric State: In Progress"},
            {"timestamp": T0 + pd.Timedelta(minutes=5), "kind": "fabric_state", "text": "Fabric State: Completed"},
            {"timestamp": T0 + pd.Timedelta(minutes=5), "kind": "fabric_state", "text": "Fabric State: Other"},
            {"timestamp": T0 + pd.Timedelta(minutes=9), "kind": "xid", "gpu": 1, "code": 79, "text": "fell off"}]
    fleet = pd.concat([events(rows, node="n1"), events(rows[:1], node="n2"), events(rows[3:], node="n3")],
                      ignore_index=True)
    assert fabric_states(fleet) == {"n1": "Fabric State: Completed", "n2": "Fabric State: In Progress"}
    assert fabric_states(fleet.iloc[::-1].reset_index(drop=True))["n1"] == "Fabric State: Other"
    assert fabric_states(fleet.iloc[:0]) == {}
    undated = events([{"timestamp": pd.NaT, "kind": "fabric_state", "text": "Fabric State: In Progress"}, rows[1]],
                     node="n4")
    assert fabric_states(undated) == {"n4": "Fabric State: Completed"}  # a reading without a time is not the newest
    nameless = events(rows[:1], node="n5").assign(node_id=pd.NA)
    assert fabric_states(nameless) == {}
    assert fabric_states(pd.concat([nameless, events(rows[1:2], node="n5")], ignore_index=True)) == {
        "n5": "Fabric State: Completed"}
