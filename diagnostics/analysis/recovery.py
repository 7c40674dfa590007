"""The driver's own recovery action per GPU, and the suspects it reaches.

Read from the kernel log (Xid 154: `GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)`, the
value it changes to) and from dcgm-exporter (DCGM_FI_DEV_GPU_RECOVERY_ACTION, each change an event); the newest in
the window stands, and a later None clears it. A suspect on that GPU carries it, so its plan's reset is never
narrower than what the driver asks: "Node Reboot Required" beats "reset GPU alone" (data/recovery.toml).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import pandas as pd

from .. import format as fmt
from ..config.recovery import RecoveryAction, load_recovery
from ..enums import EventKind
from ..model import Localization
from ..times import ns, utc_datetime

RECOVERY_XID = 154


@dataclass(frozen=True)
class Recovery:
    """One GPU's pending recovery action: what, when, read from where."""

    gpu: int | str  # its index, or its PCI address where a kernel line names only that
    action: RecoveryAction
    at_ns: int
    read: str  # "Xid 154" or "DCGM_FI_DEV_GPU_RECOVERY_ACTION"

    @property
    def said(self) -> str:
        """`Node Reboot Required (GPU 2; Xid 154 at 2026-03-01 10:02 UTC)`."""
        assumed = "; its meaning is assumed: data/recovery.toml" if self.action.assumed else ""
        gpu = f"GPU {self.gpu}" if isinstance(self.gpu, int) else f"the GPU at PCI {self.gpu}"
        return f"{self.action.words} ({gpu}; {self.read} at {fmt.when(utc_datetime(self.at_ns))}{assumed})"


def recovery_actions(events: pd.DataFrame | None, start_ns: int, end_ns: int,
                     buses: Mapping[str, int] | None = None,
                     restarts: Mapping[int | None, int] | None = None) -> dict[int | str, Recovery]:
    """One node's pending recovery actions by GPU: the newest Xid 154 or DCGM reading in the window, none where
    that newest says None. `buses` names the GPU of a kernel line that gives only its PCI address. `restarts` (GPU
    -> its counters' last restart; None -> the node's): one asked before the window still stands until a restart
    after it is seen, as the fatal Xid it follows does (`events.event_findings`)."""
    if events is None or not len(events) or not {"kind", "code", "timestamp"} <= set(events.columns):
        return {}
    kind = events["kind"].astype("string")
    code = pd.to_numeric(events["code"], errors="coerce")
    xid = ((kind == EventKind.XID.value) & (code == RECOVERY_XID)).fillna(False).to_numpy(bool)
    dcgm = (kind == EventKind.RECOVERY_ACTION.value).fillna(False).to_numpy(bool)
    rows = events[xid | dcgm]
    if not len(rows):
        return {}
    t = ns(rows["timestamp"])
    restarts = restarts or {}
    never = -(2**63)
    whole = restarts.get(None, never)
    cleared = [max(whole, restarts.get(g, never)) if isinstance(g, int) else whole
               for g in (_gpu(row, buses or {}) for _, row in rows.iterrows())]
    keep = ((t > start_ns) | (t > pd.array(cleared, dtype="int64").to_numpy())) & (t <= end_ns)
    rows, t = rows[keep], t[keep]
    table = load_recovery()
    newest: dict[int | str, Recovery] = {}
    for (_, row), at in sorted(zip(rows.iterrows(), t, strict=True), key=lambda r: r[1]):
        gpu = _gpu(row, buses or {})
        if gpu is None:
            continue
        if str(row["kind"]) == EventKind.RECOVERY_ACTION.value:
            action, read = table.of(int(row["code"])), "DCGM_FI_DEV_GPU_RECOVERY_ACTION"
        else:
            text = row.get("text")  # an event ingested as a table row may carry no line (NA)
            found = table.from_line(text if isinstance(text, str) else "")
            if found is None:
                continue
            action, read = found, f"Xid {RECOVERY_XID}"
        newest[gpu] = Recovery(gpu, action, int(at), read)
    return {g: r for g, r in newest.items() if r.action.scope != "none"}


def fleet_recoveries(events: pd.DataFrame, start_ns: int, end_ns: int,
                     buses: Callable[[str], Mapping[str, int] | None],
                     restarts: Mapping[str, Mapping[int | None, int]] | None = None
                     ) -> dict[str, dict[int | str, Recovery]]:
    """Every node's pending recovery actions, the events filtered once for the fleet (a few rows are Xid 154 or
    a DCGM reading); `buses(node)`: its PCI address -> GPU index; `restarts`: as `recovery_actions`', by node."""
    if not len(events) or not {"kind", "code", "node_id"} <= set(events.columns):
        return {}
    kind = events["kind"].astype("string")
    code = pd.to_numeric(events["code"], errors="coerce")
    rows = events[((kind == EventKind.RECOVERY_ACTION.value)
                   | ((kind == EventKind.XID.value) & (code == RECOVERY_XID))).fillna(False).to_numpy(bool)]
    out = {}
    for node, mine in rows.groupby(rows["node_id"].astype("string"), observed=True):
        found = recovery_actions(mine, start_ns, end_ns, buses(str(node)), (restarts or {}).get(str(node)))
        if found:
            out[str(node)] = found
    return out


def _gpu(row: pd.Series, buses: Mapping[str, int]) -> int | str | None:
    """The GPU's index; else its PCI address (a kernel line with no GPU table to place it)."""
    gpu = row.get("gpu")
    if gpu is not None and not pd.isna(gpu):
        return int(gpu)
    bus = row.get("pci_bus_id")
    if not isinstance(bus, str) or not bus:
        return None
    return buses.get(bus.lower(), bus.lower())


def strongest(found: Iterable[Recovery]) -> Recovery | None:
    return max(found, key=lambda r: (r.action.rank, r.at_ns), default=None)


def with_recovery(locs: list[Localization], actions: Mapping[str, Mapping[int | str, Recovery]],
                  host_of: Mapping[str, str] | None = None) -> list[Localization]:
    """The suspects with the recovery action of the GPU they are on (a unit with no GPU of its own: the strongest
    of its hosts' GPUs). `actions`: host -> GPU -> action; `host_of`: a rack's compute tray label -> host (a node's
    suspects are its own: pass the node as its only host)."""
    if not any(actions.values()):
        return locs
    out = []
    for loc in locs:
        host = (host_of or {}).get(loc.tray or "") if loc.tray is not None else None
        hosts = [host] if host else list(loc.hosts) or list(actions)
        gpu = loc.gpu if loc.gpu is not None else loc.ref.bus
        mine = [r for h in hosts for g, r in actions.get(h, {}).items() if gpu is None or g == gpu]
        top = strongest(mine)
        out.append(loc if top is None else loc.model_copy(update={"recovery": top.said,
                                                                  "recovery_scope": top.action.scope}))
    return out


def recovery_notes(actions: Mapping[int | str, Recovery]) -> list[str]:
    """What a diagnosis says of each GPU the driver wants recovered, whatever else it finds."""
    return [f"the driver asks for {r.said}: " + ("a GPU reset alone does not clear it; reboot the node before the GPU "
                                                 "takes work" if r.action.scope == "node" else
                                                 "follow it before the GPU takes work")
            for _, r in sorted(actions.items(), key=lambda kv: str(kv[0]))]


__all__ = ["Recovery", "fleet_recoveries", "recovery_actions", "recovery_notes", "with_recovery"]
