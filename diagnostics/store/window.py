"""What a store's window read returns: the tables one window needs, its end, and what the read touched."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

import pandas as pd

from ..config.racks import rack_of
from ..model import RackSlot
from .maintenance import Maintenance
from .parts import ScanStats


@dataclass
class StoreWindow:
    """The tables one window needs, the window's end, and what reading them touched."""

    tables: dict[str, pd.DataFrame]
    end: datetime | None
    span: timedelta
    stats: ScanStats
    newest: dict[str, datetime]  # each asked node's newest link reading in the store (at any time)
    undated: dict[str, int] = field(default_factory=dict)  # per asked node, link readings without a time
    maintenance: dict[str, list[Maintenance]] = field(default_factory=dict)  # per asked node, its planned work
    said: dict[str, list[str]] = field(default_factory=dict)  # per node, what reading its files said at ingest
    later: dict[str, datetime] = field(default_factory=dict)  # nodes with only events, newer than the end: the newest
    oldest: dict[str, datetime] = field(default_factory=dict)  # each asked node's oldest link reading in the store
    undated_events: dict[str, int] = field(default_factory=dict)  # per asked node, events without a time
    late: dict[str, datetime] = field(default_factory=dict)  # nodes with link readings whose events run past the end

    @property
    def platforms(self) -> dict[str, str]:
        """Each node's stored platform (from an inventory file); nodes without one are left out."""
        nodes = self.tables["nodes"]
        if "platform" not in nodes.columns:
            return {}
        return {str(n): str(p) for n, p in zip(nodes["node_id"], nodes["platform"], strict=True)
                if isinstance(p, str) and p}

    @property
    def racks(self) -> dict[str, RackSlot]:
        """Each node's rack and tray slot, as a rack inventory gave them (nodes without a rack are left out)."""
        return rack_slots(self.tables["nodes"])


def rack_slots(nodes: pd.DataFrame) -> dict[str, RackSlot]:
    """node_id -> (rack, tray) from node records with a `rack_location` (and `tray`) column: the hosts of a rack
    judged as one (a GB200 rack's trays: a host with a tray slot or on a rack platform). A site's rack label on
    whole boards (an 8-GPU node's `rack` in its asset inventory) is where they stand, kept as their location for
    the ticket: judged as a rack, their questions failed, "names no host of a rack platform"."""
    if "rack_location" not in nodes.columns:
        return {}
    none = pd.Series([None] * len(nodes), index=nodes.index)
    trays = nodes["tray"] if "tray" in nodes.columns else none
    roles = nodes["role"] if "role" in nodes.columns else none
    platforms = nodes["platform"] if "platform" in nodes.columns else none
    slots = {str(n): RackSlot(str(r), str(t) if isinstance(t, str) and t else None,
                              str(o) if isinstance(o, str) and o else None)
             for n, r, t, o in zip(nodes["node_id"], nodes["rack_location"], trays, roles, strict=True)
             if isinstance(r, str) and r}
    judged = [bool(isinstance(t, str) and t) or rack_of(p if isinstance(p, str) else None) is not None
              for t, p in zip(trays, platforms, strict=True)]  # a tray slot, or a rack platform
    racked = {str(r) for r, one in zip(nodes["rack_location"], judged, strict=True) if isinstance(r, str) and r and one}
    return {n: slot for n, slot in slots.items() if slot.rack in racked}
