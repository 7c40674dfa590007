"""Who each GPU of a node is: its board serial and UUID (and its bus address and driver), from whichever readings
name them.

`nvidia-smi -q` gives both by index (the gpus table); dcgm-exporter and `nvidia-smi nvlink` give the UUID on each
link row; the driver's kernel lines give the UUID and serial by PCI address (the events), placed on an index by the
node's GPU table (address or UUID). The GPU table is the newest word (the store keeps each index's latest row), then
the newest event, then the newest link row. A part's history follows the serial, else the UUID: the index is only
where the GPU sits today.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pandas as pd

from ..components import switch_name
from ..enums import EventKind
from ..model import GpuId

_SOURCES = {"gpus": "the GPU table (nvidia-smi -q, dcgm-exporter labels)", "events": "the kernel log",
            "link_samples": "the link readings"}


def _rows(tables: Mapping[str, pd.DataFrame], node: str) -> Iterator[tuple[str, pd.DataFrame]]:
    """Each table's distinct rows of `node` that name a GPU, newest first: (table, frame of gpu, bus (lower case, to
    match), uuid, serial, the bus as printed, driver)."""
    columns = {"gpus": ("gpu", "pci_bus_id", "uuid", "serial"),
               "events": ("gpu", "pci_bus_id", "gpu_uuid", "gpu_serial"),
               "link_samples": ("gpu", None, "gpu_uuid", None)}
    for name, (gpu, bus, uuid, serial) in columns.items():
        frame = tables.get(name)
        if frame is None or not len(frame) or "node_id" not in frame.columns or uuid not in frame.columns:
            continue
        named = frame[uuid].notna()
        for other in (serial, "pci_bus_id" if name == "gpus" else None):  # the GPU table's address names it too
            if other is not None and other in frame.columns:
                named |= frame[other].notna()
        if name == "events" and "driver_version" in frame.columns and "kind" in frame.columns:  # a GPU's Xid
            named |= frame["driver_version"].notna() & (frame["kind"].astype("string") == EventKind.XID.value) \
                .fillna(False)  # carries its driver's banner (an AER's bus is a bridge's, an SXid's a switch's)
        mine = frame[(frame["node_id"] == node).to_numpy(bool, na_value=False) & named.to_numpy(bool, na_value=False)]
        if not len(mine):
            continue
        if name == "events" and "timestamp" in mine.columns:  # few rows; link rows come in time order already
            mine = mine.sort_values("timestamp", kind="stable", na_position="first")
        picked = pd.DataFrame({
            "gpu": mine[gpu] if gpu in mine.columns else pd.NA,
            "bus": mine[bus].astype("string").str.lower() if bus and bus in mine.columns else pd.NA,
            "uuid": mine[uuid], "serial": mine[serial] if serial and serial in mine.columns else pd.NA,
            "printed": mine[bus].astype("string") if bus and bus in mine.columns else pd.NA,
            "driver": mine["driver_version"] if "driver_version" in mine.columns else pd.NA})
        yield name, picked.drop_duplicates(keep="last").iloc[::-1]  # newest first


def gpu_identities(tables: Mapping[str, pd.DataFrame], node: str) -> tuple[dict[int, GpuId], dict[str, GpuId]]:
    """Each GPU index's serial, UUID, bus address and driver as the node's readings name them (empty when none
    does); and the GPUs they name by PCI address alone, which nothing places on an index (a kernel log's identity
    line and Xid of one bus), by address."""
    found: dict[int | str, dict[str, str]] = {}
    by_bus: dict[str, int] = {}
    by_uuid: dict[str, int] = {}
    for name, rows in _rows(tables, node):
        for gpu, bus, uuid, serial, printed, driver in rows.itertuples(index=False):
            index = None if pd.isna(gpu) else int(gpu)
            if index is None and not pd.isna(bus):
                index = by_bus.get(str(bus))
            if index is None and not pd.isna(uuid):
                index = by_uuid.get(str(uuid))
            if index is None and pd.isna(bus):
                continue
            if index is not None and not pd.isna(bus):
                by_bus.setdefault(str(bus), index)
            if index is not None and not pd.isna(uuid):
                by_uuid.setdefault(str(uuid), index)
            known = found.setdefault(index if index is not None else str(bus), {})
            for key, value in (("uuid", uuid), ("serial", serial), ("pci_bus_id", printed),
                               ("driver_version", driver)):
                if not pd.isna(value) and key not in known:
                    known[key] = str(value)
                    known.setdefault(f"{key}_from", _SOURCES[name])
    placed: dict[int, GpuId] = {}
    alone: dict[str, GpuId] = {}
    for where, known in found.items():
        said = dict.fromkeys(v for k, v in known.items() if k.endswith("_from"))
        gpu = GpuId(serial=known.get("serial"), uuid=known.get("uuid"), pci_bus_id=known.get("pci_bus_id"),
                    driver_version=known.get("driver_version"), read_from=", ".join(said))
        if isinstance(where, int):
            placed[where] = gpu
        elif where not in by_bus:  # a bus an index took later in the scan is that GPU's
            alone[where] = gpu
    return dict(sorted(placed.items())), dict(sorted(alone.items()))


def switch_buses(tables: Mapping[str, pd.DataFrame], node: str) -> dict[str, str]:
    """Each NVSwitch of the node an event names beside its PCI address (a kernel SXid line: `nvidia-nvswitch3: SXid
    (PCI:0000:86:00.0)`; Fabric Manager's log names it by the address alone), by name ("NVSwitch 3"): the address a
    ticket gives for the switch. The newest line's address wins."""
    events = tables.get("events")
    if events is None or not len(events) or not {"node_id", "nvswitch", "pci_bus_id"} <= set(events.columns):
        return {}
    mine = events[(events["node_id"] == node).to_numpy(bool, na_value=False)
                  & events["nvswitch"].notna().to_numpy(bool) & events["pci_bus_id"].notna().to_numpy(bool)]
    if "timestamp" in mine.columns:
        mine = mine.sort_values("timestamp", kind="stable", na_position="first")
    return {switch_name(s): str(b) for s, b in zip(mine["nvswitch"].tolist(), mine["pci_bus_id"].tolist(),
                                                   strict=True)}
