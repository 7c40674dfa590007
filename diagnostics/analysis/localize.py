"""Common-cause analysis: which physical part explains the failing links.

Failing links that share an endpoint point to that endpoint: most links of one GPU -> the GPU (its module); links
of several GPUs landing on one NVSwitch -> that switch (its baseboard); most GPUs' links at once -> what they all
share (every switch, or the NVLink mesh), one suspect; a lone link -> its port pair. Software that
looks like hardware (Fabric Manager down, all links inactive) names no part; after an Xid 79 the GPU is the suspect;
a GPU's NVLink total over all its links (Blackwell's counters) points to the GPU's links, not to one of them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .. import format as fmt
from ..components import ComponentRef
from ..config.thresholds import (
    BELOW_EXPECTED_RULE,
    OFF_BUS_RULE,
    SOFTWARE_RULE,
    SXID_FATAL_RULE,
    XID_NVLINK_RULE,
    Thresholds,
    load_thresholds,
)
from ..enums import ComponentKind, FaultKind, LinkType, PortSource, Severity, severity_rank
from ..model import Finding, Localization
from ..repair import xid_fatal
from ..topology import NodeGraph
from ..topology.graph import FABRIC, NVSWITCH
from .absence import gpu_gone
from .placed import port_at

# How many failing links make a GPU, the switches or the NVLink mesh their common end: thresholds.toml's [settings]
# (gpu_wide_*, shared_switch_share, shared_gpu_share), where each value's reason is written.
ALL_SWITCHES = "all NVSwitches (shared by every GPU)"
DOWNTRAIN_RULES = {"pcie_width", "pcie_gen_under_load"}


END_EVIDENCE = ("the other end", "seen from both ends", "no end named")  # what a link's two ends said, with its basis


def _bad(f: Finding) -> bool:
    return f.severity in (Severity.FAILING, Severity.DOWN)


def _rules(f: Finding) -> set[str]:
    return {c.rule for c in f.crossed}


def _expected(graph: NodeGraph | None, gpu: int, seen: int) -> int:
    if graph is not None:
        try:
            return int(graph.expected_links(gpu, LinkType.NVLINK.value))
        except Exception:
            return seen
    return seen


def _port(graph: NodeGraph | None, f: Finding) -> dict[str, Any]:
    """Switch, port and identity from the topology graph, where it knows the link."""
    if graph is None or f.gpu is None or f.link is None:
        return {}
    try:
        port = port_at(graph, f.gpu, f.link, f.link_type.value)
    except Exception:
        return {}
    return {"ref": port.ref, "switch": port.switch, "switch_port": port.switch_port,
            "port_source": PortSource(port.source), "peer": port.peer}


def _grade(links: list[Finding]) -> dict[str, Any]:
    """A component's severity and how far over its thresholds, from the findings it explains."""
    worst = max(links, key=lambda f: (severity_rank(f.severity), f.worst_ratio or 0.0))
    return {"severity": worst.severity, "worst_ratio": worst.worst_ratio,
            "links": [f.component for f in links]}


def localize_all(findings: Iterable[Finding], graph: NodeGraph | None = None,
                 links_per_gpu: Mapping[int, int] | None = None,
                 thresholds: Thresholds | None = None) -> list[Localization]:
    """Every suspected component behind the failing findings, most certain first; `thresholds`' settings say how
    many failing links make a GPU or the switches their common end (default: the thresholds file in force)."""
    findings = list(findings)
    setting = (thresholds or load_thresholds()).setting
    software = [f for f in findings if SOFTWARE_RULE in _rules(f) and _bad(f)]
    if software:
        return [Localization(ref=ComponentRef.fabric_software(), fault=FaultKind.FABRIC_MANAGER, confidence=0.8,
                             **_grade(software), evidence=[e for f in software for e in f.evidence]
                             + ["no part goes on the ticket: restart Fabric Manager or reload the driver first"])]
    out: list[Localization] = []
    off_bus = sorted({f.gpu for f in findings if gpu_gone(f) and f.gpu is not None})
    for gpu in off_bus:
        mine = [f for f in findings if f.gpu == gpu and gpu_gone(f)]
        xid = any(OFF_BUS_RULE in _rules(f) for f in mine)
        why = (f"Xid 79 on GPU {gpu}: it fell off the bus; the GPU's PCIe link (riser, slot) and the GPU itself are "
               "the suspects, not the NVLinks or switches around it" if xid else
               f"GPU {gpu} reports no telemetry at all while the node's other GPUs do: it is off the bus or its "
               "driver lost it")
        evidence = [why, *dict.fromkeys(e for f in mine for e in f.evidence)]  # the Xid lines, the PCIe history
        out.append(Localization(ref=ComponentRef.of_gpu(gpu), fault=FaultKind.GPU_OFF_BUS, gpu=gpu,
                                confidence=0.9 if xid else 0.6, **_grade(mine), evidence=evidence))
    # a log alone names the GPU by its PCI address: the same suspect, known by its bus until an index is given
    for bus in sorted({f.ref.bus for f in findings if OFF_BUS_RULE in _rules(f) and f.gpu is None and f.ref.bus}):
        mine = [f for f in findings if f.gpu is None and f.ref.bus == bus and OFF_BUS_RULE in _rules(f)]
        why = (f"Xid 79 on the GPU at PCI {bus}: it fell off the bus; the GPU's PCIe link (riser, slot) and the GPU "
               "itself are the suspects (which GPU index it is, `nvidia-smi -q` or the GPU table tells)")
        out.append(Localization(ref=ComponentRef.of_gpu(None, bus=bus), fault=FaultKind.GPU_OFF_BUS, confidence=0.9,
                                **_grade(mine), evidence=[why, *dict.fromkeys(e for f in mine for e in f.evidence)]))
    fatal = [f for f in findings if SXID_FATAL_RULE in _rules(f)]
    # a GPU's NVLink landing on the port a fatal SXid stopped is that same link seen from the GPU: not a second part
    stopped = {(_stopped(f).switch, _stopped(f).port) for f in fatal if _stopped(f).port is not None}
    behind: dict[tuple[Any, Any], list[Finding]] = defaultdict(list)
    for f in findings:
        if _bad(f) and f.ref.kind is ComponentKind.NVLINK and f.link is not None and stopped:
            port = _port(graph, f)
            where = (port.get("switch") or f.switch, port.get("switch_port", f.switch_port))
            if where in stopped:
                behind[where].append(f)
    out.extend(_switch_fatal(f, behind.get((_stopped(f).switch, _stopped(f).port), [])) for f in fatal)
    folded = [b for links in behind.values() for b in links]
    # links only: an Xid names a GPU and an SXid a switch port, and they are weighed above
    bad = [f for f in findings if _bad(f) and f.gpu not in off_bus and f.peer_gpu not in off_bus and f not in fatal
           and f not in folded and f.ref.kind in (ComponentKind.NVLINK, ComponentKind.PCIE, ComponentKind.NVSWITCH)]
    out.extend(_pcie(f) for f in bad if f.ref.kind is ComponentKind.PCIE)
    out.extend(_aggregate(f) for f in bad if f.ref.kind is ComponentKind.NVLINK and f.ref.link is None)
    nvlinks = [f for f in bad if f.ref.kind is not ComponentKind.PCIE and f.link is not None]
    seen: dict[int, int] = defaultdict(int)
    for f in findings:
        if f.link_type is LinkType.NVLINK and f.gpu is not None and f.link is not None:
            seen[f.gpu] += 1
    shared, nvlinks = _shared_switches(nvlinks, graph, set(graph.gpus) if graph is not None else set(seen),
                                       setting("shared_switch_share"))
    out.extend(shared)
    by_gpu: dict[int, list[Finding]] = defaultdict(list)
    for f in nvlinks:
        if f.gpu is not None:
            by_gpu[f.gpu].append(f)
    wide: list[int] = []
    per_gpu: list[Localization] = []
    for gpu, links in sorted(by_gpu.items()):
        expected = (links_per_gpu or {}).get(gpu) or _expected(graph, gpu, seen[gpu])
        down = [f for f in links if f.severity is Severity.DOWN]
        ends = sorted({str(end) for f in down if (end := _port(graph, f).get("peer") or f.peer)})
        many = len(links) >= max(setting("gpu_wide_min_links"), setting("gpu_wide_share") * max(expected, 1))
        if many or len(ends) >= setting("gpu_wide_min_down_links"):
            wide.append(gpu)
            why = (f"{len(links)} of GPU {gpu}'s {expected} NVLinks fail: the common end is the GPU (its module), not "
                   "the switches or peers" if many else
                   f"{len(down)} of GPU {gpu}'s {expected} NVLinks are down, to {', '.join(ends)}: a link goes down as "
                   f"a whole, and these share nothing but GPU {gpu} (its module or its socket)")
            per_gpu.append(Localization(
                ref=ComponentRef.of_gpu(gpu), fault=FaultKind.GPU_NVLINKS, gpu=gpu,
                confidence=round(min(0.95, 0.5 + 0.5 * len(links) / max(expected, 1)), 2), **_grade(links),
                evidence=[why]))
    node_gpus = set(graph.gpus) if graph is not None else set(seen)
    mesh = _shared_mesh({g: by_gpu[g] for g in wide}, node_gpus, graph, setting("shared_gpu_share"))
    out.extend([mesh] if mesh is not None else per_gpu)
    rest = [f for f in nvlinks if f.gpu not in wide and f.peer_gpu not in wide]
    by_switch: dict[str, list[Finding]] = defaultdict(list)
    for f in rest:
        switch = _port(graph, f).get("switch") or f.switch
        if switch and switch != FABRIC:  # links on chips not told apart share no one chip
            by_switch[str(switch)].append(f)
    for switch, links in sorted(by_switch.items()):
        gpus = sorted({f.gpu for f in links if f.gpu is not None})
        if len(gpus) >= 2:
            rest = [f for f in rest if f not in links]
            out.append(Localization(
                ref=ComponentRef.nvswitch(switch), fault=FaultKind.NVSWITCH, switch=switch,
                confidence=round(min(0.95, 0.6 + 0.1 * len(gpus)), 2), **_grade(links),
                evidence=[f"failing links of GPUs {', '.join(map(str, gpus))} all land on {switch}: "
                          "the switch (its baseboard) is the common end"]))
    out.extend(_links(rest, graph))
    covered = {loc.gpu for loc in out if loc.gpu is not None}
    xids = [f for f in findings if _bad(f) and XID_NVLINK_RULE in _rules(f)]
    out = [_with_own_xids(loc, xids) for loc in out]
    out.extend(_xid_link(f) for f in xids if f.gpu not in covered)
    return sorted(out, key=_standing(findings))


def _with_own_xids(loc: Localization, xids: list[Finding]) -> Localization:
    """A GPU suspected on its NVLinks with the NVLink Xids its driver logged on it: they are that part's events, listed
    and ranked with it, not after its links as if no suspect explained them."""
    if loc.fault is not FaultKind.GPU_NVLINKS or loc.gpu is None:
        return loc
    own = [f.component for f in xids if f.gpu == loc.gpu and f.component not in loc.links]
    return loc.model_copy(update={"links": [*loc.links, *own]}) if own else loc


def _standing(findings: list[Finding]) -> Any:
    """Most certain first; between suspects as certain, one a fatal event stopped (a Link Fatal Xid 149 beside an
    Xid 145 that names no subcode) or whose link is down, then the worse severity: the isolated part is the one whose
    ticket is the most urgent, not the first by PCI address."""
    by_name = {f.component: f for f in findings}

    def key(loc: Localization) -> tuple[float, bool, int]:
        mine = [by_name[name] for name in loc.links if name in by_name]
        stopped = any(f.severity is Severity.DOWN or any(c.fatal for c in f.crossed) for f in mine)
        return -loc.confidence, not stopped, -severity_rank(loc.severity)
    return key


def _shared_switches(nvlinks: list[Finding], graph: NodeGraph | None, gpus: set[int],
                     share: float) -> tuple[list[Localization], list[Finding]]:
    """The switches most of the node's GPUs fail on, and the links they leave to weigh GPU by GPU. When every switch
    is such a one, no GPU and no one switch explains it: what all links share does (the baseboard that carries the
    switches, or the node's driver, firmware, Fabric Manager or power), and it is one suspect, not a GPU each."""
    where: dict[str, list[Finding]] = defaultdict(list)
    for f in nvlinks:
        switch = _port(graph, f).get("switch") or f.switch
        if switch and f.gpu is not None:
            where[str(switch)].append(f)
    hit = {sw: sorted({f.gpu for f in links if f.gpu is not None}) for sw, links in where.items()}
    wide = sorted(sw for sw, on in hit.items() if len(on) >= 2 and len(on) > share * max(len(gpus), 1))
    if not wide:
        return [], nvlinks
    taken = [f for sw in wide for f in where[sw]]
    rest = [f for f in nvlinks if f not in taken]
    every = graph.switches(NVSWITCH) if graph is not None else []
    if (len(every) >= 2 or every == [FABRIC]) and set(every) <= set(wide):
        many = sorted({g for sw in wide for g in hit[sw]})
        on = "the node's NVSwitches" if every == [FABRIC] else f"all {len(every)} NVSwitches"
        return [Localization(
            ref=ComponentRef.nvswitch(ALL_SWITCHES), fault=FaultKind.NVSWITCH_SHARED, confidence=0.6, **_grade(taken),
            evidence=[f"{len(taken)} failing NVLinks of GPUs {', '.join(map(str, many))}, on {on} "
                      "alike: no one GPU or switch explains it; what every link shares does: the "
                      "baseboard that carries the NVSwitches, or the node's driver, firmware, Fabric Manager or power",
                      "compare the driver, Fabric Manager and NVSwitch firmware versions and read the Fabric Manager "
                      "log and the BMC's event log first, then power-cycle the drained node: replacing the baseboard "
                      "stops every GPU of the node"])], rest
    return [Localization(
        ref=ComponentRef.nvswitch(sw), fault=FaultKind.NVSWITCH, switch=sw,
        confidence=round(min(0.95, 0.6 + 0.1 * len(hit[sw])), 2), **_grade(where[sw]),
        evidence=[f"failing links of GPUs {', '.join(map(str, hit[sw]))} all land on {sw}, most of the node's GPUs: "
                  "the switch (its baseboard) is the common end, not each GPU"]) for sw in wide], rest


def _shared_mesh(wide: dict[int, list[Finding]], gpus: set[int], graph: NodeGraph | None,
                 share: float) -> Localization | None:
    """Most of the node's GPUs each failing on most of their NVLinks, with no NVSwitch known among them (direct
    links, bridges, or no platform): no one GPU explains it, what every link shares does (the board that carries
    the links, or the node's driver, firmware or power), and it is one suspect, not a GPU each. None otherwise."""
    if graph is not None and graph.switches(NVSWITCH):
        return None  # a switched board's shared cause is its switches': _shared_switches weighs it
    if len(wide) < 2 or len(wide) <= share * max(len(gpus), 1):
        return None
    taken = [f for links in wide.values() for f in links]
    said = (f"{len(taken)} failing NVLinks of GPUs {', '.join(map(str, sorted(wide)))}: {len(wide)} of the node's "
            f"{len(gpus)} GPUs fail on most of their NVLinks alike, and no one GPU explains it")
    if graph is None:  # the board is not known: what the links share is likely, but no part can be named
        evidence = [f"{said}; a shared cause is likely (the node's driver, firmware or power, or the board that "
                    "carries every link), not each GPU",
                    "the platform is not known, so no part is named: compare the driver's version and read the "
                    "kernel log and the BMC's event log first, then power-cycle the drained node, and identify the "
                    "board (`nvidia-smi -q | grep -i \"product name\"`, `nvidia-smi topo -m`) before any part"]
    else:
        evidence = [f"{said}; what every link shares does: the board's NVLink mesh (the traces or bridges between "
                    "the GPUs), or the node's driver, firmware or power",
                    "compare the driver and firmware versions and read the kernel log and the BMC's event log first, "
                    "then power-cycle the drained node: replacing the board stops every GPU of the node"]
    return Localization(ref=ComponentRef.nvlink_mesh(), fault=FaultKind.NVLINK_SHARED, confidence=0.6,
                        **_grade(taken), evidence=evidence)


def _xid_link(f: Finding) -> Localization:
    """An NVLink Xid on a GPU whose counters show nothing failing: an NVLink fault of that GPU, on the link its lines
    name, else on a link still to be found (not a GPU-wide total: those are Blackwell's DCGM counters alone)."""
    link = f.link  # kept where the GPU is named by PCI address alone: the line still names its link
    ref = ComponentRef.nvlink(f.gpu, link) if f.gpu is not None else f.ref
    fault = FaultKind.NVLINK
    read = f"`nvidia-smi nvlink -e -i {f.gpu}`" if f.gpu is not None else "`nvidia-smi nvlink -e`"
    asked = next((c for c in f.crossed if c.investigate), None)  # NVIDIA's decode: e.g. the far end
    return Localization(ref=ref, fault=fault, gpu=f.gpu, link=link, confidence=0.6, fatal=xid_fatal(f), **_grade([f]),
                        investigate=asked.investigate if asked else None,
                        investigate_bucket=asked.investigate_bucket if asked else None,
                        evidence=[*(c.message for c in f.crossed), *f.evidence[:2],
                                  f"the driver reported an NVLink error on this GPU; {read} reads which link"])


def _pcie(f: Finding) -> Localization:
    evidence = [c.message for c in f.crossed] + [e for e in f.evidence if "lanes" in e]
    fault = FaultKind.PCIE_DOWNTRAIN if _rules(f) & DOWNTRAIN_RULES else FaultKind.PCIE_REPLAYS
    said = [e for e in f.evidence if "received" in e or "replayed" in e or "end" in e]
    return Localization(ref=ComponentRef.pcie(f.gpu, bus=f.ref.bus), fault=fault, gpu=f.gpu, lanes=f.lanes, end=f.end,
                        confidence=0.85 if f.end is not None else 0.8, **_grade([f]),
                        evidence=[*evidence, *said, "one GPU's PCIe link: its riser, cable or retimer, then the slot"])


def _stopped(f: Finding) -> ComponentRef:
    """The switch port a fatal SXid names: its own finding's, or the port of the GPU link it was folded into (the
    same link's switch end)."""
    return f.ref if f.ref.kind is ComponentKind.NVSWITCH else ComponentRef.nvswitch(f.switch, f.switch_port)


def _switch_fatal(f: Finding, behind: list[Finding]) -> Localization:
    """A fatal SXid names the switch and the port whose link it stopped; the GPU link on that port is its evidence."""
    ref = _stopped(f)
    return Localization(
        ref=ref, fault=FaultKind.NVSWITCH_FATAL, switch=ref.switch, switch_port=ref.port, confidence=0.85,
        port_source=PortSource.OBSERVED,  # the SXid line names the switch and its port itself
        **_grade([f]),
        evidence=[*(c.message for c in f.crossed), *f.evidence[:2],
                  "a fatal SXid stops the switch link it names until the node is restarted",
                  *(f"{b.component} lands on that port and is {b.severity.value}: the same link, seen from the GPU"
                    for b in behind)])


def _aggregate(f: Finding) -> Localization:
    """A GPU-wide NVLink total over threshold: the GPU's links, which one unread. Fewer NVLinks than the platform has,
    counted by the node's own topology, is an NVLink down whose index the topology does not give."""
    if BELOW_EXPECTED_RULE in _rules(f):
        return Localization(ref=f.ref, fault=FaultKind.NVLINK_AGGREGATE, gpu=f.gpu, confidence=0.6, **_grade([f]),
                            evidence=[*(c.message for c in f.crossed), *f.evidence])
    return Localization(
        ref=ComponentRef.nvlink(f.gpu, None), fault=FaultKind.NVLINK_AGGREGATE, gpu=f.gpu, confidence=0.6,
        **_grade([f]),
        evidence=[*(c.message for c in f.crossed),
                  f"the counters are GPU {f.gpu}'s totals over all its NVLinks: read each link with "
                  f"`nvidia-smi nvlink -e -i {f.gpu}` to find which one"])


def _links(findings: list[Finding], graph: NodeGraph | None) -> list[Localization]:
    """Lone failing links, one per port pair; both ends of a direct GPU-GPU link count once."""
    pairs: dict[tuple[Any, ...], list[Finding]] = defaultdict(list)
    for f in findings:
        if f.peer_gpu is not None and f.gpu is not None:
            pairs[("pair", min(f.gpu, f.peer_gpu), max(f.gpu, f.peer_gpu), f.link)].append(f)
        else:
            pairs[("link", f.gpu, f.link, f.switch)].append(f)
    out = []
    for group in pairs.values():
        top = max(group, key=lambda f: (f.severity is Severity.DOWN, f.worst_ratio or 0.0))
        port = _port(graph, top)
        source = port.get("port_source", PortSource.UNKNOWN)
        evidence = [c.message for c in top.crossed]
        others = [f for f in findings if f.gpu == top.gpu and f not in group]
        evidence.append(f"only this link of GPU {top.gpu} fails" if not others
                        else f"GPU {top.gpu} has {fmt.count(len(others), 'other failing link')} on other paths")
        lanes = sorted({lane for f in group for lane in f.lanes})
        if lanes:
            evidence.append(f"per-lane counters point to {fmt.noun(len(lanes), 'lane')} {', '.join(map(str, lanes))}")
        ends = {f.end for f in group if f.end is not None}
        evidence += [e for f in group for e in f.evidence if e.startswith(END_EVIDENCE)]
        out.append(Localization(
            ref=port.get("ref") or top.ref, fault=FaultKind.NVLINK, gpu=top.gpu,
            peer=port.get("peer") or top.peer, link=top.link, switch=port.get("switch") or top.switch,
            switch_port=port.get("switch_port"), port_source=source, lanes=lanes,
            end=ends.pop() if len(ends) == 1 else None,
            confidence=0.85 if source is PortSource.OBSERVED else 0.75, **_grade(group), evidence=evidence))
    return out


def rank(localizations: Iterable[Localization],
         urgency: Callable[[Localization], int] | None = None) -> list[Localization]:
    """The headline first: the most urgent part (`urgency`: its own ticket's priority rank, where the caller knows
    it), so the node's headline, its action and its default ticket are the part whose ticket is the node's most
    urgent; among those, the component that explains the slowdown, else the most severe, else the furthest over its
    threshold (a down link or a zero threshold counts as furthest); confidence breaks ties."""
    return sorted(localizations, key=lambda loc: (
        -(urgency(loc) if urgency is not None else 0), not loc.explains_slowdown, -severity_rank(loc.severity),
        -(loc.worst_ratio if loc.worst_ratio is not None else float("inf")), -loc.confidence))


def localize(findings: Iterable[Finding], graph: NodeGraph | None = None) -> Localization | None:
    """The most certain suspected component, or None when nothing fails."""
    found = localize_all(findings, graph)
    return found[0] if found else None
