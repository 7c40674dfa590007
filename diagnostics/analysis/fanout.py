"""Root and downstream in a rack's NVLink domain.

When one GPU's NVLink dies, every GPU that talks to it over the fabric sees its own traffic fail and logs an Xid of
its own: a burst of NVLink5 Xids (144-150) or SXids on many GPUs within seconds (a GB200 field report: Xid 149 on one
GPU, Xid 145 on the 63 others of the domain within a minute). One of them is the cause, the rest its echo. The root
is the GPU that evidence singles out: the burst's first fatal event, a code no other GPU of the burst logs, the link
its line names with a recovery, error or BER history of its own before the burst, the switch port at that link's
far end counting errors. Where nothing singles one out, the burst is one finding, "root not identifiable", with what
to capture to tell; never one suspect per GPU.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .. import format as fmt
from ..components import ComponentRef
from ..config.catalogs import load_xid_catalog
from ..config.racks import Localize
from ..enums import CodeSeverity, EventKind, FaultKind, PortSource, Severity
from ..model import Finding, Localization
from ..times import ns, utc_datetime
from ..topology.rack import RackGraph
from .rack_localize import Placed

HISTORY = ("recovery", "recovery_successful", "recovery_failed", "effective_errors", "crc_data")
GpuKey = tuple[str, int]  # (host, GPU)


@dataclass(frozen=True)
class Hit:
    """A GPU's first event of the burst."""

    host: str
    tray: str
    gpu: int
    kind: str  # xid | sxid
    code: int
    at_ns: int
    fatal: bool
    link: int | None
    text: str

    @property
    def name(self) -> str:
        return f"Compute tray {self.tray} GPU {self.gpu}"

    @property
    def said(self) -> str:
        event = f"{'SXid' if self.kind == EventKind.SXID.value else 'Xid'} {self.code}"
        return event + (f" on NVLink {self.link}" if self.link is not None else "")


@dataclass
class FanOut:
    """A burst of NVLink Xids over many GPUs of a rack, its root (where evidence singles one out) and the rest."""

    hits: dict[GpuKey, Hit]
    start_ns: int
    end_ns: int
    root: Hit | None
    reasons: list[str] = field(default_factory=list)
    localization: Localization | None = None
    echoes: list[Finding] = field(default_factory=list)  # the burst's findings, each told what it is
    onset_tolerance_s: float = 900.0

    @property
    def downstream(self) -> list[Hit]:
        return sorted((h for h in self.hits.values() if h is not self.root), key=lambda h: (_order(h.tray), h.gpu))


def _order(label: str) -> tuple[int, str]:
    return (int(label), "") if label.isdigit() else (10**6, label)


def _fatal(kind: str, code: int, severity: object) -> bool:
    """As the line says it (`Fatal`, `Nonfatal`), else as the Xid catalog says the code is."""
    said = str(severity or "").lower().replace("-", "").replace(" ", "")
    if said in ("fatal", "severity1"):
        return True
    if said in ("nonfatal", "severity0", "severity2"):
        return False
    if kind != EventKind.XID.value:
        return False
    return load_xid_catalog().entry(code).severity is CodeSeverity.FATAL


def burst_hits(rack_hosts: Mapping[str, str], switch_hosts: Mapping[str, int], graph: RackGraph,
               events: pd.DataFrame, start_ns: int, end_ns: int, rules: Localize) -> list[Hit]:
    """Each GPU's first NVLink-family event in the window: Xids of the rack's compute trays (by their tray label),
    SXids of its switch trays joined to the GPU link on their port."""
    if not len(events) or not {"kind", "node_id", "timestamp", "code"} <= set(events.columns):
        return []
    kind = events["kind"].astype("string")
    node = events["node_id"].astype("string")
    t = ns(events["timestamp"])
    code = pd.to_numeric(events["code"], errors="coerce")
    keep = (t > start_ns) & (t <= end_ns) & code.notna().to_numpy()
    xid = keep & (kind == EventKind.XID.value).fillna(False).to_numpy(bool) \
        & node.isin(list(rack_hosts)).fillna(False).to_numpy(bool) & code.isin(rules.fanout_codes).to_numpy(bool)
    sxid = keep & (kind == EventKind.SXID.value).fillna(False).to_numpy(bool) \
        & node.isin(list(switch_hosts)).fillna(False).to_numpy(bool)
    rows = events[xid | sxid].assign(_t=t[xid | sxid]).sort_values("_t", kind="stable")
    out: dict[GpuKey, Hit] = {}
    for row in rows.to_dict("records"):
        host, k, c = str(row["node_id"]), str(row["kind"]), int(row["code"])
        link = _int(row.get("link"))
        if k == EventKind.XID.value:
            gpu = _int(row.get("gpu"))
            if gpu is None:
                continue
            key, tray = (host, gpu), rack_hosts[host]
        else:  # an SXid names a chip and port: the GPU link on it, where the switch tray's slot is known
            chip = _int(row.get("nvswitch"))
            if chip is None or link is None:
                continue
            end = graph.from_port(switch_hosts[host], chip + 1, link)
            if end is None:
                continue
            compute = next((h for h, label in rack_hosts.items() if label == str(end.tray)), None)
            if compute is None:
                continue
            key, tray, gpu, link = (compute, end.gpu), str(end.tray), end.gpu, end.link
            host = compute
        if key in out:
            continue
        out[key] = Hit(host, tray, gpu, k, c, int(row["_t"]), _fatal(k, c, row.get("severity")), link,
                       str(row.get("text") or ""))
    return list(out.values())


def _int(value: object) -> int | None:
    if value is None or value is pd.NA:
        return None
    try:
        number = float(str(value))
    except ValueError:
        return None
    return None if number != number else int(number)


def find_burst(hits: list[Hit], rules: Localize) -> list[Hit]:
    """The most GPUs whose first events fit in `fanout_within_s`, if at least `fanout_min_gpus`."""
    if len(hits) < rules.fanout_min_gpus:
        return []
    hits = sorted(hits, key=lambda h: h.at_ns)
    times = np.array([h.at_ns for h in hits], dtype=np.int64)
    ends = np.searchsorted(times, times + int(rules.fanout_within_s * 1e9), side="right")
    i = int(np.argmax(ends - np.arange(len(hits))))
    picked = hits[i:int(ends[i])]
    return picked if len(picked) >= rules.fanout_min_gpus else []


def link_history(links: pd.DataFrame | None, hosts: Iterable[str], before_ns: int) -> dict[tuple[str, int, int | None],
                                                                                        dict[str, float]]:
    """Per (host, GPU, link) the increase of each history counter before `before_ns` (link None: the GPU's totals
    over its links); only entries that grew."""
    if links is None or not len(links) or "node_id" not in links.columns:
        return {}
    cols = [c for c in HISTORY if c in links.columns]
    if not cols:
        return {}
    node = links["node_id"].astype("string")
    t = ns(links["timestamp"])
    mask = node.isin(list(hosts)).fillna(False).to_numpy(bool) & (t < before_ns) \
        & (links["link_type"].astype("string") == "nvlink").fillna(False).to_numpy(bool)
    rows = links[mask]
    if not len(rows):
        return {}
    frame = pd.DataFrame({"node": rows["node_id"].astype(str).to_numpy(),
                          "gpu": pd.to_numeric(rows["gpu"], errors="coerce").fillna(-1).astype(int).to_numpy(),
                          "link": pd.to_numeric(rows["link"], errors="coerce").fillna(-1).astype(int).to_numpy(),
                          "t": t[mask],
                          **{c: pd.to_numeric(rows[c], errors="coerce").to_numpy(np.float64) for c in cols}})
    frame = frame.sort_values(["node", "gpu", "link", "t"], kind="stable")
    grown = frame.groupby(["node", "gpu", "link"], sort=False)[cols].diff().clip(lower=0)  # a reset is no growth
    grown[["node", "gpu", "link"]] = frame[["node", "gpu", "link"]]
    total = grown.groupby(["node", "gpu", "link"], sort=False)[cols].sum(min_count=1)
    out: dict[tuple[str, int, int | None], dict[str, float]] = {}
    for (host, gpu, link), values in zip(total.index, total.to_dict("records"), strict=True):
        counts = {str(c): float(v) for c, v in values.items() if v == v and v > 0}
        if counts:
            out[(str(host), int(gpu), None if int(link) < 0 else int(link))] = counts
    return out


def _history_of(history: Mapping[tuple[str, int, int | None], dict[str, float]], hit: Hit) -> tuple[str, float] | None:
    """What the hit's link (else its GPU) counted before the burst, as one phrase and its size."""
    own = history.get((hit.host, hit.gpu, hit.link)) if hit.link is not None else None
    where = f"its NVLink {hit.link}" if own else None
    if not own:
        links = {k: v for k, v in history.items() if k[0] == hit.host and k[1] == hit.gpu}
        if not links:
            return None
        key = max(links, key=lambda k: sum(links[k].values()))
        own = links[key]
        where = f"its NVLink {key[2]}" if key[2] is not None else "its NVLink totals"
    said = ", ".join(f"{fmt.number(v)} {fmt.label(c)}" for c, v in sorted(own.items(), key=lambda kv: -kv[1]))
    return f"{where} counted {said} before the burst", sum(own.values())


def weigh(burst: list[Hit], placed: list[Placed], history: Mapping[tuple[str, int, int | None], dict[str, float]],
          rules: Localize) -> tuple[Hit | None, list[str], list[str]]:
    """The root among a burst's GPUs and why (or None), and what was weighed."""
    codes = Counter(h.code for h in burst)
    common, _ = codes.most_common(1)[0]
    score: dict[GpuKey, int] = {}
    why: dict[GpuKey, list[str]] = {}

    def add(h: Hit, points: int, reason: str) -> None:
        key = (h.host, h.gpu)
        score[key] = score.get(key, 0) + points
        why.setdefault(key, []).append(reason)

    fatal = sorted((h for h in burst if h.fatal), key=lambda h: h.at_ns)
    if fatal and (len(fatal) == 1 or fatal[1].at_ns - fatal[0].at_ns >= rules.fanout_lead_s * 1e9):
        add(fatal[0], 2, f"its {fatal[0].said} is the burst's first fatal event"
                         + (f", {_seconds(fatal[1].at_ns - fatal[0].at_ns)} before the next" if len(fatal) > 1 else ""))
    for h in burst:
        if codes[h.code] == 1 and h.code != common and codes[common] >= 2:
            add(h, 1, f"its {h.said} is the only {h.kind.upper() if h.kind == 'sxid' else 'Xid'} {h.code} of the "
                      f"burst (the others logged {'Xid' if h.kind == 'xid' else 'SXid'} {common})")
    seen: dict[GpuKey, tuple[str, float]] = {}
    for h in burst:
        found = _history_of(history, h)
        if found is not None:
            seen[(h.host, h.gpu)] = found
    if 0 < len(seen) <= rules.fanout_history_max:
        for h in burst:
            if (h.host, h.gpu) in seen:
                add(h, 2, seen[(h.host, h.gpu)][0])
    far = {(p.tray, p.gpu) for p in placed if p.switch_side and p.finding.severity in (Severity.FAILING,
                                                                                      Severity.DOWN)}
    for h in burst:
        if (h.tray, h.gpu) in far and len(far) <= rules.fanout_history_max:
            add(h, 1, "the switch port at its link's far end counts errors of its own")
    weighed = [f"weighed: the first fatal event, a code no other GPU logs, each link's recovery and error history "
               f"before the burst ({fmt.count(len(seen), 'GPU')} had one), the far-end switch ports"]
    if not score:
        return None, [], weighed
    ranked = sorted(score.items(), key=lambda kv: -kv[1])
    best, points = ranked[0]
    if points < 2 or (len(ranked) > 1 and ranked[1][1] == points):
        return None, [], weighed
    root = next(h for h in burst if (h.host, h.gpu) == best)
    return root, why[best], weighed


def _seconds(delta_ns: int) -> str:
    s = delta_ns / 1e9
    return f"{s:.0f} s" if s >= 10 else f"{s:.1f} s"


def fan_out(graph: RackGraph, rack_hosts: Mapping[str, str], switch_hosts: Mapping[str, int],
            events: pd.DataFrame, links: pd.DataFrame | None, placed: list[Placed], *,
            start_ns: int, end_ns: int, rules: Localize | None = None) -> FanOut | None:
    """The burst of NVLink Xids over many of the rack's GPUs in the window, weighed for its root, or None.
    `rack_hosts`: compute host -> tray label; `switch_hosts`: switch host -> slot (those whose slot is known)."""
    rules = rules or graph.spec.localize
    burst = find_burst(burst_hits(rack_hosts, switch_hosts, graph, events, start_ns, end_ns, rules), rules)
    if not burst:
        return None
    first, last = min(h.at_ns for h in burst), max(h.at_ns for h in burst)
    history = link_history(links, {h.host for h in burst}, first)
    root, reasons, weighed = weigh(burst, placed, history, rules)
    out = FanOut({(h.host, h.gpu): h for h in burst}, first, last, root, reasons,
                 onset_tolerance_s=rules.fanout_onset_s)
    out.localization = _root_localization(out, graph, weighed) if root is not None else \
        _unresolved(out, weighed)
    return out


def fan_tolerance_ns(fan: FanOut) -> int:
    """How far a job's slowdown onset may lie from the burst and still be the burst's (the steps are sampled)."""
    return int(fan.onset_tolerance_s * 1e9)


def _codes(hits: Iterable[Hit]) -> str:
    counted = Counter(f"{'SXid' if h.kind == 'sxid' else 'Xid'} {h.code}" for h in hits)
    if len(counted) == 1:
        return next(iter(counted))
    return ", ".join(f"{code} ({n})" for code, n in counted.most_common())


def headline(fan: FanOut) -> str:
    """`63 GPUs logged Xid 145 within 40 s of Compute tray 7 GPU 2's Xid 149 on NVLink 14`."""
    down = fan.downstream
    span = max(abs(h.at_ns - (fan.root.at_ns if fan.root else fan.start_ns)) for h in down) if down else 0
    if fan.root is None:
        return (f"{len(fan.hits)} GPUs of the rack logged {_codes(fan.hits.values())} within "
                f"{_seconds(fan.end_ns - fan.start_ns)} (from {fmt.when(utc_datetime(fan.start_ns))})")
    return (f"{len(down)} GPUs logged {_codes(down)} within {_seconds(span)} of {fan.root.name}'s "
            f"{fan.root.said}")


def _root_localization(fan: FanOut, graph: RackGraph, weighed: list[str]) -> Localization:
    root = fan.root
    assert root is not None
    tray = int(root.tray) if root.tray.isdigit() else None
    evidence = [f"{headline(fan)}: downstream of it", *fan.reasons]
    if root.text:
        evidence.append(root.text)
    ref: ComponentRef
    if root.link is not None and tray is not None and graph.has(tray, root.gpu, root.link):
        end = graph.end(tray, root.gpu, root.link)
        ref = ComponentRef.nvlink(root.gpu, root.link).in_tray(root.tray, switch_tray=str(end.switch_tray),
                                                                chip=end.chip, port=end.port)
        evidence.append(f"its far end, Switch tray {end.switch_tray} chip {end.chip} port {end.port}, is from the "
                        f"rack file's assumed port map: confirm it with `nvidia-smi nvlink -R -i {root.gpu}` on "
                        f"{root.host} or NMX-T's link_partner for the port")
        loc = Localization(ref=ref, fault=FaultKind.NVLINK, gpu=root.gpu, link=root.link, tray=root.tray,
                           switch=ref.switch, switch_port=end.port, switch_tray=str(end.switch_tray),
                           cartridge=end.cartridge, peer=ref.switch, port_source=PortSource.ASSUMED,
                           hosts=[root.host], confidence=0.85, severity=Severity.FAILING,
                           links=[ref.name], evidence=[*evidence, *weighed],
                           downstream=[ComponentRef.of_gpu(h.gpu).in_tray(h.tray) for h in fan.downstream])
        return loc
    ref = ComponentRef.nvlink(root.gpu, None).in_tray(root.tray)
    evidence.append(f"the line names no link of GPU {root.gpu}: read each with `nvidia-smi nvlink -e -i {root.gpu}` "
                    f"on {root.host}")
    return Localization(ref=ref, fault=FaultKind.NVLINK_AGGREGATE, gpu=root.gpu, tray=root.tray, hosts=[root.host],
                        confidence=0.8, links=[ref.name], evidence=[*evidence, *weighed],
                        downstream=[ComponentRef.of_gpu(h.gpu).in_tray(h.tray) for h in fan.downstream])


def _unresolved(fan: FanOut, weighed: list[str]) -> Localization:
    hosts = sorted({h.host for h in fan.hits.values()})
    first = min(fan.hits.values(), key=lambda h: h.at_ns)
    return Localization(
        ref=ComponentRef.nvlink_domain(), fault=FaultKind.FANOUT, hosts=hosts, confidence=0.5,
        links=[], evidence=[headline(fan), "root not identifiable: no event, code, link history or far-end port "
                            f"singles one GPU out (the first line came from {first.name}, {first.said})", *weighed],
        downstream=[ComponentRef.of_gpu(h.gpu).in_tray(h.tray) for h in fan.hits.values()])


__all__ = ["FanOut", "Hit", "fan_out", "fan_tolerance_ns", "headline"]

