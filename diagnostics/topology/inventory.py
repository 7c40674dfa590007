"""Physical identity: which baseboard slot, serial and UUID a GPU index is, and the node's versions.

The nvidia-smi index is not the label a technician sees, so tickets quote the inventory. Without it they say
what is unknown and which command (or `nvidia-smi -q` field) gives it. Formats: a per-node TOML or JSON file,
or one CSV for a fleet (one row per GPU; node columns repeat).
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..errors import InputError
from ..ingest.textlines import normalize_bus_id

UNKNOWN = "unknown"

# Where each value comes from when the inventory lacks it.
FOUND_BY: dict[str, str] = {
    "slot": "nvidia-smi -q: 'Module ID' (HGX) or 'Platform Info > Slot Number'",
    "serial": "nvidia-smi -q: 'Serial Number'",
    "uuid": "nvidia-smi -q: 'GPU UUID'",
    "pci_bus_id": "nvidia-smi -q: 'PCI > Bus Id'",
    "node_serial": "dmidecode -s system-serial-number",
    "rack_location": "the site's asset inventory",
    "tray": "the rack inventory: the slot of the host's compute or switch tray in its rack",
    "role": "the rack inventory: what else the host runs for its rack (nmx-controller: NMX-Controller runs there)",
    "driver_version": "nvidia-smi -q: 'Driver Version'",
    "vbios_version": "nvidia-smi -q: 'VBIOS Version'",
    "fabric_manager_version": "nv-fabricmanager --version",
}

# CSV / file column aliases -> field names.
_ALIASES: dict[str, str] = {
    "node_id": "node_id", "node": "node_id", "hostname": "node_id", "host": "node_id",
    "gpu": "index", "gpu_index": "index", "index": "index",
    "bus_id": "pci_bus_id", "pci": "pci_bus_id", "pci_bus_id": "pci_bus_id",
    "slot": "slot", "slot_label": "slot", "baseboard_slot": "slot", "module_id": "slot",
    "serial": "serial", "gpu_serial": "serial", "uuid": "uuid", "gpu_uuid": "uuid",
    "node_serial": "node_serial", "system_serial": "node_serial", "rack": "rack_location",
    "rack_location": "rack_location", "location": "rack_location",
    "tray": "tray", "tray_slot": "tray", "tray_index": "tray", "role": "role",
    "driver": "driver_version", "driver_version": "driver_version",
    "vbios": "vbios_version", "vbios_version": "vbios_version",
    "fabric_manager": "fabric_manager_version", "fabric_manager_version": "fabric_manager_version",
    "fm_version": "fabric_manager_version",
}
_NODE_FIELDS = ("node_serial", "rack_location", "driver_version", "vbios_version", "fabric_manager_version")
_RACK_FIELDS = ("tray", "role")  # a rack's host: its tray's slot in the rack `rack_location` names, its role
_GPU_FIELDS = ("index", "pci_bus_id", "slot", "serial", "uuid")


def _norm_bus(value: str) -> str:
    """`00000000:18:00.0`, `0000:18:00.0` and `18:00.0` name the same device; anything else is kept as written."""
    return normalize_bus_id(value) or value.strip().lower()


class _Known(BaseModel):
    """A record whose missing values read `unknown (where to find it)`."""

    model_config = ConfigDict(frozen=True)

    def value(self, name: str) -> str:
        raw = getattr(self, name)
        return str(raw) if raw not in (None, "") else f"{UNKNOWN} ({FOUND_BY[name]})"


class GpuIdentity(_Known):
    index: int | None = None
    pci_bus_id: str | None = None
    slot: str | None = None
    serial: str | None = None
    uuid: str | None = None

    @field_validator("pci_bus_id")
    @classmethod
    def _bus(cls, value: str | None) -> str | None:
        return _norm_bus(value) if value else value


class NodeInventory(_Known):
    node_id: str | None = None
    node_serial: str | None = None
    rack_location: str | None = None
    tray: str | None = None
    role: str | None = None
    driver_version: str | None = None
    vbios_version: str | None = None
    fabric_manager_version: str | None = None
    gpus: list[GpuIdentity] = Field(default_factory=list)

    def gpu(self, index: int | None = None, pci_bus_id: str | None = None) -> GpuIdentity:
        """The GPU by nvidia-smi index or PCI bus id; an all-unknown identity when the inventory lacks it."""
        bus = _norm_bus(pci_bus_id) if pci_bus_id else None
        for gpu in self.gpus:
            if (index is not None and gpu.index == index) or (bus and gpu.pci_bus_id == bus):
                return gpu
        return GpuIdentity(index=index, pci_bus_id=bus)



class Inventory(BaseModel):
    """One node's inventory, or a fleet's, by node id."""

    model_config = ConfigDict(frozen=True)

    nodes: dict[str, NodeInventory] = Field(default_factory=dict)
    source: str | None = None

    def node(self, node_id: str | None = None) -> NodeInventory:
        if node_id is None and len(self.nodes) == 1:
            return next(iter(self.nodes.values()))
        return self.nodes.get(node_id or "", NodeInventory(node_id=node_id))


def _clean(record: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in record.items():
        name = _ALIASES.get(str(key).strip().lower().replace(" ", "_").replace("-", "_"))
        if name is None or value is None or isinstance(value, list | dict) or value == "":
            continue
        if isinstance(value, float) and value != value:
            continue
        out[name] = int(value) if name == "index" else str(value).strip()
    return out


def _from_mapping(data: dict[str, Any], source: str) -> Inventory:
    node = {k: v for k, v in _clean(data).items() if k in ("node_id", *_NODE_FIELDS, *_RACK_FIELDS)}
    gpus = [_clean(g) for g in data.get("gpu", data.get("gpus", []))]
    try:
        inv = NodeInventory(**node, gpus=[GpuIdentity(**g) for g in gpus])
    except ValidationError as exc:
        raise InputError(f"not a valid inventory: {exc.errors()[0]['msg']}", source=source) from None
    return Inventory(nodes={inv.node_id or "": inv}, source=source)


def _from_csv(path: Path) -> Inventory:
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as exc:
        raise InputError(f"not a readable inventory CSV: {exc}", source=str(path)) from None
    nodes: dict[str, dict[str, Any]] = {}
    gpus: dict[str, list[GpuIdentity]] = {}
    for line, record in enumerate(frame.to_dict("records"), start=2):
        try:
            row = _clean({str(k): v for k, v in record.items()})
            gpu = GpuIdentity(**{k: v for k, v in row.items() if k in _GPU_FIELDS})
        except (ValueError, ValidationError) as exc:
            raise InputError(f"bad inventory row: {exc}", source=str(path), line=line) from None
        node_id = row.get("node_id", "")
        fields = nodes.setdefault(node_id, {"node_id": node_id or None})
        for name in (*_NODE_FIELDS, *_RACK_FIELDS):
            if name in row:
                fields.setdefault(name, row[name])
        if any(v is not None for v in gpu.model_dump().values()):
            gpus.setdefault(node_id, []).append(gpu)
    return Inventory(nodes={k: NodeInventory(**v, gpus=gpus.get(k, [])) for k, v in nodes.items()},
                     source=str(path))


def load_inventory(path: str | Path) -> Inventory:
    """A per-node inventory (TOML or JSON) or a fleet CSV."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("inventory file not found", source=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the inventory: {exc}", source=str(path)) from None
    suffix = p.suffix.lower()
    if suffix == ".csv":
        return _from_csv(p)
    try:
        data = json.loads(text) if suffix == ".json" else tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InputError(f"not a valid inventory file: {exc}", source=str(path)) from None
    if not isinstance(data, dict):
        raise InputError("an inventory file holds one object", source=str(path))
    return _from_mapping(data, str(path))
