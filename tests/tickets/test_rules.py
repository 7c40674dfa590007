"""The rules drafter and the ticket's facts: seed example, platforms, inventory, cost, catalogs."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from diagnostics import ConfigError, Finding, Localization
from diagnostics.components import ComponentRef
from diagnostics.config.parts import parts
from diagnostics.enums import ComponentKind, FaultKind, LinkType, PortSource, Priority, ResetScope, Severity
from diagnostics.errors import InputError
from diagnostics.tickets import NoFaultError, RulesDrafter, candidates_for
from diagnostics.tickets.markdown import ticket_markdown
from diagnostics.topology import Inventory
from tests.tickets.helpers import seed_diagnosis


def test_seed_ticket_names_the_link_its_peer_a_part_and_urgent_priority() -> None:
    t = RulesDrafter().draft(seed_diagnosis())
    assert (t.gpu_index, t.peer, t.link_id, t.link) == (2, "GPU 3", "nvlink-1", 1)
    assert t.component_kind is ComponentKind.NVLINK and t.priority is Priority.URGENT
    # no platform: the part the observed link implies (a GPU-to-GPU NVLink: a bridge on PCIe cards, the baseboard on
    # an SXM board), never null, with the read that decides between them
    part = t.replacement_part
    assert part is not None and part.id == "unknown-nvlink-carrier"
    assert [c.fru for c in part.candidates] == ["NVLink bridge", "GPU baseboard"]
    assert part.decided_by == 'nvidia-smi -q | grep -i "product name"' and t.part_note is None
    # no platform: the port is unknown, and the ticket says how to find it
    assert t.port_source is PortSource.UNKNOWN and t.switch_port is None
    assert t.port_find_with is not None and "nvidia-smi nvlink -R -i 2" in t.port_find_with
    assert t.human_review_required is True and t.drafted_by == "rules"
    md = t.to_markdown()
    assert "GPU 2 -> GPU 3 NVLink 1" in md and "urgent" in md and "nvidia-smi nvlink -R -i 2" in md


def test_seed_on_hgx_h100_names_an_nvswitch_port_marked_assumed() -> None:
    t = RulesDrafter().draft(seed_diagnosis(platform="hgx-h100-8gpu"))
    assert t.switch is not None and t.switch.startswith("NVSwitch")
    assert t.switch_port is not None and t.port_source is PortSource.ASSUMED
    assert t.replacement_part is not None and t.replacement_part.id == "hgx-h100-sxm5-module"
    # a GPU pair on an NVSwitch board contradicts the board: the ticket says so and names the switch path
    assert any("every GPU NVLink lands on an NVSwitch" in w and f"{t.switch} port {t.switch_port}" in w
               for w in t.warnings)
    assert any(f"port {t.switch_port} is assumed" in w for w in t.warnings)
    assert not any("port" in s.text for s in t.isolation_steps)  # a port is never isolated
    md = t.to_markdown()
    assert "## Warnings" in md and "ribbon" not in md


def test_capture_and_repair_steps_are_ordered_and_complete() -> None:
    t = RulesDrafter().draft(seed_diagnosis())
    captures = [c.command for c in t.capture_first]
    for command in ("nvidia-smi nvlink -e -i 2", "nvidia-smi nvlink -s -i 2", "sudo nvidia-bug-report.sh"):
        assert command in captures
    assert captures[:2] == ['nvidia-smi -q | grep -i "product name"', "nvidia-smi topo -m"]  # no platform: tell it
    assert "dcgmi diag -r 3" not in captures  # 15 minutes of load: after the drain, among the repairs
    assert "dcgmi diag -r 3" in [s.command for s in t.repair_steps]
    assert any("platform unknown" in w for w in t.warnings) and t.replacement_part is not None
    texts = [s.text.lower() for s in t.repair_steps]
    order = [next(i for i, s in enumerate(texts) if word in s) for word in ("reset", "reseat", "replace")]
    assert order == sorted(order) and [s.order for s in t.repair_steps] == list(range(1, len(texts) + 1))
    assert any("follow" in s and "slot" in s for s in texts)
    assert "drain" in t.isolation_steps[0].text.lower()
    assert not any("port" in s.text for s in t.isolation_steps)  # no port known, no port to isolate


def test_human_review_cannot_be_switched_off() -> None:
    t = RulesDrafter().draft(seed_diagnosis())
    with pytest.raises(ValidationError):
        type(t).model_validate(t.model_dump() | {"human_review_required": False})
    with pytest.raises(ValidationError):
        t.human_review_required = False  # type: ignore[misc]


def test_cost_counts_every_gpu_of_the_job_and_says_what_it_assumed() -> None:
    """A step d slower loses d / (1 + d) of the GPU time; with the job's GPUs unknown, no total is guessed."""
    t = RulesDrafter().draft(seed_diagnosis())
    assert t.estimated_cost.gpu_hours_per_day is None and t.estimated_cost.job_gpus is None
    assert t.estimated_cost.lost_fraction == pytest.approx(0.892 / 1.892, abs=1e-4)
    assert any("GPU count is unknown" in a for a in t.estimated_cost.assumptions)
    assert "the job's GPU count: unknown" in ticket_markdown(t)
    big = seed_diagnosis().model_copy(update={"job_gpus": 512})
    cost = RulesDrafter().draft(big).estimated_cost
    assert cost.gpu_hours_per_day == pytest.approx(0.892 / 1.892 * 512 * 24, abs=0.1) and cost.job_gpus == 512
    assert not any("unknown" in a for a in cost.assumptions)


@pytest.mark.parametrize(("pct", "lost"), [(88.0, 1 - 1 / 1.88), (100.0, 0.5), (300.0, 0.75), (0.0, 0.0)])
def test_the_lost_share_of_gpu_time_never_passes_all_of_it(pct: float, lost: float) -> None:
    """'337.9 GPU-hours lost per day (88.0% slowdown x 16 GPUs x 24 h)': an 88% slower step loses 47%, and a step
    three times as long 75%, not 300%."""
    d = seed_diagnosis().model_copy(update={"job_gpus": 16, "degradation_pct": pct})
    cost = RulesDrafter().draft(d).estimated_cost
    assert cost.lost_fraction == pytest.approx(lost, abs=1e-4) and cost.lost_fraction <= 1.0
    assert cost.gpu_hours_per_day == pytest.approx(lost * 16 * 24, abs=0.1)
    if pct == 88.0:
        assert cost.gpu_hours_per_day == pytest.approx(179.7, abs=0.1)


def test_inventory_fills_identity_and_unknowns_say_where(tmp_path: Path) -> None:
    inv = Inventory.model_validate({"nodes": {"hpc-gpu-node-12": {
        "node_serial": "SN-NODE-1", "rack_location": "R12-U20", "driver_version": "550.54.15",
        "gpus": [{"index": 2, "slot": "SXM3", "serial": "1652022001234", "uuid": "GPU-abc",
                  "pci_bus_id": "0000:1b:00.0"}]}}})
    ident = RulesDrafter().draft(seed_diagnosis(), inventory=inv).identity
    assert (ident.slot_label, ident.gpu_serial, ident.gpu_uuid, ident.rack) == ("SXM3", "1652022001234", "GPU-abc",
                                                                                "R12-U20")
    assert ident.fabric_manager_version == "unknown" and "fabricmanager" in ident.where["fabric_manager_version"]
    assert "slot_label" not in ident.where
    bare = RulesDrafter().draft(seed_diagnosis()).identity
    assert bare.gpu_serial == "unknown" and "Serial Number" in bare.where["gpu_serial"]


def test_link_option_picks_another_component_and_bad_names_are_clear() -> None:
    d = seed_diagnosis()
    assert RulesDrafter().draft(d, component="gpu2").component_kind is ComponentKind.GPU
    assert RulesDrafter().draft(d, component="nvlink-1").link_id == "nvlink-1"
    with pytest.raises(InputError, match="no such component"):
        RulesDrafter().draft(d, component="nvlink-9")


def test_healthy_node_has_nothing_to_repair() -> None:
    healthy = seed_diagnosis(fabric_errors=[{"gpu_src": 0, "gpu_dst": 1, "link_id": "nvlink-0",
                                             "crc_errors": 2, "replay_count": 1}])
    with pytest.raises(NoFaultError):
        RulesDrafter().draft(healthy)


def _finding(gpu: int, link: int, severity: Severity = Severity.FAILING, **kw: object) -> Finding:
    ref = ComponentRef.nvlink(gpu, link, switch=kw.get("switch"), port=kw.get("switch_port"))  # type: ignore[arg-type]
    return Finding(ref=ref, link_type=LinkType.NVLINK, link_id=f"nvlink-{link}",
                   link=link, gpu=gpu, severity=severity, **kw)  # type: ignore[arg-type]


def test_shared_switch_outranks_single_links_when_several_gpus_land_on_it() -> None:
    findings = [_finding(g, 0, switch="NVSwitch 2", switch_port=p, port_source=PortSource.OBSERVED, lanes=[g])
                for g, p in ((0, 4), (3, 12), (5, 20))]
    loc = Localization(ref=ComponentRef.nvswitch("NVSwitch 2"), switch="NVSwitch 2", confidence=0.9)
    d = seed_diagnosis().model_copy(update={"findings": findings, "localization": loc})
    ranked = candidates_for(d)
    assert ranked[0].id == "nvswitch-2" and ranked[0].isolated and ranked[0].port_source is PortSource.OBSERVED
    t = RulesDrafter().draft(d)
    assert t.component_kind is ComponentKind.NVSWITCH and t.switch == "NVSwitch 2"
    # the seed names no platform: a switch link is the baseboard's, whichever board carries NVSwitch 2
    assert t.replacement_part is not None and t.replacement_part.id == "unknown-gpu-baseboard"
    on_a100 = RulesDrafter().draft(d.model_copy(update={"platform": "dgx-a100-8gpu"}))
    assert on_a100.replacement_part is not None and on_a100.replacement_part.id == "dgx-a100-baseboard"
    link = RulesDrafter().draft(d, component="gpu3-nvlink0")
    assert (link.switch, link.switch_port, link.port_source, link.lanes) == ("NVSwitch 2", 12, PortSource.OBSERVED, [3])
    assert link.port_find_with is None  # observed: nothing to look up


def test_fabric_software_ticket_has_no_part() -> None:
    findings = [_finding(g, 0, Severity.DOWN) for g in range(6)]
    loc = Localization(ref=ComponentRef.fabric_software(), confidence=0.8)
    d = seed_diagnosis().model_copy(update={"findings": findings, "localization": loc})
    t = RulesDrafter().draft(d)
    assert t.component_kind is ComponentKind.FABRIC_SOFTWARE and t.replacement_part is None
    assert "none (nothing physical is replaced" in t.to_markdown().split("replacement part")[1].split("\n")[0]
    on_h100 = RulesDrafter().draft(d.model_copy(update={"platform": "hgx-h100-8gpu"}))
    assert on_h100.replacement_part is None and on_h100.reset.scope is ResetScope.FABRIC_SERVICE
    assert "nv-fabricmanager --version" in [c.command for c in on_h100.capture_first]
    dgx1 = RulesDrafter().draft(d.model_copy(update={"platform": "dgx1-v100-8gpu"}))
    assert dgx1.warnings and "runs no Fabric Manager" in dgx1.warnings[0]  # the input contradicts the board


def test_user_parts_catalog_overrides_and_bad_catalog_is_a_clear_error(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    mine = tmp_path / "parts.toml"
    mine.write_text('[[part]]\nid = "h100-nvl-nvlink-bridge"\npart_number = "ACME-7"\n')
    monkeypatch.setenv("FABRICBOT_PARTS", str(mine))
    t = RulesDrafter().draft(seed_diagnosis(platform="h100-nvl-8gpu"))
    assert t.replacement_part is not None and t.replacement_part.part_number == "ACME-7"
    assert t.replacement_part.fru == "NVLink bridge"  # the fields the user did not set keep their defaults
    bad = tmp_path / "bad.toml"
    bad.write_text('[[part]]\nid = "x"\nplatform = "*"\ndescription = "x"\n')
    with pytest.raises(ConfigError, match=r"bad\.toml: part 'x': fru: Field required"):
        parts(bad)
    broken = tmp_path / "broken.toml"
    broken.write_text("[[part]\n")
    with pytest.raises(ConfigError, match=r"broken\.toml: not a readable parts catalog"):
        parts(broken)


def test_a_gpu_off_the_bus_gets_a_machine_restart_and_its_pcie_evidence_first() -> None:
    loc = Localization(ref=ComponentRef.of_gpu(5), fault=FaultKind.GPU_OFF_BUS, gpu=5, confidence=0.9)
    d = seed_diagnosis(platform="pcie-8gpu", fabric_errors=[
        {"gpu_src": 5, "gpu_dst": None, "link_id": "pcie", "crc_errors": 0, "replay_count": 9000}])
    t = RulesDrafter().draft(d.model_copy(update={"localization": loc, "localizations": [loc]}))
    assert (t.fault, t.reset.scope) == (FaultKind.GPU_OFF_BUS, ResetScope.NODE)
    assert not [s for s in t.repair_steps if s.command and "nvidia-smi -r" in s.command]
    assert "restart the machine" in t.repair_steps[0].text.lower()
    captures = [c.command for c in t.capture_first]
    assert "sudo lspci -vvv" in captures and any("AER" in c for c in captures)
    assert not [c for c in captures if "nvlink" in c]  # a PCIe-only server: no NVLink commands
    assert t.replacement_part is not None and t.replacement_part.id == "pcie-riser-retimer"  # riser and slot first


@pytest.mark.parametrize("inventory", [None, {"rack_location": "R12-U20"}], ids=["bare", "inventory-rack"])
def test_a_nodes_reboot_is_its_reset_row_with_no_rack_words(inventory: dict[str, str] | None) -> None:
    """A GPU off the bus on an HGX node is restarted with the node: its reset row says so, and names no compute
    tray or host-less reset (a rack's words), whether or not an inventory gives the node a rack location."""
    loc = Localization(ref=ComponentRef.of_gpu(5), fault=FaultKind.GPU_OFF_BUS, gpu=5, confidence=0.9)
    d = seed_diagnosis(platform="hgx-h100-8gpu").model_copy(update={"localization": loc, "localizations": [loc]})
    inv = Inventory.model_validate({"nodes": {d.node_id: inventory}}) if inventory else None
    t = RulesDrafter().draft(d, inventory=inv)
    assert t.reset.scope is ResetScope.NODE
    row = next(line for line in t.to_markdown().splitlines() if line.startswith("| reset |"))
    assert "reboot or restart the node" in row and "tray" not in row and "from a host" not in row


def test_a_v100_ticket_resets_every_nvlink_peer_together() -> None:
    t = RulesDrafter().draft(seed_diagnosis(platform="dgx1-v100-8gpu", fabric_errors=[
        {"gpu_src": 2, "gpu_dst": 3, "link_id": "nvlink-4", "crc_errors": 45120, "replay_count": 8900}]))
    assert t.reset.scope is ResetScope.NVLINK_PEERS and t.reset.gpus == list(range(8))
    assert t.repair_steps[0].command == "nvidia-smi -r -i 0,1,2,3,4,5,6,7"
    assert "ribbon" not in t.to_markdown() and t.replacement_part is not None


def test_the_old_step_catalog_variable_is_refused_with_a_pointer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FABRICBOT_TICKET_STEPS", "/nowhere/ticket_steps.toml")
    with pytest.raises(ConfigError, match="FABRICBOT_REPAIRS"):
        RulesDrafter().draft(seed_diagnosis())


def test_a_link_drafted_while_the_fabric_software_is_blamed_leads_its_warnings_with_that() -> None:
    """Fabric Manager down (every NVLink inactive at once): a ticket drafted anyway for one inactive link says first
    that the analysis blames the fabric software, not this link; the fabric software's own ticket says no such
    thing."""
    from diagnostics.service import Request, TableSource, diagnose
    from diagnostics.synth.fleet import build

    tables, truth = build(seed=3, nodes=1, hours=2, scenarios=["fabric_manager_down"])
    (node,) = truth["nodes"]
    source = TableSource(tables, platforms={n: v["platform"] for n, v in truth["nodes"].items()})
    d = diagnose(source, Request(node=node)).diagnosis
    assert d.isolated_component == "Fabric Manager / NVIDIA driver"
    link = next(f.component for f in d.findings if f.severity is Severity.DOWN and f.ref.kind is ComponentKind.NVLINK)
    t = RulesDrafter().draft(d, component=link)
    assert t.component == link and t.warnings[0].startswith(
        f"the analysis blames Fabric Manager / NVIDIA driver (fabric software, no part), not {link}: ")
    assert "all 144 NVLinks on all 8 GPUs are inactive at once" in t.warnings[0]
    assert ticket_markdown(t).split("## Warnings\n\n- ", 1)[1].startswith("the analysis blames Fabric Manager")
    assert not any("blames" in w for w in RulesDrafter().draft(d).warnings)
