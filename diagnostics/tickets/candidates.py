"""The components a ticket may blame, each with the failing links it explains and its facts from the diagnosis.

The analysis isolates one (its localization, or the worst link); the others are the alternatives a person, or the
model, weighs: the single link, the GPU module all of a GPU's bad links share, the NVSwitch several GPUs' bad links
land on, the PCIe path, or the fabric software when links go down everywhere at once.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..analysis.boards import no_fabric_manager
from ..analysis.rack_localize import tray_order
from ..components import ComponentRef, is_switch
from ..config.racks import rack_of
from ..enums import ComponentKind, FaultKind, LinkEnd, LinkType, PortSource, Severity
from ..model import Diagnosis, Finding, Localization
from ..repair import fault_of, finding_fault, xid_fatal
from ..topology import NodeGraph
from .facts import port_for, resolve_graph


class Candidate(BaseModel):
    """One component that could explain the failing links, with every fact a ticket quotes about it."""

    model_config = ConfigDict(frozen=True)

    ref: ComponentRef
    kind: ComponentKind
    fault: FaultKind = Field(description="What kind of fault this component would have: keys the repair catalog.")
    component: str
    gpu: int | None = None
    peer: str | None = None
    link: int | None = None
    link_id: str | None = None
    link_type: LinkType | None = None
    lanes: list[int] = Field(default_factory=list)
    end: LinkEnd | None = None
    switch: str | None = None
    switch_port: int | None = None
    port_source: PortSource = PortSource.UNKNOWN
    find_with: str | None = None
    fru: str | None = None
    tray: str | None = None  # in a rack: the compute tray, switch tray and cable cartridge, and the hosts to drain
    switch_tray: str | None = None
    cartridge: str | None = None
    hosts: list[str] = Field(default_factory=list)
    switch_host: str | None = None
    recovery: str | None = None  # the driver's recovery action for its GPU, and what it takes
    recovery_scope: str | None = None
    fatal: bool | None = None  # a fault known by an NVLink Xid alone: whether its decode is fatal
    investigate: str | None = None  # what NVIDIA's decode of that Xid asks to investigate, and its bucket
    investigate_bucket: str | None = None
    findings: list[str] = Field(default_factory=list, description="The unhealthy links this component explains.")
    score: float = Field(ge=0.0, le=1.0, description="Share of the unhealthy links explained, discounted by "
                                                     "how specific the component is.")
    isolated: bool = Field(default=False, description="The deterministic analysis isolated this component.")
    evidence: list[str] = Field(default_factory=list)

    @property
    def id(self) -> str:
        """The component's slug: 'gpu2-nvlink1', 'nvswitch-1', 'gpu2', 'fabric-software'."""
        return self.ref.slug


_KIND_OF_LINK = {LinkType.NVLINK: ComponentKind.NVLINK, LinkType.PCIE: ComponentKind.PCIE,
                 LinkType.NVSWITCH: ComponentKind.NVSWITCH}


def on_rack(diagnosis: Diagnosis) -> bool:
    """A rack's diagnosis or a rack host's: its fabric is its NVLink domain's (NMX-Controller, IMEX), and no host
    runs a Fabric Manager."""
    return diagnosis.rack is not None or rack_of(diagnosis.platform) is not None


def _link_candidate(f: Finding, d: Diagnosis, graph: NodeGraph | None, total: int) -> Candidate:
    """A link (or a part one finding names) as a candidate; in a rack, with its compute tray and the host that
    drains and resets it, so its plan names that host, as a GPU's does."""
    port = port_for(f, d, graph)
    evidence = [c.message for c in f.crossed] + list(f.evidence)
    tray = f.ref.tray
    host = d.rack.host_of(tray) if d.rack is not None and tray else None
    return Candidate(
        ref=f.ref, kind=f.ref.kind, fault=finding_fault(f), component=f.component, gpu=f.gpu, tray=tray,
        hosts=[host] if host else [],
        peer=f.peer if f.peer != "unknown" else port.peer, link=f.link, link_id=f.link_id, link_type=f.link_type,
        lanes=list(f.lanes), end=f.end, switch=port.switch, switch_port=port.switch_port, port_source=port.source,
        find_with=port.find_with, fru=port.fru, fatal=xid_fatal(f), findings=[f.component], score=round(1.0 / total, 3),
        evidence=evidence,
    )


def _with_gpu_ends(links: list[Candidate]) -> list[Candidate]:
    """A rack switch port counting its own errors (or stopped by a fatal SXid), with the GPU end of its link where one
    failing link of a GPU lands on it: its plan reads and resets that end, on that tray's host, as the rack's own port
    suspect does."""
    out = []
    for c in links:
        port = c.fault in (FaultKind.SWITCH_PORT, FaultKind.NVSWITCH_FATAL) and c.ref.switch_tray is not None
        ends = [o for o in links if o is not c and o.ref.kind is not ComponentKind.NVSWITCH and o.gpu is not None
                and o.switch == c.switch and o.switch_port == c.switch_port] if port else []
        if len(ends) == 1 and c.gpu is None:
            end = ends[0]
            c = c.model_copy(update={"gpu": end.gpu, "link": end.link, "tray": end.tray, "hosts": end.hosts,
                                     "findings": [*c.findings, *end.findings]})
        out.append(c)
    return out


def _unhealthy(d: Diagnosis, *, warnings: bool = False) -> list[Finding]:
    """The findings a part could explain: the failing ones, else (or with them, given `warnings`) those that warn; a
    collective's bus bandwidth names no part (`BUSBW_NO_PART`)."""
    failing = [f for f in d.failing if f.ref.kind is not ComponentKind.GPU_FABRIC]
    warning = [f for f in d.findings if f.severity is Severity.WARNING and f.ref.kind is not ComponentKind.GPU_FABRIC]
    return [*failing, *warning] if warnings else failing or warning


def _from_localization(loc: Localization, links: list[Candidate]) -> Candidate | None:
    for c in links:
        if loc.kind is c.kind and loc.gpu == c.gpu and loc.ref.tray == c.ref.tray \
                and (loc.link is None or loc.link == c.link):
            return c
    return None


def candidates_for(diagnosis: Diagnosis, graph: NodeGraph | None = None, *,
                   warnings: bool = False) -> list[Candidate]:
    """Every component that could explain the node's unhealthy links: the isolated one first, then by score. Where
    some fail, those that only warn are no candidates, unless `warnings` (a person named one of them)."""
    bad = _unhealthy(diagnosis, warnings=warnings)
    if not bad:
        return []
    n = len(bad)
    graph = resolve_graph(diagnosis, graph)
    links = _with_gpu_ends([_link_candidate(f, diagnosis, graph, n) for f in bad])
    out: dict[str, Candidate] = {c.id: c for c in links}

    # a GPU is one module: in a rack, one compute tray's GPU (GPU 0 of two trays is two modules, two hosts)
    by_gpu: dict[tuple[str, int], list[Candidate]] = defaultdict(list)
    by_switch: dict[str, list[Candidate]] = defaultdict(list)
    for c in links:
        if c.gpu is not None and c.kind is ComponentKind.NVLINK:
            by_gpu[(c.ref.tray or "", c.gpu)].append(c)
        if c.switch is not None and c.kind is not ComponentKind.PCIE and c.switch.startswith("NVSwitch"):
            by_switch[c.switch].append(c)
    for (tray, gpu), own in sorted(by_gpu.items(), key=lambda kv: (tray_order(kv[0][0]), kv[0][1])):
        group = _gpu_candidate(diagnosis, tray, gpu, own, n)
        known = out.get(group.id) if tray else None  # a rack GPU's own finding (an Xid on it) is the same module
        out[group.id] = group if known is None else known.model_copy(update={
            "tray": group.tray, "hosts": group.hosts, "score": max(known.score, group.score),
            "findings": list(dict.fromkeys([*known.findings, *group.findings])),
            "evidence": [*known.evidence, *group.evidence]})
    for switch, own in sorted(by_switch.items()):
        gpus = sorted({c.gpu for c in own if c.gpu is not None})
        sources = {c.port_source for c in own}
        source = PortSource.OBSERVED if sources == {PortSource.OBSERVED} else (
            PortSource.ASSUMED if PortSource.UNKNOWN not in sources else PortSource.UNKNOWN)
        ports = sorted({c.switch_port for c in own if c.switch_port is not None})
        ref = ComponentRef.nvswitch(switch)
        out[ref.slug] = Candidate(
            ref=ref, kind=ComponentKind.NVSWITCH, fault=FaultKind.NVSWITCH, component=ref.name, switch=switch,
            switch_port=ports[0] if len(ports) == 1 else None, port_source=source,
            findings=[c.component for c in own], score=round(len(own) / n * (0.95 if len(gpus) > 1 else 0.4), 3),
            evidence=[f"{len(own)} of {n} unhealthy links"
                      + (f", from GPUs {', '.join(map(str, gpus))}," if gpus else " (switch-side ports)")
                      + f" land on {switch} (ports {source.value})"],
        )
    down_gpus = sorted({f.gpu for f in bad if f.severity is Severity.DOWN and f.gpu is not None})
    domain = on_rack(diagnosis)
    fabric = ComponentRef.fabric_software(domain=domain)
    # the analysis's own finding on the fabric software (every NVLink inactive, even on a two-GPU node; the fabric
    # state) says more than a count of GPUs with a link down
    said = any(f.ref.slug == fabric.slug for f in bad)
    every = all(f.severity is Severity.DOWN for f in bad if f.ref.kind is ComponentKind.NVLINK)
    # the analysis's own reason where every link is down and no NVSwitch can be (two GPUs; an H100 NVL pair), unless
    # a link lands on one: the node has them, whatever the count of GPUs read
    switched = any(is_switch(c.switch) for c in links if c.kind is ComponentKind.NVLINK)
    node_gpus = {f.gpu for f in diagnosis.findings if f.gpu is not None}
    none = None if said or not every or switched else no_fabric_manager(
        diagnosis.platform, diagnosis.platform_guess, len(node_gpus))
    wide = said or (len(down_gpus) >= 3 and none is None)
    if said:
        evidence: list[str] = []
    elif none is not None:
        evidence = [f"every failing link is down on {len(down_gpus)} GPUs, but {none}: no Fabric Manager runs there"]
    elif wide:
        evidence = [f"links down on {len(down_gpus)} GPUs at once ({', '.join(map(str, down_gpus))})"]
    elif any(f.ref.kind in (ComponentKind.NVLINK, ComponentKind.NVSWITCH) for f in bad):
        evidence = ["link errors are confined to specific links: a software fault would take links down "
                    + ("domain-wide" if domain else "node-wide")]
    else:  # the fault is a GPU's or a PCIe link's (a GPU off the bus): no NVLink is failing at all
        evidence = ["no NVLink is down or failing: a software fault would take links down "
                    + ("domain-wide" if domain else "node-wide")]
    out[fabric.slug] = Candidate(
        ref=fabric, kind=ComponentKind.FABRIC_SOFTWARE, fault=FaultKind.FABRIC_MANAGER, component=fabric.name,
        findings=[f.component for f in bad] if wide else [], score=0.8 if wide else 0.05, evidence=evidence)
    chosen = _isolated_id(diagnosis, links, out)
    if chosen is not None:
        out[chosen] = out[chosen].model_copy(update={"isolated": True})
    return sorted(out.values(), key=lambda c: (not c.isolated, -c.score, c.id))


def _gpu_ref(tray: str, gpu: int) -> ComponentRef:
    ref = ComponentRef.of_gpu(gpu)
    return ref.in_tray(tray) if tray else ref


def _gpu_candidate(d: Diagnosis, tray: str, gpu: int, own: list[Candidate], n: int) -> Candidate:
    """The GPU module all of `own`'s links start at; in a rack, its compute tray and the host that drains and resets
    it, so its plan acts on that tray alone."""
    ref = _gpu_ref(tray, gpu)
    host = d.rack.host_of(tray) if d.rack is not None and tray else None
    return Candidate(
        ref=ref, kind=ComponentKind.GPU, fault=FaultKind.GPU_NVLINKS, component=ref.name, gpu=gpu,
        tray=tray or None, hosts=[host] if host else [],
        findings=[c.component for c in own], score=round(len(own) / n * (0.9 if len(own) > 1 else 0.5), 3),
        evidence=[f"{len(own)} of {n} unhealthy links start at {ref.name}"],
    )


def _ensure(loc: Localization, links: list[Candidate], out: dict[str, Candidate]) -> str:
    """The candidate a localization names, added from the localization's own facts when none matches."""
    if loc.kind in (ComponentKind.NVLINK, ComponentKind.PCIE):
        match = _from_localization(loc, links)
        if match is not None:
            update: dict[str, Any] = {"fault": fault_of(loc), **_rack_facts(loc)}
            if out[match.id].peer in (None, "unknown") and loc.peer:  # the far end the analysis placed from the
                update["peer"] = loc.peer  # wiring: the ticket's steps name the ends the analysis's action names
            out[match.id] = out[match.id].model_copy(update=update)
            return match.id
    key = loc.ref.slug
    if key in out:  # the analysis's name and evidence for it
        known = out[key]
        evidence = list(dict.fromkeys([*loc.evidence, *known.evidence]))  # the localization quotes its findings
        out[key] = known.model_copy(update={"component": loc.component, "evidence": evidence,
                                            "findings": sorted({*known.findings, *loc.links}), "fault": fault_of(loc),
                                            **_rack_facts(loc), **_far_gpu(loc, known)})
    else:
        out[key] = Candidate(
            ref=loc.ref, kind=loc.kind, fault=fault_of(loc), component=loc.component, gpu=loc.gpu, peer=loc.peer,
            link=loc.link, lanes=list(loc.lanes), end=loc.end, switch=loc.switch,
            switch_port=loc.switch_port,
            port_source=loc.port_source, fatal=loc.fatal, **_rack_facts(loc),
            findings=list(loc.links), score=loc.confidence, evidence=list(loc.evidence),
        )
    return key


def _rack_facts(loc: Localization) -> dict[str, Any]:
    """Where a rack's localized unit sits and which hosts carry its links (none of these off a rack), the driver's
    recovery action for its GPU, and what NVIDIA's decode of its Xid asks to investigate (the plan's steps say it)."""
    return {"tray": loc.tray, "switch_tray": loc.switch_tray, "cartridge": loc.cartridge, "hosts": list(loc.hosts),
            "switch_host": loc.switch_host, "recovery": loc.recovery, "recovery_scope": loc.recovery_scope,
            "investigate": loc.investigate, "investigate_bucket": loc.investigate_bucket}


def _far_gpu(loc: Localization, known: Candidate) -> dict[str, Any]:
    """A rack's failing switch port: the GPU and link at the other end of its link, as the analysis placed them (the
    port's own finding names none), so its plan resets that GPU by name."""
    if loc.fault in (FaultKind.SWITCH_PORT, FaultKind.NVSWITCH_FATAL) and loc.tray is not None \
            and known.gpu is None and loc.gpu is not None:
        return {"gpu": loc.gpu, "link": loc.link}
    return {}


def _isolated_id(d: Diagnosis, links: list[Candidate], out: dict[str, Candidate]) -> str | None:
    locs = list(d.localizations) or ([d.localization] if d.localization else [])
    if d.localization is not None and d.localization not in locs:
        locs.insert(0, d.localization)
    keys = [_ensure(loc, links, out) for loc in locs]
    if keys:
        return keys[0]
    for c in links:
        if c.component == d.isolated_component:
            return c.id
    return links[0].id if links and d.fault_detected else None


def candidate_for(localization: Localization, candidates: list[Candidate]) -> Candidate | None:
    """The candidate that stands for one of the analysis's localizations (for a ticket per localized fault)."""
    for c in candidates:
        if c.kind is localization.kind and (
            (c.kind is ComponentKind.NVSWITCH and c.switch == localization.switch)
            or (c.kind is ComponentKind.FABRIC_SOFTWARE)
            or (c.kind is not ComponentKind.NVSWITCH and c.gpu == localization.gpu
                and c.ref.tray == localization.ref.tray
                and (localization.link is None or c.link == localization.link))):
            return c
    return None
