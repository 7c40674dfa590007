"""The link a ticket's link row names: never a counter's or a kind's id (`xid`, `nvswitch`, `gpu`, `pcie`, `rack`).

A finding read from an event or a unit carries its rule's counter or its kind as its link id. The row names the
link instead: the one the input names (`nvlink-4`, the link an Xid line gives), the GPU link the analysis saw on the
failing switch port, a GPU's PCIe link; or it says no single link is known, and why (an Xid names its GPU, an SXid
its switch port, a switch or a tray is many links, a GPU off the bus has none to read).
"""

from __future__ import annotations

from ..enums import ComponentKind, FaultKind, LinkType
from ..model import Diagnosis
from .candidates import Candidate

_MANY = {FaultKind.NVSWITCH: "an NVSwitch", FaultKind.SWITCH_TRAY: "a switch tray", FaultKind.CARTRIDGE:
         "a cable cartridge", FaultKind.COMPUTE_TRAY: "a compute tray", FaultKind.FANOUT: "the NVLink domain",
         FaultKind.RACK_INCIDENT: "the rack", FaultKind.GPU_NVLINKS: "the GPU's module",
         FaultKind.NVSWITCH_SHARED: "every NVSwitch of the node (what they share)",
         FaultKind.NVLINK_SHARED: "the node's NVLink mesh (what every GPU's links share)"}
_PCIE = (FaultKind.PCIE_REPLAYS, FaultKind.PCIE_DOWNTRAIN)
_SHOWN = 3  # GPU links named in the row; more are counted


def link_named(diagnosis: Diagnosis, candidate: Candidate) -> str | None:
    """What the link row says where the input's link id names no link; None where it does (or where an NVLink
    fault's link is unread: the row then says which command finds it)."""
    c = candidate
    if any(ch.isdigit() for ch in c.link_id or "") or (
            c.link is None and c.fault in (FaultKind.NVLINK, FaultKind.NVLINK_AGGREGATE)):
        return None
    own = set(c.findings)
    gpu_links = [f.component for f in diagnosis.findings if f.component in own and f.link is not None
                 and f.link_type is LinkType.NVLINK and f.ref.kind is ComponentKind.NVLINK]
    if c.link is not None and c.fault is FaultKind.NVLINK:  # the link an Xid line names (`on link 5`)
        if len(gpu_links) == 1:
            return gpu_links[0]
        if c.kind is ComponentKind.GPU:  # the GPU as the input names it (`Compute tray 1 GPU 0`), and the line's link
            return f"{c.component} NVLink {c.link}"
        tray = f"Compute tray {c.tray} " if c.tray else ""
        return f"{tray}GPU {c.gpu} NVLink {c.link}" if c.gpu is not None else f"NVLink {c.link}"
    if c.fault in (FaultKind.SWITCH_PORT, FaultKind.NVSWITCH_FATAL):
        if gpu_links:
            return "; ".join(gpu_links)
        where = f" ({c.switch} port {c.switch_port})" if c.switch and c.switch_port is not None else ""
        return f"not named: the input names the switch port{where}, not the GPU link that lands on it"
    if c.fault is FaultKind.GPU_OFF_BUS:
        return "none: the GPU fell off the bus, so no one link is at fault; its PCIe link and the GPU are the suspects"
    if c.fault in _PCIE:
        return f"GPU {c.gpu}'s PCIe link" if c.gpu is not None else "the GPU's PCIe link"
    failing = (f"; its failing links: {', '.join(gpu_links[:_SHOWN])}"
               + (f" and {len(gpu_links) - _SHOWN} more" if len(gpu_links) > _SHOWN else "")) if gpu_links else ""
    if c.link_id == "xid":
        gpu = f"GPU {c.gpu}" if c.gpu is not None else "the GPU"
        return f"none named: the Xid names {gpu}, not one of its links{failing}"
    if c.fault is FaultKind.FABRIC_MANAGER:
        return f"none: the fabric software is the suspect, no part and no one link ({len(gpu_links)} links with it)" \
            if gpu_links else "none: the fabric software is the suspect, no part and no one link"
    return f"none: {_MANY.get(c.fault, f'the {c.fault.value}')} is the suspect, not one link{failing}"
