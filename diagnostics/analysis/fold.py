"""One part, one finding, where two sources judged it apart: a node's count of degraded links and the fleet view
count it once, the sweep lists each rule it broke once, and what each source said is kept as its evidence.

A link's per-lane counters (`nvidia-smi nvlink -ec` counts each lane's CRC errors) are rated as series of their own,
but they are the link's, not more links. A GPU off the bus is found twice, by its Xid 79 (the events) and by its
silence (every series stopped): one GPU; and its peers' NVLinks to it read inactive from their far ends because it is
gone (the Xid catalog's note on Xid 74: a GPU whose peer failed reports the link down), so they are its evidence, not
more faults; so are the fatal SXids its switch ends report as its links go down with it. An SXid on the NVSwitch
port a degraded GPU NVLink lands on is that link's switch end: one link."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from .. import format as fmt
from ..config import load_sxid_catalog
from ..config.thresholds import GPU_MISSING_RULE, LINK_DOWN_RULE, MISSING_RULE, OFF_BUS_RULE, SXID_FATAL_RULE
from ..enums import ComponentKind, LinkType, Severity, severity_rank
from ..model import Finding
from .absence import gpu_gone
from .rules import summarize


def lanes_on_links(findings: list[Finding]) -> list[Finding]:
    """The findings with each NVLink or NVSwitch port's lane findings folded into its own (or, where only its lanes
    were read, into the worst lane's), in the order given. A PCIe link's lanes are named by `ends` instead."""
    groups: dict[tuple[str, str], list[int]] = {}
    for i, f in enumerate(findings):
        if f.link_type is not LinkType.PCIE:
            groups.setdefault((f.link_type.value, f.ref.slug), []).append(i)
    folded: dict[int, Finding] = {}
    dropped: set[int] = set()
    for members in groups.values():
        lanes = [i for i in members if findings[i].lanes]
        if not lanes or len(members) < 2:
            continue
        whole = [i for i in members if not findings[i].lanes]
        base = whole[0] if whole else max(lanes, key=lambda i: _rank(findings[i]))
        folded[base] = _fold(findings[base], [findings[i] for i in lanes if i != base], bool(whole))
        dropped.update(i for i in lanes if i != base)
    return _kept(findings, folded, dropped)


def _kept(findings: list[Finding], folded: dict[int, Finding], dropped: set[int]) -> list[Finding]:
    """The findings in the order given, each folded one in its place and those folded into it left out: every fold
    keeps the order the analysis made."""
    return [folded.get(i, f) for i, f in enumerate(findings) if i not in dropped]


def _merged(base: Finding, parts: Sequence[Finding], *said: str) -> Finding:
    """`base` (one of `parts`) as the one finding of all `parts`: every rule each crossed in their order, the worst
    severity, the earliest onset, each one's evidence once (then `said`), and its own counts with any counter only
    the others counted (from the first that did), so the part kept says all that its sources said."""
    crossed = [c for f in parts for c in f.crossed]
    severity, ratio = summarize(crossed)
    counts = {k: v for f in reversed([base, *parts]) for k, v in f.counts.items()}
    onsets = [f.onset for f in parts if f.onset is not None]
    return base.model_copy(update={
        "crossed": crossed, "counts": counts, "severity": severity, "worst_ratio": ratio,
        "onset": min(onsets) if onsets else None,
        "evidence": list(dict.fromkeys([*(e for f in parts for e in f.evidence), *said]))})


def _rank(f: Finding) -> tuple[int, float]:
    return severity_rank(f.severity), f.worst_ratio or 0.0


def _fold(link: Finding, lanes: list[Finding], whole: bool) -> Finding:
    """The link with its lanes: each lane over a rule named and said; a rule only a lane crossed (the link's own
    series lacks that counter) is the link's too, so a lane never makes its link look healthier. A lane series that
    stopped or a lane state says nothing of the link while the link's own series is read (`whole`)."""
    crossed = list(link.crossed) if whole else \
        [c.model_copy(update={"message": f"lane {', '.join(map(str, link.lanes))}: {c.message}"}) for c in link.crossed]
    rules = {c.rule for c in crossed}
    named = set(link.lanes) if link.crossed else set()
    evidence = list(link.evidence)
    for lane in sorted(lanes, key=lambda f: f.lanes):
        if lane.severity is Severity.OK:
            continue
        which = ", ".join(map(str, lane.lanes))
        named.update(lane.lanes)
        evidence.append(f"lane {which}, by its own counter: " + "; ".join(c.message for c in lane.crossed))
        for c in lane.crossed:
            if c.rule in rules or (whole and c.rule in (MISSING_RULE, LINK_DOWN_RULE)):
                continue
            rules.add(c.rule)
            crossed.append(c.model_copy(update={"message": f"lane {which}: {c.message}"}))
    severity, ratio = summarize(crossed)
    return link.model_copy(update={"lanes": sorted(named), "crossed": crossed, "evidence": evidence,
                                   "severity": severity, "worst_ratio": ratio})


def one_per_gone_gpu(findings: list[Finding]) -> list[Finding]:
    """A GPU off the bus is one finding, where its Xid 79 and its silence were found apart: the silence's finding
    (the GPU itself, as a ticket names it) takes every rule the Xid crossed (the sweep names each on the GPU's one
    row), its counts, its onset and its evidence, in the place of the first, so a node's count of degraded links
    counts the GPU once."""
    mine: dict[int, list[int]] = {}
    for i, f in enumerate(findings):
        if f.gpu is not None and gpu_gone(f):
            mine.setdefault(f.gpu, []).append(i)
    folded: dict[int, Finding] = {}
    dropped: set[int] = set()
    for at in mine.values():
        if len(at) < 2:
            continue
        group = [findings[i] for i in at]
        base = next((f for f in group if any(c.rule == GPU_MISSING_RULE for c in f.crossed)), group[0])
        folded[at[0]] = _merged(base, group)
        dropped.update(at[1:])
    return _kept(findings, folded, dropped)


def peers_of_gone_gpus(findings: list[Finding]) -> list[Finding]:
    """Each NVLink that is down only because its far end is a gone GPU (off the bus, silent), read from its peer's
    end, folded into that GPU's finding as evidence: the peer reads its link inactive because the GPU went, so the
    node has one part to repair, counted once, and its picture draws the GPU's links as not reporting, not each as a
    fault of its own. A link that broke any other rule (errors, an Xid of its own) keeps its own finding."""
    gone = {f.gpu: i for i, f in enumerate(findings)
            if f.ref.kind is ComponentKind.GPU and f.gpu is not None and gpu_gone(f)}
    if not gone:
        return findings
    peers: dict[int, list[int]] = {}  # the gone GPU's finding -> the links down because it went
    for i, f in enumerate(findings):
        far = f.ref.peer_gpu if f.ref.peer_gpu is not None else f.peer_gpu
        if f.link_type is LinkType.NVLINK and far in gone and f.gpu != far and f.crossed \
                and all(c.rule == LINK_DOWN_RULE for c in f.crossed):
            peers.setdefault(gone[far], []).append(i)
    dropped = {i for members in peers.values() for i in members}
    out = []
    for i, f in enumerate(findings):
        if i in dropped:
            continue
        if i in peers:
            names = ", ".join(findings[j].ref.name for j in peers[i])
            said = (f"{fmt.count(len(peers[i]), 'NVLink')} to GPU {f.gpu} read inactive at the other end ({names}): "
                    f"GPU {f.gpu} is gone, so each peer sees its link to it go down (a GPU whose peer failed reports "
                    f"the link down); one part to repair, GPU {f.gpu}")
            f = f.model_copy(update={"evidence": [*f.evidence, said]})
        out.append(f)
    return out


FELL_WITH = timedelta(minutes=1)  # after a GPU's Xid 79: its links' switch ends report them down within seconds
RESET_GPU = "RESET_GPU"  # the SXid catalog's resolution of a fault whose cure is the GPU on the link


def sxids_of_gone_gpus(findings: list[Finding]) -> list[Finding]:
    """Each NVSwitch port's fatal SXid that NVIDIA resolves by resetting the GPU on its link (the catalog's
    RESET_GPU: 20034 LTSSM Fault Up), reported within `FELL_WITH` after a GPU of the node fell off the bus (its Xid
    79), folded into that GPU's finding as evidence: its NVLinks went down with it and their switch ends saw them go
    (the two "often happen together", as gpud documents them); one part to repair, the GPU, whose restart resets
    what the SXid asks. With two GPUs off the bus in that minute none is folded: only a port map tells whose link
    a port is. An SXid of another cure, or long after, keeps its own finding."""
    off = [(i, f.onset) for i, f in enumerate(findings)
           if f.onset is not None and any(c.rule == OFF_BUS_RULE for c in f.crossed)]
    if not off:
        return findings
    catalog = load_sxid_catalog()
    ends: dict[int, list[int]] = {}  # the gone GPU's finding -> the switch ends that saw its links go
    for i, f in enumerate(findings):
        codes = {code for c in f.crossed for code in c.codes}
        if f.ref.kind is not ComponentKind.NVSWITCH or f.onset is None or not codes \
                or any(c.rule != SXID_FATAL_RULE for c in f.crossed) \
                or any(catalog.entry(code).immediate_action != RESET_GPU for code in codes):
            continue
        near = [g for g, t in off if t is not None and timedelta(0) <= f.onset - t <= FELL_WITH]
        if len(near) == 1:
            ends.setdefault(near[0], []).append(i)
    if not ends:
        return findings
    folded: dict[int, Finding] = {}
    for gpu, members in ends.items():
        reported = sorted({code for i in members for c in findings[i].crossed for code in c.codes})
        names = ", ".join(findings[i].ref.name for i in members)
        said = (f"SXid {', '.join(map(str, reported))} on {names}, reported with its Xid 79 (within "
                f"{fmt.period(FELL_WITH.total_seconds())} after it, or in the same log where the log gives no time): "
                f"NVIDIA resolves {'it' if len(reported) == 1 else 'them'} by resetting the GPU on the link, so the "
                "switch ends saw this GPU's NVLinks go down with it; one part to repair, this GPU")
        base = findings[gpu]
        folded[gpu] = base.model_copy(update={"evidence": [*base.evidence, said]})
    return _kept(findings, folded, {i for members in ends.values() for i in members})


def switch_ends_on_links(findings: list[Finding]) -> list[Finding]:
    """Each NVSwitch port's event finding (an SXid names the switch and its link, `Link 25`) folded into the degraded
    GPU NVLink that lands on that port (by the port map), in the link's place: the GPU's end and the switch's end of
    one link are one degraded link, not two. The link takes every rule the SXid crossed (a fatal SXid still names
    the port as the part to localize), the worse severity, the SXid's counts and onset, and its evidence. A port no
    degraded GPU link lands on stays as it is."""
    ports: dict[tuple[str | None, int | None], int] = {
        (f.ref.switch, f.ref.port): i for i, f in enumerate(findings)
        if f.ref.kind is ComponentKind.NVSWITCH and f.ref.port is not None and f.crossed}
    if not ports:
        return findings
    folded: dict[int, Finding] = {}
    dropped: set[int] = set()
    for i, f in enumerate(findings):
        at = ports.get((f.switch, f.switch_port)) if f.link_type is LinkType.NVLINK and f.crossed else None
        if at is None or at in dropped or f.severity is Severity.OK:
            continue
        port = findings[at]
        folded[i] = _merged(f, [port, f],  # the SXid first: it says why the link is down
                            f"{port.ref.name} is this link's switch end (by the {f.port_source.value} port map): "
                            "one link, seen from the GPU and from the switch")
        dropped.add(at)
    return _kept(findings, folded, dropped)
