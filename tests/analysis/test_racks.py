"""A rack in the one engine: every tray's findings weighed together and localized to the unit that explains them,
each tray told what its rack found, one job across the trays, and a rack-safe plan."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pandas as pd
import pytest

from diagnostics.analysis import analyze_fleet
from diagnostics.analysis.fleet import FleetAnalysis
from diagnostics.analysis.racks import group_racks
from diagnostics.enums import ComponentKind, FaultKind, PortSource, Priority
from diagnostics.model import RackSlot
from diagnostics.repair import PlanFacts, repair_plan
from diagnostics.synth.rack_fleet import build_racks
from diagnostics.synth.rack_scenarios import RACK_BENIGN, RACK_SCENARIOS
from diagnostics.tables import EVENTS
from diagnostics.tickets import RulesDrafter
from diagnostics.topology.rack import rack_graph

DISABLES = re.compile(r"\b(disabl|isolat|shut ?down|turn(ed)? off|reconfigur|partition)\w*\b", re.IGNORECASE)


Built = tuple[dict[str, pd.DataFrame], dict[str, Any], dict[str, RackSlot], dict[str, str]]


@pytest.fixture(scope="module")
def built() -> Built:
    return build_racks(seed=41, racks=len(RACK_SCENARIOS), hours=6, scenarios=list(RACK_SCENARIOS))


@pytest.fixture(scope="module")
def racks(built: Built) -> tuple[FleetAnalysis, dict[str, Any], dict[str, RackSlot]]:
    tables, truth, slots, platforms = built
    fleet = analyze_fleet(tables, window=timedelta(hours=1), end=pd.Timestamp(truth["end"]), platforms=platforms,
                          racks=slots)
    return fleet, truth, slots


def _rack_of(truth: dict[str, Any], scenario: str) -> str:
    return next(r for r, v in truth["racks"].items() if v["scenario"] == scenario)


@pytest.mark.parametrize("scenario", [s for s in RACK_SCENARIOS if s not in RACK_BENIGN])
def test_each_fault_is_localized_to_its_unit(racks: tuple[FleetAnalysis, dict[str, Any], dict[str, RackSlot]],
                                             scenario: str) -> None:
    fleet, truth, _ = racks
    rack_id = _rack_of(truth, scenario)
    d = fleet.racks[rack_id]
    fault = truth["racks"][rack_id]["faults"][0]
    assert d.localization is not None and d.localization.ref.slug == fault["component"], d.localizations
    assert d.localization.fault.value == fault["fault"]
    assert d.localization.evidence and d.rack is not None and d.rack.rack_id == rack_id


def test_a_switch_tray_fault_is_told_to_each_compute_tray_it_reaches(
        racks: tuple[FleetAnalysis, dict[str, Any], dict[str, RackSlot]]) -> None:
    fleet, truth, _ = racks
    rack_id = _rack_of(truth, "switch_tray")
    loc = fleet.racks[rack_id].localization
    assert loc is not None and loc.ref.kind is ComponentKind.SWITCH_TRAY
    assert len(loc.hosts) >= 2  # the failing GPUs sit in several compute trays, none of which is at fault
    for host in loc.hosts:
        tray = fleet.diagnoses[host]
        assert tray.isolated_component == loc.component and tray.tray is not None
        assert any("outside this tray" in w and rack_id in w for w in tray.warnings), tray.warnings
    quiet = next(h for h in fleet.racks[rack_id].rack.compute.values() if h not in loc.hosts)  # type: ignore[union-attr]
    assert not fleet.diagnoses[quiet].fault_detected


def test_a_job_across_the_trays_is_one_job_of_72_gpus(
        racks: tuple[FleetAnalysis, dict[str, Any], dict[str, RackSlot]]) -> None:
    fleet, truth, _ = racks
    rack_id = _rack_of(truth, "compute_tray")
    d = fleet.racks[rack_id]
    job = truth["jobs"][truth["racks"][rack_id]["job"]]
    assert d.job_id == truth["racks"][rack_id]["job"] and d.job_gpus == 72
    assert len(fleet.jobs[d.job_id].nodes) == 18
    if job["slowdown_pct"]:
        assert d.degradation_pct is not None and d.degradation_pct > 3


def test_healthy_and_benign_racks_are_not_urgent_or_high(
        racks: tuple[FleetAnalysis, dict[str, Any], dict[str, RackSlot]]) -> None:
    fleet, truth, _ = racks
    for scenario in ("healthy_rack", "benign_burst"):
        d = fleet.racks[_rack_of(truth, scenario)]
        assert not d.fault_detected and d.ticket_priority not in (Priority.URGENT, Priority.HIGH)
        assert "Collect this node's link counters" not in d.repair_action  # its trays did report


@pytest.mark.parametrize("fault", [FaultKind.SWITCH_PORT, FaultKind.SWITCH_TRAY, FaultKind.CARTRIDGE,
                                   FaultKind.COMPUTE_TRAY, FaultKind.NVSWITCH, FaultKind.GPU_NVLINKS])
def test_a_rack_plan_drains_the_jobs_trays_and_never_changes_the_fabric(fault: FaultKind) -> None:
    facts = PlanFacts(node_id="rack-07", tray="7", gpu=2, link=5, switch_tray="3", chip=2,
                      switch="Switch tray 3 chip 2",
                      switch_port=27, cartridge="1", hosts=["r7-c07", "r7-c09"], unit="Switch tray 3")
    plan = repair_plan("gb200-nvl72", fault, facts)
    assert plan.applies and plan.part is not None and plan.part.platform == "gb200-nvl72"
    assert "drain compute trays r7-c07, r7-c09" in plan.isolation[0].text.lower()
    assert "nodename=r7-c07,r7-c09" in plan.isolation[0].text
    assert not [s.text for s in [*plan.isolation, *plan.repair] if DISABLES.search(s.text)]
    assert not [c for c in plan.commands() if "fabricmanager" in c]
    captures = [c.command for c in plan.captures]
    assert any("nvlink_domain_telemetry" in c for c in captures)  # the NMX-T state of the rack
    assert "sudo nvidia-bug-report.sh" in captures and any("each of r7-c07, r7-c09" in c.why for c in plan.captures)


def test_the_inventory_names_bad_slots_and_leaves_out_a_host_of_another_rack_platform() -> None:
    platforms = {"a": "gb200-nvl72-compute-tray", "b": "gb200-nvl72-compute-tray", "c": "gb200-nvl72-compute-tray",
                 "d": "gb200-nvl36x2-compute-tray", "e": "hgx-h100-8gpu"}
    slots = {"a": RackSlot("r1", "3"), "b": RackSlot("r1", "3"), "c": RackSlot("r1", "40"), "d": RackSlot("r1", "1"),
             "e": RackSlot("r1", "2")}
    rack = group_racks(platforms, slots)["r1"]
    assert rack.slot == {"a": 3} and rack.label["b"] == "b" and rack.label["c"] == "c"
    said = " ".join(rack.warnings)
    assert "b: compute tray 3 is also a's" in said and "c: compute tray 40 is outside gb200-nvl72's 18" in said
    assert "d is a gb200-nvl36x2 host in a gb200-nvl72 rack: left out" in said and "e" not in rack.kind
    assert not rack.place.slots_known


@pytest.mark.parametrize(("scenario", "part"), [("switch_tray", "gb200-nvl72-switch-tray"),
                                                ("cartridge", "gb200-nvl72-cartridge"),
                                                ("compute_tray", "gb200-nvl72-compute-tray")])
def test_a_rack_ticket_names_the_nvl72_part_and_drains_the_trays_on_its_links(
        racks: tuple[FleetAnalysis, dict[str, Any], dict[str, RackSlot]], scenario: str, part: str) -> None:
    fleet, truth, _ = racks
    d = fleet.racks[_rack_of(truth, scenario)]
    ticket = RulesDrafter().draft(d)
    assert ticket.component == d.isolated_component and ticket.replacement_part is not None
    assert ticket.replacement_part.id == part
    assert d.localization is not None
    first = ticket.isolation_steps[0].text
    assert all(h in first for h in d.localization.hosts) and "no change to the fabric" in first
    assert not [s.text for s in [*ticket.isolation_steps, *ticket.repair_steps] if DISABLES.search(s.text)]
    assert any("nvlink_domain_telemetry" in c.command for c in ticket.capture_first)


def test_a_fatal_sxid_on_a_switch_tray_names_its_port_and_tells_the_tray_whose_link_it_carries() -> None:
    tables, truth, slots, platforms = build_racks(seed=21, racks=1, hours=6, scenarios=["healthy_rack"])
    end = rack_graph("gb200-nvl72").end(7, 1, 5)
    sxid = pd.DataFrame([{
        "timestamp": pd.Timestamp(truth["end"]) - pd.Timedelta(minutes=20),
        "node_id": f"rack-01-s{end.switch_tray:02d}",
        "kind": "sxid", "code": 24007, "severity": "fatal", "nvswitch": str(end.chip - 1), "link": end.port,
        "text": f"nvidia-nvswitch{end.chip - 1}: SXid (PCI:0000:05:00.0): 24007, Fatal, Link {end.port} sourcetrack "
                "timeout error"}])
    tables["events"] = EVENTS.conform(pd.concat([tables["events"], sxid], ignore_index=True))
    fleet = analyze_fleet(tables, window=timedelta(hours=1), end=pd.Timestamp(truth["end"]), platforms=platforms,
                          racks=slots)
    loc = fleet.racks["rack-01"].localization
    assert loc is not None and loc.fault is FaultKind.NVSWITCH_FATAL
    assert loc.component == f"Switch tray {end.switch_tray} chip {end.chip} port {end.port}"
    assert loc.hosts == ["rack-01-c07"]  # the compute tray its link comes from: the one to drain
    tray = fleet.diagnoses["rack-01-c07"]  # its own end reads clean: the port it lands on is its fault, the rack's
    assert tray.fault_detected and tray.isolated_component == loc.component and tray.ticket_owner == "rack-01"
    assert any(loc.component in w and "its own end reads clean" in w for w in tray.warnings)


def test_a_tray_in_another_nvlink_domain_is_named_by_its_rack() -> None:
    tables, truth, slots, platforms = build_racks(seed=22, racks=1, hours=6, scenarios=["healthy_rack"])
    events = tables["events"]
    odd = (events["node_id"].astype(str) == "rack-01-c05") & (events["kind"].astype(str) == "fabric_state")
    texts = events["text"].astype(str).where(~odd, "State: Completed; Status: Success; CliqueId: 1; ClusterUUID: other")
    tables["events"] = events.assign(text=texts)
    fleet = analyze_fleet(tables, window=timedelta(hours=1), end=pd.Timestamp(truth["end"]), platforms=platforms,
                          racks=slots)
    said = [w for w in fleet.racks["rack-01"].warnings if "NVLink domain" in w]
    assert len(said) == 1 and said[0].startswith("compute tray 5 (rack-01-c05) reports ClusterUUID other, CliqueId 1")
    d = fleet.racks["rack-01"]  # a split domain is its fabric software failing: one suspect for the rack, no part
    assert [loc.fault for loc in d.localizations] == [FaultKind.FABRIC_MANAGER] and d.fault_detected
    assert d.localization is not None and len(d.localization.hosts) == 18 and said[0] in d.localization.evidence
    assert "Fabric Manager" not in d.isolated_component


ON_MAP = (FaultKind.NVSWITCH, FaultKind.NVSWITCH_FATAL, FaultKind.SWITCH_PORT, FaultKind.SWITCH_TRAY,
          FaultKind.CARTRIDGE, FaultKind.COMPUTE_TRAY)


def test_every_suspect_and_ticket_on_the_assumed_wiring_says_assumed_and_the_read(
        racks: tuple[FleetAnalysis, dict[str, Any], dict[str, RackSlot]]) -> None:
    """The rack file's port map and cartridge split are assumed (NVIDIA publishes neither): every suspect found
    through them, and its ticket, says so and names the read that confirms it."""
    fleet, _, _ = racks
    seen = set()
    for d in fleet.racks.values():
        for loc in d.localizations:
            if loc.fault not in ON_MAP and loc.switch_tray is None:
                continue
            seen.add(loc.fault)
            said = [e for e in loc.evidence if "assumed" in e]
            assert any("nvidia-smi nvlink -R" in e and "link_partner" in e for e in said), loc.evidence
            if loc.fault is FaultKind.CARTRIDGE:
                assert any("cartridge split" in e and "cable-cartridge" in e for e in said)
        if d.localization is not None and d.localization.fault in ON_MAP:
            ticket = RulesDrafter().draft(d)
            assert any(w.startswith("assumed") and "nvidia-smi nvlink -R" in w and "link_partner" in w
                       for w in ticket.warnings), ticket.warnings
    assert {FaultKind.SWITCH_PORT, FaultKind.SWITCH_TRAY, FaultKind.CARTRIDGE, FaultKind.NVSWITCH} <= seen


def test_a_switch_tray_host_names_its_ports_and_its_suspect_as_its_rack_does(
        racks: tuple[FleetAnalysis, dict[str, Any], dict[str, RackSlot]]) -> None:
    """Whichever door asks, a switch tray's port is one part: the host's own findings carry the rack's name, slug
    and port (read on the port itself), and a host whose ports carry a suspect's links names that suspect."""
    fleet, truth, _ = racks
    seen = set()
    for rack_id, d in fleet.racks.items():
        assert d.rack is not None
        by_slug = {f.ref.slug: f for f in d.findings}
        for host in d.rack.switch.values():
            tray = fleet.diagnoses[host]
            for f in tray.failing:
                assert not f.component.startswith("NVSwitch"), (host, f.component)
                same = by_slug[f.ref.slug]
                assert (same.component, same.switch_port, same.port_source) == (f.component, f.switch_port,
                                                                                 f.port_source)
                assert f.switch_port == f.ref.port and f.port_source is PortSource.OBSERVED
                assert tray.owner_of(f.ref.slug) == d.owner_of(f.ref.slug) == rack_id
            if tray.failing and d.localizations:
                assert tray.isolated_component in {loc.component for loc in d.localizations}, (host, d.localizations)
                assert tray.ticket_owner == rack_id
                seen.add(truth["racks"][rack_id]["scenario"])
    assert {"switch_chip", "switch_tray", "cartridge"} <= seen


def test_a_compute_tray_is_drained_with_its_rack_when_the_racks_repair_stops_every_gpu(
        racks: tuple[FleetAnalysis, dict[str, Any], dict[str, RackSlot]]) -> None:
    """A switch tray's repair stops every GPU of the rack: a compute tray whose own links read clean answers with
    the rack's plan, as the rack does; a suspect inside one compute tray leaves the others their own answer."""
    fleet, truth, _ = racks
    for scenario in ("switch_tray", "switch_chip", "cartridge"):
        d = fleet.racks[_rack_of(truth, scenario)]
        assert d.localization is not None and d.rack is not None
        quiet = [h for h in d.rack.compute.values() if h not in d.localization.hosts]
        assert quiet, scenario
        for host in quiet:
            tray = fleet.diagnoses[host]
            assert not tray.fault_detected and tray.repair_action == d.repair_action, (scenario, host)
            assert any(f"repair of {d.localization.component}" in w and "drain it with the rack's plan" in w
                       for w in tray.warnings), tray.warnings
    for scenario in ("one_gpu", "compute_tray"):
        d = fleet.racks[_rack_of(truth, scenario)]
        assert d.localization is not None and d.rack is not None
        for host in (h for h in d.rack.compute.values() if h not in d.localization.hosts):
            tray = fleet.diagnoses[host]
            assert tray.repair_action != d.repair_action and not any("its GPUs stop" in w for w in tray.warnings)


def test_the_link_that_explains_a_rack_s_job_is_named_as_the_rack_names_it(
        racks: tuple[FleetAnalysis, dict[str, Any], dict[str, RackSlot]]) -> None:
    """A job's verdict named its top link as its host does ("rack-02-s09 NVSwitch 0 port 12"), beside findings that
    name it as the rack does: the rack and each of its hosts now say the rack's name ("Switch tray 9 chip 1 port 12"),
    one name for one part, whichever tray is asked. A host of the rack's job says the rack's verdict, where a tray of
    a rack whose Xid burst slows the job said "no link's errors track it: not the fabric"."""
    fleet, _, slots = racks
    explained = 0
    for d in fleet.racks.values():
        if d.verdict is None or " explains job " not in d.verdict:
            continue
        explained += 1
        link = d.verdict.split(" explains job ")[0]
        assert re.match(r"^(Compute|Switch) tray \d+ ", link), d.verdict
        assert link in {f.component for f in d.findings}, link
    assert explained >= 4
    for rack_id, d in sorted(fleet.racks.items()):  # every host of the rack's job says the rack's verdict on it
        hosts = [fleet.diagnoses[h] for h, s in slots.items() if s.rack == rack_id and h in fleet.diagnoses
                 and fleet.diagnoses[h].job_id == d.job_id]
        assert d.job_id is None or {h.verdict for h in hosts} == {d.verdict}, (rack_id, {h.verdict for h in hosts})


def test_a_rack_hosts_job_evidence_names_each_link_as_the_rack_does(
        built: Built, racks: tuple[FleetAnalysis, dict[str, Any], dict[str, RackSlot]]) -> None:
    """One host's view draws its job's links (the correlation picture's lines and title) from its own findings and
    other trays': each was named as its host names it, so two trays' `GPU 2 NVLinks` were two lines of one name, and
    the title named another part than the verdict. Each now has the rack's name, the verdict's first."""
    tables, truth, slots, platforms = built
    fleet, _, _ = racks
    rack_id, rack = next((r, d) for r, d in sorted(fleet.racks.items()) if d.verdict and " explains job " in d.verdict)
    host = next(h for h, s in sorted(slots.items()) if s.rack == rack_id and h in fleet.diagnoses
                and fleet.diagnoses[h].job_id == rack.job_id)
    one = analyze_fleet(tables, window=timedelta(hours=1), end=pd.Timestamp(truth["end"]), platforms=platforms,
                        racks=slots, nodes=[host], full=True).diagnoses[host]
    assert one.evidence is not None and one.evidence.explained and one.verdict == rack.verdict
    names = [s.ref.name for s in one.evidence.links]
    assert names[0] == rack.verdict.split(" explains job ")[0], names
    assert all(re.match(r"^(Compute|Switch) tray \d+ ", n) for n in names), names
    assert len(set(names)) == len(names), names
    named = {f.component for d in fleet.diagnoses.values() if d.rack is not None and d.rack.rack_id == rack_id
             for f in d.findings}
    assert set(names) <= named, set(names) - named
