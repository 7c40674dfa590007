"""The values a repair plan's texts are filled with: the localization's facts, the platform's board and notes,
what a step on a rack's shared unit stops, and how the platform's fabric is read (the GPUs' fabric state on Hopper
and newer, else Fabric Manager's log and the links' state)."""

from __future__ import annotations

from ..components import is_switch
from ..config.racks import RackSpec, rack_of, rack_spec, tray_kind
from ..config.repair_catalog import BoardKind, Catalog, PlatformEntry
from ..config.repair_text import known
from ..enums import FaultKind
from ..errors import ConfigError
from .plan_model import PlanFacts

# How a plan reads the fabric: the GPUs' fabric state where the driver reports it (Hopper and newer), else Fabric
# Manager's log and the links' state (Ampere: nvmlDeviceGetGpuFabricInfo is for Hopper and newer).
_FABRIC_READS = {
    True: {"fabric_read": "nvidia-smi -q -d FABRIC",
           "fabric_done": "`nvidia-smi -q -d FABRIC` to read State Completed on every GPU"},
    False: {"fabric_read": "nvidia-smi nvlink -s",
            "fabric_done": "the Fabric Manager log to say every NVSwitch is configured and `nvidia-smi nvlink -s` to "
                           "show every link up (this driver reports no GPU fabric state: that is Hopper and newer)"},
}



def platform_rack(platform: str | None) -> RackSpec | None:
    """The rack file of a rack platform or of a rack's host."""
    try:
        return rack_of(platform) or (rack_spec(platform) if platform else None)
    except ConfigError:
        return None


def _ports_said(spec: RackSpec | None) -> str:
    """What the rack file says of where each GPU link lands: a port map it states, one it assumes, or none."""
    if spec is None:
        return "no rack file gives its ports"
    if spec.map_assumed:
        return "the rack file's ports are assumed"
    return "to check against the rack file's port map"


def _rack_values(spec: RackSpec | None, rack: str, facts: PlanFacts) -> dict[str, str]:
    """What a step on a shared unit stops, said in full: every compute tray of the rack (`rack`: `rack R1`, or `the
    rack` where none names it) and of the other rack of its NVLink domain, the jobs on them; and where NMX-Controller
    runs, when the inventory says."""
    hosts, jobs = facts.rack_hosts, facts.jobs
    trays = (f"all {len(hosts)} compute trays of {rack} ({hosts[0]} to {hosts[-1]})" if len(hosts) > 1 else
             f"every compute tray of {rack}")
    if spec is not None and spec.racks_per_domain > 1:  # the inventory pairs no racks: say how to find the other
        others = "the other racks" if spec.racks_per_domain > 2 else "the other rack"
        trays += (f" and of {others} of its NVLink domain, whose compute trays are drained with them (those whose GPUs "
                  "read this rack's ClusterUUID in `nvidia-smi -q -d FABRIC`: one NVLink domain, one cluster UUID)")
    said = (f"job {jobs[0]}" if len(jobs) == 1 else f"jobs {', '.join(jobs)}" if jobs else "every job on them")
    out = {"rack_stops": f"{trays}, and {said}", "rack_ports": _ports_said(spec)}
    if hosts:
        out["rack_hosts_csv"] = ",".join(hosts)
        if spec is not None and spec.racks_per_domain > 1:  # a command of this rack's trays alone drains half
            whose = "the other racks'" if spec.racks_per_domain > 2 else "the other rack's"
            out["rack_hosts_csv"] += f",<{whose} compute trays>"  # to fill in before the command is run
    if facts.jobs:
        out["jobs"] = ", ".join(jobs)
    if facts.nmx:
        out["nmx"] = facts.nmx
    return out


def _board_words(cat: Catalog, plat: PlatformEntry | None, switched: bool) -> dict[str, str]:
    """What the steps say of the board, by its kinds (the catalog's [board]): a reseat step says what the board has
    (a DGX-1's links reach peer GPUs, not NVSwitches; an H100 NVL card is no SXM module). Of a node of no known
    platform only this is known: a link that lands on an NVSwitch makes it an SXM baseboard, whose modules are moved
    and fitted by the vendor (the notes)."""
    if plat is None:
        said = cat.board.said(["sxm"]) if switched else {}
        return {k: v for k, v in said.items() if k in SXM_NOTES}
    kinds: list[BoardKind] = [plat.nvlink] if plat.nvlink != "none" else []
    if plat.sxm:
        kinds.append("sxm")
    return {name: text.replace("{board}", plat.board) for name, text in cat.board.said(kinds).items()}


SXM_NOTES = ("swap_note", "sxm_note")


def _alike_reset_note(cat: Catalog, boards: list[str]) -> str | None:
    """With no platform: the reset's caveat of every board the topology fits alike where each resets a GPU alone
    (their own note, where they share one), else the unknown board's (a pre-Ampere board resets NVLink peers)."""
    entries = [cat.platform.get(b) for b in boards]
    if not entries or any(e is None or e.gpu_reset != "single" for e in entries):
        return cat.unknown.reset_note
    notes = {e.reset_note for e in entries if e is not None}
    return notes.pop() if len(notes) == 1 else None


def plan_values(cat: Catalog, platform: str | None, plat: PlatformEntry | None, rack: RackSpec | None,
                fault: FaultKind, facts: PlanFacts) -> dict[str, str]:
    """Every value a plan's texts may name, from the localization's facts and the platform's entry; a fact not
    known is left out, so a text that needs it is rephrased or dropped (repair_text.fill)."""
    values = known({
        "node_id": facts.node_id, "gpu": facts.gpu, "peer": facts.peer, "link": facts.link,
        "switch": facts.switch, "switch_port": facts.switch_port, "lanes": facts.lanes,
        "platform": platform, "board": plat.board if plat else cat.unknown.board,
        "reset_note": plat.reset_note if plat else _alike_reset_note(cat, facts.boards),
        "fm_note": plat.fm_note if plat else None,
        "tray": facts.tray, "switch_tray": facts.switch_tray, "cartridge": facts.cartridge,
        "hosts": ", ".join(facts.hosts) or None, "hosts_csv": ",".join(facts.hosts) or None,
        "compute_trays": (f"compute tray{'s' if len(facts.hosts) > 1 else ''} {', '.join(facts.hosts)}"
                          if facts.hosts else None),
        "switch_host": facts.switch_host, "unit": facts.unit,
        "bus": facts.bus if facts.gpu is None else None,
    })
    if fault is FaultKind.NVLINK and facts.link is None and (facts.gpu is not None or facts.bus):
        values["find_link"] = f"nvidia-smi nvlink -e -i {values.get('gpu') or facts.bus}"
    if plat is not None and plat.rack:
        # a rack's own answer is named by it; a tray's rack only by the inventory (a tray's name is no rack's)
        named = facts.rack_id or (None if tray_kind(platform) else values.get("node_id"))
        if named:
            values["rack"] = named
        values.update(_rack_values(rack, f"rack {named}" if named else "the rack", facts))
    values.setdefault("rack_stops", "every compute tray of the rack, and every job on them")
    values.setdefault("rack_ports", _ports_said(None))
    if facts.recovery:
        values["recovery"] = facts.recovery
    switched = plat is None and (is_switch(facts.peer or "") or is_switch(facts.switch or ""))
    values.update(_board_words(cat, plat, switched))
    values.update(_FABRIC_READS[plat is None or plat.fabric_info])
    values["node"] = f"node {values['node_id']}" if "node_id" in values else "the node"
    if "node_id" in values:  # one wording of a node's drain for every step that gives the scheduler's commands
        values["drain_commands"] = (f"Slurm: `scontrol update nodename={values['node_id']} state=drain reason=fabric`;"
                                    f" Kubernetes: `kubectl drain {values['node_id']}`")
    return values
