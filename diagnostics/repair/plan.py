"""The repair plan for one fault on one platform: the catalog's entry, filled with the localization's facts.

What to capture first, how to isolate the node, the reset the platform allows, the repairs in order, the part, a
one-line action and the warnings (an input that contradicts the platform, an unknown platform, an assumed port).
Every text is filled from the facts or rephrased or left out where a fact is unknown: nothing unfilled reaches a user.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..components import is_rack_chip, is_switch
from ..config.parts import Part, part_by_id
from ..config.racks import RackSpec
from ..config.repair_catalog import (
    RESET_MARK,
    Catalog,
    FaultOverride,
    Need,
    PlatformEntry,
    StepEntry,
    StepRef,
    Wording,
    load_catalog,
)
from ..config.repair_text import Text, fill, known
from ..enums import FaultKind, PortSource, ResetScope
from ..errors import ConfigError
from ..topology import NodeGraph, PortInfo, gpu_index
from ..topology.graph import PCIE_SWITCH
from ..topology.templates import template
from .plan_model import Capture, PlanFacts, PlanStep, RepairPlan, RepeatOffender, Reset
from .plan_values import plan_values, platform_rack

# What a node must have, when its platform is unknown, for the fault kind to be possible at all.
_IMPLIED: dict[FaultKind, frozenset[str]] = {
    FaultKind.NVLINK: frozenset({"nvlink"}), FaultKind.NVLINK_AGGREGATE: frozenset({"nvlink"}),
    FaultKind.GPU_NVLINKS: frozenset({"nvlink"}), FaultKind.NVLINK_SHARED: frozenset({"nvlink"}),
    FaultKind.NVSWITCH: frozenset({"nvlink", "nvswitch", "fabric-info", "fabric-manager"}),
    FaultKind.NVSWITCH_SHARED: frozenset({"nvlink", "nvswitch", "fabric-info", "fabric-manager"}),
    FaultKind.NVSWITCH_FATAL: frozenset({"nvlink", "nvswitch", "fabric-info", "fabric-manager"}),
    FaultKind.FABRIC_MANAGER: frozenset({"nvlink", "nvswitch", "fabric-info", "fabric-manager"}),
}
_LINK_FAULTS = (FaultKind.NVLINK, FaultKind.NVLINK_AGGREGATE)
# A rack's units whose links are found through the rack file's wiring (which GPU link lands on which chip and port)
_ON_RACK_MAP = (FaultKind.NVSWITCH, FaultKind.NVSWITCH_FATAL, FaultKind.SWITCH_PORT, FaultKind.SWITCH_TRAY,
                FaultKind.CARTRIDGE, FaultKind.COMPUTE_TRAY)
def _graph(platform: str) -> NodeGraph | None:
    """A platform's template graph (plans only read it); None for a platform no file names."""
    try:
        return template(platform)
    except ConfigError:
        return None


def _gpu_index(name: str | None) -> int | None:
    return gpu_index(name) if name else None


def _nvlink_gpu_peers(graph: NodeGraph, gpu: int) -> list[int]:
    peers = {_gpu_index(v) for _, v, _, _ in graph.gpu_edges(gpu, "nvlink")}
    return sorted(p for p in peers if p is not None)


def _reset_set(graph: NodeGraph, gpu: int) -> list[int]:
    """GPU `gpu` and every GPU reachable over NVLink from it: pre-Ampere, one reset must name them all."""
    seen, todo = {gpu}, [gpu]
    while todo:
        for peer in _nvlink_gpu_peers(graph, todo.pop()):
            if peer not in seen:
                seen.add(peer)
                todo.append(peer)
    return sorted(seen)


def _path(port: PortInfo) -> str:
    """Where a GPU link lands: 'NVSwitch 0 port 9 (port assumed from the platform template)'."""
    where = {PortSource.OBSERVED: "port observed", PortSource.ASSUMED: "port assumed from the platform template"}
    number = f" port {port.switch_port}" if port.switch_port is not None else ""
    return f"{port.switch}{number} ({where.get(PortSource(port.source), 'port unknown')})"


class _Builder:
    def __init__(self, cat: Catalog, platform: str | None, fault: FaultKind, facts: PlanFacts) -> None:
        self.cat, self.platform, self.fault, self.facts = cat, platform, fault, facts
        self.plat: PlatformEntry | None = cat.platform.get(platform) if platform else None
        self.warnings: list[str] = []
        self.sources: list[str] = []
        overrides = self.plat.fault if self.plat else cat.unknown.fault
        self.over = overrides.get(fault, FaultOverride())
        rack = cat.rack_fault.get(fault) if self.plat is not None and self.plat.rack else None
        self.base = rack or cat.fault[fault]
        self.rack: RackSpec | None = platform_rack(platform) if self.plat is not None and self.plat.rack else None
        self.values = plan_values(cat, platform, self.plat, self.rack, fault, facts)
        self.recovery_reboot = False  # the driver's recovery action made the reset a reboot
        self.port_source = facts.port_source
        self.contradiction: str | None = None
        if self.plat is not None:
            self.sources.append(f"{platform}: {self.plat.source}")
        if platform is None and facts.boards:
            self._warn(cat.warning.unknown_platform_alike, boards=", ".join(facts.boards))
        elif platform is None:
            self._warn(cat.warning.unknown_platform)
        elif self.plat is None:
            self._warn(cat.warning.unlisted_platform)

    # -- wording -------------------------------------------------------------------------------------------------
    def fill(self, text: Text | None, **extra: Any) -> str | None:
        return fill(text, {**self.values, **known(extra)})

    def _warn(self, text: Text, **extra: Any) -> None:
        line = self.fill(text, **extra)
        if line:
            self.warnings.append(line)

    def has(self, need: Need) -> bool:
        if self.plat is not None:
            return self.plat.has(need)
        return need in _IMPLIED.get(self.fault, frozenset())

    # -- facts checked against the platform's topology ------------------------------------------------------------
    def check_peer(self) -> None:
        """An NVLink's peer that the platform cannot have: say so, and name where the link really lands."""
        f, plat = self.facts, self.plat
        if f.gpu is not None and _gpu_index(f.peer) is not None and f.stated_pair:
            self.values["gpu_dst"] = str(_gpu_index(f.peer))  # the seed's wording, only where the seed's form asks
        if plat is None or self.fault not in _LINK_FAULTS or f.gpu is None or not f.peer or self.platform is None:
            return
        graph = _graph(self.platform)
        if graph is None or f.gpu not in graph.gpus:
            return
        peer_gpu = _gpu_index(f.peer)
        text: Wording | None = None
        extra: dict[str, Any] = {"input_peer": f.peer}
        if plat.nvlink == "nvswitch" and peer_gpu is not None:
            text = self.cat.contradiction.peer_on_switch_board
            port = graph.port_of(f.gpu, f.link, "nvlink")
            if port.switch is not None:
                extra["switch_path"] = _path(port)
                self.values.update(known({"peer": port.switch, "switch": port.switch,
                                          "switch_port": f.switch_port if f.switch_port is not None
                                          else port.switch_port}))
                if f.switch_port is None:
                    self.port_source = PortSource(port.source)
            else:
                self.values.pop("peer", None)
        elif plat.nvlink in ("direct", "bridge") and f.peer.startswith("NVSwitch"):
            text = self.cat.contradiction.no_switch_on_platform
            for key in ("peer", "switch", "switch_port"):
                self.values.pop(key, None)
        elif plat.nvlink in ("direct", "bridge") and peer_gpu is not None \
                and peer_gpu not in _nvlink_gpu_peers(graph, f.gpu):
            text = self.cat.contradiction.peer_not_joined
            peers = _nvlink_gpu_peers(graph, f.gpu)
            if peers:
                extra["switch_path"] = ", ".join(f"GPU {p}" for p in peers)
            self.values.pop("peer", None)
        if text is None:
            return
        self.values.pop("gpu_dst", None)
        self._warn(text.warning, **extra)
        self.contradiction = self.fill(text.action, **extra)

    def check_port(self) -> None:
        if self.rack is not None:
            self.check_rack_map()
            return
        switch = self.values.get("switch", "")
        graph = _graph(self.platform) if self.platform else None  # an assumed port is the template's
        pcie = graph is not None and switch in graph.switches(PCIE_SWITCH)
        if not is_switch(switch) and not pcie:
            return
        if "switch_port" in self.values and self.port_source is PortSource.ASSUMED:
            said = self.cat.warning.assumed_pcie_port if pcie else self.cat.warning.assumed_port
            if said is not None:
                self._warn(said)
        elif "switch_port" not in self.values and self.fault in _LINK_FAULTS:
            self._warn(self.cat.warning.unknown_port)

    def check_rack_map(self) -> None:
        """A rack unit named through the rack file's wiring says the wiring is assumed where it is, and the read
        that confirms it: the port map (`nvidia-smi nvlink -R`, NMX-T's link partner), the cartridge split."""
        assert self.rack is not None
        on_map = self.fault in _ON_RACK_MAP or (self.fault in _LINK_FAULTS and is_switch(self.values.get("switch"))
                                                and self.port_source is not PortSource.OBSERVED)  # NMX-T's, read
        if on_map and self.rack.map_assumed:
            self._warn(self.cat.warning.assumed_rack_map)
        if self.fault is FaultKind.CARTRIDGE and self.rack.cartridges_assumed:
            self._warn(self.cat.warning.assumed_cartridge)

    def escalate(self, part: Part | None, nxt: Part | None, carrier: Part | None) -> tuple[Part | None, Part | None]:
        """A repeat offender's parts: the part that carries the GPU first, the plan's own part after it."""
        if carrier is None or (part is not None and part.id == carrier.id):
            return part, nxt
        self.sources.append(f"{carrier.id}: {carrier.source}")
        if self.plat is not None:
            self.values.update(part=carrier.fru, part_id=carrier.id)
            for key in ("next_part", "next_part_id"):
                self.values.pop(key, None)
            if part is not None:
                self.values.update(next_part=part.fru, next_part_id=part.id)
        return carrier, part

    def escalated_isolation(self, refs: Sequence[StepRef]) -> list[StepRef]:
        """A rack's isolation drains the rack before a compute tray is replaced, where it drained less."""
        if self.plat is None or not self.plat.rack:
            return list(refs)
        drains = [r.drains if isinstance(r, StepEntry) else self.cat.step[r].drains if r in self.cat.step else None
                  for r in refs]
        return list(refs) if "rack" in drains else [*refs, self.cat.escalation.rack_isolate]

    # -- the plan's parts ----------------------------------------------------------------------------------------
    def on_nvswitch(self) -> bool:
        """With no platform: whether the GPU's links land on NVSwitches, as its link's far end says or as every
        board its topology fits has them."""
        f = self.facts
        if is_switch(f.peer or "") or is_switch(f.switch or ""):
            return True
        boards = [self.cat.platform.get(b) for b in f.boards]
        return bool(boards) and all(b is not None and b.nvlink == "nvswitch" for b in boards)

    def parts(self) -> tuple[Part | None, Part | None, str | None]:
        chosen, following = self.over.part, self.over.next_part
        if self.plat is None and self.over.switch_part and self.on_nvswitch():
            # a link that lands on an NVSwitch: an SXM module, then the baseboard, never a bridge (every known
            # NVSwitch board's order: the module is swapped first, the baseboard only if the errors stay)
            chosen = self.over.switch_module or self.over.next_part or self.over.switch_part
            following = self.over.switch_part
            if self.over.rack_part and (is_rack_chip(self.facts.peer) or is_rack_chip(self.facts.switch)):
                # on a rack's switch tray: a GB200 compute tray's, not a baseboard's
                chosen, following = self.over.rack_part, self.over.next_part
        part = part_by_id(chosen) if chosen else None
        nxt = part_by_id(following) if following else None
        for key, p in (("part", part), ("next_part", nxt)):
            if p is None:
                continue
            self.sources.append(f"{p.id}: {p.source}")
            if self.plat is not None:  # a board's part names itself in the steps; an unknown board's is a choice
                self.values[key] = p.fru
                self.values[f"{key}_id"] = p.id
        note = None
        if part is None:
            warning = self.cat.warning
            note = self.fill(warning.no_part_software if self.fault is FaultKind.FABRIC_MANAGER
                             else warning.no_part_rack if self.fault in (FaultKind.RACK_INCIDENT, FaultKind.FANOUT)
                             else warning.no_part_shared if self.fault is FaultKind.NVLINK_SHARED
                             else warning.no_part_unknown)
        return part, nxt, note

    def reset(self) -> Reset:
        scope = self.base.reset
        gpus: list[int] = []
        command = None
        gpu, bus = self.facts.gpu, self.values.get("bus")  # a GPU named by its PCI address: nvidia-smi -i takes it
        peers = self.plat is not None and self.plat.gpu_reset == "nvlink-peers"
        if scope is ResetScope.GPU and gpu is None and (bus is None or peers):
            scope = ResetScope.NODE
        if self.facts.recovery_scope == "node" and scope in (ResetScope.GPU, ResetScope.NVLINK_PEERS):
            scope, self.recovery_reboot = ResetScope.NODE, True  # the driver asks for more than a GPU reset
        if scope is ResetScope.GPU and gpu is None and bus is not None:
            command = f"nvidia-smi -r -i {bus}"
            self.values.update(reset_command=command, reset_gpus=bus, reset_what=self.values.get("unit") or bus)
        elif scope is ResetScope.GPU and gpu is not None:
            gpus = [gpu]
            graph = _graph(self.platform) if self.platform else None
            if peers and graph is not None:
                scope, gpus = ResetScope.NVLINK_PEERS, _reset_set(graph, gpus[0])
            command = "nvidia-smi -r -i " + ",".join(map(str, gpus))
            listed = ", ".join(map(str, gpus))
            what = f"GPUs {listed} together (NVLink peers of a pre-Ampere GPU)" if len(gpus) > 1 else f"GPU {listed}"
            self.values.update(reset_command=command, reset_gpus=listed, reset_what=what)
        entry = self.cat.reset[scope]
        self.sources.append(f"reset {scope.value}: {entry.source}")
        if scope is ResetScope.FABRIC_SERVICE and not (self.plat is not None and self.plat.rack):
            command = self.fill(entry.command)  # a rack's fabric is NMX's, on a switch tray: no host service
        stops = entry.stops if self.recovery_reboot else self.base.reset_stops or entry.stops
        return Reset(scope=scope, gpus=gpus, command=command, stops=stops)

    def reset_step(self, reset: Reset) -> PlanStep | None:
        entry = self.cat.reset[reset.scope]
        if self.recovery_reboot:
            text = self.fill(self.cat.warning.recovery_reboot)
            return PlanStep(text=text, stops=reset.stops) if text else None
        down = self.fill(entry.down_text) if self.facts.link_down else None
        text = self.fill(self.over.reset_text) or self.fill(self.base.reset_text) or down or self.fill(entry.text)
        return PlanStep(text=text, command=reset.command, stops=reset.stops) if text else None

    def isolation(self, refs: Sequence[StepRef], node_stops: bool) -> list[PlanStep]:
        """The isolation steps; a step that would leave the node's other GPUs running gives way to its node-wide
        one when anything in the plan stops them all."""
        if node_stops:
            refs = [self.cat.step[r].if_node_stops or r if isinstance(r, str) and r in self.cat.step else r
                    for r in refs]
        return self.steps(refs)

    def captures(self) -> list[Capture]:
        out = []
        for cid in self.over.capture or self.base.capture:
            entry = self.cat.capture[cid]
            if entry.needs is not None and not self.has(entry.needs):
                continue
            command = self.fill(entry.command)
            if command is not None:
                why = self.fill(entry.why) or (entry.why if isinstance(entry.why, str) else entry.why[-1])
                out.append(Capture(command=command, why=why))
                if entry.source != "assumed":
                    self.sources.append(f"{command}: {entry.source}")
        return out

    def steps(self, refs: Sequence[StepRef], reset: PlanStep | None = None) -> list[PlanStep]:
        out: list[PlanStep] = []
        placed = False
        for ref in refs:
            if ref == RESET_MARK:
                placed = True
                out += [reset] if reset else []
                continue
            entry = self.cat.step[ref] if isinstance(ref, str) else ref
            step = self._step(entry)
            if step is not None:
                out.append(step)
        if reset is not None and not placed:
            out.insert(0, reset)
        return out

    def investigated(self, refs: Sequence[StepRef]) -> list[StepRef]:
        """The repairs with the catalog's step for what NVIDIA's decode asks to investigate (the link's other end)
        right after the reset and the diagnostic that follows it: before anything of this GPU is reseated or swapped."""
        bucket = self.facts.investigate_bucket
        sid = bucket.lower().replace("_", "-") if bucket else None
        if sid is None or sid not in self.cat.step:
            return list(refs)
        out = list(refs)
        at = out.index(RESET_MARK) + 1 if RESET_MARK in out else 0
        if at < len(out) and out[at] == "diag":
            at += 1
        return [*out[:at], sid, *out[at:]]

    def _step(self, entry: StepEntry) -> PlanStep | None:
        down = self.fill(entry.down_text) if self.facts.link_down else None
        text = down or self.fill(entry.text)
        if text is None:
            return None
        if isinstance(entry.text, str) and entry.source != "assumed":
            self.sources.append(f"{text[:60]}: {entry.source}")
        return PlanStep(text=text, command=self.fill(entry.command), stops=entry.stops, drains=entry.drains)

    def nonfatal_entry(self, name: str) -> Any:
        """A non-fatal Xid's list: the platform's, else the fault's (a rack's, else the board's: the Xid catalog's
        decode is the same on both)."""
        return getattr(self.over, name) or getattr(self.base, name) or getattr(self.cat.fault[self.fault], name)

    @property
    def nonfatal(self) -> bool:
        """An NVLink Xid the catalog's decode does not make fatal, where the catalog words one apart."""
        return self.facts.fatal is False and self.nonfatal_entry("nonfatal_repair") is not None

    def chosen_repair(self) -> list[StepRef]:
        """The repairs in order; a link that is down is named by its state, not by counters it does not count; a
        non-fatal Xid's are the catalog's for it."""
        if self.nonfatal:
            repair: list[StepRef] = self.nonfatal_entry("nonfatal_repair")
            return repair
        if self.facts.link_down:
            down = self.over.down_repair or self.base.down_repair
            if down is not None:
                return down
        return self.over.repair or self.base.repair

    def chosen_action(self) -> Text:
        if self.nonfatal:
            action: Text = self.nonfatal_entry("nonfatal_action") or self.base.action
            return action
        if self.facts.link_down:
            down = self.over.down_action or self.base.down_action
            if down is not None:
                return down
        return self.over.action or self.base.action

    def action(self, text: Text) -> str:
        line = self.fill(text) or self.fill(["Drain {node} and follow the repair ticket's steps for {unit}",
                                             "Drain {node} and follow the repair ticket's steps"]) or ""
        first = self.fill(self.cat.warning.recovery_action) if self.recovery_reboot else None
        line = f"{first}; then: {line[0].lower()}{line[1:]}" if first else line
        if self.facts.investigate:  # NVIDIA's decode of the Xid names what to look at beyond the reset
            line = f"{line}; NVIDIA's Xid decode: {self.facts.investigate}"
        return f"{self.contradiction}; {line}" if self.contradiction else line


def repair_plan(platform: str | None, fault: FaultKind | str, facts: PlanFacts | Mapping[str, Any] | None = None,
                *, catalog: Catalog | None = None, repeat_offender: RepeatOffender | None = None) -> RepairPlan:
    """The catalog's plan for `fault` on `platform` (None: unknown), filled with the localization's facts. A repeat
    offender's (`repeat_offender`) keeps the captures and the isolation and replaces the part that carries the GPU
    first ([escalation]): no reset, reseat or swap test of the earlier tickets again."""
    fault = FaultKind(fault)
    facts = facts if isinstance(facts, PlanFacts) else PlanFacts.model_validate(dict(facts or {}))
    b = _Builder(catalog or load_catalog(), platform, fault, facts)
    if not b.over.applies:
        return _not_applicable(b)
    b.check_peer()
    b.check_port()
    part, nxt, note = b.parts()  # in the catalog's order: an end that saw the errors is evidence, not a reorder
    isolate = b.over.isolate or b.base.isolate
    if b.nonfatal:  # nothing is stopped until the decode or the driver's Xid 154 asks for a reset
        isolate = b.nonfatal_entry("nonfatal_isolate") or isolate
    if repeat_offender is not None:
        part, nxt = b.escalate(part, nxt, repeat_offender.carrier)
        isolate = b.escalated_isolation(isolate)
    reset = b.reset()
    if facts.recovery:
        b._warn(b.cat.warning.recovery_said)
    captures = b.captures()
    if repeat_offender is None:
        repair = b.steps(b.investigated(b.chosen_repair()), None if b.nonfatal else b.reset_step(reset))
        node_stops = reset.stops == "node" or any(s.stops == "node" for s in repair)
        action = b.action(b.chosen_action())
    else:  # the earlier tickets' reset, reseat and swap test are not repeated: the replacement leads
        esc = b.cat.escalation
        repair = b.steps(esc.rack_repair if b.plat is not None and b.plat.rack else esc.repair)
        node_stops = any(s.stops in ("node", "rack") for s in repair)
        action = b.action(esc.action)
    isolation = b.isolation(isolate, node_stops)
    return RepairPlan(platform=platform, fault=fault, applies=True, part=part, next_part=nxt, part_note=note,
                      captures=captures, isolation=isolation, reset=reset, repair=repair, action=action,
                      warnings=b.warnings, sources=list(dict.fromkeys(b.sources)),
                      escalation=repeat_offender.why if repeat_offender is not None else None)


def _not_applicable(b: _Builder) -> RepairPlan:
    """A fault the platform cannot have: the plan says the input contradicts the platform, and how to settle it."""
    why = b.over.why or "the platform cannot have this fault"
    na = b.cat.not_applicable
    b.values["why"] = why
    b._warn(b.cat.contradiction.not_applicable.warning)
    b.contradiction = b.fill(b.cat.contradiction.not_applicable.action)
    first = [cid for cid in ("identify-board", "topology") if cid not in (b.over.capture or b.base.capture)]
    b.over = b.over.model_copy(update={"capture": first + list(b.over.capture or b.base.capture)})
    return RepairPlan(platform=b.platform, fault=b.fault, applies=False, part_note=why, captures=b.captures(),
                      isolation=b.steps(na.isolate), reset=Reset(scope=ResetScope.NONE), repair=b.steps(na.repair),
                      action=b.action(na.action), warnings=b.warnings, sources=list(dict.fromkeys(b.sources)))
