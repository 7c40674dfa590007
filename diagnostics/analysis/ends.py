"""Which end of a link saw the errors (`data/ends.toml`): a receiver counts the errors it detects, a transmitter the
replays it had to send. A GPU's PCIe link is read at both its ends (lspci's ports: the GPU and the switch or root port
above it); a GPU's NVLink is joined to the NVSwitch port at its other end through the port map. An end is named only
where both ends were read and one of them received the errors, and an NVLink's two ends were joined by an observed
port map (`nvidia-smi nvlink -R`): a port the template only assumes may be another link's, so its counts are
evidence with that basis and name no end. Errors received at both ends name no end; nor do replays alone (a Replay
Timer Timeout also follows ACK/NAK DLLPs lost on the way back, PCIe r4.0 sec. 3.6.2, so the sender's count does not say
which direction failed). Which end received the errors is evidence: the parts keep the repair catalog's order.
Lanes are each end's own (a port numbers its own lanes)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .. import format as fmt
from ..config.ends import EndsPolicy
from ..enums import LinkEnd, LinkType, PortSource
from ..metrics import SUMS
from ..model import Finding
from ..values import limits
from .rates import NS_PER_HOUR

_OTHER = {LinkEnd.GPU: LinkEnd.UPSTREAM, LinkEnd.UPSTREAM: LinkEnd.GPU}


@dataclass(frozen=True)
class EndView:
    """What one end's port showed at its last reading in the window: the lanes in error, the errors it received
    and the replays it sent (an increase over the window where read twice, else the totals of its one reading)."""

    port: str | None = None
    lanes: tuple[int, ...] = ()
    received: dict[str, float] = field(default_factory=dict)
    sent: dict[str, float] = field(default_factory=dict)
    # the errors its receiver counted per hour between its first and last reading that hold a count (None: read
    # once, or too close together for a rate)
    received_per_hour: float | None = None
    # The Lane Error Status is sticky (RW1C, PCIe r4.0 sec. 7.7.3.3): a set bit says a lane erred at some time since
    # the status was last cleared, maybe long ago. Dated only where an earlier reading in the span read it clear.
    dated: bool = False

    @property
    def receives(self) -> bool:
        return bool(self.lanes or self.received)


def _per_hour(rows: pd.DataFrame, counters: Sequence[str]) -> float | None:
    """The errors `counters` added (each as `_amount` counts it) per hour between the first and last of the rows
    that hold one of them; None where they are one reading or closer than a rate needs (data/limits.toml)."""
    held = [c for c in counters if c in rows.columns]
    if not held:
        return None
    read = rows[rows[held].notna().any(axis=1)]
    hours = (int(read["_t"].max()) - int(read["_t"].min())) / NS_PER_HOUR if len(read) > 1 else 0.0
    if hours * 3600 < limits().rate_min_interval_s or hours <= 0:
        return None
    return sum(_amount(read[c]) for c in held) / hours


def _amount(values: pd.Series) -> float:
    got = values.dropna().astype("float64")
    if got.empty:
        return 0.0
    if len(got) == 1:
        return float(got.iloc[-1])
    change = float(got.iloc[-1] - got.iloc[0])
    return change if change >= 0 else float(got.iloc[-1])  # a drop is a reset: what it counted since


def pcie_ends(links: pd.DataFrame, t: np.ndarray, start_ns: int, end_ns: int,
              policy: EndsPolicy) -> dict[tuple[str, int], dict[LinkEnd, EndView]]:
    """(node, GPU) -> each end of its PCIe link that a reader saw (lspci, sysfs AER) from `start_ns` (the rules'
    history span, so every door that reads that span dates a lane status alike), as it stood at `end_ns`."""
    counters = [c for c in (*policy.pcie.received, *policy.pcie.sent) if c in links.columns]
    if not len(links) or not ("lane_error" in links.columns or counters):
        return {}
    seen = links["lane_error"].notna().to_numpy(copy=True) if "lane_error" in links.columns \
        else np.zeros(len(links), bool)
    for c in counters:
        seen |= links[c].notna().to_numpy()
    seen &= (links["link_type"] == LinkType.PCIE.value).to_numpy(bool, na_value=False)
    seen &= links["gpu"].notna().to_numpy() & (t <= end_ns) & (t >= start_ns)
    if not seen.any():
        return {}
    rows = links[seen].assign(_t=t[seen])
    end = rows["end"].astype("string").fillna(LinkEnd.GPU.value) if "end" in rows.columns \
        else pd.Series(LinkEnd.GPU.value, index=rows.index)
    lane = rows["lane"] if "lane" in rows.columns else pd.Series(pd.NA, index=rows.index, dtype="Int8")
    out: dict[tuple[str, int], dict[LinkEnd, EndView]] = {}
    for key, group in rows.groupby([rows["node_id"].astype("string"), rows["gpu"].astype(int), end], sort=True):
        node, gpu, side = (str(k) for k in key)
        group = group.sort_values("_t", kind="stable")
        per_lane = group[lane.loc[group.index].notna().to_numpy()]
        device = group[lane.loc[group.index].isna().to_numpy()]
        last = int(group["_t"].max())
        named: tuple[int, ...] = ()
        dated = False
        flag = device["lane_error"].dropna() if "lane_error" in device.columns else pd.Series(dtype=object)
        if len(flag) and bool(flag.iloc[-1]):
            at = int(device.loc[flag.index[-1], "_t"])
            named = tuple(sorted({int(v) for v in per_lane.loc[per_lane["_t"] == at, "lane"]}))
            dated = not bool(flag.astype(bool).all())  # a reading in the span read it clear: set since then
        elif not len(flag) and len(per_lane):
            named = tuple(sorted({int(v) for v in per_lane.loc[per_lane["_t"] == last, "lane"]}))
        amounts = {c: _amount(device[c]) for c in counters if c in device.columns}
        port = None
        if side != LinkEnd.GPU.value and "peer" in device.columns and len(device):
            port = str(device["peer"].iloc[-1])
        elif "pci_bus_id" in device.columns and len(device) and pd.notna(device["pci_bus_id"].iloc[-1]):
            port = str(device["pci_bus_id"].iloc[-1])  # the GPU's own address: where its status is read
        out.setdefault((str(node), int(gpu)), {})[LinkEnd(side)] = EndView(
            port=port, lanes=named, dated=dated, received_per_hour=_per_hour(device, policy.pcie.received),
            received={c: v for c, v in amounts.items() if c in policy.pcie.received and v > 0},
            sent={c: v for c, v in amounts.items() if c in policy.pcie.sent and v > 0})
    return out


def _said(amounts: Mapping[str, float]) -> str:
    return ", ".join(f"{fmt.label(c)} {fmt.number(v)}" for c, v in sorted(amounts.items()))


def _name(end: LinkEnd, gpu: int, views: Mapping[LinkEnd, EndView]) -> str:
    if end is LinkEnd.GPU:
        return f"GPU {gpu}'s port"
    port = views[end].port if end in views else None
    return "the port above it" + (f" ({port})" if port else "")


def undated_notes(views: Mapping[LinkEnd, EndView], gpu: int) -> list[str]:
    """What to do about a set lane status no earlier reading dates: clear it and read it again (advice only)."""
    notes = []
    for end in (LinkEnd.GPU, LinkEnd.UPSTREAM):
        v = views.get(end)
        if v is None or not v.lanes or v.dated:
            continue
        at = v.port or "ADDR"
        notes.append(
            f"GPU {gpu} PCIe: {_name(end, gpu, views)} names {_lanes(v.lanes)} in its lane error status, and no "
            "earlier reading in the span read it clear: the status is sticky (RW1C, PCIe r4.0 sec. 7.7.3.3), so "
            f"the {fmt.noun(len(v.lanes), 'lane')} may have erred long ago (a warning, not a failure). To date it, "
            "read `lspci -vvv` again after the status is cleared: the next power cycle clears it, or, with the node "
            f"drained, a person writes back the value read (`setpci -s {at} ECAP_SECPCI+8.L` reads it; writing it "
            "back clears those bits, a write to the device's configuration space that fabricbot never makes): a lane "
            "named again has erred since")
    return notes


def _lanes(lanes: Sequence[int]) -> str:
    """Lanes as a status names them: 'lane 6', 'lanes 0, 3'."""
    return f"{fmt.noun(len(lanes), 'lane')} {', '.join(map(str, lanes))}"


def pcie_end(views: Mapping[LinkEnd, EndView], gpu: int) -> tuple[LinkEnd | None, list[int], list[str]]:
    """The end whose receiver saw the errors, its lanes in error, and why; no end unless both ends were read."""
    receiving = [e for e in (LinkEnd.GPU, LinkEnd.UPSTREAM) if e in views and views[e].receives]
    lanes = [lane for e in receiving[:1] for lane in views[e].lanes]
    evidence = []
    for e in receiving:
        v = views[e]
        when = "set since a reading that read it clear" if v.dated else "undated: set at some time since it was " \
            "last cleared"
        what = [f"{_lanes(v.lanes)} in error (lane error status, {when})"] if v.lanes else []
        what += [_said(v.received)] if v.received else []
        evidence.append(f"{_name(e, gpu, views)} received errors: {'; '.join(what)}")
    if len(views) < 2:
        if receiving:
            evidence.append("only one end of the link was read: read the other with `lspci -vvv` (the port above "
                            "the GPU is the bridge whose secondary bus is the GPU's) to tell which end")
        return None, lanes, evidence
    if len(receiving) == 2:
        return None, lanes, [*evidence, "errors received at both ends: the link between them, not one end"]
    if len(receiving) == 1:
        end = receiving[0]
        far = views[_OTHER[end]]
        if far.sent:
            evidence.append(f"{_name(_OTHER[end], gpu, views)} counts the replays it sent ({_said(far.sent)}): "
                            f"the fault is seen from both ends, and the errors reach {_name(end, gpu, views)}")
        else:
            evidence.append(f"{_name(_OTHER[end], gpu, views)} received none: the errors reach "
                            f"{_name(end, gpu, views)} only")
        return end, lanes, evidence
    senders = [e for e in (LinkEnd.GPU, LinkEnd.UPSTREAM) if views[e].sent]
    for e in senders:
        evidence.append(f"{_name(e, gpu, views)} replayed ({_said(views[e].sent)}) and neither end received errors: "
                        "no end named (a replay timer timeout also follows ACK/NAK DLLPs lost on the return path, "
                        "PCIe r4.0 sec. 3.6.2)")
    return None, lanes, evidence


def _counts(f: Finding, counters: list[str]) -> list[str]:
    """The counters among `counters` over one of the finding's rules (CRC rules sum the flit and data counts)."""
    return sorted({c.counter for c in f.crossed
                   if c.counter in counters or set(SUMS.get(c.counter, ())) & set(counters)})


def nvlink_ends(findings: list[Finding], policy: EndsPolicy) -> list[Finding]:
    """Each GPU NVLink finding joined to the finding of the NVSwitch port at its other end (by the port map): the
    GPU link takes the end whose receiver counted the errors and the port's evidence; the port's finding is folded
    into it (the same link, seen from the switch). Ports whose GPU link is not flagged stay as they are."""
    ports = {(f.ref.switch, f.ref.port): f for f in findings
             if f.link_type is LinkType.NVSWITCH and f.ref.port is not None and f.crossed}
    if not ports:
        return findings
    received, sent = list(policy.nvlink.received), list(policy.nvlink.sent)
    folded: set[int] = set()
    out = []
    for f in findings:
        port = ports.get((f.switch, f.switch_port)) \
            if f.link_type is LinkType.NVLINK and f.switch_port is not None else None
        if port is None or not f.crossed:
            out.append(f)
            continue
        folded.add(id(port))
        observed = f.port_source is PortSource.OBSERVED
        gpu_in, port_in = _counts(f, received), _counts(port, received)
        gpu_out, port_out = _counts(f, sent), _counts(port, sent)
        here, there = f"GPU {f.gpu}'s end", f"{port.ref.name}"
        end = None
        if gpu_in and not port_in:
            end = LinkEnd.GPU
        elif port_in and not gpu_in:
            end = LinkEnd.NVSWITCH
        elif not gpu_in and not port_in and bool(gpu_out) != bool(port_out):
            end = LinkEnd.NVSWITCH if gpu_out else LinkEnd.GPU
        said = "; ".join(c.message for c in port.crossed)
        if end is LinkEnd.GPU:
            why = f"the errors reach {here}: it counts {', '.join(map(fmt.label, gpu_in))}" if gpu_in else \
                f"{there} replayed what it sent"
        elif end is LinkEnd.NVSWITCH:
            why = f"the errors reach {there}: it counts {', '.join(map(fmt.label, port_in))}" if port_in else \
                f"{here} replayed what it sent"
        else:
            why = "both ends count received errors: the link between them, not one end" if gpu_in and port_in \
                else "the two ends do not say which received the errors"
        basis = f"seen from both ends (the port map observed): {why}" if observed else (
            f"no end named: {there} is this link's other end only by the {f.port_source.value} port map "
            f"(`nvidia-smi nvlink -R -i {f.gpu}` reads it); what the two count: {why}")
        out.append(f.model_copy(update={"end": end if observed else None, "evidence": [
            *f.evidence, f"the other end, {there} (by the {f.port_source.value} port map): {said}", basis]}))
    return [f for f in out if id(f) not in folded]
