"""Node records from inventory files: `nodes.csv` (node_id,platform, as `fabricbot synth` writes it) and the
inventory CSV, TOML or JSON that diagnostics/topology/inventory.py reads, with a `platform` column or key.

The store keeps each node's platform (and serial, rack, driver, VBIOS and Fabric Manager versions and, for a rack's
host, its tray's slot where given) from them, so an analysis of a stored node knows its topology instead of
guessing a generic one, a rack's hosts are weighed together, and a storm of alerts can name the version its nodes
share.
"""

from __future__ import annotations

import csv
import io
import json
import tomllib
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from ..config.platforms import all_platforms, platform_name
from ..errors import InputError
from ..ingest.base import Source
from ..topology.inventory import _ALIASES, load_inventory

NODES_FILE = "nodes.csv"
NODE_COLUMNS = ("node_id", "platform", "node_serial", "rack_location", "tray", "role", "state", "state_reason",
                "state_since", "driver_version", "vbios_version", "fabric_manager_version")
VERSIONS = ("driver_version", "vbios_version", "fabric_manager_version")  # what a storm may share (alerts.toml)
_OWN = {"node_serial", "rack_location", "tray", "role", "slot", "serial", "state"}  # fields no telemetry table has
# The scheduler's word for the node, why it says so and since when (Slurm: `sinfo -R` REASON and TIMESTAMP;
# Kubernetes: the cordon's taint or annotation). A drain for planned work puts the node in maintenance; a drain
# for a fault does not (store/maintenance.py).
_SCHEDULER = {"state": "state", "node_state": "state", "reason": "state_reason", "state_reason": "state_reason",
              "drain_reason": "state_reason", "since": "state_since", "state_since": "state_since",
              "reason_time": "state_since"}


def _name(column: str) -> str | None:
    key = column.strip().lower().replace(" ", "_").replace("-", "_")
    return key if key == "platform" else _SCHEDULER.get(key) or _ALIASES.get(key)


def _is_inventory_header(columns: list[str]) -> bool:
    names = [_name(c) for c in columns]
    return "node_id" in names and None not in names and bool({"platform", *_OWN} & set(names))


def _mapping(data: Any) -> bool:
    if not isinstance(data, dict) or "fabric_errors" in data:
        return False
    names = {_name(str(k)) for k in data}
    return bool({"platform", *_OWN} & names) or "gpus" in data or "gpu" in data


def read_node_file(source: Source, *, node_id: str | None = None) -> pd.DataFrame | None:
    """The node records of an inventory file (NODE_COLUMNS), or None when the source is not one."""
    if source.path is None:
        return None
    path = source.path
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".toml", ".json"):
        return None
    text = path.read_text(encoding="utf-8", errors="replace")
    if suffix == ".csv":
        rows = csv.reader(io.StringIO(text))
        header = next(rows, [])
        if path.name != NODES_FILE and not _is_inventory_header(header):
            return None
        names = [_name(c) for c in header]
        if "node_id" not in names:
            raise InputError("a nodes file needs a node_id column (node_id,platform)", source=source.name,
                             value=",".join(header[:8]))
        at = names.index("node_id")
        lines: dict[str, int] = {}  # node -> the line of its last row, the one read
        for row in rows:
            if any(v.strip() for v in row) and (len(row) <= at or not row[at].strip()):
                raise InputError("this row names no node: its node_id is empty", source=source.name,
                                 line=rows.line_num, value=",".join(row)[:80])
            if len(row) > at:
                lines[row[at].strip()] = rows.line_num
        return _records(path, _column_csv(path, "platform"), node_id,
                        {c: _column_csv(path, c) for c in ("state", "state_reason", "state_since")}, lines)
    try:
        data = tomllib.loads(text) if suffix == ".toml" else json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError):
        return None
    if not _mapping(data):
        return None
    platform = next((v for k, v in data.items() if _name(str(k)) == "platform"), None)
    named = next((v for k, v in data.items() if _name(str(k)) == "node_id"), None) or node_id
    if not named:
        raise InputError("the inventory names no node (add node_id, or pass --node)", source=source.name)
    scheduler = {c: {str(named): v for k, v in data.items() if _name(str(k)) == c and v}
                 for c in ("state", "state_reason", "state_since")}
    return _records(path, {str(named): platform}, str(named), scheduler)


def _column_csv(path: Path, column: str) -> dict[str, Any]:
    """node -> the CSV's value of `column` (its last row for the node); {} without the column."""
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    frame = frame.apply(lambda values: values.str.strip())  # `n1, hgx-h100-8gpu`: spaces a hand-edited file holds
    renamed = frame.rename(columns={c: _name(c) or c for c in frame.columns})
    if column not in renamed.columns:
        return {}
    rows = renamed[["node_id", column]].drop_duplicates("node_id", keep="last")
    return dict(zip(rows["node_id"], rows[column], strict=True))


def _records(path: Path, platforms: dict[str, Any], node_id: str | None,
             scheduler: dict[str, dict[str, Any]] | None = None, lines: dict[str, int] | None = None) -> pd.DataFrame:
    """One row per node: its platform (checked against the known platforms), serial, rack and scheduler state
    (with its reason and time, where the file gives them)."""
    scheduler = scheduler or {}

    def said(column: str, name: str) -> str | None:
        value = str(scheduler.get(column, {}).get(name) or "").strip() or None
        if column == "state_since" and value is not None:
            try:
                datetime.fromisoformat(value)
            except ValueError:
                raise InputError(f"node {name}: the state's time {value!r} is not ISO 8601 (2026-03-01T10:00:00)",
                                 source=str(path), field="since", value=value) from None
        return value
    inventory = load_inventory(path)
    known = all_platforms()
    rows = []
    for name in sorted(set(platforms) | {n for n in inventory.nodes if n}):
        node = inventory.node(name)
        platform = platform_name(str(platforms[name])) if platforms.get(name) else None
        if platform is not None and platform not in known:
            raise InputError(f"unknown platform for node {name} (known: {', '.join(sorted(known))})",
                             source=str(path), line=(lines or {}).get(name), field="platform", value=str(platform))
        rows.append({"node_id": name, "platform": platform, "node_serial": node.node_serial,
                     "rack_location": node.rack_location, "tray": node.tray, "role": node.role,
                     **{c: said(c, name) for c in ("state", "state_reason", "state_since")},
                     **{c: getattr(node, c) for c in VERSIONS}})
    if not rows and node_id:
        node = inventory.node(None)
        rows.append({"node_id": node_id, "platform": None, "node_serial": node.node_serial,
                     "rack_location": node.rack_location, "tray": node.tray, "role": node.role, "state": None,
                     "state_reason": None, "state_since": None, **{c: getattr(node, c) for c in VERSIONS}})
    return pd.DataFrame(rows, columns=list(NODE_COLUMNS))


def inventory_gpus(path: Path, node_id: str | None = None) -> pd.DataFrame:
    """The GPU identities an inventory file gives (index, PCI address, serial, UUID) as GPU table rows: the serial a
    part's history follows, for the GPUs no telemetry names."""
    inventory = load_inventory(path)
    rows = [{"node_id": name or node_id, "gpu": gpu.index, "pci_bus_id": gpu.pci_bus_id, "serial": gpu.serial,
             "uuid": gpu.uuid, "source": "inventory"}
            for name, node in inventory.nodes.items() for gpu in node.gpus
            if gpu.index is not None and (name or node_id) and (gpu.serial or gpu.uuid)]
    return pd.DataFrame(rows)

