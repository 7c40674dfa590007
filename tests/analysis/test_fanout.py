"""A burst of NVLink Xids over a rack: one root and its downstream GPUs, or the domain when nothing singles a root
out; never one suspect per GPU. The field case (a GB200 user's rack): one link recovering for hours, then Xid 149 on
it and Xid 145 on 63 other GPUs within a minute, the job 30 % slower."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import numpy as np
import pandas as pd
import pytest

from diagnostics.analysis import analyze_fleet
from diagnostics.analysis.fleet import FleetAnalysis
from diagnostics.enums import ComponentKind, FaultKind, Priority
from diagnostics.render.rack import severity_grid
from diagnostics.synth.fleet import conform
from diagnostics.synth.rack_fleet import build_racks
from diagnostics.tables import EVENTS
from diagnostics.tickets import RulesDrafter
from diagnostics.tickets.markdown import ticket_markdown
from diagnostics.topology.rack import rack_graph

ROOT = (7, 2, 14)  # compute tray, GPU, NVLink


def _xid(host: str, gpu: int, at: pd.Timestamp, code: int, fatal: bool, link: int | None = None) -> dict[str, Any]:
    return {"timestamp": at, "node_id": host, "gpu": gpu, "kind": "xid", "code": code, "link": link,
            "severity": "fatal" if fatal else "non-fatal", "source": "kernel",
            "text": f"NVRM: Xid (PCI:0008:{gpu + 1:02x}:00): {code}, "
                    f"{'NETIR_LINK_EVT  Fatal  ' if fatal else 'RLW_REMAP Nonfatal'}"
                    f" XC0 i0 Link {-1 if link is None else link} (0x00000000 0x00000000)"}


def _burst(tables: dict[str, pd.DataFrame], rack: str, at: pd.Timestamp, *, root: bool, gpus: int = 63,
           echo: int = 145) -> None:
    """The field report's burst on a rack: Xid 145 (non-fatal) on `gpus` GPUs after (with a root) Xid 149 on a
    link that recovered for hours; `echo = 149`: a fatal Xid 149 on each of them instead, on a link of its own."""
    tray, gpu, link = ROOT
    host = f"{rack}-c{tray:02d}"
    events = []
    if root:
        links = tables["link_samples"]
        on = ((links["node_id"] == host) & (links["gpu"] == gpu) & (links["link"] == link)
              & (links["link_type"] == "nvlink")).fillna(False).to_numpy(bool)
        hours = (links.loc[on, "timestamp"] - links.loc[on, "timestamp"].min()).dt.total_seconds() / 3600
        links["recovery_successful"] = links["recovery_successful"].astype("float64")
        links.loc[on, "recovery_successful"] = np.round(hours * 100)
        events.append(_xid(host, gpu, at, 149, True, link))
    others = [(t, g) for t in range(1, 19) for g in range(4) if (t, g) != (tray, gpu)][:gpus]
    for k, (t, g) in enumerate(others):
        events.append(_xid(f"{rack}-c{t:02d}", g, at + pd.Timedelta(seconds=1 + k * 0.6), echo, echo == 149,
                           k % 18 if echo == 149 else None))
    tables["events"] = conform(EVENTS, pd.concat([tables["events"], pd.DataFrame(events)], ignore_index=True))
    steps = tables["step_samples"]
    steps.loc[(steps["timestamp"] >= at) & (steps["job_id"] == f"{rack}-train"), "step_time_ms"] *= 1.3


@pytest.fixture(scope="module")
def fleet() -> FleetAnalysis:
    """Four healthy racks of this project's synth: the burst with a root on rack-01; fatal Xids with no root on
    rack-02; three GPUs' fatal Xids on rack-03; non-fatal Xid 145s only on rack-04."""
    tables, truth, slots, platforms = build_racks(seed=5, racks=4, hours=6, scenarios=["healthy_rack"])
    end = pd.Timestamp(truth["end"])
    _burst(tables, "rack-01", end - pd.Timedelta(minutes=20), root=True)
    _burst(tables, "rack-02", end - pd.Timedelta(minutes=20), root=False, echo=149)
    _burst(tables, "rack-03", end - pd.Timedelta(minutes=5), root=False, gpus=3, echo=149)
    _burst(tables, "rack-04", end - pd.Timedelta(minutes=20), root=False)
    return analyze_fleet(tables, window=timedelta(hours=1), end=end, platforms=platforms, racks=slots)


@pytest.fixture(scope="module")
def rooted(fleet: FleetAnalysis) -> FleetAnalysis:
    return fleet


@pytest.fixture(scope="module")
def rootless(fleet: FleetAnalysis) -> FleetAnalysis:
    return fleet


def test_the_field_case_gives_one_suspect_the_root_link_urgent_with_the_downstream_count(
        rooted: FleetAnalysis) -> None:
    d = rooted.racks["rack-01"]
    assert len(d.localizations) == 1, [loc.component for loc in d.localizations]
    loc = d.localizations[0]
    assert loc.ref.slug == "tray7-gpu2-nvlink14" and loc.fault is FaultKind.NVLINK
    assert d.ticket_priority in (Priority.URGENT, Priority.HIGH)
    said = " ".join(loc.evidence)
    assert "63 GPUs logged Xid 145 within" in said and "Compute tray 7 GPU 2's Xid 149 on NVLink 14" in said
    assert "first fatal event" in said and "successful recoveries before the burst" in said
    assert "history before the burst (1 GPU had one)" in said  # the root link alone recovered before it
    assert len(loc.downstream) == 63 and all(r.kind is ComponentKind.GPU for r in loc.downstream)
    assert "assumed port map" in said and "nvidia-smi nvlink -R -i 2" in said  # the far end is assumed, said so
    assert d.verdict is not None and "the root is Compute tray 7 GPU 2 NVLink 14" in d.verdict


def test_a_downstream_tray_points_at_the_root_with_the_racks_priority(rooted: FleetAnalysis) -> None:
    rack = rooted.racks["rack-01"]
    tray = rooted.diagnoses["rack-01-c01"]
    assert any("downstream of Compute tray 7 GPU 2 NVLink 14" in w for w in tray.warnings)
    if tray.fault_detected:  # a non-fatal Xid 145 may count nothing on its own (its decode says IGNORE)
        assert tray.localization is not None and tray.localization.ref.slug == "tray7-gpu2-nvlink14"
        assert tray.ticket_priority is rack.ticket_priority and tray.verdict == rack.verdict
    root = rooted.diagnoses["rack-01-c07"]
    assert root.ticket_priority is rack.ticket_priority and root.verdict == rack.verdict


def test_the_rack_view_dims_the_downstream_gpus(rooted: FleetAnalysis) -> None:
    d = rooted.racks["rack-01"]
    grid, unplaced = severity_grid(d, rack_graph("gb200-nvl72"))
    assert (grid[0, :, 0] == 5).all()  # tray 1 GPU 0 logged only an echo: dimmed across its links
    assert {(f.ref.tray, f.ref.gpu) for f in unplaced} == {("7", 2)}  # the root's Xid, not its 63 echoes


def test_a_burst_nothing_singles_out_is_one_finding_with_what_to_capture(rootless: FleetAnalysis) -> None:
    d = rootless.racks["rack-02"]
    assert len(d.localizations) == 1, [loc.component for loc in d.localizations]
    loc = d.localizations[0]
    assert loc.fault is FaultKind.FANOUT and loc.ref.kind is ComponentKind.NVLINK_DOMAIN
    assert "root not identifiable" in " ".join(loc.evidence)
    assert "history before the burst (0 GPUs had one)" in " ".join(loc.evidence)  # no link recovered before it
    assert "63 GPUs of the rack logged Xid 149" in loc.evidence[0]
    assert "kernel Xid log" in d.repair_action and "before any reset" in d.repair_action


def test_a_few_gpus_with_xids_are_not_a_burst(fleet: FleetAnalysis) -> None:
    """Xids on three GPUs (fewer than the rack file's `fanout_min_gpus`) are weighed as before, one by one."""
    d = fleet.racks["rack-03"]
    assert len(d.localizations) == 3 and all(not loc.downstream for loc in d.localizations)


def test_a_burst_of_non_fatal_xids_only_warns_and_says_so(fleet: FleetAnalysis) -> None:
    """NVIDIA's decode table: a non-fatal Xid 145 only warns; 63 of them are said once, with no suspect."""
    d = fleet.racks["rack-04"]
    assert not d.fault_detected and not d.localizations
    assert d.ticket_priority not in (Priority.URGENT, Priority.HIGH)
    assert any("63 GPUs of the rack logged Xid 145" in w and "root not identifiable" in w for w in d.warnings)


def test_the_rack_tickets_cost_counts_the_jobs_72_gpus_and_the_lost_share(rooted: FleetAnalysis) -> None:
    """The rack's job runs on its 72 GPUs (18 trays of 4, not 8 a tray); a step 30% slower loses 0.3/1.3 of their
    time, never the 30% itself."""
    d = rooted.racks["rack-01"]
    ticket = RulesDrafter().draft(d)
    cost = ticket.estimated_cost
    assert d.job_gpus == 72 and cost.job_gpus == 72 and cost.slowdown_fraction is not None
    slower = cost.slowdown_fraction
    assert cost.lost_fraction == pytest.approx(slower / (1 + slower), abs=1e-4)
    assert cost.gpu_hours_per_day == pytest.approx(slower / (1 + slower) * 72 * 24, abs=0.1)
    assert "× 72 GPUs × 24 h" in ticket_markdown(ticket)
