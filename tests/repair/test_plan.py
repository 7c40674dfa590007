"""The repair catalog walked over every platform and fault kind: what a technician would be told, checked as a
reviewer would check it (parts that exist, captures first, no reset that cannot work, nothing left unfilled)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from diagnostics.config.parts import parts
from diagnostics.config.platforms import all_platforms
from diagnostics.config.repair_catalog import load_catalog
from diagnostics.enums import FaultKind, PortSource, ResetScope
from diagnostics.errors import ConfigError
from diagnostics.repair import PlanFacts, RepairPlan, repair_plan
from diagnostics.topology import platform_graph

PLATFORMS: list[str | None] = [*sorted(all_platforms()), None]
# A rack's host names its rack's parts, and its fabric is NMX's (on a switch tray), not a Fabric Manager of its own.
RACK_OF: dict[str, str] = {n: str(d["rack"]) for n, d in all_platforms().items() if d.get("rack")}
NVSWITCH_FAULTS = (FaultKind.NVSWITCH, FaultKind.NVSWITCH_FATAL, FaultKind.NVSWITCH_SHARED)
XID_FAULTS = (FaultKind.NVLINK, FaultKind.NVLINK_AGGREGATE, FaultKind.GPU_NVLINKS, FaultKind.NVSWITCH,
              FaultKind.NVSWITCH_FATAL, FaultKind.GPU_OFF_BUS, FaultKind.FABRIC_MANAGER)
# A step that switches a link or port off, or takes it out of the fabric: fabricbot never says to do that.
DISABLES = re.compile(r"\b(disabl|isolat|shut ?down|turn(ed)? off)\w*\b[^.;]*\b(link|port)s?\b", re.IGNORECASE)
GPU_RESET = re.compile(r"nvidia-smi\s+(-r\b|--gpu-reset)")
TOUCHES = re.compile(r"nvidia-smi\s+(-r\b|--gpu-reset)|reboot|systemctl restart|dcgmi diag|scontrol|kubectl|power")


def _facts(platform: str | None, fault: FaultKind) -> PlanFacts:
    """What the analysis would localize: the link's true far end on the platform, where it has one."""
    if fault is FaultKind.NVSWITCH_SHARED:  # every switch at once: no one switch is named
        return PlanFacts(node_id="gpu-node-7", unit="all NVSwitches (shared by every GPU)")
    if fault is FaultKind.NVLINK_SHARED:  # most GPUs' links at once, no switch: no one GPU is named
        return PlanFacts(node_id="gpu-node-7", unit="the NVLink mesh (every GPU's NVLinks)")
    if fault in NVSWITCH_FAULTS:
        return PlanFacts(node_id="gpu-node-7", switch="NVSwitch 1")
    if fault is FaultKind.FABRIC_MANAGER:
        return PlanFacts(node_id="gpu-node-7")
    if fault in (FaultKind.NVLINK, FaultKind.NVLINK_AGGREGATE):
        link = 1 if fault is FaultKind.NVLINK else None
        peer, switch, port, source = "NVSwitch 0", "NVSwitch 0", None, PortSource.UNKNOWN
        if platform is not None and link is not None:
            info = platform_graph(platform).port_of(2, link, "nvlink")
            peer, switch, port, source = info.peer, info.switch, info.switch_port, info.source
        return PlanFacts(node_id="gpu-node-7", gpu=2, link=link, peer=peer, switch=switch, switch_port=port,
                         port_source=source)
    return PlanFacts(node_id="gpu-node-7", gpu=2, lanes=[6] if fault is FaultKind.PCIE_REPLAYS else [])


def _texts(plan: RepairPlan) -> list[str]:
    out = [plan.action, *plan.warnings, plan.part_note or ""]
    out += [t for c in plan.captures for t in (c.command, c.why)]
    out += [t for s in [*plan.isolation, *plan.repair] for t in (s.text, s.command or "")]
    return out


def _unfilled(plan: RepairPlan) -> list[str]:
    return [t for t in _texts(plan) if "?" in t or "{" in t or "}" in t]


CASES = [(p, f) for p in PLATFORMS for f in FaultKind]
NODE_HARDWARE_FAULTS = (FaultKind.NVLINK, FaultKind.NVLINK_AGGREGATE, FaultKind.GPU_NVLINKS, *NVSWITCH_FAULTS,
                        FaultKind.GPU_OFF_BUS, FaultKind.PCIE_REPLAYS, FaultKind.PCIE_DOWNTRAIN)


@pytest.mark.parametrize(("platform", "fault"), CASES, ids=[f"{p or 'no-platform'}-{f.value}" for p, f in CASES])
def test_every_platform_and_fault_kind_gets_a_plan_an_engineer_would_sign(platform: str | None,
                                                                          fault: FaultKind) -> None:
    for facts in (_facts(platform, fault), PlanFacts()):  # with the localization's facts, and with none at all
        plan = repair_plan(platform, fault, facts)
        assert not _unfilled(plan), _unfilled(plan)
        assert plan.action and "\n" not in plan.action
        captures = [c.command for c in plan.captures]
        steps = [*plan.isolation, *plan.repair]
        # the part exists on that platform, or the plan says why there is none
        if plan.part is not None:
            assert plan.part.platform in ((platform, RACK_OF.get(platform)) if platform else ("unknown",))
            assert plan.part in parts()
        else:
            assert plan.part_note
        if platform is None:
            assert any("platform unknown" in w for w in plan.warnings)
            if fault in NODE_HARDWARE_FAULTS:  # never null: what the link implies, its candidates and the read
                assert plan.part is not None and len(plan.part.candidates) >= 1
                assert plan.part.decided_by == 'nvidia-smi -q | grep -i "product name"'
                assert not [t for t in _texts(plan) if plan.part.fru in t]  # a choice, never a step's object
        if not plan.applies:
            assert plan.action.startswith("Input contradicts platform")
            assert any("contradicts" in w for w in plan.warnings) and plan.reset.scope is ResetScope.NONE
            assert "nvidia-smi topo -m" in captures
        # captures come before anything is touched: none of them resets, reboots, loads or drains
        assert captures and not [c for c in captures if TOUCHES.search(c)]
        # ... and fit the fault kind and the platform
        if platform == "pcie-8gpu":
            assert not [c for c in captures if "nvlink" in c]
        if fault in XID_FAULTS:
            assert any("journalctl -k" in c or "dmesg" in c for c in captures), captures
        if plan.applies and fault in (*NVSWITCH_FAULTS, FaultKind.FABRIC_MANAGER) and platform in RACK_OF:
            assert "nv show cluster apps" in captures  # NMX-Controller's state, on the switch tray that runs it
            assert not [c for c in plan.commands() if "fabricmanager" in c]
        elif plan.applies and fault in (*NVSWITCH_FAULTS, FaultKind.FABRIC_MANAGER):
            # the GPUs' fabric state where the driver reports it (Hopper and newer), else the links' state
            assert ("nvidia-smi -q -d FABRIC" in captures) == (platform != "dgx-a100-8gpu"), captures
            assert "nvidia-smi nvlink -s" in captures
            assert any("/var/log/fabricmanager.log" in c for c in captures)
            if platform == "hgx-b200-8gpu":
                assert any("nvlsm.log" in c for c in captures)
        if plan.applies and fault is FaultKind.FABRIC_MANAGER and platform not in RACK_OF:
            assert "nv-fabricmanager --version" in plan.commands()
        assert not [c for c in plan.commands() if re.search(r"nvidia-smi -q\s*\|\s*grep -i version", c)]
        if fault is FaultKind.PCIE_DOWNTRAIN:
            assert "sudo lspci -vvv" in captures  # before any reboot: the reboot retrains the link
        # isolation is a drain (or excluding the GPU), never a link or a port; dcgmi diag only after the drain
        assert not [s.text for s in steps if DISABLES.search(s.text)]
        assert not [s.text for s in plan.isolation if "dcgmi" in s.text or "port" in s.text]
        if plan.applies:
            assert "drain" in plan.isolation[0].text.lower()
            assert any(s.command == "dcgmi diag -r 3" for s in plan.repair) or fault is FaultKind.FABRIC_MANAGER
            # a node's drain names the scheduler's command for it, whichever fault drains it
            if facts.node_id is not None and platform not in RACK_OF:
                node_drains = [s.text for s in plan.isolation if s.text.startswith(f"Drain node {facts.node_id}")]
                assert all(f"scontrol update nodename={facts.node_id} " in t for t in node_drains), node_drains
        # the reset the platform allows
        if fault is FaultKind.GPU_OFF_BUS:
            assert plan.reset.scope is ResetScope.NODE
            assert not [t for t in _texts(plan) if GPU_RESET.search(t)]
            restart = "restart the compute tray" if platform in RACK_OF else "restart the machine"
            assert restart in plan.repair[0].text.lower()
        if plan.reset.scope in (ResetScope.GPU, ResetScope.NVLINK_PEERS):
            assert plan.reset.command == "nvidia-smi -r -i " + ",".join(map(str, plan.reset.gpus))
            assert plan.reset.command in [s.command for s in plan.repair]
        if plan.reset.scope is ResetScope.NVLINK_PEERS or (platform == "dgx1-v100-8gpu" and facts.gpu is not None
                                                            and plan.reset.scope is ResetScope.GPU):
            graph = platform_graph("dgx1-v100-8gpu")
            peers = {int(v.split()[1]) for _, v, _, _ in graph.gpu_edges(2, "nvlink")}
            assert plan.reset.scope is ResetScope.NVLINK_PEERS and {2, *peers} <= set(plan.reset.gpus)
        # the repairs run in the ladder's order, with the swap test and the escalation of a repeat
        # (what every link shares has no GPU ladder: the versions, logs and a cold power cycle come before the board)
        if plan.applies and plan.part is not None and fault not in (*NVSWITCH_FAULTS, FaultKind.NVLINK_SHARED):
            texts = [s.text.lower() for s in plan.repair]
            reseat = next((i for i, t in enumerate(texts) if "reseat" in t), None)
            if platform in RACK_OF:  # a rack's trays blind-mate to the spine: reseat the tray, then replace a unit
                replace = next(i for i, t in enumerate(texts) if "replace" in t)
                assert reseat is not None and reseat <= replace, texts
            else:
                replace = next(i for i, t in enumerate(texts) if t.startswith("replace"))
                assert reseat is not None and reseat < replace
                # the swap test; on an SXM board moving a module between sockets is the vendor's field service's
                # (an unknown board whose link lands on an NVSwitch is one)
                switched = platform is None and (facts.peer or "").startswith("NVSwitch")
                if (platform is not None and load_catalog().platform[platform].sxm) or switched:
                    assert any("follow" in t and "socket" in t and "field service" in t for t in texts), texts
                else:
                    assert any("follow" in t and "slot" in t for t in texts), texts
            assert any("within days" in t for t in texts)
        # on an SXM board a module moves to another socket only by the vendor's field service, whatever the fault
        if platform is not None and platform not in RACK_OF and load_catalog().platform[platform].sxm:
            moves = [t for t in _texts(plan) if "module" in t and re.search(r"\bmove[sd]?\b", t)]
            assert all("field service" in t for t in moves), moves


@pytest.mark.parametrize("platform", ["dgx1-v100-8gpu", "pcie-8gpu", "h100-nvl-8gpu"])
@pytest.mark.parametrize("fault", [*NVSWITCH_FAULTS, FaultKind.FABRIC_MANAGER])
def test_a_switch_fault_on_a_board_without_switches_contradicts_the_platform(platform: str, fault: FaultKind) -> None:
    plan = repair_plan(platform, fault, _facts(platform, fault))
    assert not plan.applies and plan.part is None
    assert "has no NVSwitch" in plan.action or "runs no Fabric Manager" in plan.action


def test_no_nvlink_action_on_boards_without_that_link() -> None:
    plan = repair_plan("pcie-8gpu", FaultKind.NVLINK, PlanFacts(node_id="n", gpu=2, peer="GPU 3", link=1))
    assert not plan.applies and "has no NVLink" in plan.action
    for platform in ("hgx-b200-8gpu", "h100-nvl-8gpu"):
        plan = repair_plan(platform, FaultKind.NVLINK, _facts(platform, FaultKind.NVLINK))
        words = " ".join(_texts(plan)).lower()
        assert "ribbon" not in words and "interposer" not in words and "mezzanine" not in words
        assert plan.part is not None and plan.part.platform == platform


def test_a_gpu_pair_on_an_nvswitch_board_contradicts_it_and_names_the_switch_path() -> None:
    port = platform_graph("hgx-h100-8gpu").port_of(2, 1, "nvlink")
    plan = repair_plan("hgx-h100-8gpu", FaultKind.NVLINK, PlanFacts(node_id="n", gpu=2, peer="GPU 3", link=1))
    assert plan.action.startswith("Input contradicts hgx-h100-8gpu")
    assert f"{port.switch} port {port.switch_port}" in plan.action and "not to GPU 3" in plan.action
    assert any("every GPU NVLink lands on an NVSwitch" in w for w in plan.warnings)
    assert any("assumed" in w and f"port {port.switch_port}" in w for w in plan.warnings)
    words = " ".join(_texts(plan)).lower()
    assert "ribbon" not in words and "slot 2-3" not in words
    assert not [s for s in plan.repair if "GPU 3" in s.text]  # the steps follow the real path, not the input's


def test_a_v100_link_between_gpus_the_mesh_does_not_join_contradicts_it() -> None:
    peers = {int(v.split()[1]) for _, v, _, _ in platform_graph("dgx1-v100-8gpu").gpu_edges(2, "nvlink")}
    stranger = next(g for g in range(8) if g != 2 and g not in peers)
    plan = repair_plan("dgx1-v100-8gpu", FaultKind.NVLINK, PlanFacts(node_id="n", gpu=2, peer=f"GPU {stranger}",
                                                                      link=1))
    assert plan.action.startswith("Input contradicts dgx1-v100-8gpu") and f"GPU {stranger}" in plan.action
    joined = repair_plan("dgx1-v100-8gpu", FaultKind.NVLINK, PlanFacts(node_id="n", gpu=2, peer=f"GPU {min(peers)}",
                                                                        link=1))
    assert not joined.warnings and f"GPU {min(peers)}" in joined.action
    assert joined.reset.scope is ResetScope.NVLINK_PEERS and joined.reset.gpus == list(range(8))


def test_the_no_platform_direct_link_keeps_the_products_canonical_action() -> None:
    plan = repair_plan(None, FaultKind.NVLINK, PlanFacts(node_id="hpc-gpu-node-12", gpu=2, peer="GPU 3", link=1,
                                                         stated_pair=True))
    assert plan.action == "Reseat high-speed mezzanine interconnect or replace interposer ribbon cable on slot 2-3"
    # the seed's wording only where the seed's form asks for it: a pair no snapshot stated gets the identify-first one
    read = repair_plan(None, FaultKind.NVLINK, PlanFacts(node_id="n", gpu=2, peer="GPU 3", link=1))
    assert "ribbon" not in read.action and read.action.startswith("Platform unknown")
    assert any("nvidia-smi topo -m" in w for w in plan.warnings)
    assert [c.command for c in plan.captures][:2] == ['nvidia-smi -q | grep -i "product name"', "nvidia-smi topo -m"]
    # a link whose far end is a switch, or is not known, is not what that wording is for
    for peer in ("NVSwitch 1", None):
        other = repair_plan(None, FaultKind.NVLINK, PlanFacts(node_id="n", gpu=2, peer=peer, link=1))
        assert "ribbon" not in other.action and other.action.startswith("Platform unknown")
        assert "nvidia-smi topo -m" in other.action


@pytest.mark.parametrize(("peer", "part", "frus"), [
    ("GPU 3", "unknown-nvlink-carrier", ["NVLink bridge", "GPU baseboard"]),
    (None, "unknown-nvlink-carrier", ["NVLink bridge", "GPU baseboard"]),
    ("NVSwitch 1", "unknown-sxm-module", ["SXM GPU module of that system"])])
def test_an_unknown_boards_nvlink_names_the_part_the_link_implies(peer: str | None, part: str,
                                                                  frus: list[str]) -> None:
    """A GPU-to-GPU NVLink: the NVLink bridge on PCIe cards or the baseboard on an SXM board, then the GPU; a switch
    link: the GPU's SXM module (never a PCIe card: every NVSwitch board carries SXM modules), then the baseboard, as
    every known NVSwitch board orders them (the costliest part last); with the product name as the read that
    decides."""
    plan = repair_plan(None, FaultKind.NVLINK, PlanFacts(node_id="n", gpu=2, peer=peer, link=1))
    assert plan.part is not None and plan.part.id == part and [c.fru for c in plan.part.candidates] == frus
    assert plan.part.decided_by == 'nvidia-smi -q | grep -i "product name"' and plan.part_note is None
    then = "unknown-gpu-baseboard" if peer == "NVSwitch 1" else "unknown-gpu"
    assert plan.next_part is not None and plan.next_part.id == then
    if peer == "NVSwitch 1":  # an SXM board's link: no bridge to reseat, and its module moved by field service
        assert not [s.text for s in plan.repair if "bridge on" in s.text]
        assert any("field service" in s.text and "reseat" in s.text for s in plan.repair)


def test_assumed_and_unknown_ports_are_warnings_never_steps() -> None:
    facts = PlanFacts(node_id="n", gpu=2, link=1, peer="NVSwitch 1", switch="NVSwitch 1", switch_port=17,
                      port_source=PortSource.ASSUMED)
    plan = repair_plan("hgx-h100-8gpu", FaultKind.NVLINK, facts)
    assert any("port 17 is assumed" in w and "nvidia-smi nvlink -R -i 2" in w for w in plan.warnings)
    assert not [s for s in [*plan.isolation, *plan.repair] if "port 17" in s.text]
    observed = repair_plan("hgx-h100-8gpu", FaultKind.NVLINK, facts.model_copy(
        update={"port_source": PortSource.OBSERVED}))
    assert not observed.warnings
    unknown = repair_plan("hgx-h100-8gpu", FaultKind.NVLINK, facts.model_copy(update={"switch_port": None}))
    assert any("port is not known" in w for w in unknown.warnings)


def test_an_assumed_pcie_switch_port_is_a_warning_that_says_how_to_read_it() -> None:
    """A PCIe link's switch port from the template was put in the ticket's table as assumed, but no warning said it,
    as one does of an NVLink's; `nvidia-smi nvlink -R` does not read a PCIe port, so the warning names what does."""
    facts = PlanFacts(node_id="n", gpu=0, switch="PCIe switch 0", switch_port=1, port_source=PortSource.ASSUMED)
    plan = repair_plan("hgx-h100-8gpu", FaultKind.PCIE_REPLAYS, facts)
    said = [w for w in plan.warnings if "port 1 is assumed" in w]
    assert said and "nvidia-smi -q -i 0 -d PCI" in said[0] and "lspci -tv" in said[0] and "nvlink" not in said[0]
    observed = repair_plan("hgx-h100-8gpu", FaultKind.PCIE_REPLAYS, facts.model_copy(
        update={"port_source": PortSource.OBSERVED}))
    assert not [w for w in observed.warnings if "assumed" in w]


def test_pre_ampere_resets_name_every_nvlink_peer_and_ampere_needs_fabric_manager() -> None:
    v100 = repair_plan("dgx1-v100-8gpu", FaultKind.GPU_NVLINKS, PlanFacts(node_id="n", gpu=5))
    assert v100.reset.command == "nvidia-smi -r -i 0,1,2,3,4,5,6,7"
    assert "peer" in v100.repair[0].text.lower()
    a100 = repair_plan("dgx-a100-8gpu", FaultKind.NVLINK, PlanFacts(node_id="n", gpu=3, link=0, peer="NVSwitch 0"))
    assert a100.reset.command == "nvidia-smi -r -i 3" and "nvidia-fabricmanager must be running" in a100.repair[0].text


def _catalog_file(tmp_path: Any, text: str) -> Any:
    path = tmp_path / f"mine-{len(list(tmp_path.iterdir()))}.toml"
    path.write_text(text)
    return path


def test_a_user_catalog_merges_key_by_key_and_a_bad_one_names_the_file_and_the_entry(tmp_path: Any) -> None:
    mine = _catalog_file(tmp_path, '[status]\nhealthy = "All quiet"\n\n[fault.pcie-replays]\n'
                                   'capture = ["gpu-query", "lspci"]\n')
    cat = load_catalog(mine)
    assert cat.status.healthy == "All quiet" and cat.status.warning.startswith("Keep monitoring")
    plan = repair_plan("pcie-8gpu", FaultKind.PCIE_REPLAYS, PlanFacts(gpu=1), catalog=cat)
    assert [c.command for c in plan.captures] == ["nvidia-smi -q -i 1", "sudo lspci -vvv"]
    bad = {
        '[platform.hgx-h100-8gpu.fault.nvlink]\npart = "ribbon-cable"\n':
            r"mine-\d\.toml: platform\.hgx-h100-8gpu\.fault\.nvlink: part 'ribbon-cable' is not in the parts catalog",
        '[platform.hgx-b200-8gpu.fault.nvlink]\npart = "dgx-a100-baseboard"\n': r"belongs to platform 'dgx-a100-8gpu'",
        '[step.diag]\ntext = "Run dcgmi diag on {nodeid}"\n':
            r"mine-\d\.toml: step\.diag\.text: unknown placeholder \{nodeid\}",
        '[fault.nvlink]\ncapture = ["nvlink-errors", "nvlink-counters"]\n':
            r"fault\.nvlink\.capture names 'nvlink-counters'",
        '[platform.pcie-8gpu.fault.gpu-off-bus]\napplies = false\n': r"applies = false needs a `why`",
        '[platform.pcie-8gpu]\ngpu_reset = "whole-board"\n': r"platform\.pcie-8gpu\.gpu_reset: Input should be",
    }
    for text, message in bad.items():
        with pytest.raises(ConfigError, match=message):
            load_catalog(_catalog_file(tmp_path, text))


def test_what_a_step_says_of_the_board_is_the_catalog_s_to_edit(tmp_path: Any) -> None:
    """How a GPU's module is reseated and where its NVLinks reach are the catalog's words, by the board's kind: a
    site's own service guide wording reaches the reseat step, and a word that names another fact is refused."""
    facts = PlanFacts(node_id="n", gpu=2)  # a GPU's NVLink totals: which link is not read
    steps = " ".join(s.text for s in repair_plan("hgx-h100-8gpu", FaultKind.NVLINK_AGGREGATE, facts).repair)
    assert "reach the NVSwitches through the" in steps and "torque sequence" in steps
    mine = _catalog_file(tmp_path, '[board.module_reseat]\nsxm = "follow service guide SG-42, section 7"\n'
                                   '[board.nvlinks_reach]\nnvswitch = "the {board} carries its NVLinks"\n')
    cat = load_catalog(mine)
    ours = " ".join(s.text for s in repair_plan("hgx-h100-8gpu", FaultKind.NVLINK_AGGREGATE, facts,
                                                catalog=cat).repair)
    assert "follow service guide SG-42, section 7" in ours and "torque sequence" not in ours
    board = cat.platform["hgx-h100-8gpu"].board
    assert f"the {board} carries its NVLinks" in ours
    nvl = " ".join(s.text for s in repair_plan("h100-nvl-8gpu", FaultKind.GPU_NVLINKS, facts, catalog=cat).repair)
    assert "SG-42" not in nvl and "bridges off first" in nvl  # a bridged card is no SXM module
    with pytest.raises(ConfigError, match=r"board\.module_reseat\.sxm: a board's words may name only \{board\}, "
                                          r"not \{gpu\}"):
        load_catalog(_catalog_file(tmp_path, '[board.module_reseat]\nsxm = "reseat GPU {gpu}"\n'))
    with pytest.raises(ConfigError, match=r"board\.module_reseat"):
        load_catalog(_catalog_file(tmp_path, '[board.module_reseat]\noam = "an OAM module"\n'))


def test_the_catalog_agrees_with_the_platform_files() -> None:
    cat = load_catalog()
    for name, data in all_platforms().items():
        entry = cat.platform[name]
        assert (entry.nvlink == "none") == (int(data.get("nvlinks_per_gpu", 0)) == 0), name
        if name in RACK_OF:  # a rack's compute tray links to its switch trays; no host runs Fabric Manager
            assert entry.rack and (entry.nvlink == "nvswitch") == (data["tray_kind"] == "compute"), name
            assert not entry.fabric and cat.platform[RACK_OF[name]].rack, name
        else:
            assert (entry.nvlink == "nvswitch") == ("nvswitch" in data), name
            assert (entry.nvlink == "bridge") == (data.get("nvlink", {}).get("kind") == "bridge"), name
            assert ("fabric-manager" in entry.fabric) == ("nvswitch" in data), name
        assert set(entry.fault) == set(FaultKind), name


def test_the_one_line_action_resets_what_the_platform_allows() -> None:
    """The Diagnosis' one-line action (the Slack summary) says the same reset the ticket's steps do."""
    v100 = repair_plan("dgx1-v100-8gpu", "gpu-nvlinks", {"gpu": 4, "node_id": "n"})
    assert "reset GPUs 0, 1, 2, 3, 4, 5, 6, 7 together" in v100.action and v100.reset.gpus == list(range(8))
    h100 = repair_plan("hgx-h100-8gpu", "gpu-nvlinks", {"gpu": 4, "node_id": "n"})
    assert "reset GPU 4," in h100.action and h100.reset.gpus == [4]


# What stops every GPU of a node, read from the words a technician is given, not from the catalog's marks.
STOPS_NODE = re.compile(r"\breboot|\brestart (the )?(machine|node|fabric manager)|\bpower[- ](the node )?(down|cycle)|"
                        r"\breseat|\bswap|dcgmi diag -r 3|\bmove (one card|gpu \d+|the gpu) ", re.IGNORECASE)
OFFERS_EXCLUSION = re.compile(r"\bexclud\w* (the affected )?GPU", re.IGNORECASE)


@pytest.mark.parametrize(("platform", "fault"), CASES, ids=[f"{p or 'no-platform'}-{f.value}" for p, f in CASES])
def test_isolation_matches_the_reset_scope(platform: str | None, fault: FaultKind) -> None:
    """A plan that reboots, powers off, reseats or loads the whole node isolates by the node's drain alone: excluding
    one GPU would leave the other GPUs' jobs to be killed by the repair."""
    for facts in (_facts(platform, fault), PlanFacts()):
        plan = repair_plan(platform, fault, facts)
        stops = [s.text for s in plan.repair if STOPS_NODE.search(s.text) or STOPS_NODE.search(s.command or "")]
        assert plan.stops_node or not stops, stops  # every step that stops the node is known to
        if plan.stops_node:
            offered = [t for t in (plan.action, *(s.text for s in plan.isolation)) if OFFERS_EXCLUSION.search(t)]
            assert not offered, offered
            if plan.applies:
                assert "drain" in plan.isolation[0].text.lower()


def test_the_pcie_replay_plan_that_reboots_drains_the_node_and_offers_no_exclusion() -> None:
    """node-02's ticket: 'Drain ... or, if the job can run on fewer GPUs, exclude GPU 2', then 'Reboot the node'."""
    for platform in ("hgx-h100-8gpu", "pcie-8gpu", None):
        plan = repair_plan(platform, FaultKind.PCIE_REPLAYS, PlanFacts(node_id="node-02", gpu=2))
        assert plan.reset.scope is ResetScope.NODE and plan.stops_node
        assert plan.repair[0].text.startswith("Reboot the node")
        assert len(plan.isolation) == 1 and "exclude" not in plan.isolation[0].text
        assert "stops every GPU of the node" in plan.isolation[0].text
        assert plan.action.startswith("Drain node node-02; capture") and "exclude" not in plan.action
        down = repair_plan(platform, FaultKind.PCIE_DOWNTRAIN, PlanFacts(node_id="node-04", gpu=2))
        assert "power the node down" in down.repair[0].text and "exclude" not in down.isolation[0].text


def test_a_plan_that_stops_one_gpu_alone_still_offers_excluding_it(tmp_path: Any) -> None:
    """A user's plan whose only step is the single-GPU reset: the node's other GPUs keep their jobs."""
    mine = _catalog_file(tmp_path, '[fault.nvlink]\nrepair = ["reset", "repeat"]\n')
    plan = repair_plan("hgx-h100-8gpu", FaultKind.NVLINK, PlanFacts(node_id="n", gpu=2, link=1),
                       catalog=load_catalog(mine))
    assert plan.reset.stops == "gpu" and not plan.stops_node
    assert "exclude GPU 2 from new jobs" in plan.isolation[0].text


def test_a_drafted_step_that_excludes_one_gpu_from_a_node_wide_repair_is_sent_back() -> None:
    from diagnostics.tickets.reasoning import plan_commands, plan_problems

    plan = repair_plan("hgx-h100-8gpu", FaultKind.PCIE_REPLAYS, PlanFacts(node_id="node-02", gpu=2))
    allowed = plan_commands(plan)
    bad = plan_problems("Exclude GPU 2 from new jobs, then reboot the node", plan, allowed)
    assert any("the only isolation is the node's drain" in p for p in bad)
    assert not plan_problems(plan.isolation[0].text, plan, allowed)


def test_ampere_reads_its_fabric_in_the_fabric_managers_log_and_the_links_not_a_fabric_state() -> None:
    """DGX A100 was told to wait for `nvidia-smi -q -d FABRIC` to read State Completed: nvmlDeviceGetGpuFabricInfo
    is for Hopper and newer."""
    for fault in (*NVSWITCH_FAULTS, FaultKind.FABRIC_MANAGER):
        a100 = repair_plan("dgx-a100-8gpu", fault, PlanFacts(node_id="dgx-03"))
        assert not [t for t in _texts(a100) if "-d FABRIC" in t or "State Completed" in t], fault
        assert "nvidia-smi nvlink -s" in [c.command for c in a100.captures]
        assert "/var/log/fabricmanager.log" in " ".join(c.command for c in a100.captures)
        h100 = repair_plan("hgx-h100-8gpu", fault, PlanFacts(node_id="h100-03"))
        assert "nvidia-smi -q -d FABRIC" in [c.command for c in h100.captures]
    fm = repair_plan("dgx-a100-8gpu", FaultKind.FABRIC_MANAGER, PlanFacts(node_id="dgx-03"))
    restart = next(s.text for s in fm.repair if s.text.startswith("Restart the Fabric Manager"))
    assert "every NVSwitch is configured" in restart and "nvlink -s" in fm.action


RESEATS = re.compile(r"\breseat\b", re.IGNORECASE)


@pytest.mark.parametrize(("platform", "fault"), CASES, ids=[f"{p or 'no-platform'}-{f.value}" for p, f in CASES])
def test_a_reseat_is_done_powered_off_and_stops_what_it_powers_off(platform: str | None, fault: FaultKind) -> None:
    """A module, card, bridge, riser or tray is never reseated live: the step says the power is off and stops at
    least the node (so the isolation drains it); an SXM module is reseated as its vendor's guide says."""
    plan = repair_plan(platform, fault, _facts(platform, fault))
    for step in plan.repair:
        if not RESEATS.search(step.text) or re.search(r"(within days of|after) (a|the) reseat|do not reseat|nothing "
                                                      r"to reseat", step.text):
            continue  # a step that only mentions a reseat
        assert step.stops in ("node", "rack"), step.text
        if step.stops == "rack":
            continue  # a switch tray or cartridge: worked on with the whole rack drained first (test_rack_plans)
        assert re.search(r"powered off|power \S+( \S+){0,3} off|while it is down|drained", step.text,
                         re.IGNORECASE), step.text
        if "SXM" in step.text and "swap" not in step.text:
            assert "service guide" in step.text, step.text
    if plan.stops_node:
        assert "exclude GPU" not in plan.isolation[0].text


@pytest.mark.parametrize("platform", [p for p in PLATFORMS if p is not None])
def test_a_reseat_or_swap_names_only_what_the_board_has_and_is_done_powered_off(platform: str) -> None:
    """A DGX-1's NVLinks reach peer GPUs, not NVSwitches; an H100 NVL card is no SXM module; and every module or
    card moved by hand is moved with the node powered off (a step written for HGX boards was said on every board)."""
    entry = load_catalog().platform[platform]
    if entry.rack:
        return
    for fault in (FaultKind.NVLINK, FaultKind.NVLINK_AGGREGATE, FaultKind.GPU_NVLINKS, FaultKind.PCIE_REPLAYS):
        plan = repair_plan(platform, fault, _facts(platform, fault))
        if not plan.applies:
            continue
        for step in plan.repair:
            text = step.text
            if entry.nvlink != "nvswitch":
                assert "NVSwitch" not in text, (fault, text)
            if not entry.sxm:
                assert "SXM" not in text, (fault, text)
            does = re.search(r"\b(reseat|swap|move)\b", text) and not re.search(r"skip the reseat|field service", text)
            if does:
                assert "powered off" in text, (fault, text)


def test_a_swap_test_on_a_board_not_known_says_who_moves_an_sxm_module() -> None:
    """With no platform named, the board may be an SXM baseboard (a DGX-1's GPUs reach their peers directly): the swap
    step said "swap the GPU" as if every GPU were a card a site pulls."""
    for fault in (FaultKind.NVLINK, FaultKind.GPU_NVLINKS):
        plan = repair_plan(None, fault, PlanFacts(node_id="n", gpu=2, link=1, peer="GPU 3"))
        (swap,) = [s.text for s in plan.repair if "swap GPU 2 with a healthy GPU" in s.text]
        assert "on an SXM baseboard" in swap and "server vendor's field service" in swap
