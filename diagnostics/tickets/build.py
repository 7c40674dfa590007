"""Assemble a ticket for one candidate: facts from the diagnosis, part and steps from the repair catalog's plan.

Both drafters end here; a drafter only adds words (summary, reasoning, step wording) and its view of the causes.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence

from .. import format as fmt
from ..analysis.applications import events_said
from ..analysis.bandwidth import BUSBW_NO_PART, WRONG_NO_PART
from ..analysis.rules import part_priority
from ..components import ComponentRef, tray_chip
from ..config.repair_catalog import Need, load_catalog
from ..config.thresholds import WRONG_VALUES_RULE, Thresholds
from ..enums import ComponentKind, FaultKind, PortSource, Priority, Severity, severity_rank
from ..errors import InputError
from ..model import Crossing, Diagnosis, Finding
from ..topology import Inventory, NodeGraph
from .candidates import Candidate, candidate_for, candidates_for, on_rack
from .catalog import PlanStep, RepairPlan, plan_for
from .identity import gpu_at, identity_for
from .links import link_named
from .ticket import Choice, Cost, Evidence, Hypothesis, RepairTicket, Step

HOURS_PER_DAY = 24
_DRIVER_LINK = re.compile(r"^\s*gpu\s*(?P<gpu>\d+)\s+nvlink\s*(?P<link>\d+)\s*$", re.IGNORECASE)
_DRIVER_PORT = re.compile(r"^\s*(?P<switch>nvswitch \d+)(?: port (?P<port>\d+))?\s*$", re.IGNORECASE)


class NoFaultError(InputError):
    """The diagnosis holds nothing to repair."""


class NoPartError(NoFaultError):
    """The finding asked of (or the only one found) is the GPU-to-GPU fabric's: a collective names no part. `failing`:
    a fault (its results corrupted), which a script must not take for nothing to repair."""

    def __init__(self, fabric: Finding, *, source: str) -> None:
        self.failing = fabric.severity is Severity.FAILING
        wrong = any(c.rule == WRONG_VALUES_RULE for c in fabric.crossed)
        super().__init__(WRONG_NO_PART if wrong else BUSBW_NO_PART, source=source)


def select(diagnosis: Diagnosis, component: str | None, graph: NodeGraph | None) -> tuple[Candidate, list[Candidate]]:
    """The candidate a ticket is about: the isolated one, or the one `component` names (id, name or link id)."""
    fabric = [f for f in diagnosis.findings if f.ref.kind is ComponentKind.GPU_FABRIC and f.severity is not Severity.OK]
    wanted = (component or "").strip().lower()
    if fabric and wanted in (fabric[0].ref.slug, fabric[0].component.lower()):
        raise NoPartError(max(fabric, key=lambda f: severity_rank(f.severity)), source=diagnosis.node_id)
    found = candidates_for(diagnosis, graph)
    if not found:
        if fabric:
            raise NoPartError(max(fabric, key=lambda f: severity_rank(f.severity)), source=diagnosis.node_id)
        raise NoFaultError(f"no unhealthy link: nothing to repair{_rack_ticket(diagnosis)}", source=diagnosis.node_id)
    if component is None:
        if not diagnosis.fault_detected:
            raise NoFaultError("no fault detected (warnings only): name a link to draft a ticket for it anyway"
                               + _rack_ticket(diagnosis), source=diagnosis.node_id)
        chosen = next((c for c in found if c.isolated), found[0])
        return chosen, found
    wanted = component.strip().lower()
    said = {wanted, *_as_its_rack_says(diagnosis, wanted)}
    link = _DRIVER_LINK.match(wanted)  # "GPU 3 NVLink 16", as the driver names it, without where it lands
    slug = _link_slug(diagnosis, int(link["gpu"]), int(link["link"])) if link else None
    ids = (wanted, slug, _own_tray_slug(diagnosis, wanted))
    for c in found:
        if c.id in ids or c.component.lower() in said:
            return c, found
    if any(f.severity is Severity.WARNING for f in diagnosis.findings):  # a part that only warns, beside others that
        warned = candidates_for(diagnosis, graph, warnings=True)  # fail: drafted as asked
        for c in warned:
            if c.id in ids or c.component.lower() in said:
                return c, warned
    trays = _in_any_tray(found, wanted)
    if len(trays) == 1:
        return trays[0], found
    if trays:  # a rack's `gpu0` is a GPU 0 of each tray: the ticket is one tray's, never theirs together
        choices = ", ".join(f"{c.id} ({c.hosts[0]})" if c.hosts else c.id for c in trays)
        bare = trays[0].ref.model_copy(update={"tray": None}).name
        raise InputError(f"{bare} of {fmt.count(len(trays), 'compute tray')} has unhealthy links: name one of "
                         f"{choices}", source=diagnosis.node_id, field="--link", value=component)
    for loc in [*diagnosis.localizations, *([diagnosis.localization] if diagnosis.localization else [])]:
        named = candidate_for(loc, found) if loc.component.lower() in said else None
        if named is not None:
            return named, found
    by_link = [c for c in found if c.link_id is not None and c.link_id.lower() == wanted]
    if len(by_link) == 1:
        return by_link[0], found
    names = ", ".join(c.id for c in found)
    raise InputError(f"no such component among this node's candidates ({names})", source=diagnosis.node_id,
                     field="--link", value=component)


Judged = tuple[Diagnosis, NodeGraph | None]  # a node's diagnosis and the graph it was judged on


def owners_view(diagnosis: Diagnosis, graph: NodeGraph | None, component: str | None,
                ask: Callable[[str], Judged]) -> tuple[Diagnosis, NodeGraph | None, str | None]:
    """The diagnosis a part's ticket is drafted from: its owner's (a rack's part outside every tray is the rack's,
    a part inside one is its host's), so the part is one ticket, with the same links, evidence, cost and
    hypotheses, whichever door and node it is asked from; the part as the owner's candidates name it (None: the
    owner's isolated part). `ask` judges another node (the owner) over the same window."""
    part, _ = select(diagnosis, component, graph)
    owner = diagnosis.owner_of(part.id)
    if owner == diagnosis.node_id:
        return diagnosis, graph, component
    theirs, their_graph = ask(owner)
    found = candidates_for(theirs, their_graph)
    if not any(c.id == part.id for c in found):  # the owner does not see it so: drafted as asked
        return diagnosis, graph, component
    isolated = next((c.id for c in found if c.isolated), None)
    return theirs, their_graph, None if component is None and isolated == part.id and theirs.fault_detected \
        else part.id


def _link_slug(diagnosis: Diagnosis, gpu: int, link: int) -> str:
    """The slug of a GPU's NVLink on this node: in a rack's compute tray, the tray's."""
    ref = ComponentRef.nvlink(gpu, link)
    place, tray = diagnosis.rack, diagnosis.tray
    return ref.in_tray(tray).slug if place is not None and tray is not None and place.host_of(tray) == \
        diagnosis.node_id else ref.slug


def _own_tray_slug(diagnosis: Diagnosis, wanted: str) -> str | None:
    """A compute tray host's part by the slug its driver's numbering gives (`gpu0`), as its rack slugs it
    (`tray8-gpu0`)."""
    place, tray = diagnosis.rack, diagnosis.tray
    if place is None or tray is None or place.host_of(tray) != diagnosis.node_id:
        return None
    return f"{ComponentRef.compute_tray(tray).slug}-{wanted}"


def _in_any_tray(found: Sequence[Candidate], wanted: str) -> list[Candidate]:
    """The candidates inside a compute tray that `wanted` names without the tray (`gpu0`, `GPU 0`)."""
    out = []
    for c in found:
        if c.ref.tray is None:
            continue
        bare = c.ref.model_copy(update={"tray": None})
        if wanted in (bare.slug, bare.name.lower()):
            out.append(c)
    return out


def _as_its_rack_says(diagnosis: Diagnosis, wanted: str) -> list[str]:
    """A rack host's part named as its driver says it, as the rack names it, the one name its findings carry: a
    compute tray's `GPU 3 NVLink 16` is `Compute tray 4 GPU 3 NVLink 16`, a switch tray's `NVSwitch 1 port 17` is
    `Switch tray 3 chip 2 port 17` (its driver counts the chips from 0)."""
    place, tray = diagnosis.rack, diagnosis.tray
    if place is None or tray is None:
        return []
    if place.host_of(tray) == diagnosis.node_id:
        return [f"compute tray {tray} {wanted}".lower()]
    named = _DRIVER_PORT.match(wanted)
    chip = tray_chip(named["switch"]) if named and place.switch.get(tray) == diagnosis.node_id else None
    if named is None or chip is None:
        return []
    port = int(named["port"]) if named["port"] is not None else None
    return [ComponentRef.switch_chip(tray, chip, port).name.lower()]


def _rack_ticket(diagnosis: Diagnosis) -> str:
    """Where a rack host with nothing of its own to repair looks next: its rack, which drafts the ticket of a fault
    elsewhere in it on that part's owner (another tray's host, or the rack for a part outside every tray)."""
    if diagnosis.rack is None or diagnosis.tray is None:
        return ""
    rack = diagnosis.rack.rack_id
    return f"; a fault elsewhere in rack {rack} (another tray's, or outside every tray) is drafted through the rack " \
           f"(`fabricbot ticket {rack}`, `/fabric rack {rack}`), on the host or rack that owns the part"


def _explained(diagnosis: Diagnosis, candidate: Candidate) -> list[Finding]:
    names = set(candidate.findings)
    return [f for f in diagnosis.findings if f.component in names]


def _platform_has(platform: str | None, feature: Need) -> bool | None:
    """Whether the platform has `feature`, as its repair catalog entry says (`nvswitch`: its NVLinks land on
    NVSwitches, a rack's on its switch trays; `fabric-manager`: it runs Fabric Manager); None when not known."""
    entry = load_catalog().platform.get(platform) if platform else None
    return entry.has(feature) if entry is not None else None


def _gpu_on(diagnosis: Diagnosis, candidate: Candidate, owner: str) -> str | None:
    """Where a ticket's GPU is when the ticket is filed on a rack: its compute tray and host (drafted from the
    tray's host, or from the rack with the one host the candidate's link comes from)."""
    if diagnosis.rack is None:
        return None
    host = diagnosis.node_id if diagnosis.node_id != diagnosis.rack.rack_id else \
        candidate.hosts[0] if len(candidate.hosts) == 1 else None
    if host is None or host == owner:
        return None
    return f"compute tray {candidate.tray}, {host}" if candidate.tray else host


def ticket_priority(diagnosis: Diagnosis, candidate: Candidate, thresholds: Thresholds | None = None) -> Priority:
    """The analysis's priority for the component it isolated, or for one whose links explain the job's slowdown;
    for another, the policy over that one's links alone, without a slowdown they do not explain. `thresholds`: the
    policy the diagnosis was judged by (default: the thresholds file in force)."""
    return part_priority(diagnosis, candidate.findings, headline=candidate.isolated, thresholds=thresholds)


def slowdown_charged_to(diagnosis: Diagnosis) -> str | None:
    """The part the job's slowdown is charged to: the first localized part whose links explain it, else the first
    link that does; None when no link explains it."""
    loc = next((loc for loc in diagnosis.localizations if loc.explains_slowdown), None)
    return loc.component if loc is not None else next(
        (f.component for f in diagnosis.findings if f.explains_slowdown), None)


def not_charged(diagnosis: Diagnosis, candidate: Candidate) -> str | None:
    """Why none of the job's slowdown is this part's, or None when it is (its links explain it, or no link was
    scored against the job): another part's links explain it, or this part's links were scored and do not."""
    own = _explained(diagnosis, candidate)
    if diagnosis.degradation_pct is None or not own or any(f.explains_slowdown for f in own):
        return None
    job, deg = diagnosis.job_id or "the job", diagnosis.degradation_pct
    owner = slowdown_charged_to(diagnosis)
    if owner is not None:
        return f"job {job}'s slowdown ({deg:+.1f}%) is charged to {owner}, whose links explain it"
    if any(f.explains_slowdown is False for f in own):
        return f"its links do not explain job {job}'s slowdown ({deg:+.1f}%)"
    return None


def estimate_cost(diagnosis: Diagnosis, candidate: Candidate | None = None) -> Cost:
    """A step d slower does 1 / (1 + d) of the work in the same time: d / (1 + d) of every GPU's time is lost
    (47% for +88%), never more than all of it. The job's GPUs are its nodes' platforms' counts, or unknown. A part
    the slowdown is not charged to (`not_charged`) is charged none of it."""
    if diagnosis.degradation_pct is None:
        return Cost(gpu_hours_per_day=None, slowdown_fraction=None, job_gpus=diagnosis.job_gpus,
                    assumptions=["no step time against a baseline: the cost cannot be estimated"])
    elsewhere = not_charged(diagnosis, candidate) if candidate is not None else None
    if elsewhere is not None:
        return Cost(gpu_hours_per_day=None, slowdown_fraction=None, job_gpus=diagnosis.job_gpus,
                    not_charged=elsewhere)
    slower = max(diagnosis.degradation_pct, 0.0) / 100.0
    lost = slower / (1.0 + slower)
    gpus = diagnosis.job_gpus
    notes = ["the whole step-time slowdown is counted as this fault's, all day"]
    if gpus is None:
        notes.insert(0, f"the job's GPU count is unknown (a node of the job, or its platform, is not known): "
                        f"{lost * HOURS_PER_DAY:.1f} GPU-hours lost per GPU of the job per day")
        hours = None
    else:
        hours = round(lost * gpus * HOURS_PER_DAY, 1)
    return Cost(gpu_hours_per_day=hours, slowdown_fraction=round(slower, 4), lost_fraction=round(lost, 4),
                job_gpus=gpus, assumptions=notes)


MAX_EVIDENCE_LINKS = 12  # a ticket lists this many links' figures; the rest are counted by what they crossed


def _capped(lines: list[str]) -> list[str]:
    """At most MAX_EVIDENCE_LINKS lines; the rest said in one line, counted by what they crossed."""
    if len(lines) <= MAX_EVIDENCE_LINKS:
        return lines
    rest = Counter(line.split(": ", 1)[-1] for line in lines[MAX_EVIDENCE_LINKS - 1:])
    said = "; ".join(f"{what} ({n})" for what, n in rest.most_common(3)) + ("; ..." if len(rest) > 3 else "")
    return [*lines[:MAX_EVIDENCE_LINKS - 1], f"... and {len(lines) - MAX_EVIDENCE_LINKS + 1} more: {said}"]


def evidence_for(diagnosis: Diagnosis, candidate: Candidate) -> Evidence:
    own = _explained(diagnosis, candidate)
    scores = [f.correlation_score for f in own if f.correlation_score is not None]
    explains = [f.explains_slowdown for f in own if f.explains_slowdown is not None]
    loc = diagnosis.localization
    return Evidence(
        window=diagnosis.window_said() if diagnosis.window_end is not None else None,
        rates_per_hour=dict(list({f.component: dict(f.rates_per_hour) for f in own
                                  if f.rates_per_hour}.items())[:MAX_EVIDENCE_LINKS]),
        thresholds_crossed=_capped(list(dict.fromkeys(f"{f.component}: {c.message}" for f in own for c in f.crossed))),
        degradation_pct=diagnosis.degradation_pct, step_time_ms=diagnosis.step_time_ms,
        baseline_step_time_ms=diagnosis.baseline_step_time_ms,
        correlation_score=max(scores) if scores else None, explains_slowdown=any(explains) if explains else None,
        localization=loc.component if loc else diagnosis.isolated_component,
        localization_confidence=loc.confidence if loc else None,
        notes=list(dict.fromkeys([*(n for n in candidate.evidence
                                     if not any(c.message == n for f in own for c in f.crossed)),
                                   *([diagnosis.verdict] if diagnosis.verdict else [])])),
    )


MAX_HYPOTHESES = 8  # a person weighs a few alternatives; 150 links down are one hypothesis, not 150


def rule_hypotheses(candidates: Sequence[Candidate]) -> list[Hypothesis]:
    ranked = [c for c in candidates if c.score > 0 or c.isolated][:MAX_HYPOTHESES]
    return [Hypothesis(rank=i + 1, kind=c.kind, candidate_id=c.id, component=c.component, evidence=list(c.evidence),
                       agrees_with_analysis=c.isolated) for i, c in enumerate(ranked)]


def _over(c: Crossing) -> float:
    """How far a crossing is over its limit (rate / limit, as a finding's worst_ratio); 0 where that is no finite
    ratio (a limit of 0, an event, a link state), so a rate many times its limit is quoted before a count over 0."""
    if c.rate_per_hour is None or c.above is None or c.above <= 0:
        return 0.0
    return c.rate_per_hour / c.above


def worst_crossing(own: Sequence[Finding], component: str) -> str:
    """The message of the crossing that says most of the part among `own`, as the analysis heads its suspect: the
    part's own failing one first (a Fabric Manager's "all 96 NVLinks inactive at once" before one of those links'
    "link is inactive"), then a failing event (a fatal SXid before the port's "inactive" it caused), then severity
    and the ratio to its limit; among equals, the part's own link's first, then the first listed."""
    crossed = [(f, c) for f in own for c in f.crossed]
    if not crossed:
        return "unhealthy link"
    failing = severity_rank(Severity.FAILING)

    def key(ic: tuple[int, tuple[Finding, Crossing]]) -> tuple[bool, bool, int, float, bool, int]:
        i, (f, c) = ic
        mine, rank = f.component == component, severity_rank(c.severity)
        return mine and rank >= failing, bool(c.codes) and rank >= failing, rank, _over(c), mine, -i

    return max(enumerate(crossed), key=key)[1][1].message


def rule_summary(diagnosis: Diagnosis, candidate: Candidate, prio: Priority, held: bool = False) -> str:
    """The rules' summary: the part, its worst reading, the slowdown charged to it, and its priority (held, with what
    it becomes, while the input and the platform disagree)."""
    said = f"Priority held: {prio.value} once the input and the platform agree" if held else f"Priority {prio.value}"
    worst = worst_crossing(_explained(diagnosis, candidate), candidate.component)
    deg, elsewhere = diagnosis.degradation_pct, not_charged(diagnosis, candidate)
    slow = "" if deg is None else f"; {elsewhere}" if elsewhere else f"; step time {deg:+.1f}% against baseline"
    return (f"{candidate.component} on {diagnosis.owner_of(candidate.id)}: {worst}{slow}. "
            f"{said}. A person reviews this ticket before anyone acts.")


def ticket_steps(steps: Sequence[PlanStep]) -> list[Step]:
    """A plan's steps as a ticket numbers them."""
    return [Step(order=i + 1, text=s.text, command=s.command) for i, s in enumerate(steps)]


def assemble(diagnosis: Diagnosis, candidate: Candidate, candidates: Sequence[Candidate], *,
             inventory: Inventory | None = None, drafted_by: str, summary: str | None = None,
             reasoning: str | None = None, hypotheses: list[Hypothesis] | None = None, disagreement: str | None = None,
             repair_wording: Sequence[str] | None = None, notes: Sequence[str] = (),
             choice: Choice | None = None, thresholds: Thresholds | None = None) -> RepairTicket:
    """The ticket for `candidate`; `thresholds`: the policy the diagnosis was judged by, which sets its priority."""
    plan = plan_for(diagnosis, candidate)
    isolate, repair = ticket_steps(plan.isolation), ticket_steps(plan.repair)
    if repair_wording is not None and len(repair_wording) == len(repair):
        repair = [s.model_copy(update={"text": w}) for s, w in zip(repair, repair_wording, strict=True)]
    prio = ticket_priority(diagnosis, candidate, thresholds)
    switched = _platform_has(plan.platform, "nvswitch")
    if switched is None and diagnosis.platforms_alike:  # one of the boards its topology fits: known where all agree
        each = {_platform_has(board, "nvswitch") for board in diagnosis.platforms_alike}
        switched = each.pop() if len(each) == 1 else None
    port = (candidate.switch, candidate.switch_port, candidate.port_source,
            candidate.find_with if candidate.kind is not ComponentKind.FABRIC_SOFTWARE else None)
    nvlink = candidate.kind in (ComponentKind.NVLINK, ComponentKind.GPU) \
        and candidate.fault is not FaultKind.GPU_OFF_BUS
    if (switched is False and nvlink) or candidate.kind is ComponentKind.FABRIC_SOFTWARE:  # no NVSwitch port to name
        port = (None, None, PortSource.UNKNOWN, None)
    owner = diagnosis.owner_of(candidate.id)
    held = plan.held or diagnosis.platform_contradicted  # the wrong board's parts: no one acts on them yet
    gpu = gpu_at(inventory, diagnosis.node_id, candidate.gpu, candidate.ref.bus)
    return RepairTicket(
        node_id=owner, component_kind=candidate.kind, fault=candidate.fault, component=candidate.component,
        candidate_id=candidate.id, gpu_index=gpu, gpu_on=_gpu_on(diagnosis, candidate, owner) if gpu is not None
        else None,
        peer=candidate.peer, link_id=candidate.link_id, link_named=link_named(diagnosis, candidate),
        link=candidate.link, lanes=list(candidate.lanes), end=candidate.end, switch=port[0], switch_port=port[1],
        port_source=port[2], port_find_with=port[3], switched=switched,
        identity=identity_for(inventory, diagnosis.node_id, candidate.gpu, diagnosis.gpu_ids, rack=on_rack(diagnosis),
                              rack_id=diagnosis.rack.rack_id if diagnosis.rack is not None else None,
                              bus=candidate.ref.bus, bus_reads=diagnosis.bus_gpu_ids,
                              switch_bus=diagnosis.switch_buses.get(candidate.ref.switch or "")
                              if candidate.kind is ComponentKind.NVSWITCH else None,
                              fabric_manager=_platform_has(plan.platform, "fabric-manager")),
        replacement_part=plan.part,
        next_part=plan.next_part, part_note=plan.part_note,
        warnings=[*_software_blamed(diagnosis, candidate), *plan.warnings, *_guessed(diagnosis, plan, candidate),
                  *_contradicted(diagnosis), *events_said(diagnosis.warnings)],
        capture_first=plan.captures,
        isolation_steps=isolate, reset=plan.reset, repair_steps=repair, priority=prio,
        held=held,
        evidence=evidence_for(diagnosis, candidate), estimated_cost=estimate_cost(diagnosis, candidate),
        summary=summary or rule_summary(diagnosis, candidate, prio, held=held is not None), reasoning=reasoning,
        hypotheses=hypotheses if hypotheses is not None else rule_hypotheses(candidates),
        disagreement=disagreement, choice=choice, drafted_by=drafted_by, fallback_notes=list(notes),
    )


def _contradicted(diagnosis: Diagnosis) -> list[str]:
    """A platform named that the readings' GPU model contradicts, said with how to settle it: its parts and steps are
    another board's, so the ticket is held."""
    if diagnosis.platform_contradicted is None:
        return []
    return [f"{diagnosis.platform_contradicted}: the part and steps below are that platform's, so the ticket is held; "
            "name the node's platform in the inventory (or --platform) as its GPUs are, and draft it again"]


def _software_blamed(diagnosis: Diagnosis, candidate: Candidate) -> list[str]:
    """A part drafted while the analysis blames the fabric software (Fabric Manager or the driver: every NVLink down
    at once), said first: its steps are for a part the analysis does not suspect."""
    software = diagnosis.software_suspect()
    if software is None or candidate.kind is ComponentKind.FABRIC_SOFTWARE:
        return []
    why = "; ".join(e for e in software.evidence if not e.startswith("no part goes"))
    return [f"the analysis blames {software.component} (fabric software, no part), not {candidate.component}"
            + (f": {why}" if why else "") + f". Restart the fabric software first (`fabricbot ticket "
            f"{diagnosis.owner_of(software.ref.slug)}` drafts its ticket) and read it again once the fabric is "
            "up; touch no part for it before then"]


def _guessed(diagnosis: Diagnosis, plan: RepairPlan, candidate: Candidate) -> list[str]:
    """A platform no one named, said where the part and the steps rest on it, and the peer GPU the component names
    where that platform's wiring gave it (an assumed switch port is said by the plan)."""
    if diagnosis.platform_guess is None or plan.platform is None:
        return []
    peer = candidate.ref.peer_gpu if candidate.port_source is PortSource.ASSUMED else None
    wiring, read = ("", "") if peer is None else (
        f", and so does GPU {peer} as its link's peer: that platform's wiring, assumed until the node's own is read",
        f", `nvidia-smi nvlink -R -i {candidate.gpu}`")
    return [f"the platform, {plan.platform}, was {diagnosis.platform_guess}, not named: the part and the steps rest "
            f"on it{wiring}; confirm the board (`nvidia-smi -q` Product Name, `nvidia-smi topo -m`{read}) before a "
            "part is ordered, or name it with --platform or a nodes.csv"]

