"""The Diagnosis' one-line repair action, from the repair catalog (see plan.py for the whole plan).

`localization_action` is the call the analysis makes for a localized fault; `repair_action` keeps the older call by
component class (healthy, warning, nvlink, pcie, down, gpu, nvswitch, fabric-software) working on top of it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..config.repair_catalog import load_catalog
from ..config.repair_text import known
from ..config.thresholds import GPU_LOST_RULES, SXID_FATAL_RULE, XID_NVLINK_RULE
from ..enums import ComponentKind, FaultKind, LinkType, Severity
from ..errors import ConfigError
from ..model import ComponentFacts, Finding, Localization, RackPlace
from .plan import repair_plan
from .plan_model import PlanFacts, RepairPlan

# The old component classes, where the class alone says the fault kind.
_CLASS_FAULT = {
    "nvlink": FaultKind.NVLINK, "nvswitch": FaultKind.NVSWITCH, "fabric-software": FaultKind.FABRIC_MANAGER,
    "pcie": FaultKind.PCIE_REPLAYS, "gpu": FaultKind.GPU_NVLINKS,
}
DEFAULT_FAULT = {
    ComponentKind.NVLINK: FaultKind.NVLINK, ComponentKind.NVSWITCH: FaultKind.NVSWITCH,
    ComponentKind.GPU: FaultKind.GPU_NVLINKS, ComponentKind.PCIE: FaultKind.PCIE_REPLAYS,
    ComponentKind.FABRIC_SOFTWARE: FaultKind.FABRIC_MANAGER,
}


def status_action(status: str, path: Path | None = None) -> str:
    """The action of a node with nothing to repair: 'healthy' or 'warning'."""
    cat = load_catalog(path)
    if status not in ("healthy", "warning"):
        raise ConfigError(f"{cat.source}: no status {status!r} (healthy or warning)")
    text: str = getattr(cat.status, status)
    return text


def silent_action(node_id: str, since: str, repair: str, path: Path | None = None) -> str:
    """The action of a node gone silent (its newest link reading at `since`) on a fault whose action is `repair`:
    why it stopped reporting is found first, by checks that only read, since its state now is not known."""
    text: str = load_catalog(path).status.silent
    return text.format(node=node_id, since=since, repair=repair)


def fault_of(loc: Localization) -> FaultKind:
    """The localization's fault kind; one from its component kind when the analysis did not set it."""
    return loc.fault or DEFAULT_FAULT[loc.kind]


def place_facts(rack: RackPlace | None, job_id: str | None) -> dict[str, Any]:
    """What a plan needs of the rack and the job beyond the component: every compute tray (what a step on a
    shared unit stops), the job, where NMX-Controller runs."""
    out: dict[str, Any] = {"jobs": [job_id] if job_id else []}
    if rack is not None:
        out.update(rack_hosts=rack.compute_hosts(), nmx=rack.nmx, rack_id=rack.rack_id)
    return out


def localization_plan(loc: Localization, *, platform: str | None, node_id: str | None,
                      rack: RackPlace | None = None, job_id: str | None = None,
                      stated_pair: bool = False) -> RepairPlan:
    """The whole plan for the analysis's localized fault (what it stops, its steps, its one-line action)."""
    facts = PlanFacts(node_id=node_id, link_down=loc.severity is Severity.DOWN, unit=loc.component, bus=loc.ref.bus,
                      stated_pair=stated_pair, **loc.model_dump(include=set(ComponentFacts.model_fields)),
                      **place_facts(rack, job_id))
    return repair_plan(platform, fault_of(loc), facts)


def localization_action(loc: Localization, *, platform: str | None, node_id: str | None,
                        rack: RackPlace | None = None, job_id: str | None = None, stated_pair: bool = False) -> str:
    """The one-line action for the analysis's localized fault: what Diagnosis.repair_action should say."""
    return localization_plan(loc, platform=platform, node_id=node_id, rack=rack, job_id=job_id,
                             stated_pair=stated_pair).action


def finding_fault(finding: Finding) -> FaultKind:
    """The fault kind of one unhealthy link on its own (no common cause weighed)."""
    rules = {c.rule for c in finding.crossed}
    if rules & set(GPU_LOST_RULES):  # an Xid 79, or every series of the GPU silent: the GPU is gone, whatever link
        return FaultKind.GPU_OFF_BUS  # type the finding was filed under (the analysis localizes both so)
    if finding.link_type is LinkType.PCIE:
        return FaultKind.PCIE_DOWNTRAIN if rules & {"pcie_width", "pcie_gen_under_load"} else FaultKind.PCIE_REPLAYS
    if SXID_FATAL_RULE in rules:  # a switch link a fatal SXid stopped: it comes back with the node's restart, as
        return FaultKind.NVSWITCH_FATAL  # the switch port's own plan says, not with its GPU's reset
    if finding.link_type is LinkType.NVSWITCH:  # a rack's switch port counting its own errors is one link's port,
        rack_port = finding.ref.switch_tray is not None and finding.ref.port is not None  # not its whole chip
        return FaultKind.SWITCH_PORT if rack_port else FaultKind.NVSWITCH
    if finding.link is not None or XID_NVLINK_RULE in rules:  # an Xid without a link number: a link to find
        return FaultKind.NVLINK
    return FaultKind.NVLINK_AGGREGATE


def xid_fatal(finding: Finding) -> bool | None:
    """Whether an NVLink Xid that is all the finding knows is fatal as the Xid catalog decodes it (an Xid 145 whose
    line names no status is not); None where the finding rests on anything else."""
    rules = {c.rule for c in finding.crossed}
    if rules != {XID_NVLINK_RULE}:
        return None
    return any(c.fatal for c in finding.crossed)


def repair_action(component: str, *, platform: str | None = None, path: Path | None = None,
                  fault: FaultKind | str | None = None, **fields: Any) -> str:
    """The action for a component class (the older call), or for `fault` when given.

    fields: node_id, gpu (or gpu_src), gpu_dst, peer, link, switch, switch_port. A class 'down' is a link that is
    down: an NVLink (it has a peer GPU) or the GPU's PCIe link, which leaves the GPU off the bus.
    """
    if component in ("healthy", "warning") and fault is None:
        return status_action(component, path)
    values = known(fields)
    if fault is not None:
        kind = FaultKind(fault)
    elif component == "down":
        kind = FaultKind.NVLINK if "gpu_dst" in values or values.get("peer", "").startswith("GPU") \
            else FaultKind.GPU_OFF_BUS
    elif component in _CLASS_FAULT:
        kind = _CLASS_FAULT[component]
    else:
        raise ConfigError(f"no repair action for component class {component!r}; classes: healthy, warning, down, "
                          + ", ".join(_CLASS_FAULT))
    peer = values.get("peer") or (f"GPU {values['gpu_dst']}" if "gpu_dst" in values else None)
    gpu = values.get("gpu", values.get("gpu_src"))
    facts = PlanFacts(node_id=values.get("node_id"), gpu=int(gpu) if gpu is not None else None, peer=peer,
                      link=int(values["link"]) if "link" in values else None, switch=values.get("switch"),
                      switch_port=int(values["switch_port"]) if "switch_port" in values else None,
                      link_down=component == "down", stated_pair="gpu_dst" in values)
    return repair_plan(platform, kind, facts, catalog=load_catalog(path)).action
