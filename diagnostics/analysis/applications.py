"""Xids an application causes (an exception in its kernels, a page fault): the GPU is still healthy after them, so
they are said as the job's and never judged as the fabric's. Which codes they are is the Xid catalog's
`application` flag (data/xid.toml, from NVIDIA's device plugin)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pandas as pd

from ..components import ComponentRef
from ..config.catalogs import load_xid_catalog
from ..enums import EventKind
from .events import indexed
from .rates import ns

_PROCESS = re.compile(r"pid=(?P<pid>\d+),\s*name=(?P<name>[^,\s]+)")


def application_notes(events: pd.DataFrame, start_ns: int, end_ns: int,
                      buses: Mapping[str, Mapping[str, int]] | None = None) -> dict[str, list[str]]:
    """Each node's application Xids in (start, end], said in one note: which codes on which GPUs, the processes
    the lines name, and that they are the job's to debug. `buses` (node -> PCI address -> GPU index) names a GPU
    a line gives only by its address."""
    catalog = load_xid_catalog()
    codes = sorted(c for c, e in catalog.entries.items() if e.application)
    if events.empty or not codes or not {"kind", "code", "node_id", "timestamp"} <= set(events.columns):
        return {}
    t = ns(events["timestamp"])
    mine = ((events["kind"].astype("string") == EventKind.XID.value).fillna(False).to_numpy(bool)
            & events["code"].isin(codes).fillna(False).to_numpy(bool) & (t > start_ns) & (t <= end_ns)
            & events["node_id"].notna().to_numpy(bool))
    if not mine.any():
        return {}
    rows = indexed(events[mine], buses or {}, "pci_bus_id")  # a GPU a line names by address alone
    out: dict[str, list[str]] = {}
    for node, group in rows.groupby(rows["node_id"].astype("string"), sort=True):
        said: dict[int, dict[str, int]] = {}  # code -> GPU name -> events
        processes: dict[str, None] = {}
        for gpu, bus, code, text in zip(_column(group, "gpu"), _column(group, "pci_bus_id"), group["code"].tolist(),
                                        _column(group, "text"), strict=True):
            name = ComponentRef.of_gpu(None if gpu is None else int(gpu), bus=None if bus is None else str(bus)).name
            per_gpu = said.setdefault(int(code), {})
            per_gpu[name] = per_gpu.get(name, 0) + 1
            found = _PROCESS.search(str(text or ""))
            if found:
                processes[f"{found['name']} (pid {found['pid']})"] = None
        parts = [f"Xid {code} ({catalog.entry(code).meaning}) on "
                 + ", ".join(f"{gpu}{_times(n)}" for gpu, n in sorted(gpus.items()))
                 for code, gpus in sorted(said.items())]
        by = f", from {', '.join(processes)}" if processes else ""
        out[str(node)] = [f"{'; '.join(parts)}{by}: errors an application causes, after which the GPU is still "
                          "healthy (NVIDIA's device plugin does not mark a GPU unhealthy for these codes): debug the "
                          "job, not the fabric"]
    return out


def _column(group: pd.DataFrame, name: str) -> list[Any]:
    if name not in group:
        return [None] * len(group)
    return [None if pd.isna(v) else v for v in group[name].tolist()]


def _times(n: int) -> str:
    return f" ({n} events)" if n > 1 else ""

