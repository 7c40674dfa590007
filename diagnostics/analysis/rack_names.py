"""A rack host's parts named as its rack names them: a compute tray's links by their tray, GPU and the switch port
they land on (`Compute tray 7 GPU 2 NVLink 5 -> Switch tray 3 chip 2 port 27`), a switch tray's ports by its tray and
chip (the driver's NVSwitch k is chip k + 1) and joined to the GPU link on them. A part has one name and one slug,
whichever host or the rack speaks of it: its findings, suspects, tickets and the lines of its job's picture.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..components import IN_TRAY, ComponentRef, chip_named, tray_chip
from ..enums import ComponentKind, PortSource
from ..model import Diagnosis, Finding, LinkSeries, Localization, StepEvidence
from .rack_localize import Placed

if TYPE_CHECKING:
    from .racks import Rack


def place_findings(rack: Rack, host: str, findings: list[Finding]) -> list[Placed]:
    """A host's findings as its rack names them, each with where its link runs."""
    graph, label, slot = rack.graph, rack.label[host], rack.slot.get(host)
    out = []
    for f in findings:
        ref = f.ref
        if rack.kind[host] == "switch":
            out.append(_switch_side(rack, host, f))
            continue
        if ref.kind is ComponentKind.NVLINK and ref.gpu is not None and ref.link is not None \
                and graph.has(1, ref.gpu, ref.link):
            tray_number, chip = graph.chip_of(ref.link)
            switch_tray = str(tray_number)
            port = graph.port_of(slot, ref.gpu) if slot is not None else None
            source = PortSource.ASSUMED if port is not None else PortSource.UNKNOWN
            if f.port_source is PortSource.OBSERVED and (seen := chip_named(f.switch)) is not None:
                (switch_tray, chip), port, source = seen, f.switch_port, PortSource.OBSERVED  # its far end read
            cartridge = graph.cartridge_of(slot, ref.link) if slot is not None else None
            new = ref.in_tray(label, switch_tray=switch_tray, chip=chip, port=port)
            lifted = f.model_copy(update={"ref": new, "switch": new.switch, "switch_port": port,
                                          "port_source": source})
            out.append(Placed(lifted, host, ref, label, ref.gpu, ref.link, switch_tray, chip, port, cartridge))
        elif ref.kind in (ComponentKind.GPU, ComponentKind.PCIE, ComponentKind.NVLINK) and ref.gpu is not None:
            out.append(Placed(f.model_copy(update={"ref": ref.in_tray(label)}), host, ref, label, ref.gpu))
        else:
            out.append(Placed(f, host, ref))
    return out


def _switch_side(rack: Rack, host: str, f: Finding) -> Placed:
    """A switch tray's port finding named by its tray and chip (the driver's NVSwitch k is chip k + 1), joined to
    the GPU link on that port where the tray's slot is known."""
    label, ref = rack.label[host], f.ref
    chip = tray_chip(ref.switch)
    if ref.kind is not ComponentKind.NVSWITCH or chip is None:
        return Placed(f, host, ref, switch_side=True)
    new = ComponentRef.switch_chip(label, chip, ref.port)
    lifted = f.model_copy(update={"ref": new, "switch": new.switch, "switch_port": ref.port,  # read on the port
                                  "port_source": PortSource.OBSERVED if ref.port is not None else f.port_source})
    end = rack.graph.from_port(rack.slot[host], chip, ref.port) if host in rack.slot and ref.port is not None \
        else None
    if end is None:
        return Placed(lifted, host, ref, switch_tray=label, chip=chip, port=ref.port, switch_side=True)
    return Placed(lifted, host, ref, str(end.tray), end.gpu, end.link, label, chip, end.port, end.cartridge,
                  switch_side=True)


def named_as_rack(tray: Diagnosis, rack: Rack, host: str, found: Mapping[str, list[Finding]]) -> Diagnosis:
    """A host's own parts named as its rack names them (`Compute tray 4 GPU 3 NVLink 16`, `Switch tray 3 chip 2
    port 17`), its own suspects too, and the links its job's evidence draws (from any host of the rack, as `found`
    holds them): a part has one name and one slug, so one ticket, from the host or the rack, one line in a picture."""
    placed = place_findings(rack, host, tray.findings)
    names = {p.node_ref.name: p.finding.component for p in placed}
    refs = {p.node_ref: p.finding.ref for p in placed}

    def lifted(loc: Localization) -> Localization:
        ref = refs.get(loc.ref) or rack_ref(rack, host, loc.ref)
        return loc.model_copy(update={"ref": ref, "links": [names.get(n, n) for n in loc.links]})

    locs = [lifted(loc) for loc in tray.localizations]
    top = lifted(tray.localization) if tray.localization is not None else None
    isolated = names.get(tray.isolated_component, tray.isolated_component)
    if top is not None and tray.localization is not None and tray.isolated_component == tray.localization.component:
        isolated = top.component
    return tray.model_copy(update={"findings": [p.finding for p in placed], "localization": top,
                                   "localizations": locs, "isolated_component": isolated,
                                   "evidence": _evidence_as_rack(tray.evidence, rack, host, placed, found)})


def _evidence_as_rack(evidence: StepEvidence | None, rack: Rack, host: str, placed: list[Placed],
                      found: Mapping[str, list[Finding]]) -> StepEvidence | None:
    """A job's evidence with each link named as the rack names it: two trays' `GPU 2 NVLinks` are two lines."""
    if evidence is None or not evidence.links:
        return evidence
    names = {(host, p.node_ref.slug): p.finding.ref for p in placed}
    for other in sorted({s.node_id for s in evidence.links} - {host}):
        if other in rack.label:
            names.update({(other, p.node_ref.slug): p.finding.ref
                          for p in place_findings(rack, other, found.get(other, []))})

    def named(s: LinkSeries) -> ComponentRef:
        ref = names.get((s.node_id, s.ref.slug))
        return ref if ref is not None else rack_ref(rack, s.node_id, s.ref) if s.node_id in rack.label else s.ref

    return evidence.model_copy(update={"links": [s.model_copy(update={"ref": named(s)}) for s in evidence.links]})


def rack_ref(rack: Rack, host: str, ref: ComponentRef) -> ComponentRef:
    """A host's part (one no finding of it names) as its rack names it: a GPU in its compute tray, the driver's
    NVSwitch k as chip k + 1 of its switch tray."""
    if rack.kind.get(host) == "switch":
        chip = tray_chip(ref.switch) if ref.kind is ComponentKind.NVSWITCH else None
        return ComponentRef.switch_chip(rack.label[host], chip, ref.port) if chip is not None else ref
    return ref.in_tray(rack.label[host]) if ref.tray is None and ref.gpu is not None and ref.kind in IN_TRAY else ref
