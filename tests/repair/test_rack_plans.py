"""Every rack fault kind's plan walked as a rack technician would read it: nothing touches a switch tray or a cable
cartridge before the whole rack is drained (every GPU has a link on every switch chip), each step that touches a
shared unit says which trays and jobs it stops, no Fabric Manager anywhere (the rack's fabric is NMX's), and a plan
built on the rack file's assumed port map or cartridge split says "assumed" and names the read that confirms it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from diagnostics.config import racks
from diagnostics.config.platforms import all_platforms
from diagnostics.config.racks import rack_of, rack_spec
from diagnostics.enums import FaultKind, PortSource, ResetScope
from diagnostics.repair import PlanFacts, PlanStep, RepairPlan, repair_plan

RACK_PLATFORMS = sorted({n for n, d in all_platforms().items() if d.get("rack")}
                        | {str(d["rack"]) for d in all_platforms().values() if d.get("rack")})
HOSTS = [f"r7-c{i:02d}" for i in range(1, 19)]
# A step whose words touch a shared unit: reseat, reboot, replace or power a switch tray or a cartridge (within one
# clause: "replace the compute tray; if ..., the cartridge is the suspect" touches only the compute tray)
TOUCHES_SHARED = re.compile(r"\b(reseat|reboot|replace|power)\b[^.;:]*\b(switch trays?|cartridge)\b", re.IGNORECASE)
FABRIC_MANAGER = re.compile(r"nv-fabricmanager|nvidia-fabricmanager|fabricmanager\.log|Fabric Manager('s)? "
                            r"(log|version|service)|restart the Fabric Manager", re.IGNORECASE)
ON_MAP = (FaultKind.NVSWITCH, FaultKind.NVSWITCH_FATAL, FaultKind.SWITCH_PORT, FaultKind.SWITCH_TRAY,
          FaultKind.CARTRIDGE, FaultKind.COMPUTE_TRAY)


def _facts(platform: str) -> PlanFacts:
    spec = rack_of(platform) or rack_spec(platform)
    hosts = HOSTS[:spec.compute_trays]
    return PlanFacts(node_id="rack-07", rack_id="rack-07", tray="7", gpu=2, link=5, switch_tray="3",
                     switch="Switch tray 3 chip 2", switch_port=27, port_source=PortSource.ASSUMED, cartridge="1",
                     hosts=[hosts[6]], unit="Switch tray 3 chip 2 port 27", rack_hosts=hosts, jobs=["r7-train"])


def _steps(plan: RepairPlan) -> list[PlanStep]:
    return [*plan.isolation, *plan.repair]


CASES = [(p, f) for p in RACK_PLATFORMS for f in FaultKind]


@pytest.mark.parametrize(("platform", "fault"), CASES, ids=[f"{p}-{f.value}" for p, f in CASES])
def test_no_switch_tray_or_cartridge_is_touched_before_the_rack_is_drained(platform: str, fault: FaultKind) -> None:
    facts = _facts(platform)
    plan = repair_plan(platform, fault, facts)
    if not plan.applies:
        return
    for step in plan.repair:
        if TOUCHES_SHARED.search(step.text):
            assert step.stops == "rack", step.text  # it says what it takes out of service
    if plan.stops_rack:
        assert [s for s in plan.isolation if s.drains == "rack"], [s.text for s in plan.isolation]
        first, last = facts.rack_hosts[0], facts.rack_hosts[-1]
        drained = next(s for s in plan.isolation if s.drains == "rack")
        # every tray of the rack, by name; of an NVLink domain of racks, the others' trays asked for in the command
        # itself (a paste of this rack's alone would drain half the domain)
        spans = (rack_of(platform) or rack_spec(platform)).racks_per_domain > 1
        named = ",".join(facts.rack_hosts) + (",<the other rack's compute trays>" if spans else "")
        assert f"nodename={named} " in drained.text
        for step in [s for s in plan.repair if s.stops == "rack"]:
            assert first in step.text and last in step.text and "r7-train" in step.text, step.text
        if (rack_of(platform) or rack_spec(platform)).racks_per_domain > 1:
            assert "other rack of its NVLink domain" in drained.text
    assert plan.isolation and "drain" in plan.isolation[0].text.lower()


@pytest.mark.parametrize(("platform", "fault"), CASES, ids=[f"{p}-{f.value}" for p, f in CASES])
def test_no_fabric_manager_on_a_rack_platform(platform: str, fault: FaultKind) -> None:
    plan = repair_plan(platform, fault, _facts(platform))
    if not plan.applies:  # held: it only says to confirm the platform
        return
    texts = [plan.action, *plan.warnings, *(c.command for c in plan.captures), *(c.why for c in plan.captures),
             *(t for s in _steps(plan) for t in (s.text, s.command or ""))]
    assert not [t for t in texts if FABRIC_MANAGER.search(t)]
    assert not [c for c in plan.commands() if "fabricmanager" in c]
    assert plan.reset.scope is not ResetScope.FABRIC_SERVICE or plan.reset.command is None


@pytest.mark.parametrize(("platform", "fault"), [(p, f) for p in RACK_PLATFORMS for f in ON_MAP],
                         ids=[f"{p}-{f.value}" for p in RACK_PLATFORMS for f in ON_MAP])
def test_a_plan_on_the_assumed_wiring_says_so_and_names_the_read(platform: str, fault: FaultKind) -> None:
    plan = repair_plan(platform, fault, _facts(platform))
    said = [w for w in plan.warnings if w.startswith("assumed")]
    assert any("nvidia-smi nvlink -R -i 2" in w and "link_partner" in w for w in said), plan.warnings
    if fault is FaultKind.CARTRIDGE:
        assert any("cartridge split" in w and "nv show platform cable-cartridge" in w for w in said)


def test_a_fabric_software_fault_of_the_domain_reads_imex_and_nmx_where_the_inventory_puts_it() -> None:
    facts = _facts("gb200-nvl72").model_copy(update={"nmx": "switch tray 1 (r7-s01)"})
    plan = repair_plan("gb200-nvl72", FaultKind.FABRIC_MANAGER, facts)
    captures = [c.command for c in plan.captures]
    assert "nvidia-imex-ctl -N -H" in captures and "nv show cluster apps" in captures
    assert any("switch tray 1 (r7-s01)" in c.why for c in plan.captures if c.command == "nv show cluster apps")
    steps = [s.text for s in _steps(plan)]
    locate = next(i for i, t in enumerate(steps) if "NMX-Controller runs" in t)
    reboot = next(i for i, t in enumerate(steps) if i != locate and "reboot" in t.lower())
    assert locate < reboot and "switch tray 1 (r7-s01)" in steps[locate]
    sequence = next(t for t in steps if "follow the rack reboot sequence (" in t)
    assert sequence.index("switch trays") < sequence.index("NMX-Controller") < sequence.index("compute trays on")
    unknown = repair_plan("gb200-nvl72", FaultKind.FABRIC_MANAGER, _facts("gb200-nvl72"))
    assert any("find where NMX-Controller runs" in s.text for s in unknown.isolation)


@pytest.mark.parametrize(("platform", "fault"), CASES, ids=[f"{p}-{f.value}" for p, f in CASES])
def test_a_compute_trays_replacement_waits_for_the_whole_rack_drained(platform: str, fault: FaultKind) -> None:
    """NVIDIA's rack reboot sequence follows a compute tray's replacement, and it stops every tray of the rack: the
    step says so and stops the rack, and the isolation drains the rack before it (the reseat needs only the tray)."""
    facts = _facts(platform)
    plan = repair_plan(platform, fault, facts)
    replaced = [s for s in plan.repair if re.search(r"replace (the|its) (compute tray|GB\w* compute tray)|replace the "
                                                    r"\S+ compute tray", s.text, re.IGNORECASE)]
    for step in replaced:
        assert step.stops == "rack" and ("rack reboot sequence" in step.text or "drained first" in step.text), step.text
    if replaced:
        drained = [s for s in plan.isolation if s.drains == "rack"]
        assert drained and facts.rack_hosts[0] in drained[0].text, [s.text for s in plan.isolation]


DOMAIN_PLATFORMS = [p for p in RACK_PLATFORMS if (rack_of(p) or rack_spec(p)).racks_per_domain > 1]


@pytest.mark.parametrize(("platform", "fault"), [(p, f) for p in DOMAIN_PLATFORMS for f in FaultKind],
                         ids=[f"{p}-{f.value}" for p in DOMAIN_PLATFORMS for f in FaultKind])
def test_a_domain_of_two_racks_drains_the_other_rack_too(platform: str, fault: FaultKind) -> None:
    """An NVL36x2 switch tray carries the links of both racks of its domain: the drain before it is rebooted,
    reseated or replaced drains the other rack's compute trays as well, and says how to find them (the inventory
    pairs no racks), not only that they stop."""
    plan = repair_plan(platform, fault, _facts(platform))
    if not plan.applies or not plan.stops_rack:
        return
    drained = next(s for s in plan.isolation if s.drains == "rack")
    assert re.search(r"other rack of its NVLink domain, whose compute trays are drained", drained.text), drained.text
    assert "ClusterUUID" in drained.text and "nvidia-smi -q -d FABRIC" in drained.text


@pytest.mark.parametrize(("platform", "fault"), CASES, ids=[f"{p}-{f.value}" for p, f in CASES])
def test_a_step_that_speaks_of_a_reseat_follows_one(platform: str, fault: FaultKind) -> None:
    """A switch tray's chip is rebooted, never reseated ('there is nothing to reseat'): its plan's last step once read
    'if the same fault returns within days of a reseat, skip the reseat'."""
    plan = repair_plan(platform, fault, _facts(platform))
    texts = [s.text for s in plan.repair]
    for at, text in enumerate(texts):
        if re.search(r"\bof a reseat\b|\bskip the reseat\b", text):
            assert any(re.search(r"\breseat\b", t) and "nothing to reseat" not in t for t in texts[:at]), texts
        if re.search(r"\bof a reboot\b|\bskip the reboot\b", text):
            assert any(re.search(r"\breboot\b", t) for t in texts[:at]), texts


@pytest.mark.parametrize("platform", sorted(n for n, d in all_platforms().items() if d.get("tray_kind")))
def test_a_trays_plan_names_its_rack_only_as_the_inventory_does(platform: str) -> None:
    """A tray's name is no rack's: with no rack inventory its plan says "the rack", never "rack <the tray>", in each
    step; with one, the rack's name; the rack's own plan is named by it."""
    for fault in FaultKind:
        unnamed = repair_plan(platform, fault, PlanFacts(node_id="gb1", gpu=2, link=5))
        named = repair_plan(platform, fault, PlanFacts(node_id="gb1", rack_id="rack-07", gpu=2, link=5))
        unnamed_text = " ".join(s.text for s in _steps(unnamed))
        assert "rack gb1" not in unnamed_text, (fault, unnamed_text)
        if "of rack rack-07" in " ".join(s.text for s in _steps(named)):
            assert "of the rack" in unnamed_text, (fault, unnamed_text)
    rack = str(all_platforms()[platform]["rack"])
    whole = repair_plan(rack, FaultKind.SWITCH_TRAY,
                        PlanFacts(node_id="rack-07", switch_tray="3", unit="Switch tray 3"))
    assert "rack rack-07" in " ".join(s.text for s in _steps(whole))


def test_a_link_whose_port_nmxt_read_is_not_said_assumed_from_the_rack_map() -> None:
    """NMX-T's link partner names where a GPU link lands: the ticket still warned the port came from the rack file's
    assumed map; only a port the map gives is said assumed."""
    said = {}
    for source in (PortSource.OBSERVED, PortSource.ASSUMED):
        plan = repair_plan("gb200-nvl72-compute-tray", FaultKind.NVLINK, PlanFacts(
            node_id="t18", gpu=2, link=11, peer="Switch tray 7 chip 1", switch="Switch tray 7 chip 1", switch_port=71,
            port_source=source))
        said[source] = any("rack file's port map" in w for w in plan.warnings)
    assert said == {PortSource.OBSERVED: False, PortSource.ASSUMED: True}


def test_the_port_map_read_says_whether_the_rack_files_ports_are_assumed(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """`nvidia-smi nvlink -R`'s capture said the rack file's ports were assumed whatever the rack file said: a site
    that writes its own cable map into the file is told the read checks it."""
    def remote(platform: str) -> str:
        plan = repair_plan(platform, FaultKind.SWITCH_PORT, _facts(platform))
        return next(c.why for c in plan.captures if c.command.startswith("nvidia-smi nvlink -R"))

    assert remote("gb200-nvl72").endswith("(the rack file's ports are assumed)")
    bundled = Path(racks.__file__).parent.parent / "data" / "racks" / "gb200-nvl72.toml"
    text = bundled.read_text(encoding="utf-8")
    stated = re.sub(r'(?m)^source = "assumed:[^"]*"$', 'source = "[SITE] the cable map of rack 7, 2026-11"', text)
    assert stated != text
    (tmp_path / "gb200-nvl72.toml").write_text(stated, encoding="utf-8")
    monkeypatch.setenv(racks.ENV_DIRS, str(tmp_path))
    said = remote("gb200-nvl72")
    assert said.endswith("(to check against the rack file's port map)") and "assumed" not in said


@pytest.mark.parametrize("platform", RACK_PLATFORMS)
def test_a_switch_tray_is_reseated_powered_off_and_its_replacement_is_followed_by_the_rack_reboot(
        platform: str) -> None:
    """NVIDIA's DGX GB200 user guide orders the rack reboot sequence after a switch tray's replacement, as after a
    compute tray's; a tray is reseated powered off (a switch tray's reseat said only that the rack was drained)."""
    for fault in (FaultKind.SWITCH_TRAY, FaultKind.SWITCH_PORT, FaultKind.NVSWITCH_FATAL, FaultKind.CARTRIDGE):
        plan = repair_plan(platform, fault, _facts(platform))
        if not plan.applies:
            continue
        for step in plan.repair:
            text = step.text.lower()
            if re.search(r"\breplace the [^;(]*switch tray", text):
                assert "rack reboot sequence" in text, step.text
            reseats = re.search(r"\breseat\b", text) and not re.search(r"after the reseat|skip the reseat", text)
            if reseats and "tray" in text:
                assert "powered off" in text or "power off" in text, step.text
