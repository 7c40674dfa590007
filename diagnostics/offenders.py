"""What a fleet sweep returns, wherever it ran (the local store or a Prometheus server): the offending links, the
offending nodes' diagnoses, whether the view is complete, and what it cost."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict, Field, computed_field

from . import format as fmt
from .components import ComponentRef, switch_label, switch_name
from .config.thresholds import BELOW_EXPECTED_RULE, BUSBW_RULE, GPU_LOST_RULES, GPU_MISSING_RULE, MISSING_RULE
from .enums import ComponentKind, EventKind, LinkType, Severity, priority_rank, severity_rank
from .format import Unit
from .model import Diagnosis, Finding

COUNT_RULES = (BELOW_EXPECTED_RULE, GPU_MISSING_RULE)  # the value is a count against the platform's, not a rate
BELOW_RULES = (*COUNT_RULES, BUSBW_RULE)  # the value offends below its limit (a bus bandwidth too), not above it
NOT_ALL_CLEAR = "This is not an all-clear."  # what an incomplete fleet view says first (`SweepResult.not_all_clear`)
LINKS_SHOWN = 3  # a node's worst offending parts a fleet list shows (`/fabric fleet`, `sweep`); the rest counted


class Offender(BaseModel):
    """One link (or GPU, for a missing-links finding; or node, for missing GPUs) that broke one rule at the sweep's
    instant."""

    model_config = ConfigDict(frozen=True)

    node_id: str
    link_type: LinkType
    gpu: int | None = None
    nvswitch: str | None = None
    link: int | None = None
    rule: str
    severity: Severity
    rate_per_hour: float | None = None
    above: float | None = None
    detail: str = ""
    xid: int | None = None  # the Xid code, for an Xid rule
    bus: str | None = None  # the GPU's PCI address, where the input names it by address and not by index
    unit: Unit = Unit.PER_HOUR  # of rate_per_hour and above: a rate, or a gauge rule's unit (lanes, generations)
    also: tuple[str, ...] = Field(default=(), description="The other rules the same part broke, said on this row "
                                  "(`detail` holds what each said): a GPU off the bus, found by its Xid 79 and by "
                                  "its silence, is one part, as its node's one finding.")
    part: ComponentRef | None = Field(default=None, description="The part as its node's analysis names it (a link's "
                                      "far end, its switch port, its tray): a row from a node's findings (the store, "
                                      "files) says the name `fabricbot analyze` says. A server's row knows only its "
                                      "labels, so its name is built from them by the same `ComponentRef`.")

    @property
    def rules(self) -> tuple[str, ...]:
        """Every rule this row stands for: its own first."""
        return self.rule, *self.also

    def against(self) -> str:
        """Its limit as every door says the value is judged against it: `> 1,000/h`, or `< 336 GB/s` where the value
        offends below it (a count short of the platform's, a bus bandwidth); empty without a limit."""
        if self.above is None:
            return ""
        return f"{'<' if self.rule in BELOW_RULES else '>'} {fmt.value(self.above, self.unit)}"

    @property
    def key(self) -> tuple[str, str, int | None, str | None, str | None, int | None, str]:
        return *self.link_key, self.rule

    @property
    def link_key(self) -> tuple[str, str, int | None, str | None, str | None, int | None]:
        """The link (or GPU, or node) that broke the rule, whichever rule: a link over two rules is one link; GPUs a
        kernel log names by PCI address alone (no index) are one each."""
        return self.node_id, self.link_type.value, self.gpu, self.bus, self.nvswitch, self.link

    @property
    def ref(self) -> ComponentRef | None:
        """What broke the rule: a link, a GPU (an Xid), or None for the node (its GPU count)."""
        if self.xid is not None and (self.gpu is not None or self.bus):
            return ComponentRef.of_gpu(self.gpu, bus=self.bus)
        if self.rule == GPU_MISSING_RULE and self.gpu is not None:
            return ComponentRef.of_gpu(self.gpu)  # a silent GPU is the GPU, not its PCIe link
        if self.part is not None:
            return self.part
        if self.gpu is None and self.nvswitch is None:
            return None
        if self.link_type is LinkType.PCIE:
            return ComponentRef.pcie(self.gpu) if self.gpu is not None else None
        if self.link_type is LinkType.NVSWITCH or self.gpu is None:
            switch = self.nvswitch or ""
            return ComponentRef.nvswitch(switch_name(switch), self.link)
        return ComponentRef.nvlink(self.gpu, self.link)

    @property
    def counted_as(self) -> str:
        """What the row is, as a sweep's headline counts it (`counted_as`)."""
        return counted_as(self.ref)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def component(self) -> str:
        """As people say it, and as `fabricbot analyze` names the same part: `GPU 2 -> GPU 3 NVLink 5`, `GPU 2 NVLink 5
        -> NVSwitch 1 port 17`, `GPU 4 PCIe`, `NVSwitch 1 port 17`, `GPU 3 (Xid 79)`, `GPUs`; a server's row, which
        knows no far end, `GPU 2 NVLink 5`."""
        ref = self.ref
        if ref is None:
            return "GPUs"  # the node's GPU count
        return f"{ref.name} (Xid {self.xid})" if self.xid is not None else ref.name


def counted_as(ref: ComponentRef | None) -> str:
    """What an offending part is, as every fleet door counts it: a link (a switch port's too), a GPU, an NVSwitch,
    or a part (a node's GPU count, anything else)."""
    if ref is None:
        return "part"
    if ref.kind in (ComponentKind.NVLINK, ComponentKind.PCIE) or (ref.kind is ComponentKind.NVSWITCH
                                                                 and ref.port is not None):
        return "link"
    return {ComponentKind.GPU: "GPU", ComponentKind.NVSWITCH: "NVSwitch"}.get(ref.kind, "part")


def offending_parts(kinds: Collection[str], *, more: bool = False) -> str:
    """'4 offending GPUs', '2 more offending links', '3 offending parts' (of more than one kind): a count of
    offending parts, one `counted_as` kind each."""
    named = set(kinds)
    kind = named.pop() if len(named) == 1 else "part" if named else "link"  # none found: no link offends
    return offending(len(kinds), kind, more=more)


def offending(count: int, kind: str, *, more: bool = False) -> str:
    """'3 offending links', '1 offending GPU', '2 offending NVSwitches' ('2 more offending links'): a count of
    offenders of one kind."""
    said = "more offending" if more else "offending"
    return fmt.count(count, f"{said} {kind}", f"{said} NVSwitches" if kind == "NVSwitch" else None)


def worst_first(found: list[Offender], places: Mapping[str, int] | None = None) -> list[Offender]:
    """One node's offenders, most urgent first: by their part's place in its diagnosis's order (`places`, from
    `analysis.places`: the order every door lists a node's parts in), a row its diagnosis does not name after those
    it does; then a link down before one over a threshold, then by how far over it; then the order given."""
    places = places or {}

    def ratio(o: Offender) -> float:  # as a node's analysis ranks its crossings (`rules.crossings`): one order
        if o.rate_per_hour is None:
            return 0.0
        if not o.above:  # any event breaks it: as far over as can be
            return float("inf") if o.rate_per_hour > 0 else 0.0
        if o.rule in BELOW_RULES:  # short of the platform's (links, GPUs, bus bandwidth): the fewer, the worse
            return o.above / o.rate_per_hour if o.rate_per_hour > 0 else float("inf")
        return o.rate_per_hour / o.above

    def place(o: Offender) -> int:
        ref = o.part or o.ref
        return places.get(ref.name, len(places)) if ref is not None else len(places)

    return sorted(found, key=lambda o: (place(o), -severity_rank(o.severity), -ratio(o)))


def offenders_of(diagnosis: Diagnosis) -> list[Offender]:
    """Every rule a node's flagged findings break, as a sweep lists them: one offender per link and rule, and one
    per GPU for the links it lacks (as the push-down counts them). A GPU gone (off the bus, silent) is one row
    whatever rules it broke: the analysis folds its Xid 79 and its silence into one finding, and a list that named
    it twice (its Xid, its PCIe link) would read as two parts."""
    out: list[Offender] = []
    short: dict[int, Offender] = {}
    for f in diagnosis.findings:
        if f.severity is Severity.OK:
            continue
        if f.ref.kind is ComponentKind.GPU and len(f.crossed) > 1 and any(c.rule in GPU_LOST_RULES for c in f.crossed):
            out.append(_gone(diagnosis.node_id, f))
            continue
        for c in f.crossed:
            if c.rule == BELOW_EXPECTED_RULE and f.gpu is not None:
                short[f.gpu] = Offender(node_id=diagnosis.node_id, link_type=f.link_type, gpu=f.gpu, rule=c.rule,
                                        severity=c.severity, rate_per_hour=c.rate_per_hour, above=c.above,
                                        unit=c.unit, detail=f"{c.rate_per_hour:g} links reporting of {c.above:g}",
                                        part=f.ref)
                continue
            if c.counter == EventKind.XID.value and c.codes:  # one per code, as the server's `xid` label splits it
                out.extend(_offender(diagnosis.node_id, f, c.rule, c.severity, n, c.above, c.unit, c.message, xid=x)
                           for x, n in sorted(c.codes.items()))
                continue
            out.append(_offender(diagnosis.node_id, f, c.rule, c.severity, c.rate_per_hour, c.above, c.unit,
                                 c.message))
    out.extend(short.values())
    return sorted(out, key=lambda o: (o.node_id, o.link_type.value, o.gpu if o.gpu is not None else -1,
                                      o.nvswitch or "", o.link if o.link is not None else -1, o.rule, o.xid or -1))


def _gone(node: str, f: Finding) -> Offender:
    """A gone GPU's one row: its Xid first (the code says why it went), every other rule in `also`, and what each
    said, as its finding's line in `fabricbot analyze` says it."""
    first = next((c for c in f.crossed if c.counter == EventKind.XID.value and c.codes), f.crossed[0])
    also = tuple(dict.fromkeys(c.rule for c in f.crossed if c.rule != first.rule))
    detail = "; ".join(dict.fromkeys(c.message for c in f.crossed))
    row = _offender(node, f, first.rule, f.severity, first.rate_per_hour, first.above, first.unit, detail,
                    xid=min(first.codes) if first.codes else None)
    return row.model_copy(update={"also": also})


def _offender(node: str, f: Finding, rule: str, severity: Severity, value: float | None, above: float | None,
              unit: Unit | str, detail: str, xid: int | None = None) -> Offender:
    ref = f.ref
    switch = switch_label(ref.switch) if ref.kind is ComponentKind.NVSWITCH and ref.switch else None
    link = ref.port if ref.kind is ComponentKind.NVSWITCH else ref.link
    return Offender(node_id=node, link_type=f.link_type, gpu=ref.gpu, link=link, nvswitch=switch, rule=rule,
                    severity=severity, rate_per_hour=value, above=above, unit=Unit(unit or Unit.PER_HOUR),
                    detail=detail, xid=xid, bus=ref.bus if xid is not None else None, part=ref)


def gone_gpus_folded(pushed: list[Offender], read_back: list[Offender]) -> list[Offender]:
    """A node's pushed-down rows with each GPU its read-back shows gone (one row naming every rule it broke, as
    `offenders_of` lists it) in the place of the rows standing for it: its Xid's and its links' silence, and the
    node's GPU count where the GPUs shown gone make up its shortfall (the server's count says how many GPUs report,
    not which is missing), so both doors of a sweep list such a GPU as the one part it is."""
    gone = {o.gpu: o for o in read_back if o.gpu is not None and GPU_MISSING_RULE in o.rules}
    if not gone:
        return pushed

    def stands_for_gone(o: Offender) -> bool:
        if o.gpu is None:
            return o.rule == GPU_MISSING_RULE and (
                o.above is None or o.rate_per_hour is None or o.above - o.rate_per_hour <= len(gone))
        row = gone.get(o.gpu)
        return row is not None and (o.rule in row.rules or o.rule in (MISSING_RULE, BELOW_EXPECTED_RULE))

    return [*(o for o in pushed if not stands_for_gone(o)), *gone.values()]


def far_ends_folded(pushed: list[Offender], read_back: list[Offender]) -> list[Offender]:
    """A node's pushed-down rows less each switch port's row that its read-back shows as the far end of a GPU's
    link: the engine judges the link once, its switch end said on the GPU's row ("the other end ... "), and the
    store's sweep lists it so; the server, which knows no far end, had listed the port as a part of its own. A port
    the read-back judges on its own (a row of its own there) stays."""
    own = {(r.ref.switch, r.ref.port) for r in read_back
           if r.link_type is LinkType.NVSWITCH and r.ref is not None}
    ends = {(r.part.switch, r.part.port) for r in read_back if r.link_type is not LinkType.NVSWITCH
            and r.part is not None and r.part.switch and r.part.port is not None}

    def folded(o: Offender) -> bool:
        ref = o.ref
        where = (ref.switch, ref.port) if ref is not None else None
        return o.link_type is LinkType.NVSWITCH and where in ends and where not in own

    return [o for o in pushed if not folded(o)]


def named_as_read_back(pushed: list[Offender], read_back: list[Offender]) -> list[Offender]:
    """A node's pushed-down rows each with the name its read-back gives the same link and rule (`GPU 7 NVLink 8 ->
    NVSwitch 4 port 14`: the server's labels know no far end) and, where the server's row says nothing, what the
    read-back's finding said: the store's sweep names and says them so. The server's values stay."""
    said = {(r.link_key, r.rule): r for r in read_back}

    def named(o: Offender) -> Offender:
        r = said.get((o.link_key, o.rule))
        if r is None or (o.part is not None and o.detail):
            return o
        return o.model_copy(update={"part": o.part or r.part, "detail": o.detail or r.detail})

    return [named(o) for o in pushed]


class Timings(BaseModel):
    sweep_s: float = 0.0  # the generated queries, evaluated on the server (a store sweep: none)
    fetch_s: float = 0.0  # reading series: the offending nodes' back from the server, or the window from the store
    analyze_s: float = 0.0  # the analysis engine over what was read


class SweepResult(BaseModel):
    """A fleet sweep. `complete` is False whenever any part could not be read: the list is then a lower bound.

    `source` says where it ran: `prometheus` (the rules as PromQL on the server, offending nodes read back) or
    `store` (the local telemetry store, every node through the analysis engine).
    """

    at: datetime
    window_hours: float = Field(description="The span the rates are per hour over: the window asked, or the longest "
                                            "span any node's readings cover where every node's begin inside it.")
    window_asked_hours: float | None = Field(
        default=None, description="The window asked, where no node's readings reach its start (`window_hours`).")
    source: str = "prometheus"
    offenders: list[Offender] = Field(default_factory=list)
    diagnoses: dict[str, Diagnosis] = Field(default_factory=dict)
    confirmed: dict[str, list[Offender]] = Field(default_factory=dict)  # node -> local analysis of its series
    complete: bool = True
    incomplete_reasons: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    not_pushed_down: list[str] = Field(default_factory=list)  # rules only the local analysis evaluates
    recorded: list[str] = Field(default_factory=list, description="Recorded per-link rates the server held and the "
                                                                  "sweep read instead of computing them.")
    young: dict[str, float] = Field(default_factory=dict, description="Nodes with a series that began inside the "
                                    "span the rate queries look back over, each with the lookback in hours its "
                                    "youngest began within (the window, else the span): rated again over each "
                                    "series' span.")
    swept: list[str] = Field(default_factory=list, description="Every node the view covers, offending or not "
                                                               "(empty where the source lists only offenders).")
    silent: list[str] = Field(default_factory=list, description="Nodes with no reading in the span: not healthy.")
    unjudged: list[str] = Field(default_factory=list, description="Nodes read but whose links were not judged (one "
                                "reading per link: totals, no rates; stored readings that could not be read): "
                                "not healthy either.")
    platforms: dict[str, str] = Field(default_factory=dict, description="Each swept node's platform, where known: "
                                                                       "how many GPUs it has to draw.")
    queries: int = 0
    requests: int = 0
    retries: int = 0
    bytes_received: int = 0  # on the wire
    bytes_decoded: int = 0  # JSON after decompression
    timings: Timings = Field(default_factory=Timings)

    @property
    def nodes(self) -> list[str]:
        return sorted({o.node_id for o in self.offenders})

    def ranked(self) -> list[str]:
        """The offending nodes, most urgent first, the order every door lists them in (`fabricbot sweep`, `/fabric
        fleet`): by the priority of the node's diagnosis (a node not read back comes after those that were), then
        its worst offender's severity, then by name. Grouped by node, a node with a hundred links down is one
        entry, not a list that hides the urgent nodes behind it."""
        worst: dict[str, int] = {}
        for o in self.offenders:
            worst[o.node_id] = max(worst.get(o.node_id, -1), severity_rank(o.severity))

        def urgency(node: str) -> tuple[int, int, str]:
            d = self.diagnoses.get(node)
            return -(priority_rank(d.ticket_priority) if d is not None else -1), -worst[node], node

        return sorted(worst, key=urgency)

    def entries(self) -> list[list[str]]:
        """The offending nodes as the fleet views list them, in `ranked`'s order: each node alone, except the hosts
        whose diagnoses put one part on one ticket filed elsewhere (a rack's NVLink domain, a switch tray), which are
        one entry led by the most urgent of them: a rack's trays are not a list that hides the other racks."""
        shared: dict[tuple[str, str], list[str]] = {}
        out: list[list[str]] = []
        for node in self.ranked():
            d = self.diagnoses.get(node)
            if d is None or not d.fault_detected or d.ticket_owner == node:
                out.append([node])
                continue
            key = (d.ticket_owner, d.isolated_component)
            if key in shared:
                shared[key].append(node)
            else:
                shared[key] = [node]
                out.append(shared[key])
        return out

    def findings_of(self, node: str) -> list[Finding]:
        """A read-back node's unhealthy findings in the order the sweep lists its rows (most urgent first,
        `worst_first`), so every fleet door names its parts in one order; a finding no row names after them."""
        d = self.diagnoses.get(node)
        if d is None:
            return []
        place: dict[str, int] = {}
        for o in self.offenders:
            ref = o.part or o.ref
            if o.node_id == node and ref is not None:
                place.setdefault(ref.name, len(place))
        return sorted((f for f in d.findings if f.severity is not Severity.OK),
                      key=lambda f: place.get(f.component, len(place)))

    def verdict(self, node: str) -> str | None:
        """The node's verdict as every fleet door says it beside the node (plain text): the part its diagnosis
        isolated, the node its ticket is filed on where another (a rack's tray), and its priority; or its priority
        with no part isolated. None for a node not read back: its offenders are all there is."""
        d = self.diagnoses.get(node)
        if d is None:
            return None
        if not d.fault_detected:
            return f"{d.priority_said()} priority, no part isolated"
        owner = f" (ticket on {d.ticket_owner})" if d.ticket_owner != node else ""
        return f"{d.isolated_component}{owner}, {d.priority_said()} priority"

    def not_all_clear(self, shown: int = 10) -> tuple[str, list[str]]:
        """Why an incomplete view is no all-clear, after `NOT_ALL_CLEAR` (plain text): what was not judged (a store's
        nodes, a Prometheus server's queries), and the first `shown` reasons, then how many more."""
        what = "Some queries did not answer in full" if self.source == "prometheus" else \
            "Some nodes' links were not judged"
        more = len(self.incomplete_reasons) - shown
        return (f"{what}, so links may be failing that this list does not show:",
                [*self.incomplete_reasons[:shown], *([f"…and {more} more reasons"] if more > 0 else [])])

    def no_reading(self, nodes: list[str], span: timedelta, *, every: bool = False) -> None:
        """The view incomplete for `nodes`, silent in the `span` before it (`every`: no node reports in it), named
        (the first ten) in the one wording each source's sweep says them in: a silent node is never healthy."""
        self.complete = False
        self.silent = sorted({*self.silent, *nodes})
        one = len(nodes) == 1
        who = ("the one node" if one else f"all {fmt.count(len(nodes), 'node')}") if every \
            else fmt.count(len(nodes), "node")
        listed = ", ".join(nodes[:10]) + (" ..." if len(nodes) > 10 else "")
        self.incomplete_reasons.append(f"{who} of the {self.source} {'has' if one else 'have'} no reading in the "
                                       f"{fmt.hours(span.total_seconds() / 3600)} before {fmt.when(self.at)}: "
                                       f"{listed}")

    def stopped_reporting(self, nodes: list[str], window: timedelta) -> None:
        """The view incomplete for `nodes`, whose every series stopped inside the window: an exporter or a node gone
        away is not each of its links down, nor healthy on the readings it sent before."""
        if not nodes:
            return
        self.complete = False
        self.silent = sorted({*self.silent, *nodes})
        listed = ", ".join(nodes[:10]) + (" ..." if len(nodes) > 10 else "")
        self.incomplete_reasons.append(
            f"{fmt.count(len(nodes), 'node')} stopped reporting inside the "
            f"{fmt.hours(window.total_seconds() / 3600)} before {fmt.when(self.at)} (no reading since, every series "
            f"at once: the exporter or the node, not each link): {listed}")

    def found(self, *, inline: bool = False) -> str:
        """The offenders counted each once whatever rules it broke, as what they are ('3 offending links', '1
        offending GPU'; 'parts' where they are of more than one kind); where some broke more than one rule, how many
        rule breaches the list holds (one line each, a gone GPU's all on its one), in parentheses, or between commas
        where the text is `inline` in parentheses already."""
        # a part is its link (or GPU, or node) and what it is: a GPU's Xid and its NVLinks' totals are two parts, as
        # the node's findings and the fleet view count them; a link over two rules, or a GPU over two codes, is one
        kinds = self.parts_counted()
        broken = sum(len(o.rules) for o in self.offenders)  # a gone GPU's one row counts each rule it broke
        breaches = fmt.count(broken, "rule breach", "rule breaches")
        said = "" if broken == len(kinds) else f", {breaches}," if inline else f" ({breaches})"
        return f"{offending_parts(kinds)}{said}"

    def parts_counted(self) -> list[str]:
        """What each offending part is (`counted_as`), each part once: the count every door's headline gives."""
        return list({self._part_key(o): o.counted_as for o in self.offenders}.values())

    def _part_key(self, o: Offender) -> tuple[object, ...]:
        """What makes a row's part one part: its node's link, GPU or node; but a rack's shared unit (a switch tray's
        port, a cable cartridge), which the compute tray at a link's GPU end and the switch tray's host both list, is
        one part of its rack."""
        ref = o.ref
        d = self.diagnoses.get(o.node_id)
        if ref is not None and d is not None and d.rack is not None and (ref.switch_tray or ref.cartridge):
            return d.rack.rack_id, ref.slug, o.counted_as
        return *o.link_key, o.counted_as

    def headline(self) -> str:
        """One line for a person: never 'healthy' unless every query answered in full."""
        if not self.complete:
            found = f"{self.found(inline=True)} found so far" if self.offenders else "nothing found"
            return (f"fleet view INCOMPLETE ({found}; this is not an all-clear): "
                    + "; ".join(self.incomplete_reasons))
        if not self.offenders:
            asked = "" if self.window_asked_hours is None else \
                f" (the readings' span of a {fmt.hours(self.window_asked_hours)} window)"
            return f"all links within thresholds over the last {fmt.hours(self.window_hours)}{asked}"
        return f"{self.found()} on {fmt.count(len(self.nodes), 'node')}"
