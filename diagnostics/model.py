"""Typed values that cross boundaries: findings, suspects and the diagnosis (the snapshot input is `snapshots`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    computed_field,
    model_validator,
)

from . import format as fmt
from .components import ComponentRef
from .enums import ComponentKind, FaultKind, LinkEnd, LinkState, LinkType, PortSource, Priority, Severity
from .format import Unit
from .names import outside_ascii


class Crossing(BaseModel):
    """One threshold a link crossed."""

    model_config = ConfigDict(frozen=True)

    rule: str
    counter: str
    rate_per_hour: float | None = Field(default=None, description="The value the rule judged, in `unit`.")
    above: float | None = None
    unit: Unit = Unit.PER_HOUR
    severity: Severity
    message: str
    codes: dict[int, float] = Field(default_factory=dict, description="An event rule's codes (Xid or SXid), with how "
                                                                         "many of each it counted.")
    fatal: bool = Field(default=False, description="An event rule's: some event it counted is fatal (as the Xid or "
                                                   "SXid catalog decodes it), which stops its link until a restart.")
    investigate: str | None = Field(default=None, description="An Xid rule's: what NVIDIA's XID 144-150 Decode asks "
                                                              "to investigate beyond its action, in words (the "
                                                              "link's other end, for one).")
    investigate_bucket: str | None = Field(default=None, description="The decode's investigatory bucket behind "
                                                                     "`investigate` (INVESTIGATE_PEER_DEVICE): keys "
                                                                     "the repair catalog's step for it.")


class Finding(BaseModel):
    """Every link the analysis looked at, healthy or not, with its rates and the thresholds it crossed."""

    model_config = ConfigDict(frozen=True)

    ref: ComponentRef
    link_type: LinkType
    link_id: str
    link: int | None = None
    gpu: int | None = None
    peer_gpu: int | None = None
    peer: str = "unknown"
    link_state: LinkState = LinkState.UP
    counts: dict[str, float] = Field(default_factory=dict, description="Increase of each counter in the window.")
    rates_per_hour: dict[str, float] = Field(default_factory=dict, description="Counters' increase per hour.")
    levels: dict[str, float] = Field(
        default_factory=dict, description="Readings judged as they stand: lanes or generations lost, bit-error ratios.")
    crossed: list[Crossing] = Field(default_factory=list)
    severity: Severity = Severity.OK
    worst_ratio: float | None = Field(
        default=None,
        description="Highest rate / threshold among the rules crossed; None for a down link or a zero threshold.",
    )
    # Where the link lands, from the topology: a switch and port, with how that port is known.
    switch: str | None = None
    switch_port: int | None = None
    port_source: PortSource = PortSource.UNKNOWN
    lanes: list[int] = Field(default_factory=list, description="Failing lanes, only where a reader observed them.")
    end: LinkEnd | None = Field(
        default=None, description="The end whose receiver saw the errors, only where the counters of an end say so "
                                  "(`diagnostics/data/ends.toml`): the GPU, its upstream PCIe port, or the NVSwitch.")
    width: int | None = Field(default=None, description="PCIe lanes the link runs at (its max is `max_width`).")
    max_width: int | None = None
    onset: datetime | None = Field(default=None, description="When the link's errors started, from a history.")
    explains_slowdown: bool | None = None
    correlation_score: float | None = None
    evidence: list[str] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def component(self) -> str:
        """The link as people say it (`ref.name`)."""
        return self.ref.name


class ComponentFacts(BaseModel):
    """Where a suspected component sits: its GPU, the link and the peer it reaches, the switch port, the lanes."""

    model_config = ConfigDict(frozen=True)

    gpu: int | None = None
    peer: str | None = None
    link: int | None = None
    switch: str | None = None
    switch_port: int | None = None
    port_source: PortSource = PortSource.UNKNOWN
    lanes: list[int] = Field(default_factory=list)
    end: LinkEnd | None = None
    tray: str | None = Field(default=None, description="In a rack: the compute tray the component is in.")
    switch_tray: str | None = Field(default=None, description="In a rack: the switch tray the component is in.")
    cartridge: str | None = Field(default=None, description="In a rack: the cable cartridge.")
    hosts: list[str] = Field(default_factory=list,
                             description="In a rack: the hosts whose links the component carries (to drain).")
    switch_host: str | None = Field(default=None, description="In a rack: the host of the switch tray it is on.")
    recovery: str | None = Field(default=None, description="The driver's own recovery action for its GPU, as read "
                                                           "(Xid 154, DCGM_FI_DEV_GPU_RECOVERY_ACTION) and where.")
    recovery_scope: Literal["none", "drain", "gpu", "node"] | None = Field(
        default=None, description="What that action takes: a plan's reset is never narrower (data/recovery.toml).")
    fatal: bool | None = Field(default=None, description="A fault known by an NVLink Xid alone: whether the Xid "
                                                         "catalog's decode makes it fatal (None: not an Xid's fault).")
    investigate: str | None = Field(default=None, description="What NVIDIA's decode of that Xid asks to investigate "
                                                              "beyond the reset, in words: the plan's action says it.")
    investigate_bucket: str | None = Field(default=None, description="That decode's investigatory bucket "
                                                                     "(INVESTIGATE_PEER_DEVICE): the plan's repair "
                                                                     "steps carry the catalog's step for it.")


@dataclass(frozen=True)
class RackSlot:
    """Where the inventory puts a host: its rack, and its tray's slot (None when the inventory gives none)."""

    rack: str
    tray: str | None = None
    role: str | None = None  # what else the host runs for its rack: "nmx-controller" where NMX-Controller runs


class StoppedBy(BaseModel):
    """A rack's part whose repair stops a tray whose own links read clean: the tray is drained with the rack's plan."""

    model_config = ConfigDict(frozen=True)

    component: str
    priority: Priority = Field(description="The rack's ticket's priority: the tray is drained at its pace.")


class RackPlace(BaseModel):
    """A rack whose hosts are diagnosed together: its platform and which host is in which tray."""

    model_config = ConfigDict(frozen=True)

    rack_id: str
    platform: str
    compute: dict[str, str] = Field(default_factory=dict, description="Compute tray (slot) -> host.")
    switch: dict[str, str] = Field(default_factory=dict, description="Switch tray (slot) -> host.")
    slots_known: bool = Field(default=True, description="False when trays are named by host, slots unknown.")
    nmx: str | None = Field(default=None, description="Where NMX-Controller runs, as the inventory says (a switch "
                                                      "tray or a head node); None when it names none.")

    def compute_hosts(self) -> list[str]:
        """The compute trays' hosts in slot order (trays named by host last)."""
        return [self.compute[k] for k in sorted(self.compute, key=lambda t: (not t.isdigit(), int(t) if
                                                                                t.isdigit() else 0, t))]

    def host_of(self, tray: str | None) -> str | None:
        return self.compute.get(str(tray)) if tray is not None else None


class Localization(ComponentFacts):
    """The suspected physical component behind the failing links, with why and how sure."""

    ref: ComponentRef
    fault: FaultKind | None = Field(default=None, description="What kind of fault: keys the repair catalog.")
    links: list[str] = Field(default_factory=list, description="The failing links this component explains.")
    confidence: float = Field(ge=0.0, le=1.0)
    severity: Severity = Severity.FAILING
    worst_ratio: float | None = Field(default=None, description="The furthest its links are over a threshold.")
    explains_slowdown: bool = False
    action: str | None = Field(default=None, description="What a person does about this component.")
    held: str | None = Field(
        default=None, description="Why no one acts on this part yet: its repair plan does not fit the platform (the "
                                  "input contradicts it), so its ticket is held and its priority said held.")
    evidence: list[str] = Field(default_factory=list)
    downstream: list[ComponentRef] = Field(
        default_factory=list, description="In a rack: the GPUs whose Xids echo this component's fault (not suspects).")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def component(self) -> str:
        """As people say it: 'GPU 2 NVLink 1 -> NVSwitch 1 port 17', 'NVSwitch 2'."""
        return self.ref.name

    @computed_field  # type: ignore[prop-decorator]
    @property
    def kind(self) -> ComponentKind:
        return self.ref.kind


class LinkSeries(BaseModel):
    """One link's error rate per time bucket, on its job's time axis, with the threshold of the rule on it."""

    model_config = ConfigDict(frozen=True)

    node_id: str
    ref: ComponentRef
    counter: str = Field(description="The counter whose rate is shown: the one the link's worst rule judges.")
    rate_per_hour: list[float]
    above: float | None = Field(default=None, description="The threshold of the rule on `counter`, per hour.")
    rule: str | None = None
    severity: Severity = Severity.OK
    explains_slowdown: bool = False
    score: float | None = None
    onset: datetime | None = Field(default=None, description="When the link's errors started, as scored.")


class StepEvidence(BaseModel):
    """A job's step time and links' error rates on one time axis, bucketed as the correlation reads them: the
    links that explain the slowdown, or (when none does) the node's worst links."""

    model_config = ConfigDict(frozen=True)

    job_id: str
    start: datetime = Field(description="The start of the first bucket (UTC).")
    bucket_minutes: float
    step_time_ms: list[float | None] = Field(description="The job's mean step time per bucket; None: no step.")
    links: list[LinkSeries] = Field(default_factory=list)
    explained: bool = Field(default=False, description="Whether the links shown explain the slowdown.")



# A rack's parts that no compute tray holds, by kind and by fault: a switch chip, switch tray or cable cartridge, a
# switch port, the NVLink domain or its fabric software as one, a rack incident. A ticket for one is the rack's,
# however many trays' links run through it.
RACK_KINDS = frozenset({ComponentKind.NVSWITCH, ComponentKind.SWITCH_TRAY, ComponentKind.CARTRIDGE,
                        ComponentKind.NVLINK_DOMAIN, ComponentKind.FABRIC_SOFTWARE})
RACK_FAULTS = frozenset({FaultKind.SWITCH_PORT, FaultKind.NVSWITCH_FATAL, FaultKind.SWITCH_TRAY, FaultKind.CARTRIDGE,
                         FaultKind.FANOUT, FaultKind.RACK_INCIDENT})


def outside_trays(ref: ComponentRef, fault: FaultKind | None = None) -> bool:
    """Whether a rack's part lies outside every compute tray (see RACK_KINDS)."""
    return ref.kind in RACK_KINDS or fault in RACK_FAULTS


class GpuId(BaseModel):
    """Who a GPU of the node is, as its readings say: the board serial a technician reads on the part and the UUID
    the driver gives it. A part's history follows these from node to node, not the index."""

    model_config = ConfigDict(frozen=True)

    serial: str | None = None
    uuid: str | None = None
    pci_bus_id: str | None = Field(default=None, description="Where it sits on the bus today (domain:bus:device."
                                                             "function), from nvidia-smi -q's 'Bus Id' or a kernel "
                                                             "line's.")
    driver_version: str | None = Field(default=None, description="The driver its readings were taken under.")
    read_from: str = Field(description="The readings that named it: `nvidia-smi -q`, `kernel log`, ...")


def every_held(locs: list[Localization]) -> str | None:
    """Why every suspect's ticket is held (the platform cannot have any of their faults: the input contradicts it),
    the headline's reason; None while one part's plan applies: the node then waits on a part, not its inventory."""
    return locs[0].held if locs and all(loc.held for loc in locs) else None


class Diagnosis(BaseModel):
    """What the analysis concludes about one node; everything downstream reads this."""

    model_config = ConfigDict(frozen=True)

    node_id: str
    platform: str | None = None
    platform_guess: str | None = Field(
        default=None, description="How the platform was told where no one named it (the GPU model, the node's own "
                                  "topology): the parts and steps rest on that guess.")
    platform_contradicted: str | None = Field(
        default=None, description="Why the readings do not fit the platform named (their GPU model names another): "
                                  "every part's ticket is held until the input and the platform agree.")
    platforms_alike: list[str] = Field(
        default_factory=list, description="Where no platform is told: those the node's own topology fits alike (an "
                                          "HGX H100's, H200's and B200's 18 NVLinks a GPU): its parts are one of "
                                          "theirs, not told which.")
    window_hours: float = Field(
        description="The span the rates are per hour over: the window asked, or the shorter span the readings cover "
                    "where they begin inside it (`window_asked_hours` then says the window asked).")
    window_asked_hours: float | None = Field(
        default=None, description="The window asked, where the node's readings cover less of it (`window_hours`).")
    window_end: datetime | None = Field(
        default=None, description="The end of the window the rates were computed over (UTC); None for a snapshot.")
    fault_detected: bool
    isolated_component: str
    degradation_pct: float | None
    repair_action: str
    ticket_priority: Priority
    held: str | None = Field(
        default=None, description="Why no one acts on any of the node's parts yet: the input contradicts the platform "
                                  "for every suspect (each `Localization.held`), so the node waits on its inventory, "
                                  "not on a part.")
    findings: list[Finding]
    thresholds: list[dict[str, Any]] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    localization: Localization | None = None
    localizations: list[Localization] = Field(
        default_factory=list,
        description="Every suspected component, ranked: the one that explains the slowdown first, then the most "
                    "severe, then the furthest over its threshold (two faults, two parts).")
    step_time_ms: float | None = None
    baseline_step_time_ms: float | None = None
    job_id: str | None = None
    job_gpus: int | None = Field(default=None, description="All GPUs of the affected job: every rank waits.")
    slowdown_onset: datetime | None = None
    verdict: str | None = Field(
        default=None, description="Plain words on the slowdown: which link explains it, or 'not the fabric'."
    )
    evidence: StepEvidence | None = Field(
        default=None, description="One node's view only: its job's step time and the links that explain it (or its "
                                  "worst links) over the job's history, for the correlation picture.")
    maintenance: str | None = Field(
        default=None, description="Planned work on the node over this window: its findings are shown, not paged "
                                  "or ticketed ('in maintenance until ...').")
    rack: RackPlace | None = Field(
        default=None, description="The rack this diagnosis is of (node_id is the rack), or the rack of this tray.")
    tray: str | None = Field(default=None, description="For a rack's host: its tray in `rack`.")
    stopped_by: StoppedBy | None = Field(
        default=None, description="For a rack's compute tray whose own links read clean: the rack part whose repair "
                                  "stops its GPUs (its action is the rack's plan).")
    gpu_ids: dict[int, GpuId] = Field(
        default_factory=dict, description="Each GPU's serial and UUID where the node's readings name them, by index.")
    bus_gpu_ids: dict[str, GpuId] = Field(
        default_factory=dict, description="The GPUs its readings name by PCI address alone (a kernel log's), with no "
                                          "index to place them, by address.")
    switch_buses: dict[str, str] = Field(
        default_factory=dict, description="The PCI address of each NVSwitch its events name beside one, by name.")
    lists_every_link: bool = Field(
        default=False, description="Its findings name every link read, healthy ones too (one node's view), so a link "
                                   "none names was not read; a fleet sweep's name the flagged links only.")
    links_read: bool = Field(
        default=True, description="Whether a link reading of the node is in its window: without one, its findings "
                                  "are events alone (an SXid that warns), which judge no link.")
    rates_known: bool = Field(
        default=True, description="Whether its links' error rates are known: one reading per link (totals since "
                                  "reset, or link states alone) gives none, so a fault of rate is neither found nor "
                                  "ruled out.")
    read_once: int = Field(
        default=0, description="Its links whose error counters were read once in the window where its others were "
                               "read more (a cut or partial second reading): totals, no rates, so not judged.")
    pinned: int = Field(
        default=0, description="Its links read twice or more with a counter pinned at its maximum (65,535) that no "
                               "rule failed on its lower bound: that rate is unknown, so not judged.")
    dropped: int = Field(
        default=0, description="Its links with a counter read lower than the reading before while their other "
                               "counters held theirs (no restart, which zeroes every counter: a damaged or cut number) "
                               "that no rule failed on what they count: that rate is unknown, so not judged.")
    unread: int = Field(
        default=0, description="Its links with a counter a reading of the window holds no value of where the link's "
                               "other readings hold one (a value refused as damaged, a line cut): that rate is "
                               "unknown, so not judged.")
    cut_off: bool = Field(
        default=False, description="Its newest input was cut off inside its text: the GPUs, links and counters after "
                                   "the cut (a dcgm-exporter scrape's later metric families) were not read, so no "
                                   "fault found is no all-clear.")

    @model_validator(mode="after")
    def _odd_names_said(self) -> Self:
        """A node, job or rack name outside ASCII is said in the answer itself, whichever door built it: it may only
        look like the name a person meant (see `names`)."""
        named = [self.node_id, self.job_id, self.rack.rack_id if self.rack else None]
        odd = [n for n in dict.fromkeys(outside_ascii(x) for x in named if x) if n and n not in self.warnings]
        if odd:
            object.__setattr__(self, "warnings", [*odd, *self.warnings])  # frozen: set once, as it is built
        return self

    def health_unknown(self) -> bool:
        """One node's view with no link read in its window (never collected, or silent since before it) and no fault
        found otherwise: its answer is "unknown", never "no fabric fault", since nothing was read to clear it. An
        event that warns (a non-fatal SXid) judges no link: it leaves the health unknown too."""
        return self.lists_every_link and not self.fault_detected and not (self.findings and self.links_read)

    def unrated(self) -> bool:
        """One node's view of one reading per link (or of some links, the others read more) and no fault found in it:
        those error rates, what the rules judge, are unknown, so it is no all-clear (a lone `nvidia-smi nvlink -e` of
        thousands of replays since reset; a second reading cut before the failing link; a counter pinned at its
        maximum in both readings, whose 0/h is no rate)."""
        return (self.lists_every_link and not self.fault_detected
                and (not self.rates_known or self.read_once > 0 or self.pinned > 0 or self.dropped > 0
                     or self.unread > 0 or self.cut_off)
                and self.links_read)

    def unrated_said(self) -> str:
        """Why an unrated view's error rates are unknown, in the words every door says it with."""
        if self.pinned:
            return f"{fmt.count(self.pinned, 'link')} with a counter pinned at its maximum"
        if self.dropped:
            return f"{fmt.count(self.dropped, 'link')} with a counter read lower than before, no restart"
        if self.read_once:
            return f"{fmt.count(self.read_once, 'link')} read once"
        if self.unread:
            return f"{fmt.count(self.unread, 'link')} with a counter a reading holds no value of"
        if self.cut_off and self.rates_known:
            return "its newest input cut off before its end"
        return "one reading per link"

    def cut_unjudged(self) -> bool:
        """Whether what leaves this view unjudged is its input cut off alone: its rates read, none unknown for
        another reason, no fault found."""
        return (self.cut_off and self.rates_known and not self.fault_detected
                and not (self.pinned or self.dropped or self.read_once or self.unread))

    def unrated_unknown(self) -> str:
        """What an unrated view leaves unknown, in the words every door says it with: its error rates, or (an input
        cut off, its rates read) whatever followed the cut."""
        return "what followed the cut is not read" if self.cut_unjudged() else "no error rate is known"

    def fault_said(self) -> str:
        """Whether a fault was found, as every door says it: yes, no, or unknown when no link was read or no rate
        is known."""
        return "yes" if self.fault_detected else "unknown" if self.health_unknown() or self.unrated() else "no"

    def stopped_said(self) -> str | None:
        """A clean tray's stop with its rack's repair, as every door says it; None where none stops it."""
        if self.stopped_by is None:
            return None
        rack = self.rack.rack_id if self.rack is not None else "its rack"
        return (f"drained with rack {rack}'s repair of {self.stopped_by.component} (its ticket: "
                f"{fmt.priority(self.stopped_by.priority.value)} priority)")

    def isolated_said(self) -> str:
        """The part isolated as every door shows it to a person: its name, or "none" where the contract's field holds
        the string "None" (which reads as a part named None)."""
        return "none" if self.isolated_component == "None" else self.isolated_component

    def priority_said(self) -> str:
        """The priority as every door says it, as the node's ticket (its headline part's) does: held, with the level
        it takes once released, while that part's plan and the platform disagree."""
        return fmt.priority(self.ticket_priority.value, held=self.held_of() is not None)

    def held_of(self, slug: str | None = None) -> str | None:
        """Why the part `slug` (default: the headline part) is held, as its ticket is; None when its plan applies
        or no suspect is named so. Held is a part's, not the node's: another part's ticket may stand."""
        locs = [*([self.localization] if self.localization else []), *self.localizations]
        loc = locs[0] if slug is None and locs else next((x for x in locs if x.ref.slug == slug), None)
        return loc.held if loc is not None else None

    def window_said(self) -> str:
        """The window as every door says it: the span the rates are over, and the window asked where longer."""
        return fmt.window(self.window_hours, self.window_end, asked=self.window_asked_hours)

    @property
    def failing(self) -> list[Finding]:
        return [f for f in self.findings if f.severity in (Severity.FAILING, Severity.DOWN)]

    def software_suspect(self) -> Localization | None:
        """The fabric software (Fabric Manager or the driver; a rack's domain software) where the analysis blames it:
        no part, and the links it takes down at once are its, not each a part's."""
        locs = self.localizations or ([self.localization] if self.localization else [])
        return next((loc for loc in locs if loc.ref.kind is ComponentKind.FABRIC_SOFTWARE), None)

    def parts_of(self, slug: str) -> list[str]:
        """The slugs a ticket for `slug` stands for: itself and, for a localized part (a switch, a GPU), the links
        it explains; a repair of the part is verified on all of them."""
        names = {link for loc in self.localizations or ([self.localization] if self.localization else [])
                 if loc.ref.slug == slug for link in loc.links}
        return sorted({slug} | {f.ref.slug for f in self.findings if f.component in names})

    def reads_clean(self, parts: list[str]) -> bool:
        """Whether this view read any of the parts (slugs, as `parts_of` gives them) and found every one it read
        healthy, none of them suspected: a view that rated nothing (no link read, one reading) tells nothing."""
        if self.health_unknown() or self.unrated():
            return False
        locs = self.localizations or ([self.localization] if self.localization else [])
        read = [f for f in self.findings if f.ref.slug in parts]
        return bool(read) and all(f.severity is Severity.OK for f in read) and \
            not any(loc.ref.slug in parts for loc in locs)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ticket_owner(self) -> str:
        """Whom the isolated part's ticket is filed on (`owner_of`)."""
        return self.owner_of()

    def owner_of(self, slug: str | None = None) -> str:
        """Whom a ticket for the part `slug` (default: the isolated part) is filed on, and alerted and listed under:
        off a rack, the node; in a rack, a part outside every compute tray is the rack's (one ticket however many
        trays see it), a part inside one is that tray's host's. The one decision every door takes it from."""
        place = self.rack
        if place is None:
            return self.node_id
        ref, fault = self._part(slug)
        if ref is None:
            return self.node_id
        if outside_trays(ref, fault):
            return place.rack_id
        return place.host_of(ref.tray) or self.node_id

    def wider_owner(self, slug: str | None = None) -> str | None:
        """Who besides its owner may hold an open ticket that stands for the part `slug`: in a rack, the rack (a
        switch chip's ticket holds the compute trays' links it explains); None off a rack, or for the rack's part."""
        if self.rack is None or self.owner_of(slug) == self.rack.rack_id:
            return None
        return self.rack.rack_id

    def _part(self, slug: str | None) -> tuple[ComponentRef | None, FaultKind | None]:
        """The reference and fault of the part `slug` names (a localization, else a finding's link), or of the
        isolated part."""
        locs = [*([self.localization] if self.localization else []), *self.localizations]
        loc = locs[0] if slug is None and locs else next((x for x in locs if x.ref.slug == slug), None)
        if loc is not None:
            return loc.ref, loc.fault
        found = next((f for f in self.findings if (f.ref.slug == slug if slug is not None
                                                   else f.component == self.isolated_component)), None)
        if found is not None:
            return found.ref, None
        # a GPU whose links fail (a ticket's candidate, no finding of its own): in a rack, its compute tray's
        gpus = (ComponentRef.of_gpu(f.ref.gpu).in_tray(f.ref.tray) for f in self.findings
                if f.ref.gpu is not None and f.ref.tray is not None)
        return next((ref for ref in gpus if ref.slug == slug), None), None

    def seed_view(self) -> dict[str, Any]:
        """The five keys of the seed examples' expected output."""
        return {
            "fault_detected": self.fault_detected,
            "isolated_component": self.isolated_component,
            "degradation_pct": self.degradation_pct,
            "repair_action": self.repair_action,
            "ticket_priority": self.ticket_priority.value,
        }
