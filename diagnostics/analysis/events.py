"""What the counters alone do not say: Xid and SXid events and Fabric Manager, judged per node (events are few).
Links and GPUs that stopped or never reported are `absence.py`'s."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any

import numpy as np
import pandas as pd

from .. import format as fmt
from ..components import ComponentRef, switch_name
from ..config.catalogs import Decode, load_sxid_catalog, load_xid_catalog
from ..config.thresholds import (
    OFF_BUS_RULE,
    SOFTWARE_RULE,
    Rule,
    Thresholds,
)
from ..enums import CodeSeverity, EventKind, LinkState, LinkType, PortSource, Severity
from ..model import Crossing, Finding
from ..times import ns
from .event_merge import merge_sources
from .rules import summarize

JUDGED = (EventKind.XID.value, EventKind.SXID.value)  # the kinds the event rules judge


def event_findings(events: pd.DataFrame, start_ns: int, end_ns: int, thresholds: Thresholds,
                   silent: Mapping[str, Mapping[int, int]] | None = None,
                   buses: Mapping[str, Mapping[str, int]] | None = None,
                   uuids: Mapping[str, Mapping[str, int]] | None = None,
                   restarts: Mapping[str, Mapping[int | None, int]] | None = None,
                   reporting: Mapping[str, Collection[int]] | None = None) -> dict[str, list[Finding]]:
    """Each node's Xid/SXid rules over the window, the fleet's events judged at once (each node's as if alone:
    every key below holds the node). `silent` (node -> GPU -> when its series stopped) keeps an Xid 79 found: a
    GPU off the bus stays off, so its Xid 79 at or after it fell silent counts even before the window, and so does
    one of a GPU missing from the whole read (`reporting`: node -> the GPUs with any reading in it, for nodes that
    report), however long before: it has been silent since; and one of a node none of whose counters is read (a
    kernel log alone), which nothing shows came back. A fatal
    event (a fatal Xid or SXid, a GPU off the bus) before the window still counts until a restart is seen after it:
    `restarts` (node -> GPU -> the last time its counters restarted: a GPU reset, driver reload or reboot; None ->
    the node's) clears it. `buses` and `uuids` (node -> PCI address or UUID -> GPU index, from the node's GPU
    table) name the GPU of a log line that gives only its address (and the driver's identity line its UUID)."""
    silent = {n: s for n, s in (silent or {}).items() if s}
    reporting = {n: g for n, g in (reporting or {}).items() if g}
    if events.empty or "kind" not in events.columns:
        return {}
    judged = events["kind"].isin(JUDGED).to_numpy(bool, na_value=False)  # most nodes log only their fabric state
    if not judged.any():
        return {}
    events = merge_sources(switches_named(indexed(indexed(events[judged], buses or {}, "pci_bus_id"), uuids or {},
                                                  "gpu_uuid")))
    t = ns(events["timestamp"])
    in_window = (t > start_ns) & (t <= end_ns)
    recent = events[in_window]
    before_window = ~in_window & (t <= end_ns)
    earlier = _uncleared(events[before_window], restarts or {})
    kind = recent["kind"].astype("string")
    out: dict[str, list[Finding]] = {}
    for rule in thresholds.rules:
        if rule.counter not in JUDGED:
            continue
        rows = recent[(kind == rule.counter).fillna(False).to_numpy(bool)]
        if rule.name == OFF_BUS_RULE and (silent or reporting):
            before = _off_bus_before(events[before_window], silent, reporting)
            rows = pd.concat([rows, before]) if len(before) else rows
        persisting = earlier[(earlier["kind"].astype("string") == rule.counter).fillna(False).to_numpy(bool)]
        persisting = persisting[_fatal(persisting, rule.counter)] if len(persisting) else persisting
        if len(persisting) and rule.name == OFF_BUS_RULE:  # an Xid 79 holds while its GPU stays silent (above):
            # readings after it say the GPU came back; of a node whose counters are not read at all (its kernel log
            # alone), nothing does, so its Xid 79 holds as any fatal event does, until a restart is seen
            heard = persisting["node_id"].astype("string").isin([*reporting, *silent]).fillna(False).to_numpy(bool)
            persisting = persisting[~heard]
        if len(persisting):
            rows = pd.concat([rows, persisting.assign(_persists=True)])
        rows = rows[~rows.index.duplicated(keep="first")] if len(rows) else rows
        if rule.codes:
            rows = _with_code(rows, rule.codes)
        if rule.decoded is not None:
            judged_as = decoded(rows) if rule.counter == EventKind.XID.value else catalogued(rows)
            rows = rows[np.isin(judged_as, [s.value for s in rule.decoded])]
        if rule.fatal is not None:
            rows = rows[_fatal(rows, rule.counter) == rule.fatal]
        switch_side = rule.counter == EventKind.SXID.value
        for (name, key), group in rows.groupby([rows["node_id"].astype("string"), _where(rows, switch_side)],
                                               sort=True):
            occurrences = float(_counts(group).sum())
            if occurrences <= rule.above:
                continue
            out.setdefault(str(name), []).append(_event_finding(rule, str(key), group, occurrences, switch_side))
    return out


def judged_xids(rows: pd.DataFrame, thresholds: Thresholds) -> np.ndarray:
    """Whether an Xid rule counts each Xid event: its code is the rule's and its decode (by subcode and status,
    where the catalog decodes the code) one the rule counts. The others are said, not judged (`applications`)."""
    out = np.zeros(len(rows), dtype=bool)
    if rows.empty:
        return out
    codes = rows["code"].astype("Float64")
    judged_as = decoded(rows)
    fatal = judged_as == CodeSeverity.FATAL.value
    for rule in thresholds.rules:
        if rule.counter != EventKind.XID.value:
            continue
        mine = codes.isin(rule.codes).fillna(False).to_numpy(bool) if rule.codes else np.ones(len(rows), bool)
        if rule.decoded is not None:
            mine &= np.isin(judged_as, [s.value for s in rule.decoded])
        if rule.fatal is not None:
            mine &= fatal == rule.fatal
        out |= mine
    return out


def _counts(group: pd.DataFrame) -> pd.Series:
    """How many events each row stands for: a DCGM counter's increase, else one."""
    return group["count"].astype("Float64").fillna(1) if "count" in group \
        else pd.Series(1.0, index=group.index, dtype="Float64")


def _per_code(group: pd.DataFrame) -> dict[int, float]:
    """The events of each code, as the rule counted them (a sweep names each code, as PromQL's `xid` label does)."""
    summed: dict[int, float] = {}  # a finding's few events: summed in Python, not by a groupby of its own
    for code, count in zip(_present(group["code"].astype("Float64")), _counts(group).tolist(), strict=True):
        if code is not None:
            summed[int(code)] = summed.get(int(code), 0.0) + float(count)
    return {c: summed[c] for c in sorted(summed)}


def _present(column: pd.Series) -> list[Any]:
    """A column's values, None where missing."""
    return [None if pd.isna(v) else v for v in column.tolist()]


def _uncleared(events: pd.DataFrame, restarts: Mapping[str, Mapping[int | None, int]]) -> pd.DataFrame:
    """Xid and SXid events before the window that no later restart cleared: an Xid by a restart of its GPU (or of
    its node), an SXid by one of its node."""
    if events.empty:
        return events
    t = ns(events["timestamp"])
    never = np.iinfo(np.int64).min
    nodes = events["node_id"].astype("string").fillna("").to_numpy(object)
    gpu = events["gpu"].astype("Int64").to_numpy(np.int64, na_value=-1) if "gpu" in events else np.full(len(t), -1)
    whole = np.array([restarts.get(n, {}).get(None, never) for n in nodes], dtype=np.int64)
    own = np.array([restarts.get(n, {}).get(int(g), never) if g >= 0 else never for n, g in zip(nodes, gpu,
                                                                                               strict=True)],
                   dtype=np.int64)
    xid = (events["kind"].astype("string") == EventKind.XID.value).fillna(False).to_numpy(bool)
    cleared = np.where(xid, np.maximum(own, whole), whole)
    keep = (t > cleared) & np.isin(events["kind"].astype("string").to_numpy(object),
                                   [EventKind.XID.value, EventKind.SXID.value])
    return events[keep]


def indexed(events: pd.DataFrame, index: Mapping[str, Mapping[str, int]], column: str) -> pd.DataFrame:
    """Events with the GPU index filled from their PCI address (or UUID) where their node's GPU table knows it."""
    if not index or column not in events or not events["gpu"].isna().any():
        return events
    node = events["node_id"].astype("string")
    named = events[column].astype("string").str.lower()
    unnamed = (events["gpu"].isna() & named.notna()).to_numpy(bool)
    known = pd.Series(pd.NA, index=events.index, dtype="Int16")
    for name in sorted(set(node[unnamed].dropna()) & set(index)):
        if index[name]:
            mine = unnamed & (node == name).to_numpy(bool, na_value=False)
            known[mine] = named[mine].map(index[name]).astype("Int16")
    if not known.notna().any():
        return events
    return events.assign(gpu=events["gpu"].astype("Int16").fillna(known))


def switches_named(events: pd.DataFrame) -> pd.DataFrame:
    """Events with an NVSwitch named by its PCI address alone (Fabric Manager's log names a switch so) renamed as
    the driver names it where another event of its node gives both (a kernel SXid line: `nvidia-nvswitch3: SXid
    (PCI:0000:86:00.0)`): one switch is one component, whichever log said it."""
    if "nvswitch" not in events or "pci_bus_id" not in events or events.empty:
        return events
    switch = events["nvswitch"].astype("string")
    bus = events["pci_bus_id"].astype("string").str.lower()
    by_bus = (switch.str.lower() == bus).to_numpy(bool, na_value=False)
    if not by_bus.any():
        return events
    node = events["node_id"].astype("string")
    named = switch.notna().to_numpy(bool) & bus.notna().to_numpy(bool) & ~by_bus
    index = {(n, b): name for n, b, name in zip(node[named], bus[named], switch[named], strict=True)}
    renamed = [index.get((n, b)) for n, b in zip(node[by_bus], bus[by_bus], strict=True)]
    if not any(renamed):
        return events
    names = switch.copy()
    names[by_bus] = pd.array([new or old for new, old in zip(renamed, switch[by_bus], strict=True)], dtype="string")
    categorical = isinstance(events["nvswitch"].dtype, pd.CategoricalDtype)
    return events.assign(nvswitch=names.astype("category") if categorical else names)


def _with_code(rows: pd.DataFrame, codes: list[int]) -> pd.DataFrame:
    """Events of these codes, and those a later line says they caused (`Xid 45 ... caused by previous Xid 149`):
    the cause happened even when its own line is not in the input; each GPU's cause counts once (per node)."""
    direct = rows[rows["code"].isin(codes).fillna(False).to_numpy(bool)]
    if "caused_by" not in rows:
        return direct
    caused = rows[rows["caused_by"].isin(codes).fillna(False).to_numpy(bool)
                  & ~rows["code"].isin(codes).fillna(False).to_numpy(bool)]
    if caused.empty:
        return direct
    who = caused["gpu"].astype("string").fillna(caused["pci_bus_id"].astype("string")).fillna("")
    seen = {(n, w, int(c)) for n, w, c in zip(direct["node_id"].astype("string"), _who(direct),
                                              direct["code"].astype(int), strict=True)}
    inferred = caused.assign(code=caused["caused_by"], count=pd.array([1] * len(caused), dtype="Int64"),
                             text="(" + caused["text"].astype("string").fillna("") + ")",
                             told_by=caused["code"].astype("Int64"))
    keep = [(n, w, int(c)) not in seen for n, w, c in zip(caused["node_id"].astype("string"), who,
                                                          inferred["code"].astype(int), strict=True)]
    inferred = inferred[keep].drop_duplicates(subset=["node_id", "gpu", "pci_bus_id", "code"])
    return pd.concat([direct, inferred]) if len(inferred) else direct


def _told_by(group: pd.DataFrame) -> str:
    """Where every event of a finding is known only from later lines naming it (`caused by previous Xid 149`), says
    so: its own line, with its status, was not read."""
    if "told_by" not in group or group["told_by"].isna().any():
        return ""
    later = ", ".join(f"Xid {c}" for c in sorted({int(c) for c in group["told_by"]}))
    return f", named by a later {later} (its own line is not in the input)"


def _before(group: pd.DataFrame, first: pd.Timestamp | None) -> str:
    """Where every event of a finding is from before the window (a fatal one no restart since has cleared), its time:
    a months-old Xid is never read as this window's."""
    if first is None or "_persists" not in group or not group["_persists"].fillna(False).astype(bool).all():
        return ""
    return f", logged {fmt.when(first)}, before this window"


def _who(rows: pd.DataFrame) -> pd.Series:
    bus = rows["pci_bus_id"].astype("string") if "pci_bus_id" in rows else pd.Series(pd.NA, index=rows.index)
    return rows["gpu"].astype("string").fillna(bus).fillna("")


def _where(rows: pd.DataFrame, switch_side: bool) -> pd.Series:
    """What an event is about: the GPU an Xid names (its index, else its PCI address), or the switch and port an
    SXid names."""
    if not switch_side:
        return "gpu:" + _who(rows)
    switch = rows["nvswitch"].astype("string").fillna("?") if "nvswitch" in rows else pd.Series("?", rows.index)
    port = rows["link"].astype("Float64").fillna(-1).astype(int).astype(str) if "link" in rows else "-1"
    return switch + ":" + port


_UNIT = re.compile(r"^\s*(?P<unit>[A-Z][A-Z0-9_]+)\s+(?:Fatal|Non-?fatal)\b", re.IGNORECASE)


def units(rows: pd.DataFrame) -> list[str | None]:
    """The subcode word each Xid line gives (`NETIR_LINK_EVT Fatal XC0 ...`): the reader's `subcode` where it fills
    one, else the line's first word before its stated severity."""
    if "subcode" in rows:
        given = rows["subcode"].astype("string")
        return [None if pd.isna(v) else str(v) for v in given.tolist()]
    texts = rows["text"].astype("string").fillna("") if "text" in rows else pd.Series("", index=rows.index)
    return [m["unit"] if (m := _UNIT.match(t)) else None for t in texts.tolist()]


_WORDS = re.compile(r"\(\s*0x(?P<intr>[0-9a-f]{1,8})\s+0x(?P<status>[0-9a-f]{1,8})\b", re.IGNORECASE)


def words(rows: pd.DataFrame) -> list[tuple[int | None, int | None]]:
    """The first two hex words of each Xid line (`NETIR_LINK_EVT Fatal XC0 i0 Link 00 (0x025001c6 0x00000000 ...)`):
    the intrInfo and error status NVIDIA's XID 144-150 Decode table keys on; None where the line gives none."""
    texts = rows["text"].astype("string").fillna("") if "text" in rows else pd.Series("", index=rows.index)
    return [(int(m["intr"], 16), int(m["status"], 16)) if (m := _WORDS.search(t)) else (None, None)
            for t in texts.tolist()]


def decode_rows(rows: pd.DataFrame) -> list[tuple[CodeSeverity, Decode | None]]:
    """Each Xid event's severity as the catalog decodes it (by the line's subcode word, stated severity, intrInfo
    and error status where the catalog decodes its code, 144-150; else by its code), with the decode row."""
    catalog = load_xid_catalog()
    stated = rows["severity"].astype("string").str.lower() if "severity" in rows \
        else pd.Series(pd.NA, index=rows.index, dtype="string")
    out: list[tuple[CodeSeverity, Decode | None]] = []
    for c, u, s, (intr, status) in zip(rows["code"].astype("Float64").tolist(), units(rows), stated.tolist(),
                                       words(rows), strict=True):
        if c is pd.NA or c != c:
            out.append((CodeSeverity.WARNING, None))
            continue
        entry, said = catalog.entry(int(c)), None if pd.isna(s) else str(s)
        out.append((entry.decoded(u, said, intr, status)[0], entry.row(u, said, intr, status)))
    return out


def decoded(rows: pd.DataFrame) -> np.ndarray:
    """Each Xid event's severity as the catalog decodes it (`decode_rows`), as its value."""
    return np.array([severity.value for severity, _ in decode_rows(rows)], dtype=object)


def catalogued(rows: pd.DataFrame) -> np.ndarray:
    """Each SXid event's severity as the SXid catalog gives its code (an IGNORE code is `info`; a code it does not
    hold warns): the kernel line states only fatal or not, so a non-fatal line is judged by its code."""
    catalog = load_sxid_catalog()
    return np.array([catalog.entry(int(c)).severity.value if c is not pd.NA and c == c else CodeSeverity.WARNING.value
                     for c in rows["code"].astype("Float64").tolist()], dtype=object)


def _fatal(rows: pd.DataFrame, kind: str) -> np.ndarray:
    """Whether each event is fatal: an Xid as the catalog decodes it (with the line's stated severity); an SXid as
    its line says, else as the catalog says its code is."""
    if kind == EventKind.XID.value:
        return np.asarray(decoded(rows) == CodeSeverity.FATAL.value, dtype=bool)
    catalog = load_sxid_catalog()
    by_code = np.array([catalog.entry(int(c)).severity is CodeSeverity.FATAL if c is not pd.NA and c == c else False
                        for c in rows["code"].astype("Float64").tolist()], dtype=bool)
    if "severity" not in rows:
        return by_code
    stated = rows["severity"].astype("string").str.lower()
    return np.where(stated.isna().to_numpy(), by_code, (stated == "fatal").fillna(False).to_numpy(bool))


def _event_finding(rule: Rule, key: str, group: pd.DataFrame, occurrences: float, switch_side: bool) -> Finding:
    codes = sorted({int(c) for c in _present(group["code"]) if c is not None})
    stamps = ns(group["timestamp"])
    stamps = stamps[stamps != np.iinfo(np.int64).min]  # NaT
    first = pd.Timestamp(int(stamps.min()), tz="UTC") if len(stamps) else None
    listed = ", ".join(map(str, codes))
    if switch_side:
        switch, port = key.rsplit(":", 1)  # a switch a log names by its bus id holds colons
        ref = ComponentRef.nvswitch(switch_name(switch) if switch != "?" else None,
                                    int(port) if port != "-1" else None)
        gpu, link_type = None, LinkType.NVSWITCH
    else:
        named = key.removeprefix("gpu:")
        gpu = int(named) if named.isdigit() else None
        ref = ComponentRef.of_gpu(gpu, bus=named or None)
        link_type = LinkType.PCIE if rule.name == OFF_BUS_RULE else LinkType.NVLINK
    who = ref.name
    label = "Xid" if rule.counter == EventKind.XID.value else "SXid"
    rows = decode_rows(group) if rule.counter == EventKind.XID.value else []  # each Xid line's decode, read once
    asked = next((row for _, row in rows if row is not None and row.says), None)
    crossed = [Crossing(rule=rule.name, counter=rule.counter, rate_per_hour=occurrences, above=rule.above,
                        unit=rule.unit, severity=rule.severity, codes=_per_code(group),
                        fatal=bool(_fatal(group, rule.counter).any()), investigate=asked.says if asked else None,
                        investigate_bucket=(asked.investigate or None) if asked else None,
                        message=f"{occurrences:g} {label} {listed} on {who}{_told_by(group)}{_before(group, first)} "
                                f"({rule.name})")]
    severity, ratio = summarize(crossed)
    catalog = load_xid_catalog() if rule.counter == EventKind.XID.value else load_sxid_catalog()
    meanings = [f"{label} {c} ({catalog.entry(c).name}): {catalog.entry(c).meaning}"
                + (f"; NVIDIA: {catalog.entry(c).action}" if catalog.entry(c).action else "") for c in codes]
    link = ref.port
    if not switch_side and rule.name != OFF_BUS_RULE and "link" in group:  # `NVLink: ... on link 5`: the link it names
        links = {int(v) for v in _present(group["link"]) if v is not None}
        link = links.pop() if len(links) == 1 else None
    persists = "_persists" in group and bool(group["_persists"].fillna(False).astype(bool).any())
    # the SXid line itself names its port: observed, as the title naming it says
    source = PortSource.OBSERVED if switch_side and ref.port is not None else PortSource.UNKNOWN
    held = [f"fatal at {fmt.when(first)}, before this window: it holds until a GPU reset, driver reload or reboot is "
            "seen (none in the readings since)"] if persists and first is not None else []
    texts = [str(x) for x in _present(group["text"]) if x is not None][:3]
    told = _decode_said(group, rows) if rows else []
    return Finding(ref=ref, link_type=link_type, link_id=rule.counter, gpu=gpu, link=link,
                   link_state=LinkState.UNKNOWN, onset=first.floor("us").to_pydatetime() if first is not None else None,
                   switch=ref.switch, switch_port=ref.port, port_source=source,
                   severity=severity, worst_ratio=ratio, crossed=crossed, counts={rule.counter: occurrences},
                   evidence=[*told, *meanings, *held, *texts])


def _decode_said(group: pd.DataFrame, rows: list[tuple[CodeSeverity, Decode | None]]) -> list[str]:
    """What NVIDIA's XID 144-150 Decode makes of each line whose words a row keys on (its intrInfo or error
    status): the words, the resolution bucket and, where the row has one, the investigatory action in words."""
    out: list[str] = []
    for code, (intr, status), (_, row) in zip(group["code"].astype(int).tolist(), words(group), rows,
                                              strict=True):
        if row is None or not (row.intr_info or row.error_status is not None):
            continue
        said = " ".join(f"0x{w:08x}" for w in (intr, status) if w is not None)
        then = f", then {row.investigate}: {row.says}" if row.investigate else ""
        line = f"NVIDIA's XID 144-150 Decode of Xid {code} ({said}): {row.action}{then}"
        if line not in out:
            out.append(line)
    return out


def _off_bus_before(events: pd.DataFrame, silent: Mapping[str, Mapping[int, int]],
                    reporting: Mapping[str, Collection[int]]) -> pd.DataFrame:
    """Xids before the window on GPUs that fell silent then (and stayed so), not those long before it; and, however
    long before, on GPUs of a reporting node that the read never heard: silent since. Each row is looked up alone
    (Xids before the window are few), for the fleet at once."""
    xid = events[(events["kind"].astype("string") == EventKind.XID.value).fillna(False).to_numpy(bool)
                 & events["gpu"].notna().to_numpy(bool)]
    if xid.empty:
        return xid
    never = np.iinfo(np.int64).min
    after = [silent[n][g] if g in silent.get(n, {}) else never if n in reporting and g not in reporting[n] else None
             for n, g in zip(xid["node_id"].astype("string").fillna("").tolist(), xid["gpu"].astype(int).tolist(),
                             strict=True)]
    kept = [a is not None and t >= a for a, t in zip(after, ns(xid["timestamp"]).tolist(), strict=True)]
    return xid[np.asarray(kept, dtype=bool)]


def fabric_states(events: pd.DataFrame) -> dict[str, str]:
    """Each node's newest fabric state (`nvidia-smi -q`'s Fabric section, as its event's text), for every node at
    once: the first of the newest when two share a time."""
    if events.empty or not {"kind", "node_id", "text"} <= set(events.columns):
        return {}
    fabric = events[np.asarray(events["kind"].to_numpy(object) == EventKind.FABRIC_STATE.value, dtype=bool)
                    & events["node_id"].notna().to_numpy(bool)]  # a state no node names is no node's
    if fabric.empty:
        return {}
    codes, names = pd.factorize(fabric["node_id"].astype("string").to_numpy(object))
    t = ns(fabric["timestamp"])
    later = np.where(t == np.iinfo(np.int64).min, np.iinfo(np.int64).max, -t)  # newest first, an undated one last
    newest = np.lexsort((np.arange(len(fabric)), later, codes))
    heads = newest[np.r_[True, codes[newest][1:] != codes[newest][:-1]]]
    texts = fabric["text"].to_numpy(object)
    return {str(names[codes[i]]): str(texts[i]) for i in heads}


def software_finding(fabric_state: str | None, all_inactive: str | None, *, domain: bool = False) -> Finding | None:
    """Fabric Manager or the driver, not a part: all NVLinks inactive at once, or the fabric state (`nvidia-smi -q`
    Fabric section, the node's newest as `fabric_states` gives it) not Completed or its status not Success (failing);
    its health summary not Healthy or its bandwidth not Full (a warning: the fabric works, degraded). `domain`: a
    rack's host, whose fabric is its NVLink domain's (NMX-Controller, IMEX), not a Fabric Manager of its own."""
    failing: list[str] = []
    warning: list[str] = []
    if fabric_state is not None:
        stated = _fabric_fields(fabric_state)
        state = stated.get("state", fabric_state)
        if state.lower() != "completed":
            failing.append(f"fabric state is '{state}', not Completed")
        status = stated.get("status")
        if status and status.lower() not in ("success", "n/a"):
            failing.append(f"fabric status is '{status}', not Success")
        health = stated.get("health summary")
        bandwidth = stated.get("health bandwidth")
        if bandwidth and bandwidth.lower() not in ("full", "n/a"):
            warning.append(f"fabric bandwidth is '{bandwidth}', not Full")
        why = [f"{name} is '{stated[key]}'" for key, name, fine in _HEALTH_FIELDS
               if stated.get(key) and stated[key].lower() not in fine]
        warning += [f"fabric health: {w}" for w in why]
        if health and health.lower() not in ("healthy", "n/a"):
            said = "" if why or (bandwidth and bandwidth.lower() not in ("full", "n/a")) else (
                ": none of the Health fields read says why; `nvidia-smi -q -d FABRIC` on the node shows them all "
                "(Route Recovery in progress, Route Unhealthy, Access Timeout Recovery, Incorrect Configuration)")
            warning.insert(0, f"fabric health summary is '{health}'{said}")
    if all_inactive:
        failing.append(all_inactive)
    evidence = failing + warning
    if not evidence:
        return None
    severity = Severity.FAILING if failing else Severity.WARNING
    return Finding(ref=ComponentRef.fabric_software(domain=domain), link_type=LinkType.NVSWITCH, link_id="fabric",
                   severity=severity, evidence=evidence,
                   crossed=[Crossing(rule=SOFTWARE_RULE, counter="fabric_state", severity=severity, unit=fmt.Unit.STATE,
                                     message="; ".join(evidence))])


# The Health lines of `nvidia-smi -q`'s Fabric section past Summary and Bandwidth, and the values that say nothing is
# wrong: NVML's fabric health mask (NVML_GPU_FABRIC_HEALTH_MASK_*, docs.nvidia.com/deploy/nvml-api "Fabric
# definitions": route recovery, route unhealthy and access timeout recovery in progress or not, an incorrect
# configuration such as a wrong SysGUID or chassis serial number or insufficient NVLinks)
_FINE = ("false", "n/a", "not supported")
_HEALTH_FIELDS = [("health route recovery in progress", "Route Recovery in progress", _FINE),
                  ("health route unhealthy", "Route Unhealthy", _FINE),
                  ("health access timeout recovery", "Access Timeout Recovery", _FINE),
                  ("health incorrect configuration", "Incorrect Configuration", ("none", "n/a", "not supported"))]


def _fabric_fields(text: str) -> dict[str, str]:
    """`State: Completed; Status: Success; Health Summary: Unhealthy` -> {"state": "Completed", ...}; a bare
    state (`In Progress`) is the state."""
    fields: dict[str, str] = {}
    for part in text.split(";"):
        key, sep, value = part.partition(":")
        if sep:
            fields[key.strip().lower().removeprefix("fabric ").strip()] = value.strip()
    return fields if fields else {"state": text.strip()}
