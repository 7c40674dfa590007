"""The rack as the unit: half its trays failing at once with no switch unit common to them, or its NVLink domain's
fabric software failing (IMEX down), is one suspect and one ticket for the rack, with its captures; NMX-Controller
is located from the inventory before any reboot; a rack rebooted for planned work pages nobody."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pandas as pd
import pytest

from diagnostics.analysis import analyze_fleet
from diagnostics.analysis.fleet import FleetAnalysis
from diagnostics.analysis.rack_domain import rack_incident
from diagnostics.analysis.rack_localize import Placed
from diagnostics.components import ComponentRef
from diagnostics.enums import ComponentKind, FaultKind, LinkType, Priority, Severity
from diagnostics.model import Crossing, Finding, Localization, RackSlot
from diagnostics.synth.rack_fleet import build_racks
from diagnostics.tables import EVENTS
from diagnostics.tickets import RulesDrafter

FABRIC_MANAGER = re.compile(r"nv-fabricmanager|nvidia-fabricmanager|fabricmanager\.log|Fabric Manager('s)? "
                            r"(log|version|service)", re.IGNORECASE)


@pytest.fixture(scope="module")
def fleet() -> tuple[FleetAnalysis, dict[str, Any]]:
    """rack-01: GPUs off the bus on half its trays or more at once; rack-02: rebooted for planned work; rack-03:
    IMEX down on it, NMX-Controller on its switch tray 1 as the inventory says."""
    tables, truth, slots, platforms = build_racks(seed=7, racks=3, hours=6,
                                                  scenarios=["rack_incident", "planned_reboot", "healthy_rack"])
    end = pd.Timestamp(truth["end"])
    imex = [{"timestamp": end - pd.Timedelta(minutes=10), "node_id": "rack-03-c02", "kind": "imex_state",
             "text": "IMEX Domain State: DEGRADED"},
            {"timestamp": end - pd.Timedelta(minutes=10), "node_id": "rack-03-c07", "kind": "imex_state",
             "text": "IMEX node UNAVAILABLE (10.0.3.7)"}]
    tables["events"] = EVENTS.conform(pd.concat([tables["events"], pd.DataFrame(imex)], ignore_index=True))
    slots = {**slots, "rack-03-s01": RackSlot("rack-03", "1", "nmx-controller")}
    return analyze_fleet(tables, window=timedelta(hours=1), end=end, platforms=platforms, racks=slots), truth


def _texts(ticket: Any) -> list[str]:
    return [ticket.summary, *ticket.warnings, *(c.command for c in ticket.capture_first),
            *(c.why for c in ticket.capture_first), *(s.text for s in [*ticket.isolation_steps, *ticket.repair_steps])]


def test_half_the_trays_failing_at_once_is_one_rack_incident_and_one_ticket(
        fleet: tuple[FleetAnalysis, dict[str, Any]]) -> None:
    analysis, truth = fleet
    d, hit = analysis.racks["rack-01"], truth["racks"]["rack-01"]["faults"][0]["trays"]
    assert len(hit) >= 9 and [loc.fault for loc in d.localizations] == [FaultKind.RACK_INCIDENT]
    loc = d.localization
    assert loc is not None and loc.ref.kind is ComponentKind.NVLINK_DOMAIN and len(loc.hosts) == 18
    assert f"{len(hit)} of the rack's 18 compute trays" in loc.evidence[0] and "the rack is the unit" in loc.evidence[0]
    assert d.ticket_priority is Priority.URGENT  # GPUs are off the bus: every job on them stopped
    ticket = RulesDrafter().draft(d)
    assert ticket.replacement_part is None and ticket.component == loc.component
    # its summary says why the rack is the unit, not the first GPU's Xid (which tray's GPU 2?)
    assert ticket.summary.startswith(f"{loc.component} on rack-01: {len(hit)} of the rack's 18 compute trays")
    hosts = ",".join(f"rack-01-c{t:02d}" for t in range(1, 19))
    assert f"nodename={hosts} " in ticket.isolation_steps[0].text
    captures = [c.command for c in ticket.capture_first]
    assert "nvidia-imex-ctl -N -H" in captures and "nv show cluster apps" in captures
    assert any("sel elist" in c for c in captures)
    assert not [t for t in _texts(ticket) if FABRIC_MANAGER.search(t)]
    assert ticket.identity.fabric_manager_version.startswith("none: a rack's hosts run no Fabric Manager")
    assert not [w for w in ticket.identity.where.values() if "fabricmanager" in w]
    # the alternatives weighed name the domain's fabric software, never a Fabric Manager the rack does not run
    assert not [h.component for h in ticket.hypotheses if "Fabric Manager" in h.component]
    assert ticket.identity.rack == "rack-01"  # the inventory placed it: never "unknown"
    assert ticket.part_note is not None and ticket.part_note.startswith("no part yet: the captures name the unit")
    for tray in hit:  # each tray points at the rack's one ticket
        mine = analysis.diagnoses[f"rack-01-c{tray:02d}"]
        assert mine.isolated_component == loc.component
        assert any("one ticket for the rack" in w for w in mine.warnings)


def test_a_rack_rebooted_for_planned_work_pages_nobody(fleet: tuple[FleetAnalysis, dict[str, Any]]) -> None:
    d = fleet[0].racks["rack-02"]
    assert not d.fault_detected and d.ticket_priority not in (Priority.URGENT, Priority.HIGH)
    assert any("18 of the rack's 18 compute trays restarted in this window" in w for w in d.warnings)
    for host in d.rack.compute.values() if d.rack else []:
        assert not fleet[0].diagnoses[host].fault_detected


def test_imex_down_is_the_domains_fabric_software_with_nmx_located_from_the_inventory(
        fleet: tuple[FleetAnalysis, dict[str, Any]]) -> None:
    d = fleet[0].racks["rack-03"]
    assert d.rack is not None and d.rack.nmx == "switch tray 1 (rack-03-s01)"
    loc = d.localization
    assert loc is not None and loc.fault is FaultKind.FABRIC_MANAGER and len(loc.hosts) == 18
    assert loc.component == "NVLink domain fabric software (NMX-Controller, IMEX)"
    assert any("Domain State: DEGRADED" in e for e in loc.evidence)
    assert any("7 (rack-03-c07: UNAVAILABLE)" in e for e in loc.evidence)
    ticket = RulesDrafter().draft(d)
    assert ticket.replacement_part is None
    locate = next(s.text for s in ticket.isolation_steps if "NMX-Controller runs" in s.text)
    assert "switch tray 1 (rack-03-s01)" in locate
    assert any(c.command == "nv show cluster apps" and "switch tray 1 (rack-03-s01)" in c.why
               for c in ticket.capture_first)
    assert not [t for t in _texts(ticket) if FABRIC_MANAGER.search(t)]
    assert "Fabric Manager" not in (d.verdict or "")


def _placed(host: str, tray: str) -> Placed:
    f = Finding(ref=ComponentRef.nvlink(0, 1).in_tray(tray), link_type=LinkType.NVLINK, link_id="x",
                severity=Severity.DOWN, crossed=[Crossing(rule="link_down", counter="link_state",
                                                         severity=Severity.DOWN, message="down")])
    return Placed(f, host, f.ref, tray, 0, 1)


def test_trays_whose_links_share_a_switch_tray_are_that_switch_tray_not_the_rack() -> None:
    compute = {f"c{t:02d}": str(t) for t in range(1, 19)}
    placed = [_placed(h, t) for h, t in list(compute.items())[:10]]
    onsets = {p.host: 1_000 * 10**9 for p in placed}
    unit = Localization(ref=ComponentRef.switch_tray_unit("4"), fault=FaultKind.SWITCH_TRAY, confidence=0.8,
                        hosts=sorted(p.host for p in placed))
    kw: dict[str, Any] = {"trays": 18, "min_share": 0.5, "within_s": 300.0}
    assert rack_incident(compute, placed, [unit], onsets, **kw) is None
    assert rack_incident(compute, placed, [], onsets, **kw) is not None
    late = {**onsets, "c01": 2_000 * 10**9, "c02": 2_000 * 10**9}  # two trays 1,000 s later: 8 at once, under half
    assert rack_incident(compute, placed, [], late, **kw) is None
