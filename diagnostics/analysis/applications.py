"""Xids that are not the fabric's, said so that a log holding them is not answered as if it held nothing: those an
application causes (an exception in its kernels, a page fault), after which the GPU is still healthy, said as the
job's (the Xid catalog's `application` flag, data/xid.toml, from NVIDIA's device plugin); and the GPU's own faults
the catalog marks fatal or failing with no interconnect (an uncontained memory error, a GSP error), said with the
catalog's action for them. Neither is judged as the fabric's. The non-fatal SXids NVIDIA says to ignore (the SXid
catalog's `info` codes, data/sxid.toml) are said too, with NVIDIA's action, so that a log of them is not answered as
if it held nothing: the `sxid` rule does not count them. So is every other Xid no rule counts (an NVLink Xid whose
decode is IGNORE, a contained memory error): what the catalog made of it, so that each Xid read is said."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..components import ComponentRef, switch_name
from ..config.catalogs import CodeCatalog, load_sxid_catalog, load_xid_catalog
from ..config.thresholds import Thresholds
from ..enums import CodeSeverity, EventKind
from ..times import ns
from .events import decode_rows, indexed, judged_xids, units

_SAID = ("Xid ", "SXid ")  # every note here starts by naming its code: how a ticket finds them among the warnings
_GPU_FAULT = ": an error of the GPU itself, not of its links"  # how a note of a GPU's own fault goes on


def events_said(warnings: list[str]) -> list[str]:
    """The notes of this module among a diagnosis's warnings: each Xid or SXid read and not judged, as the analysis
    said it, for a ticket (or a ticket's refusal) to say alike."""
    return [w for w in warnings if w.startswith(_SAID)]


def gpu_faults_said(warnings: list[str]) -> list[str]:
    """Of those notes, the GPU's own faults (a GSP timeout, an uncontained memory error) with the catalog's action for
    them: no link is judged on them, yet a GPU may need a reset, which a fleet's view says beside its offenders."""
    return [w for w in events_said(warnings) if _GPU_FAULT in w]


_PROCESS = re.compile(r"pid=(?P<pid>\d+),\s*name=(?P<name>[^,\s]+)")


def application_notes(events: pd.DataFrame, start_ns: int, end_ns: int,
                      buses: Mapping[str, Mapping[str, int]] | None = None,
                      thresholds: Thresholds | None = None,
                      generation: Callable[[str], int | None] | None = None) -> dict[str, list[str]]:
    """Each node's Xids that are not the fabric's in (start, end]: its application Xids in one note (which codes on
    which GPUs, the processes the lines name, and that they are the job's to debug), then its GPU faults in another
    (the catalog's action for each). `buses` (node -> PCI address -> GPU index) names a GPU a line gives only by its
    address. With `thresholds`, the Xids no rule of theirs counts are said too, one note per code and decode. With
    `generation` (node -> its platform's NVLink generation), an Xid only another generation logs is said first."""
    catalog = load_xid_catalog()
    out = _foreign_xids(events, start_ns, end_ns, generation, catalog) if generation is not None else {}
    faults = {c for c, e in catalog.entries.items() if not e.application and e.interconnect is None
              and e.severity in (CodeSeverity.FATAL, CodeSeverity.FAILING)}
    for node, said in _said(events, start_ns, end_ns, buses or {}, catalog).items():
        apps = [(c, p, by) for c, p, by in said if catalog.entry(c).application]
        gpu = [(c, p, by) for c, p, by in said if c in faults]
        if apps:
            out.setdefault(node, []).append(
                f"{_parts(apps)}: errors an application causes, after which the GPU is still healthy (NVIDIA's "
                "device plugin does not mark a GPU unhealthy for these codes): debug the job, not the fabric")
        if gpu:
            actions = "; ".join(f"Xid {c}: {_action(catalog, c)}" for c, _, _ in gpu)
            out.setdefault(node, []).append(f"{_parts(gpu)}{_GPU_FAULT}, so no link is judged on it; NVIDIA's Xid "
                                            f"catalog: {actions}")
    for node, notes in _ignored_sxids(events, start_ns, end_ns).items():
        out.setdefault(node, []).extend(notes)
    if thresholds is not None:
        for node, notes in _unjudged_xids(events, start_ns, end_ns, buses or {}, thresholds, catalog).items():
            out.setdefault(node, []).extend(notes)
    return out


def _xids_in(events: pd.DataFrame, start_ns: int, end_ns: int) -> np.ndarray:
    """The Xid events in (start, end] that name their node."""
    t = ns(events["timestamp"])
    return ((events["kind"].astype("string") == EventKind.XID.value).fillna(False).to_numpy(bool)
            & (t > start_ns) & (t <= end_ns) & events["node_id"].notna().to_numpy(bool))


def _foreign_xids(events: pd.DataFrame, start_ns: int, end_ns: int, generation: Callable[[str], int | None],
                  catalog: CodeCatalog) -> dict[str, list[str]]:
    """Per node, its Xids in (start, end] that only GPUs of a later NVLink generation log (144-150: NVLink5's),
    where its platform's generation is known: the platform named may be wrong, or the log another node's."""
    if events.empty or not {"kind", "code", "node_id", "timestamp"} <= set(events.columns):
        return {}
    only = {c: e.nvlink_generation for c, e in catalog.entries.items() if e.nvlink_generation is not None}
    # a code a later line names as its cause (`Xid 45 ... caused by previous Xid 149`) was logged too
    logged = events["code"].where(events["code"].isin(sorted(only)), events.get("caused_by"))
    mine = _xids_in(events, start_ns, end_ns) & logged.isin(sorted(only)).fillna(False).to_numpy(bool)
    heard: dict[str, set[int]] = {}
    for node, code in zip(events["node_id"][mine].astype(str), logged[mine].astype(int), strict=True):
        heard.setdefault(node, set()).add(code)
    out: dict[str, list[str]] = {}
    for node, codes in sorted(heard.items()):
        own = generation(node)
        foreign = sorted(c for c in codes if own is not None and own < only[c])
        if not foreign:
            continue
        gens = sorted({only[c] for c in foreign})
        out[node] = [f"Xid {', '.join(str(c) for c in foreign)} {'is' if len(foreign) == 1 else 'are'} logged by "
                     f"NVLink {' or '.join(str(g) for g in gens)} GPUs (Blackwell and later), and {node}'s platform "
                     f"has NVLink {own}: "
                     "is the platform right, or the log another node's? Judged as read"]
    return out


def _unjudged_xids(events: pd.DataFrame, start_ns: int, end_ns: int, buses: Mapping[str, Mapping[str, int]],
                   thresholds: Thresholds, catalog: CodeCatalog) -> dict[str, list[str]]:
    """Per node, one note per Xid code and decode in (start, end] that no rule counts and no note above says: the
    GPUs it was on and what the catalog made of it (NVIDIA says to ignore it; not a fabric fault; or no rule here
    judges it), with NVIDIA's action."""
    if events.empty or not {"kind", "code", "node_id", "timestamp"} <= set(events.columns):
        return {}
    said = {c for c, e in catalog.entries.items() if e.application or (
        e.interconnect is None and e.severity in (CodeSeverity.FATAL, CodeSeverity.FAILING))}
    mine = _xids_in(events, start_ns, end_ns) & events["code"].notna().to_numpy(bool) \
        & ~events["code"].isin(sorted(said)).fillna(False).to_numpy(bool)
    if not mine.any():
        return {}
    rows = indexed(events[mine], buses, "pci_bus_id")
    rows = rows[~judged_xids(rows, thresholds)]
    if rows.empty:
        return {}
    out: dict[str, list[str]] = {}
    heard: dict[tuple[str, int, str, str, str], dict[str, int]] = {}  # (node, code, words, severity, bucket) -> GPUs
    for node, code, unit, line, (severity, row), gpu, bus in zip(
            rows["node_id"].astype("string").tolist(), rows["code"].astype(int).tolist(), units(rows),
            _column(rows, "severity"), decode_rows(rows), _column(rows, "gpu"), _column(rows, "pci_bus_id"),
            strict=True):
        stated = str(line).lower() if line is not None else None
        words = " ".join(w for w in (unit, stated) if w)
        bucket = row.action if row is not None else catalog.entry(code).decoded(unit, stated)[1]
        name = ComponentRef.of_gpu(None if gpu is None else int(gpu), bus=None if bus is None else str(bus)).name
        per_gpu = heard.setdefault((str(node), code, words, severity.value, bucket), {})
        per_gpu[name] = per_gpu.get(name, 0) + 1
    for (node, code, words, severity, bucket), gpus in sorted(heard.items()):
        entry = catalog.entry(code)
        where = ", ".join(f"{gpu}{_times(n)}" for gpu, n in sorted(gpus.items()))
        what = f"Xid {code} ({entry.name}{', ' + words if words else ''}) on {where}"
        action = f"{entry.action} ({bucket})" if entry.action else bucket or "no action given"
        if severity == CodeSeverity.INFO.value and entry.decode:
            said_as = f"NVIDIA's XID 144-150 Decode gives {bucket or 'IGNORE'} for it, so it is not judged"
        elif severity == CodeSeverity.INFO.value:
            said_as = f"NVIDIA's Xid catalog: {action}, so it is not judged"
        elif entry.interconnect is None:
            said_as = f"{entry.meaning}, not a fabric fault, so no link is judged on it; NVIDIA's Xid catalog: {action}"
        else:
            said_as = f"read, but no rule here judges this code; NVIDIA's Xid catalog: {action}"
        out.setdefault(node, []).append(f"{what}: {said_as}")
    return out


def _ignored_sxids(events: pd.DataFrame, start_ns: int, end_ns: int) -> dict[str, list[str]]:
    """Per node, one note per SXid code in (start, end] that the SXid catalog marks info (NVIDIA: IGNORE) on a line
    not stated fatal: where it was seen and NVIDIA's action."""
    catalog = load_sxid_catalog()
    codes = sorted(c for c, e in catalog.entries.items() if e.severity is CodeSeverity.INFO)
    if events.empty or not codes or not {"kind", "code", "node_id", "timestamp"} <= set(events.columns):
        return {}
    t = ns(events["timestamp"])
    stated = events["severity"].astype("string").str.lower() if "severity" in events \
        else pd.Series(pd.NA, index=events.index, dtype="string")
    mine = ((events["kind"].astype("string") == EventKind.SXID.value).fillna(False).to_numpy(bool)
            & events["code"].isin(codes).fillna(False).to_numpy(bool) & (t > start_ns) & (t <= end_ns)
            & events["node_id"].notna().to_numpy(bool) & (stated != "fatal").fillna(True).to_numpy(bool))
    out: dict[str, list[str]] = {}
    rows = events[mine]
    for (node, code), group in rows.groupby([rows["node_id"].astype("string"), rows["code"].astype(int)], sort=True):
        ports: dict[str, list[int]] = {}  # switch -> the ports its lines name
        for switch, port in zip(_column(group, "nvswitch"), _column(group, "link"), strict=True):
            named = ports.setdefault(switch_name(switch) if switch is not None else "an NVSwitch", [])
            if port is not None and int(port) not in named:
                named.append(int(port))
        where = ", ".join(f"{sw} port{'s' if len(p) > 1 else ''} {', '.join(map(str, sorted(p)))}" if p else sw
                          for sw, p in sorted(ports.items()))
        entry = catalog.entry(int(group["code"].iloc[0]))
        out.setdefault(str(node), []).append(
            f"SXid {code} ({entry.name}) on {where}{_times(len(group))}: NVIDIA says to ignore it "
            f"({entry.action}), so it is not judged")
    return out


def _parts(said: list[tuple[int, str, list[str]]]) -> str:
    """The codes' parts, then the processes their lines name."""
    processes = list(dict.fromkeys(p for _, _, by in said for p in by))
    return "; ".join(part for _, part, _ in said) + (f", from {', '.join(processes)}" if processes else "")


def _action(catalog: CodeCatalog, code: int) -> str:
    entry = catalog.entry(code)
    bucket = f" ({entry.immediate_action})" if entry.immediate_action else ""
    return f"{entry.action or 'no action given'}{bucket}"


def _said(events: pd.DataFrame, start_ns: int, end_ns: int, buses: Mapping[str, Mapping[str, int]],
          catalog: CodeCatalog) -> dict[str, list[tuple[int, str, list[str]]]]:
    """Per node, the window's Xids of the codes said here, by code: the code, its part ("Xid 13 (...) on GPU 3
    (2 events)") and the processes its lines name."""
    codes = sorted(c for c, e in catalog.entries.items() if e.application or (
        e.interconnect is None and e.severity in (CodeSeverity.FATAL, CodeSeverity.FAILING)))
    if events.empty or not codes or not {"kind", "code", "node_id", "timestamp"} <= set(events.columns):
        return {}
    mine = _xids_in(events, start_ns, end_ns) & events["code"].isin(codes).fillna(False).to_numpy(bool)
    if not mine.any():
        return {}
    rows = indexed(events[mine], buses, "pci_bus_id")  # a GPU a line names by address alone
    out: dict[str, list[tuple[int, str, list[str]]]] = {}
    for node, group in rows.groupby(rows["node_id"].astype("string"), sort=True):
        said: dict[int, dict[str, int]] = {}  # code -> GPU name -> events
        processes: dict[int, dict[str, None]] = {}  # code -> the processes its lines name
        for gpu, bus, code, text in zip(_column(group, "gpu"), _column(group, "pci_bus_id"), group["code"].tolist(),
                                        _column(group, "text"), strict=True):
            name = ComponentRef.of_gpu(None if gpu is None else int(gpu), bus=None if bus is None else str(bus)).name
            per_gpu = said.setdefault(int(code), {})
            per_gpu[name] = per_gpu.get(name, 0) + 1
            found = _PROCESS.search(str(text or ""))
            by = processes.setdefault(int(code), {})
            if found:
                by[f"{found['name']} (pid {found['pid']})"] = None
        out[str(node)] = [(code, f"Xid {code} ({catalog.entry(code).meaning}) on "
                           + ", ".join(f"{gpu}{_times(n)}" for gpu, n in sorted(gpus.items())), list(processes[code]))
                          for code, gpus in sorted(said.items())]
    return out


def _column(group: pd.DataFrame, name: str) -> list[Any]:
    if name not in group:
        return [None] * len(group)
    return [None if pd.isna(v) else v for v in group[name].tolist()]


def _times(n: int) -> str:
    return f" ({n} events)" if n > 1 else ""

