"""A link's per-lane counters (`nvidia-smi nvlink -ec`) are that link's: one link is one finding, its failing lanes
named on it and what each lane counted kept as its evidence, never a second row of the same link."""

from __future__ import annotations

import pandas as pd

from diagnostics.analysis import analyze_tables
from diagnostics.enums import FaultKind, Severity
from diagnostics.model import Finding
from diagnostics.offenders import offenders_of
from tests.analysis.helpers import T0, events, link_series, links, node_links, steady

PLATFORM = "hgx-h100-8gpu"


def _crc_on(frame: pd.DataFrame, gpu: int, link: int, per_hour: float) -> pd.DataFrame:
    """The node's links with CRC data counts, `per_hour` on one link and none on the rest."""
    frame = frame.copy()
    mine = ((frame["gpu"] == gpu) & (frame["link"] == link)).to_numpy(bool)
    frame["crc_data"] = 0.0
    frame.loc[mine, "crc_data"] = steady(per_hour)
    return frame


def _degraded(tables: dict[str, pd.DataFrame]) -> list[Finding]:
    d = analyze_tables(tables, node_id="n1", platform=PLATFORM)
    return [f for f in d.findings if f.severity is not Severity.OK]


def test_a_lane_counted_on_its_own_is_its_link_not_a_second_link() -> None:
    frame = _crc_on(node_links(), 6, 3, 30_000.0)
    lane = link_series({"crc_data": steady(29_990.0)}, gpu=6, link=3, peer="NVSwitch 0", lane=2)
    d = analyze_tables({"link_samples": links(frame, lane)}, node_id="n1", platform=PLATFORM)
    bad = [f for f in d.findings if f.severity is not Severity.OK]
    assert len(bad) == 1 and bad[0].gpu == 6 and bad[0].link == 3
    assert bad[0].lanes == [2]
    assert bad[0].rates_per_hour["crc_data"] == 30_000.0  # the link's own count, not its lane's
    assert any(e.startswith("lane 2") and "CRC data errors" in e for e in bad[0].evidence)
    offenders = offenders_of(d)
    assert len({o.key for o in offenders}) == len(offenders)  # each link and rule once, as the push-down lists it
    assert d.localization is not None and d.localization.lanes == [2]


def test_a_lane_over_a_rule_its_link_does_not_carry_still_fails_the_link() -> None:
    frame = node_links()  # the links count replays only
    lane = link_series({"crc_data": steady(30_000.0)}, gpu=6, link=3, peer="NVSwitch 0", lane=1)
    bad = _degraded({"link_samples": links(frame, lane)})
    assert len(bad) == 1
    only = bad[0]
    assert only.lanes == [1] and only.severity is Severity.FAILING
    assert any(c.rule == "nvlink_crc_data" and c.message.startswith("lane 1") for c in only.crossed)


def test_lanes_read_without_their_link_are_one_link_naming_each_lane_in_error() -> None:
    frame = node_links()
    frame = frame[~((frame["gpu"] == 6) & (frame["link"] == 3))]
    lanes = [link_series({"crc_data": steady(rate)}, gpu=6, link=3, peer="NVSwitch 0", lane=n)
             for n, rate in ((0, 0.0), (1, 20_000.0), (3, 9_000.0))]
    bad = _degraded({"link_samples": links(frame, *lanes)})
    mine = [f for f in bad if f.gpu == 6 and f.link == 3]
    assert len(mine) == 1 and mine[0].lanes == [1, 3]


def _sxid_on_the_port_of(gpu: int, link: int) -> tuple[pd.DataFrame, str, int]:
    """A fatal SXid 24007 on the NVSwitch port GPU `gpu`'s NVLink `link` lands on (by the platform's port map)."""
    from diagnostics.topology import platform_graph

    port = platform_graph(PLATFORM).port_of(gpu, link, "nvlink")
    switch = str(port.switch).split()[-1]
    assert port.switch_port is not None
    return events([{"timestamp": T0 + pd.Timedelta(minutes=30), "kind": "sxid", "code": 24007, "severity": "fatal",
                    "nvswitch": switch, "link": port.switch_port,
                    "text": f"nvidia-nvswitch{switch}: SXid (PCI:0000:a0:00.0): 24007, Fatal, Link "
                            f"{port.switch_port} sourcetrack timeout error (First)"}]), switch, port.switch_port


def test_an_sxid_on_the_port_a_down_gpu_link_lands_on_is_that_link_not_a_second_one() -> None:
    sxid, switch, port = _sxid_on_the_port_of(4, 3)
    d = analyze_tables({"link_samples": node_links(state={(4, 3): "inactive"}), "events": sxid}, node_id="n1",
                       platform=PLATFORM)
    bad = [f for f in d.findings if f.severity is not Severity.OK]
    assert [(f.gpu, f.link) for f in bad] == [(4, 3)]  # one degraded link, not its GPU end and its switch end
    link = bad[0]
    assert link.severity is Severity.DOWN  # the worse of down (the link) and failing (the SXid)
    assert {c.rule for c in link.crossed} >= {"link_down", "sxid_fatal"}
    assert any("24007, Fatal" in e for e in link.evidence)  # the kernel's SXid line is kept as the link's evidence
    assert link.onset is not None
    assert [(loc.fault, loc.ref.slug) for loc in d.localizations] == \
        [(FaultKind.NVSWITCH_FATAL, f"nvswitch-{switch}-port{port}")]  # the fatal SXid still names its port
    assert d.localizations[0].links == [link.component]
    assert any(e.startswith("nvidia-nvswitch") for e in d.localizations[0].evidence)
    offenders = offenders_of(d)
    assert len({o.key for o in offenders}) == len(offenders) and {o.rule for o in offenders} >= {"sxid_fatal"}


def test_an_sxid_on_a_port_whose_gpu_link_is_healthy_stays_the_ports() -> None:
    sxid, switch, port = _sxid_on_the_port_of(4, 3)
    d = analyze_tables({"link_samples": node_links(), "events": sxid}, node_id="n1", platform=PLATFORM)
    bad = [f for f in d.findings if f.severity is not Severity.OK]
    assert [f.component for f in bad] == [f"NVSwitch {switch} port {port}"]


def _xid79_then(*sxids: tuple[float, int, int], gone: tuple[str, ...] = ("0000:91:00.0",)) -> list[Finding]:
    """A node whose GPUs at `gone` fell off the bus (Xid 79) at T0 + 30 min, then an SXid of each (seconds after it,
    code, switch port) on NVSwitch 0: its findings that are not OK."""
    at = T0 + pd.Timedelta(minutes=30)
    rows = [{"timestamp": at, "kind": "xid", "code": 79, "pci_bus_id": bus,
             "text": f"NVRM: Xid (PCI:{bus[5:]}): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."}
            for bus in gone]
    rows += [{"timestamp": at + pd.Timedelta(seconds=s), "kind": "sxid", "code": code, "severity": "fatal",
              "nvswitch": "0", "link": port, "text": f"nvidia-nvswitch0: SXid (PCI:0000:05:00.0): {code}, Fatal, "
                                                     f"Link {port}"} for s, code, port in sxids]
    d = analyze_tables({"link_samples": node_links(), "events": events(rows)}, node_id="n1")
    return [f for f in d.findings if f.severity is not Severity.OK]


def test_the_switch_ends_of_a_gpu_off_the_bus_are_its_evidence_not_parts_of_their_own() -> None:
    """gpud's Xid 79 with SXid 20034 (LTSSM Fault Up) on the switch ports its links land on, seconds later: NVIDIA
    resolves 20034 by resetting the GPU on the link, so the GPU is the one part; the ports are said as its evidence."""
    (gpu,) = _xid79_then((12.0, 20034, 62), (12.5, 20034, 63))
    assert gpu.ref.kind.value == "gpu" and any(c.rule == "xid_off_bus" for c in gpu.crossed)
    assert any(e.startswith("SXid 20034 on NVSwitch 0 port 62, NVSwitch 0 port 63, reported with its Xid 79")
               for e in gpu.evidence)


def test_a_switch_fault_of_another_cure_or_later_or_beside_two_gone_gpus_keeps_its_own_finding() -> None:
    late = _xid79_then((600.0, 20034, 62))  # ten minutes after: no longer the GPU's links going down with it
    assert len(late) == 2 and any(f.ref.kind.value == "nvswitch" for f in late)
    other = _xid79_then((12.0, 10003, 62))  # RESET_FABRIC: a switch fault of its own
    assert len(other) == 2 and any(f.ref.kind.value == "nvswitch" for f in other)
    two = _xid79_then((12.0, 20034, 62), gone=("0000:91:00.0", "0000:a1:00.0"))  # whose link: only a port map says
    assert sum(f.ref.kind.value == "nvswitch" for f in two) == 1
