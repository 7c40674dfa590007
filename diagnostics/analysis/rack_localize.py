"""Common cause over a rack: which unit explains the failing links of all its trays.

Each failing GPU link of a rack is one end-to-end path: GPU (in its compute tray), cable (in its cartridge), switch
port (on a chip of a switch tray). Units are sets of such paths: a GPU's 18, a compute tray's, a chip's (one link of
every GPU), a switch tray's (its chips'), a cartridge's. A unit is a candidate when the failing links it holds are
spread the way its fault would spread them (the rack file's `[localize]` rows: a chip needs links of two GPUs, a
switch tray links on both its chips, a cartridge links of two compute trays to two switch trays ...); the candidate
that explains the most failing links is taken (a tie goes to the smaller unit), its links are set aside, and the
rest are weighed again. What is left is lone links: named by the switch port when the switch side counts errors on
it, else by the GPU link.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from .. import format as fmt
from ..components import ComponentRef
from ..config.racks import Localize
from ..config.thresholds import GPU_MISSING_RULE, OFF_BUS_RULE, SOFTWARE_RULE, SXID_FATAL_RULE
from ..enums import ComponentKind, FaultKind, PortSource, Severity, severity_rank
from ..model import Finding, Localization
from ..topology.rack import RackGraph

LinkKey = tuple[str, int, int]  # (compute tray label, GPU, link)


@dataclass(frozen=True)
class Placed:
    """One finding of a rack's host, placed in the rack: where its link runs, as far as the rack knows."""

    finding: Finding  # named as the rack names it
    host: str
    node_ref: ComponentRef  # as its host named it (the job's scores are keyed by it)
    tray: str | None = None  # compute tray label of the GPU end
    gpu: int | None = None
    link: int | None = None
    switch_tray: str | None = None
    chip: int | None = None
    port: int | None = None
    cartridge: str | None = None
    switch_side: bool = False  # read on the switch tray (NMX-T port counters, an SXid)

    @property
    def key(self) -> LinkKey | None:
        if self.tray is None or self.gpu is None or self.link is None:
            return None
        return self.tray, self.gpu, self.link


@dataclass
class _Path:
    """One failing GPU link and every finding about it, from either end."""

    key: LinkKey
    found: list[Placed] = field(default_factory=list)

    @property
    def first(self) -> Placed:
        return next((p for p in self.found if not p.switch_side), self.found[0])

    def where(self, name: str) -> str | int | None:
        return next((getattr(p, name) for p in self.found if getattr(p, name) is not None), None)


def _bad(f: Finding) -> bool:
    return f.severity in (Severity.FAILING, Severity.DOWN)


def _rules(f: Finding) -> set[str]:
    return {c.rule for c in f.crossed}


def _grade(found: Iterable[Placed]) -> dict[str, object]:
    findings = [p.finding for p in found]
    worst = max(findings, key=lambda f: (severity_rank(f.severity), f.worst_ratio or 0.0))
    return {"severity": worst.severity, "worst_ratio": worst.worst_ratio,
            "links": list(dict.fromkeys(f.component for f in findings))}


def _hosts(paths: Iterable[_Path]) -> list[str]:
    return sorted({p.host for path in paths for p in path.found if not p.switch_side})


def _trays(paths: Iterable[_Path]) -> list[str]:
    return sorted({path.key[0] for path in paths}, key=tray_order)


def tray_order(label: str) -> tuple[int, str]:
    """A tray label's place: slots by number (2 before 10), trays named by host after them."""
    return (int(label), "") if label.isdigit() else (10**6, label)


def _listed(values: Iterable[object]) -> str:
    return ", ".join(map(str, values))


@dataclass
class _Unit:
    ref: ComponentRef
    fault: FaultKind
    size: int  # how many links the unit holds: a tie goes to the smaller
    rank: int  # then the finer kind
    paths: list[_Path]
    why: str
    confidence: float


def _chips(paths: list[_Path]) -> set[tuple[object, object]]:
    return {(p.where("switch_tray"), p.where("chip")) for p in paths}


def _candidates(paths: list[_Path], rack: RackGraph, rules: Localize) -> list[_Unit]:
    spec = rack.spec
    out: list[_Unit] = []
    by_gpu: dict[tuple[str, int], list[_Path]] = defaultdict(list)
    by_tray: dict[str, list[_Path]] = defaultdict(list)
    by_chip: dict[tuple[str, int], list[_Path]] = defaultdict(list)
    by_switch: dict[str, list[_Path]] = defaultdict(list)
    by_cartridge: dict[str, list[_Path]] = defaultdict(list)
    for p in paths:
        tray, gpu, _ = p.key
        by_gpu[(tray, gpu)].append(p)
        by_tray[tray].append(p)
        st, chip = p.where("switch_tray"), p.where("chip")
        if st is not None and chip is not None:
            by_chip[(str(st), int(chip))].append(p)
            by_switch[str(st)].append(p)
        cartridge = p.where("cartridge")
        if cartridge is not None:
            by_cartridge[str(cartridge)].append(p)
    for (tray, gpu), own in by_gpu.items():
        if len(own) >= rules.gpu_min_links and len(own) >= rules.gpu_min_share * spec.nvlinks_per_gpu:
            out.append(_Unit(ComponentRef.of_gpu(gpu).in_tray(tray), FaultKind.GPU_NVLINKS, spec.nvlinks_per_gpu, 0,
                             own, f"{len(own)} of Compute tray {tray} GPU {gpu}'s {spec.nvlinks_per_gpu} NVLinks fail, "
                             f"on {len(_chips(own))} different chips: the GPU is their common end, not a switch",
                             round(min(0.95, 0.5 + 0.5 * len(own) / spec.nvlinks_per_gpu), 2)))
    for (st, chip), own in by_chip.items():
        on_chip = {(p.key[0], p.key[1]) for p in own}
        if len(on_chip) >= rules.chip_min_gpus:
            ports = sorted({int(v) for p in own if (v := p.where("port")) is not None})
            elsewhere = sum(1 for p in paths if (p.key[0], p.key[1]) in on_chip and p not in own)
            clean = ("those GPUs' links to the other chips do not fail" if not elsewhere
                     else f"those GPUs fail {fmt.count(elsewhere, 'link')} on other chips too, weighed apart")
            out.append(_Unit(ComponentRef.switch_chip(st, chip), FaultKind.NVSWITCH, spec.gpus, 1, own,
                             f"failing links of {len(on_chip)} GPUs in compute trays {_listed(_trays(own))} all land "
                             f"on Switch tray {st} chip {chip}" + (f" (ports {_listed(ports)})" if ports else "")
                             + f": the chip is their common end; {clean}",
                             round(min(0.95, 0.6 + 0.1 * len(on_chip)), 2)))
    for tray, own in by_tray.items():
        in_tray, chips = {p.key[1] for p in own}, _chips(own)
        if len(in_tray) >= rules.tray_min_gpus and len(chips) >= rules.tray_min_chips \
                and len(own) >= rules.tray_min_links:
            others = sum(1 for p in paths if p.key[0] != tray and (p.where("switch_tray"), p.where("chip")) in chips)
            clean = ("no other tray's links to those chips fail" if not others
                     else f"{fmt.count(others, 'link')} of other trays {'fails' if others == 1 else 'fail'} on those "
                     "chips too")
            out.append(_Unit(ComponentRef.compute_tray(tray), FaultKind.COMPUTE_TRAY,
                             spec.gpus_per_tray * spec.nvlinks_per_gpu, 2, own,
                             f"failing links of GPUs {_listed(sorted(in_tray))} of Compute tray {tray} run to "
                             f"{len(chips)} different chips and {clean}: the compute tray (its board or spine "
                             "connectors) is their common end", 0.8))
    for st, own in by_switch.items():
        on_tray = sorted({int(str(p.where("chip"))) for p in own})
        if len(on_tray) >= rules.switch_tray_min_chips and len(own) >= rules.switch_tray_min_links:
            per = ", ".join(f"chip {c}: {sum(1 for p in own if p.where('chip') == c)}" for c in on_tray)
            out.append(_Unit(ComponentRef.switch_tray_unit(st), FaultKind.SWITCH_TRAY,
                             spec.gpus * spec.chips_per_switch_tray, 3, own,
                             f"failing links on both chips of Switch tray {st} ({per}) from compute trays "
                             f"{_listed(_trays(own))}: the switch tray, not one chip, is their common end", 0.85))
    for cid, own in by_cartridge.items():
        trays, switches = _trays(own), {p.where("switch_tray") for p in own}
        if len(trays) >= rules.cartridge_min_compute and len(switches) >= rules.cartridge_min_switch \
                and len(own) >= rules.cartridge_min_links:
            cart = next(c for c in spec.cartridge if c.id == cid)
            size = (cart.compute_trays[1] - cart.compute_trays[0] + 1) * spec.gpus_per_tray * (
                cart.links[1] - cart.links[0] + 1)
            out.append(_Unit(ComponentRef.cartridge_unit(cid), FaultKind.CARTRIDGE, size, 4, own,
                             f"failing links of compute trays {_listed(trays)} to switch trays "
                             f"{_listed(sorted(str(s) for s in switches))} all run in Cable cartridge {cid} (compute "
                             f"trays {cart.compute_trays[0]}-{cart.compute_trays[1]}, links {cart.links[0]}-"
                             f"{cart.links[1]}): no single GPU, tray or chip holds them all", 0.75))
    return out


def assumed(rack: RackGraph, hosts: list[str], *, gpu: int | None = None, cartridge: bool = False) -> list[str]:
    """What a suspect built on the rack file's wiring says of it: assumed, and the read that confirms it (the port
    map: `nvidia-smi nvlink -R` or NMX-T's link partner; the cartridge split: NVOS's cartridge inventory)."""
    spec = rack.spec
    on = f" on {', '.join(hosts[:4])}{' ...' if len(hosts) > 4 else ''}" if hosts else ""
    read = f"`nvidia-smi nvlink -R -i {gpu}`" if gpu is not None else "`nvidia-smi nvlink -R`"
    out = []
    if spec.map_assumed:
        out.append(f"assumed: which chip and port these links land on is the rack file's port map (NVIDIA publishes "
                   f"none); confirm it with {read}{on} or NMX-T's link_partner for the port")
    if cartridge and spec.cartridges_assumed:
        out.append("assumed: which cartridge carries these links is the rack file's cartridge split (NVIDIA "
                   "publishes none); confirm it with `nv show platform cable-cartridge` and the vendor's cable map")
    return out


_ON_MAP = (FaultKind.NVSWITCH, FaultKind.SWITCH_TRAY, FaultKind.CARTRIDGE, FaultKind.COMPUTE_TRAY)


def _unit_localization(unit: _Unit, rack: RackGraph) -> Localization:
    ref = unit.ref
    first = unit.paths[0]
    notes = assumed(rack, _hosts(unit.paths), cartridge=unit.fault is FaultKind.CARTRIDGE) \
        if unit.fault in _ON_MAP else []
    return Localization(
        ref=ref, fault=unit.fault, gpu=ref.gpu, tray=ref.tray, switch_tray=ref.switch_tray, cartridge=ref.cartridge,
        switch=ref.switch, hosts=_hosts(unit.paths), confidence=unit.confidence,
        port_source=first.first.finding.port_source if ref.kind is ComponentKind.NVSWITCH else PortSource.UNKNOWN,
        **_grade(p for path in unit.paths for p in path.found),  # type: ignore[arg-type]
        evidence=[unit.why, *dict.fromkeys(c.message for path in unit.paths[:3] for p in path.found
                                           for c in p.finding.crossed), *notes])


def _lone(path: _Path, rack: RackGraph) -> Localization:
    """One failing link no unit explains: its switch port when the switch side counts errors there, else its GPU
    end."""
    switch_side = [p for p in path.found if p.switch_side]
    gpu_side = [p for p in path.found if not p.switch_side]
    fatal = any(SXID_FATAL_RULE in _rules(p.finding) for p in switch_side)
    top = path.first
    st, chip, port = path.where("switch_tray"), path.where("chip"), path.where("port")
    messages = list(dict.fromkeys(c.message for p in path.found for c in p.finding.crossed))
    if switch_side and st is not None and chip is not None and port is not None:
        ref = ComponentRef.switch_chip(str(st), int(chip), int(port))
        seen = (f"{gpu_side[0].finding.component} lands on that port and is {gpu_side[0].finding.severity.value}: the "
                "same link seen from the GPU") if gpu_side else "the GPU end of the link counts nothing over its rules"
        evidence = [*messages, f"only this link fails, and {ref.name} counts errors on its own side: the switch port "
                               "(its tray's connector and the cable into it) is the suspect", seen,
                    *assumed(rack, _hosts([path]), gpu=path.key[1])]
        return Localization(ref=ref, fault=FaultKind.NVSWITCH_FATAL if fatal else FaultKind.SWITCH_PORT,
                            switch=ref.switch, switch_port=int(port), switch_tray=str(st), tray=path.key[0],
                            gpu=path.key[1], link=path.key[2], cartridge=_text(path.where("cartridge")),
                            port_source=PortSource.ASSUMED, hosts=_hosts([path]), confidence=0.85 if fatal else 0.8,
                            **_grade(path.found), evidence=evidence)  # type: ignore[arg-type]
    ref = top.finding.ref
    mapped = assumed(rack, _hosts([path]), gpu=path.key[1]) if ref.switch_tray is not None else []
    return Localization(ref=ref, fault=FaultKind.NVLINK, gpu=path.key[1], link=path.key[2], tray=path.key[0],
                        switch=ref.switch, switch_port=ref.port, switch_tray=ref.switch_tray,
                        cartridge=_text(path.where("cartridge")), peer=ref.switch, port_source=top.finding.port_source,
                        hosts=_hosts([path]), confidence=0.75, **_grade(path.found),  # type: ignore[arg-type]
                        evidence=[*messages, f"only this link of Compute tray {path.key[0]} GPU {path.key[1]} fails, "
                                             "and its switch port's own counters do not (or are not read)", *mapped])


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def localize_rack(placed: list[Placed], rack: RackGraph, rules: Localize | None = None) -> list[Localization]:
    """Every suspected unit behind a rack's failing findings, most certain first."""
    rules = rules or rack.spec.localize
    bad = [p for p in placed if _bad(p.finding)]
    software = [p for p in bad if SOFTWARE_RULE in _rules(p.finding)]
    if software:
        trays = sorted({p.tray or p.host for p in software}, key=tray_order)
        return [Localization(ref=ComponentRef.fabric_software(domain=True), fault=FaultKind.FABRIC_MANAGER,
                             confidence=0.8,
                             hosts=sorted({p.host for p in software}), **_grade(software),  # type: ignore[arg-type]
                             evidence=[f"the fabric is not up on compute trays {_listed(trays)}",
                                       *dict.fromkeys(e for p in software for e in p.finding.evidence)])]
    out: list[Localization] = []
    off_bus = {(p.tray, p.gpu) for p in bad if _rules(p.finding) & {OFF_BUS_RULE, GPU_MISSING_RULE}}
    for tray, gpu in sorted(off_bus, key=lambda t: (tray_order(str(t[0])), t[1] or 0)):
        mine = [p for p in bad if (p.tray, p.gpu) == (tray, gpu) and _rules(p.finding) & {OFF_BUS_RULE,
                                                                                            GPU_MISSING_RULE}]
        ref = mine[0].finding.ref
        out.append(Localization(ref=ref, fault=FaultKind.GPU_OFF_BUS, gpu=gpu, tray=tray, confidence=0.9,
                                hosts=sorted({p.host for p in mine}), **_grade(mine),  # type: ignore[arg-type]
                                evidence=[f"{ref.name} fell off the bus or stopped reporting: the GPU (its compute "
                                          "tray) is the suspect, not the links or switches around it",
                                          *dict.fromkeys(e for p in mine for e in p.finding.evidence)]))
    paths: dict[LinkKey, _Path] = {}
    rest: list[Placed] = []
    for p in bad:
        kind = p.finding.ref.kind
        if (p.tray, p.gpu) in off_bus:
            continue
        if p.key is not None and (kind is ComponentKind.NVLINK or p.switch_side):
            paths.setdefault(p.key, _Path(p.key)).found.append(p)
        elif not _rules(p.finding) & {OFF_BUS_RULE, GPU_MISSING_RULE}:
            rest.append(p)
    left = list(paths.values())
    covering: dict[tuple[str, int], int] = {}  # a GPU with failing links -> the localization that holds them
    while True:
        units = _candidates(left, rack, rules)
        if not units:
            break
        best = max(units, key=lambda u: (len(u.paths), -u.size, -u.rank))
        covering.update({(p.key[0], p.key[1]): len(out) for p in best.paths})
        out.append(_unit_localization(best, rack))
        taken = {p.key for p in best.paths}
        left = [p for p in left if p.key not in taken]
    for path in left:
        covering[(path.key[0], path.key[1])] = len(out)
        out.append(_lone(path, rack))
    for p in rest:
        where = covering.get((p.tray, p.gpu)) if p.tray is not None and p.gpu is not None else None
        if where is None:
            out.append(_other(p))
            continue
        loc = out[where]  # the GPU's totals or Xid count the errors its failing links count: the same fault
        said = [f"{p.finding.component}: {c.message}" for c in p.finding.crossed]
        out[where] = loc.model_copy(update={"evidence": [*loc.evidence, *said, *p.finding.evidence[:1]],
                                            "links": [*loc.links, p.finding.component]})
    return sorted(out, key=lambda loc: -loc.confidence)


def _other(p: Placed) -> Localization:
    """A failing finding that is not one GPU link: a GPU's NVLink totals, an NVLink Xid, a PCIe link, a switch port
    no GPU link of the rack takes."""
    f = p.finding
    messages = [c.message for c in f.crossed]
    if f.ref.kind is ComponentKind.NVSWITCH:
        fatal = SXID_FATAL_RULE in _rules(f)
        return Localization(ref=f.ref, fault=FaultKind.NVSWITCH_FATAL if fatal else FaultKind.SWITCH_PORT,
                            switch=f.ref.switch, switch_port=f.ref.port, switch_tray=f.ref.switch_tray,
                            confidence=0.6, **_grade([p]),  # type: ignore[arg-type]
                            evidence=[*messages, *f.evidence[:2], f"{f.ref.name} takes no GPU link this rack knows: "
                                                                  "read its far end with NMX-T or NVOS"])
    if f.ref.kind is ComponentKind.PCIE:
        return Localization(ref=f.ref, fault=FaultKind.PCIE_REPLAYS, gpu=f.gpu, tray=p.tray, confidence=0.7,
                            hosts=[p.host], **_grade([p]), evidence=messages)  # type: ignore[arg-type]
    ref = ComponentRef.nvlink(p.gpu, None).in_tray(p.tray) if p.tray is not None else f.ref
    return Localization(ref=ref, fault=FaultKind.NVLINK_AGGREGATE, gpu=p.gpu, tray=p.tray, confidence=0.6,
                        hosts=[p.host], **_grade([p]),  # type: ignore[arg-type]
                        evidence=[*messages, *f.evidence[:2], f"the counters or the Xid name {ref.name} but no one "
                                  f"link: read each with `nvidia-smi nvlink -e -i {p.gpu}` on {p.host}"])
