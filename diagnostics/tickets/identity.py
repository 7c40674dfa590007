"""The physical identity of a suspected component, from the node inventory, or `unknown` and where to read it."""

from __future__ import annotations

from collections.abc import Mapping

from ..model import GpuId
from ..topology import Inventory
from ..topology.inventory import FOUND_BY
from .history import Hardware
from .ticket import NO_FABRIC_MANAGER, NO_SWITCH_FABRIC_MANAGER, UNKNOWN, Identity

# Ticket field -> (inventory record, inventory field).
_FIELDS: dict[str, tuple[str, str]] = {
    "slot_label": ("gpu", "slot"),
    "gpu_serial": ("gpu", "serial"),
    "gpu_uuid": ("gpu", "uuid"),
    "pci_bus_id": ("gpu", "pci_bus_id"),
    "node_serial": ("node", "node_serial"),
    "rack": ("node", "rack_location"),
    "driver_version": ("node", "driver_version"),
    "vbios_version": ("node", "vbios_version"),
    "fabric_manager_version": ("node", "fabric_manager_version"),
}


def gpu_at(inventory: Inventory | None, node_id: str, gpu: int | None, bus: str | None) -> int | None:
    """The GPU's index: as named, else the one the inventory lists at the PCI address a log named it by alone."""
    if gpu is not None or not bus or inventory is None:
        return gpu
    return inventory.node(node_id).gpu(pci_bus_id=bus).index


def identity_for(inventory: Inventory | None, node_id: str, gpu: int | None,
                 reads: Mapping[int, GpuId] | None = None, *, rack: bool = False, rack_id: str | None = None,
                 bus: str | None = None, bus_reads: Mapping[str, GpuId] | None = None,
                 fabric_manager: bool | None = None, switch_bus: str | None = None) -> Identity:
    """Fill what the inventory knows, then the GPU's serial, UUID, bus address and driver as the node's readings
    named them (`reads`, by index), its PCI address where a log named the GPU by it alone (`bus`: the inventory's GPU
    at that address, and its index's readings, as though named by index; else what the readings say of the GPU at
    that address, `bus_reads`), and the rack the diagnosis places the node in (`rack_id`); every other field reads
    `unknown`, with where to read it in `where`. `rack`: a rack or a rack's host, which runs no Fabric Manager, so no
    Fabric Manager version is asked for; nor where the platform runs none (`fabric_manager` False: its platform
    entry in the repair catalog names no Fabric Manager, a board without NVSwitch). None: not known, so asked.
    `switch_bus`: an NVSwitch's PCI address as its log lines give it, for a switch's ticket."""
    node = (inventory or Inventory()).node(node_id)
    gpu = gpu_at(inventory, node_id, gpu, bus)
    record = {"node": node, "gpu": node.gpu(gpu, bus) if gpu is not None or bus else None}
    read = (reads or {}).get(gpu) if gpu is not None else (bus_reads or {}).get(bus.lower()) if bus else None
    seen = {"serial": read.serial, "uuid": read.uuid, "pci_bus_id": read.pci_bus_id,
            "driver_version": read.driver_version} if read is not None else {}
    drivers = {r.driver_version for r in [*(reads or {}).values(), *(bus_reads or {}).values()] if r.driver_version}
    if not seen.get("driver_version") and len(drivers) == 1:  # the node's one driver, for a part of no GPU's (a
        seen["driver_version"] = drivers.pop()  # switch, the fabric software) or a GPU read without it
    if bus or switch_bus:
        seen["pci_bus_id"] = bus or switch_bus
    if rack_id:
        seen["rack_location"] = rack_id
    values: dict[str, str] = {}
    where: dict[str, str] = {}
    for name, (kind, field) in _FIELDS.items():
        if name == "fabric_manager_version" and (rack or fabric_manager is False):
            values[name] = NO_FABRIC_MANAGER if rack else NO_SWITCH_FABRIC_MANAGER
            continue
        source = record[kind]
        raw = getattr(source, field) if source is not None else None
        if raw in (None, ""):
            raw = seen.get(field)
        if raw not in (None, ""):
            values[name] = str(raw)
        elif source is not None:
            hint = FOUND_BY[field]
            who = f"GPU {gpu}" if gpu is not None else f"the GPU at PCI {bus}" if bus else None
            where[name] = f"{hint} ({who})" if kind == "gpu" and who else hint
    return Identity(**values, where=where)


def hardware_of(identity: Identity) -> Hardware | None:
    """The GPU a ticket's history follows: its serial, else its UUID; None when neither is known."""
    serial = identity.gpu_serial if identity.gpu_serial != UNKNOWN else None
    uuid = identity.gpu_uuid if identity.gpu_uuid != UNKNOWN else None
    return Hardware(serial=serial, uuid=uuid) if serial or uuid else None
