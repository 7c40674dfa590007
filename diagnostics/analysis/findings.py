"""One link's metrics row -> its `Finding`: rates and levels, the rules crossed, state, identity and evidence."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from functools import cache, lru_cache
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from .. import format as fmt
from ..components import ComponentRef, peer_name, switch_name
from ..config.thresholds import MISSING_RULE, Thresholds
from ..enums import ComponentKind, LinkState, LinkType, Severity
from ..metrics import COUNTERS, LEVELS, RATES, SATURATED_16BIT, SUMS, applies
from ..model import Crossing, Finding
from ..values import limits
from .metrics import records
from .rules import LinkFacts, crossings, state_crossing, summarize


def _num(value: object) -> float | None:
    if type(value) is float:  # the common case, first: a plain float, NaN meaning no value
        return None if value != value else value
    if value is None or value is pd.NA:
        return None
    try:
        out = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if math.isnan(out) else out


def _int(value: object) -> int | None:
    num = _num(value)
    return None if num is None else int(num)


def _present(value: object) -> bool:
    return value is not None and value is not pd.NA and not (isinstance(value, float) and np.isnan(value))


class _Rate(NamedTuple):
    """A rate's metric and the columns of a metrics row that hold it."""

    name: str
    per_hour: str
    increase: str
    total: str


@cache
def _metrics_on(link_type: str) -> tuple[tuple[_Rate, ...], tuple[str, ...]]:
    """The rates (with their columns) and the levels a link type has, in the metric table's order: asked once per
    link type, not once per metric of every finding (the table is code, so the answer never changes)."""
    rates = tuple(_Rate(c, f"{c}_per_hour", f"{c}_increase", f"{c}_total") for c in RATES if applies(c, link_type))
    return rates, tuple(c for c in LEVELS if applies(c, link_type))


def metrics_of(row: Mapping[str, Any], link_type: str) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """A link row's rates per hour, its levels (lanes, generations, bit-error ratios) and its counts in the window,
    without NaN and without metrics its link type does not have."""
    rates: dict[str, float] = {}
    counts: dict[str, float] = {}
    on, levels_on = _metrics_on(link_type)
    get = row.get
    for c in on:
        rate = _num(get(c.per_hour))
        if rate is not None:
            rates[c.name] = round(rate, 3)
        inc = _num(get(c.increase))
        if inc is not None:
            counts[c.name] = inc
    if "crc" not in counts and ("crc_flit" in counts or "crc_data" in counts):
        counts["crc"] = counts.get("crc_flit", 0.0) + counts.get("crc_data", 0.0)
    levels: dict[str, float] = {}
    for name in levels_on:
        level = _num(get(name))
        if level is not None:
            levels[name] = level
    return rates, levels, counts


def ref_of(row: Mapping[str, Any]) -> ComponentRef:
    """A link's identity from its row: a GPU's total over all its links has no link index."""
    total = _present(row.get("gpu_total")) and bool(row.get("gpu_total"))
    peer = str(row["peer"]) if _present(row.get("peer")) else ""
    switch = str(row["nvswitch"]) if _present(row.get("nvswitch")) else None
    link_type, gpu = str(row["link_type"]), _int(row.get("gpu"))
    bus = str(row["pci_bus_id"]) if gpu is None and link_type == LinkType.PCIE and _present(row.get("pci_bus_id")) \
        else None  # a GPU no index places (`nvidia-smi -q -i N`): its PCIe link named by its bus
    return _ref(link_type, gpu, _int(row.get("link")), total, peer, switch, bus)


@lru_cache(maxsize=1 << 14)
def _ref(link_type: str, gpu: int | None, link: int | None, total: bool, peer: str,
         switch: str | None, bus: str | None = None) -> ComponentRef:
    """`ref_of` from the row's identity columns alone: the same columns always give the same (immutable) ref, and a
    fleet's thousands of flagged links have a few hundred identities, each parsed and validated once."""
    if total and link_type != LinkType.PCIE:
        return ComponentRef.nvlink(gpu, None)
    if link_type == LinkType.NVSWITCH and switch is not None:
        return ComponentRef.nvswitch(switch_name(switch), link)
    return ComponentRef.of_link(link_type, gpu, link, peer, bus=bus)


# a peer's name from its column's text: a pure function of it, asked once per distinct text
_peer = lru_cache(maxsize=1 << 12)(peer_name)


def totals_of(row: Mapping[str, Any], link_type: str) -> dict[str, float]:
    """A link row's lifetime totals (the last cumulative reading) of the counters its link type has."""
    totals = {c.name: _num(row.get(c.total)) for c in _metrics_on(link_type)[0]}
    return {c: v for c, v in totals.items() if v is not None}


def persistence_unjudged(row: Mapping[str, Any], thresholds: Thresholds, hours: float) -> list[str]:
    """Why a persistence rule was not judged on this link: its readings begin too late to tell (`link_metrics`'
    `unjudged_<rule>`), so a link that may be flapping reads as a warning or as clean, and the answer says so."""
    said = []
    for r in thresholds.rules:
        if r.persist is None or not bool(row.get(f"unjudged_{r.name}")):
            continue
        k, m = r.persist
        said.append(f"{fmt.label(r.counter)} above {fmt.value(r.above, r.unit)} in "
                    f"{int(row[f'over_{r.name}'])} of the last {m} windows of {fmt.hours(hours)}, and its readings "
                    f"reach too few of them to tell whether {k} are ({r.name} needs {fmt.hours(m * hours)} of "
                    "readings): not judged; a shorter window judges it")
    return said


def finding_of(row: Mapping[str, Any], thresholds: Thresholds, *, stale: bool = False,
               nvlink_generation: int | None = None) -> Finding:
    """One link's finding: rates, the rules crossed, state, evidence (congestion, lone readings, resets).
    `nvlink_generation` is the node's (its platform's), where known: some of DCGM's rules apply before NVLink5 only."""
    link_type = str(row["link_type"])
    rates, levels, counts = metrics_of(row, link_type)
    windows_over = {r.name: int(row[f"over_{r.name}"]) for r in thresholds.rules
                    if r.persist is not None and f"over_{r.name}" in row}
    facts = LinkFacts(totals=totals_of(row, link_type), gen=_num(row.get("gen")), width=_num(row.get("width")),
                      nvlink_generation=nvlink_generation)
    crossed = crossings(link_type, {**rates, **levels}, thresholds, windows_over, facts)
    state = LinkState(str(row["link_state"])) if _present(row.get("link_state")) else LinkState.UP
    evidence: list[str] = []
    if stale:
        state = LinkState.DOWN
        crossed.insert(0, Crossing(rule=MISSING_RULE, counter="link_state", severity=Severity.DOWN, unit=fmt.Unit.STATE,
                                   message="series stopped inside the window: a dead link's series disappears"))
    else:
        down = state_crossing(state)
        if down is not None:
            crossed.insert(0, down)
    # one reading, or one that holds the counters (the other a cut section's, without them): totals, no rate
    lone = int(row.get("samples", 0) or 0) < 2 or (facts.totals and not counts.keys() & set(COUNTERS))
    if lone and not rates.keys() & set(COUNTERS):
        counts = dict(facts.totals)
        evidence.append("one reading: lifetime totals only (" + fmt.totals(counts) + "); a rate needs a second "
                        "reading" if counts else "one reading of the link's state: the input carries no error counters")
    covered = _num(row.get("covered_h"))
    apart = limits().rate_min_interval_s
    if int(row.get("samples", 0) or 0) >= 2 and covered is not None and covered * 3600 < apart:
        evidence.append(f"readings {covered * 3600:.3g} s apart: a rate needs readings at least "
                        f"{apart:g} s apart ([rate] min_interval_s); the increase is kept, no rate is judged")
    if int(row.get("resets", 0) or 0):
        evidence.append(f"counter reset {int(row['resets'])}x in the window (reboot or driver reload), handled")
    if _num(row.get("gen_lost_idle")):
        evidence.append("PCIe generation below maximum at idle: power saving, not a fault")
    crossed, said, unknown = _pinned(row, facts.totals, crossed)
    evidence.extend(said)
    crossed, said, cut = _dropped(row, crossed)
    evidence.extend(said)
    holes = [c for c in COUNTERS if _present(row.get(f"{c}_unread")) and bool(row.get(f"{c}_unread"))]
    if holes:
        evidence.append(fmt.unread(holes))
    unknown = [*unknown, *cut, *holes]
    rates = {c: r for c, r in rates.items() if c not in unknown}  # pinned and crossing nothing: no rate, not 0/h
    severity, ratio = summarize(crossed)
    ref = ref_of(row)
    if ref.kind is ComponentKind.NVLINK and ref.link is None and ref.gpu is not None:
        evidence.append(f"a total over all of GPU {ref.gpu}'s NVLinks: which link is not read here "
                        f"(nvidia-smi nvlink -e -i {ref.gpu} reads each link)")
    if severity is Severity.OK:
        evidence.extend(_congestion(row, thresholds))
    width, max_width = _int(row.get("width")), _int(row.get("max_width"))
    if link_type == LinkType.PCIE and width is not None and max_width and width < max_width:
        evidence.append(fmt.lanes_lost(width, max_width))
    lane = _int(row.get("lane"))
    raw = str(row["peer"]) if _present(row.get("peer")) else ""
    peer = _peer(raw) or raw or ("CPU root port" if link_type == "pcie" else "unknown")
    fields: dict[str, Any] = dict(
        ref=ref, link_type=LinkType(link_type),
        link_id=f"{link_type}-{ref.link}" if ref.link is not None else link_type, link=ref.link, gpu=ref.gpu,
        peer_gpu=ref.peer_gpu, peer=peer, link_state=state, counts=counts, rates_per_hour=rates, levels=levels,
        crossed=crossed, severity=severity, worst_ratio=ratio, switch=ref.switch,
        lanes=[] if lane is None else [lane], width=width if link_type == LinkType.PCIE else None,
        max_width=max_width if link_type == LinkType.PCIE else None, evidence=evidence,
    )
    # every field is built above from typed values (the ref and crossings validated as they were made, enums,
    # floats, ints, strings): nothing to validate; a copy of a constructed finding with every field given is cheapest
    return _BLANK.model_copy(update=fields)


_BLANK = Finding.model_construct(ref=ComponentRef.nvlink(None, None), link_type=LinkType.NVLINK, link_id="",
                                   link=None, gpu=None, peer_gpu=None, peer="unknown", link_state=LinkState.UP,
                                   counts={}, rates_per_hour={}, levels={}, crossed=[], severity=Severity.OK,
                                   worst_ratio=None, switch=None, lanes=[], width=None, max_width=None,
                                   evidence=[])


def _pinned(row: Mapping[str, Any], totals: Mapping[str, float],
            crossed: list[Crossing]) -> tuple[list[Crossing], list[str], list[str]]:
    """A link whose last reading holds a counter pinned at its 16-bit maximum (`saturated`): each rule crossed on
    that counter says its rate is a lower bound, or, where none is, the evidence does (`format.pinned`), and those
    counters' rates are unknown (the third part): what the counter shows is at least its rate, which may fail."""
    if not (_present(row.get("saturated")) and bool(row.get("saturated"))):
        return crossed, [], []
    names = [c for c, total in totals.items() if total == SATURATED_16BIT and c not in SUMS]
    said = fmt.pinned(names, SATURATED_16BIT)
    on = [c for c in crossed if not names or set(SUMS.get(c.counter, (c.counter,))) & set(names)]
    if not on:
        return crossed, [said], names
    return [c.model_copy(update={"message": f"{c.message}; {said}"}) if c in on else c for c in crossed], [], []


def _dropped(row: Mapping[str, Any], crossed: list[Crossing]) -> tuple[list[Crossing], list[str], list[str]]:
    """A link with a counter read lower than before while its other counters held (`rates.increase`'s
    `<counter>_dropped`): no restart, so its increase is not known. A rule crossed on it regardless says so; where
    none is, the evidence does (`format.dropped`) and those counters' rates are unknown (the third part)."""
    names = [c for c in COUNTERS if _present(row.get(f"{c}_dropped")) and bool(row.get(f"{c}_dropped"))]
    if not names:
        return crossed, [], []
    on = [c for c in crossed if set(SUMS.get(c.counter, (c.counter,))) & set(names)]
    if not on:
        return crossed, [fmt.dropped(names)], names
    said = fmt.dropped(names, at_least=True)
    return [c.model_copy(update={"message": f"{c.message}; {said}"}) if c in on else c for c in crossed], [], []


def unrated_links(metrics: pd.DataFrame, thresholds: Thresholds, generation: Callable[[str], int | None], *,
                  flag: str = "saturated", marker: str = fmt.PINNED) -> dict[str, list[str]]:
    """Per node, its links read twice or more whose last reading holds a pinned counter (or another `flag`) and
    that no rule fails on its lower bound: each said as its name and `format.pinned`. Their rates are unknown, and
    may fail (a lower bound that crosses a warning's 100/h may be past a failing rule's 100/s), so a node with one is
    no all-clear, as one with a link read once is not (`read_once`); read off every link, as a sweep reads. `flag`
    and `marker`: another such column and its wording (`dropped`: a counter read lower than before, no restart)."""
    if metrics.empty or flag not in metrics.columns:
        return {}
    rows = metrics[flag].astype("boolean").fillna(False).to_numpy(bool) \
        & (metrics["readings"].to_numpy(np.float64, na_value=0.0) >= 2)
    if not rows.any():  # the usual answer: no frame of no rows built (a wide one: 3 ms a call for one node)
        return {}
    out: dict[str, list[str]] = {}
    for row in records(metrics[rows]):
        node = str(row["node_id"])
        f = finding_of(row, thresholds, nvlink_generation=generation(node))
        if f.severity in (Severity.FAILING, Severity.DOWN):
            continue  # judged failing on the lower bound alone
        texts = [*f.evidence, *(c.message.rsplit("; ", 1)[-1] for c in f.crossed)]  # a crossing's note ends it
        said = next((e for e in texts if marker in e), None)
        if said is not None:
            out.setdefault(node, []).append(f"{f.component}: {said}")
    return out


def _congestion(row: Mapping[str, Any], thresholds: Thresholds) -> list[str]:
    speed = _num(row.get("speed_gbps"))
    traffic = max(_num(row.get("tx_bytes_per_s")) or 0.0, _num(row.get("rx_bytes_per_s")) or 0.0)
    if not speed or not traffic:
        return []
    share = traffic / (speed * 1e9)  # speed_gbps is GB/s per direction, as nvidia-smi nvlink -s states it
    if share >= thresholds.setting("congestion_fraction"):
        return [f"traffic at {share:.0%} of the link's capacity with no errors: congestion, not a fault"]
    return []


SAID_LINKS = 4  # links a restart note names before it counts the rest


def restart_notes(metrics: pd.DataFrame) -> dict[str, str]:
    """Per node, the links whose counters restarted inside the window, in words: a finding's evidence says it too,
    but the text answer shows evidence for its suspects alone, and a restart is what makes a rate count from zero."""
    if "resets" not in metrics.columns or not len(metrics):
        return {}
    reset = metrics["resets"].to_numpy(np.float64, na_value=0.0) > 0
    if not reset.any():
        return {}
    restarted = metrics[reset]
    links: dict[str, list[str]] = {}
    for row in records(restarted):
        links.setdefault(str(row["node_id"]), []).append(ref_of(row).name)
    notes = {}
    for node, names in links.items():
        said = ", ".join(names[:SAID_LINKS]) + (f" and {fmt.count(len(names) - SAID_LINKS, 'more link')}"
                                                if len(names) > SAID_LINKS else "")
        notes[node] = (f"the counters of {said} restarted from zero inside the window (a reboot, GPU reset or driver "
                       "reload): the readings after it count from zero, not as a drop")
    return notes
