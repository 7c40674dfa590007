"""Common-cause analysis: which physical part explains the failing links.

Failing links that share an endpoint point to that endpoint: most links of one GPU -> the GPU (its module); links
of several GPUs landing on one NVSwitch -> that switch (its baseboard); a lone link -> its port pair. Software that
looks like hardware (Fabric Manager down, all links inactive) names no part; after an Xid 79 the GPU is the suspect.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from ..enums import ComponentKind, FaultKind, LinkType, PortSource, Severity
from ..model import Finding, Localization

SOFTWARE_RULE = "fabric_software"
OFF_BUS_RULE = "xid_off_bus"
GPU_WIDE_SHARE = 0.5
GPU_WIDE_MIN_LINKS = 3


def _bad(f: Finding) -> bool:
    return f.severity in (Severity.FAILING, Severity.DOWN)


def _rules(f: Finding) -> set[str]:
    return {c.rule for c in f.crossed}


def _expected(graph: Any, gpu: int, seen: int) -> int:
    if graph is not None:
        try:
            return int(graph.expected_links(gpu, LinkType.NVLINK.value))
        except Exception:
            return seen
    return seen


def _port(graph: Any, f: Finding) -> dict[str, Any]:
    """Switch, port and the component name from the topology graph, where it knows the link."""
    if graph is None or f.gpu is None or f.link is None:
        return {}
    try:
        port = graph.port_of(f.gpu, f.link, f.link_type.value)
    except Exception:
        return {}
    return {"component": port.component, "switch": port.switch, "switch_port": port.switch_port,
            "port_source": PortSource(port.source), "peer": port.peer}


def localize_all(findings: Iterable[Finding], graph: Any = None,
                 links_per_gpu: Mapping[int, int] | None = None) -> list[Localization]:
    """Every suspected component behind the failing findings, most certain first."""
    findings = list(findings)
    software = [f for f in findings if SOFTWARE_RULE in _rules(f)]
    if software:
        return [Localization(kind=ComponentKind.FABRIC_SOFTWARE, fault=FaultKind.FABRIC_MANAGER,
                             component="Fabric Manager / NVIDIA driver",
                             confidence=0.8, links=[f.component for f in software],
                             evidence=[e for f in software for e in f.evidence]
                             + ["no part goes on the ticket: restart Fabric Manager or reload the driver first"])]
    out: list[Localization] = []
    off_bus = sorted({f.gpu for f in findings if OFF_BUS_RULE in _rules(f) and f.gpu is not None})
    for gpu in off_bus:
        out.append(Localization(kind=ComponentKind.GPU, fault=FaultKind.GPU_OFF_BUS, component=f"GPU {gpu}",
                                gpu=gpu, confidence=0.9,
                                evidence=[f"Xid 79 on GPU {gpu}: it fell off the bus; the GPU itself is the "
                                          "suspect, not the links or switches around it"]))
    bad = [f for f in findings if _bad(f) and f.gpu not in off_bus and f.peer_gpu not in off_bus
           and (f.link is not None or f.link_type is LinkType.PCIE)]
    out.extend(_pcie(f) for f in bad if f.link_type is LinkType.PCIE)
    nvlinks = [f for f in bad if f.link_type is not LinkType.PCIE]
    seen: dict[int, int] = defaultdict(int)
    for f in findings:
        if f.link_type is LinkType.NVLINK and f.gpu is not None and f.link is not None:
            seen[f.gpu] += 1
    by_gpu: dict[int, list[Finding]] = defaultdict(list)
    for f in nvlinks:
        if f.gpu is not None:
            by_gpu[f.gpu].append(f)
    wide: list[int] = []
    for gpu, links in sorted(by_gpu.items()):
        expected = (links_per_gpu or {}).get(gpu) or _expected(graph, gpu, seen[gpu])
        if len(links) >= GPU_WIDE_MIN_LINKS and len(links) >= GPU_WIDE_SHARE * max(expected, 1):
            wide.append(gpu)
            out.append(Localization(
                kind=ComponentKind.GPU, fault=FaultKind.GPU_NVLINKS, component=f"GPU {gpu}", gpu=gpu,
                confidence=round(min(0.95, 0.5 + 0.5 * len(links) / max(expected, 1)), 2),
                links=[f.component for f in links],
                evidence=[f"{len(links)} of GPU {gpu}'s {expected} NVLinks fail: the common end is the GPU "
                          "(its module), not the switches or peers"]))
    rest = [f for f in nvlinks if f.gpu not in wide and f.peer_gpu not in wide]
    by_switch: dict[str, list[Finding]] = defaultdict(list)
    for f in rest:
        switch = _port(graph, f).get("switch") or f.switch
        if switch:
            by_switch[str(switch)].append(f)
    for switch, links in sorted(by_switch.items()):
        gpus = sorted({f.gpu for f in links if f.gpu is not None})
        if len(gpus) >= 2:
            rest = [f for f in rest if f not in links]
            out.append(Localization(
                kind=ComponentKind.NVSWITCH, fault=FaultKind.NVSWITCH, component=switch, switch=switch,
                confidence=round(min(0.95, 0.6 + 0.1 * len(gpus)), 2), links=[f.component for f in links],
                evidence=[f"failing links of GPUs {', '.join(map(str, gpus))} all land on {switch}: "
                          "the switch (its baseboard) is the common end"]))
    out.extend(_links(rest, graph))
    return sorted(out, key=lambda loc: -loc.confidence)


def _pcie(f: Finding) -> Localization:
    evidence = [c.message for c in f.crossed] + [e for e in f.evidence if "lanes" in e]
    downtrain = bool(_rules(f) & {"pcie_width", "pcie_gen_under_load"})
    fault = FaultKind.PCIE_DOWNTRAIN if downtrain else FaultKind.PCIE_REPLAYS
    return Localization(kind=ComponentKind.PCIE, fault=fault, component=f"GPU {f.gpu} PCIe", gpu=f.gpu, lanes=f.lanes,
                        links=[f.component], confidence=0.8,
                        evidence=[*evidence, "one GPU's PCIe link: its riser, cable or retimer, then the slot"])


def _links(findings: list[Finding], graph: Any) -> list[Localization]:
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
                        else f"GPU {top.gpu} has {len(others)} other failing link(s) on other paths")
        if top.lanes:
            evidence.append(f"per-lane counters point to lane(s) {', '.join(map(str, top.lanes))}")
        out.append(Localization(
            kind=ComponentKind.NVLINK, fault=FaultKind.NVLINK, component=port.get("component") or top.component,
            gpu=top.gpu,
            peer=port.get("peer") or top.peer, link=top.link, switch=port.get("switch") or top.switch,
            switch_port=port.get("switch_port"), port_source=source, lanes=top.lanes,
            links=[f.component for f in group], confidence=0.85 if source is PortSource.OBSERVED else 0.75,
            evidence=evidence))
    return out


def localize(findings: Iterable[Finding], graph: Any = None) -> Localization | None:
    """The most certain suspected component, or None when nothing fails."""
    found = localize_all(findings, graph)
    return found[0] if found else None
