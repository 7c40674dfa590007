"""One node's conclusions put together: scores from its job, the ranked components, priority, action and verdict."""

from __future__ import annotations

from datetime import datetime

from .. import format as fmt
from ..config.thresholds import SOFTWARE_RULE, Thresholds
from ..enums import Priority, Severity, priority_rank
from ..model import Diagnosis, Finding, Localization, RackPlace, every_held
from ..repair import localization_plan, repair_action
from ..times import clockless
from .bandwidth import BUSBW_ACTION, WRONG_ACTION, corrupted, degraded
from .correlate import JobExplanation, unscored_words
from .localize import rank
from .rules import priority, worst

PLATFORM_UNKNOWN = ("platform unknown: the expected links and GPUs are not checked and the repair names the part the "
                    "link implies on each kind of board, not one board's (name it with --platform or a nodes.csv)")
FABRIC_DOWN = ("the fabric is not up on {node} (Fabric Manager or the driver): jobs cannot start there, since on an "
               "NVSwitch system CUDA initialisation fails with error 802 ('system not yet initialized')")
# A rack's hosts run no Fabric Manager: NMX-Controller sets the NVLink domain up, IMEX shares memory across trays
FABRIC_DOWN_RACK = ("the NVLink domain's fabric is not up on {node} (NMX-Controller, IMEX or the driver): jobs that "
                    "need the domain cannot start there")


def _bad(f: Finding) -> bool:
    return f.severity in (Severity.FAILING, Severity.DOWN)


def _weighed(f: Finding, job: JobExplanation, tolerance_min: float) -> Finding | None:
    """An event's finding (an Xid, an SXid: no series to score) weighed by its time against the slowdown's onset: it
    explains a slowdown that began with it (within the onset tolerance), never one that began before it; None where
    either time is not known."""
    if f.onset is None or job.onset is None or clockless(job.onset) or clockless(f.onset):
        return None
    gap = (job.onset - f.onset).total_seconds() / 60  # > 0: the event came first
    at, began = fmt.when(f.onset), fmt.when(job.onset)
    if abs(gap) <= tolerance_min:
        said, explains = f"the event at {at} and the slowdown since {began} begin together: it explains it", True
    elif gap < 0:
        said, explains = (f"the event at {at} came {-gap:.0f} min after job {job.job_id}'s slowdown began ({began}): "
                          "it did not start it"), False
    else:
        said, explains = (f"the event at {at} came {gap:.0f} min before job {job.job_id}'s slowdown began ({began}): "
                          "the job ran on without slowing after it"), False
    return f.model_copy(update={"explains_slowdown": explains, "evidence": [*f.evidence, said]})


def scored(findings: list[Finding], job: JobExplanation, node_id: str, tolerance_min: float = 30.0) -> list[Finding]:
    """The findings with their correlation to the job's step time; a flagged link the job's score did not reach
    does not explain it; an event is weighed by its time against the slowdown's onset."""
    out = []
    unscored = job.unscored_on(node_id)
    for f in findings:
        score = job.for_link(node_id, f.ref)
        if score is None:
            if f.severity is Severity.OK:
                out.append(f)
                continue
            if f.ref.slug in unscored:  # its history could not be read: unknown, not "does not track"
                evidence = [*f.evidence, f"not scored against job {job.job_id}'s step time: its stored readings "
                                         f"could not be read ({unscored[f.ref.slug]})"]
                out.append(f.model_copy(update={"explains_slowdown": None, "correlation_score": None,
                                                "evidence": evidence}))
                continue
            weighed = _weighed(f, job, tolerance_min) if job.slowdown else None
            if weighed is not None:
                out.append(weighed)
                continue
            evidence = [*f.evidence, f"its errors do not track job {job.job_id}'s step time"]
            out.append(f.model_copy(update={"explains_slowdown": False, "correlation_score": 0.0,
                                            "evidence": evidence}))
            continue
        out.append(f.model_copy(update={"explains_slowdown": score.explains_slowdown,
                                        "correlation_score": score.score, "onset": score.onset,
                                        "evidence": [*f.evidence, *score.evidence]}))
    return out


NO_LINKS_ACTION = ("Collect this node's link counters (dcgm-exporter with its NVLink and PCIe error fields, or "
                   "`nvidia-smi nvlink -e` read twice a few minutes apart): without them its fabric health is not "
                   "known")
LONE_READING_ACTION = ("Read the counters again in a few minutes: one reading holds lifetime totals since reset, not "
                       "rates, so the error rate is not known yet")
DROPPED_ACTION = ("Read the link's counters again, twice a few minutes apart: a count read lower than the reading "
                  "before while the link's other counters held is a damaged or cut number, not a restart, so its "
                  "error rate is not known")
UNREAD_ACTION = ("Read the link's counters again, twice a few minutes apart: a reading of the window holds no value of "
                 "a counter its other readings hold (a value refused as damaged, or a line cut), so its error rate is "
                 "not known")
CUT_OFF_ACTION = ("Read the node's counters again, whole, twice a few minutes apart: its newest input was cut off "
                  "before its end, so the GPUs, links and counters after the cut were not read")
PINNED_ACTION = ("Read the pinned link's counters again after its GPU's next reset or reboot, which starts them from "
                 "zero: a counter pinned at its maximum counts no further, so its error rate is not known")
STATES_ONLY_ACTION = ("Read the error counters (`nvidia-smi nvlink -e` twice a few minutes apart, or dcgm-exporter "
                      "with its NVLink and PCIe error fields): the input reads link states and speeds only, so no "
                      "error rate is known")


def assemble(node_id: str, *, platform: str | None, window_hours: float, window_end: datetime | None,
             findings: list[Finding], localizations: list[Localization], job: JobExplanation | None,
             thresholds: Thresholds, warnings: list[str], rates_known: bool = True,
             has_links: bool = True, job_gpus: int | None = None, prescored: bool = False,
             rack: RackPlace | None = None, tray: str | None = None, stated_pairs: bool = False,
             lists_every_link: bool = False, platform_guess: str | None = None,
             window_asked_hours: float | None = None, counted: bool | None = None, read_once: int = 0,
             pinned: int = 0, dropped: int = 0, unread: int = 0, contradicted: str | None = None,
             platforms_alike: list[str] | None = None, cut_off: bool = False) -> Diagnosis:
    """The node's Diagnosis: every localized component keeps its own action (one it was given, else the repair
    catalog's for `platform`); the headline is ranked first. `prescored`: the findings carry their job scores (a
    rack's, scored on each of its hosts). `counted`: whether an error counter was read on any of its links (None:
    as its findings say; a fleet's findings hold only its flagged links). `read_once`: its links whose counters were
    read once where others were read more (not judged); `pinned`: those with a counter pinned at its maximum that
    no rule failed on its lower bound (its rate unknown); `dropped`: those with a counter read lower than before while
    their others held, no rule failing on what they count (a damaged or cut number: its rate unknown); `unread`:
    those with a counter a reading of the window holds no value of where the others do (its rate unknown);
    `contradicted`: why the readings do not fit the named platform (their GPU model names another), which holds
    every part's ticket as a plan that cannot apply does: no one acts on a part of the wrong board."""
    if job is not None and (not job.nodes or job.degradation_pct is None):
        job = None
    shown = job  # a job that stopped is named, but neither slowed nor explained by this node's links
    if job is not None and not job.running:
        job = None
    if job is not None and not prescored:
        findings = scored(findings, job, node_id, thresholds.setting("onset_tolerance_min"))
    top = worst(findings)
    failing = top is not None and _bad(top)
    explaining = {f.component for f in findings if f.explains_slowdown}
    degradation = job.degradation_pct if job is not None else None

    def part_level(loc: Localization) -> Priority | None:
        """The priority of the part's own ticket: the policy over its own links, the slowdown counted where they
        explain it (as `part_priority` drafts it)."""
        links = set(loc.links)
        own = [f for f in findings if f.component in links]
        return priority(own, degradation if loc.explains_slowdown else None, thresholds) if own else None

    def urgency(loc: Localization) -> int:
        """The part's priority rank, so the most urgent part heads the node."""
        level = part_level(loc)
        return priority_rank(level) if level is not None else 0

    def planned(loc: Localization) -> Localization:
        """The part with its action (one it was given, else its plan's) and whether its ticket is held (its plan
        does not fit a stated platform), from the one plan built for it."""
        plan = None if loc.action is not None and platform is None else localization_plan(
            loc, platform=platform, node_id=node_id, rack=rack, job_id=shown.job_id if shown else None,
            stated_pair=stated_pairs)  # a given action and no platform stated: no plan to build
        return loc.model_copy(update={"explains_slowdown": bool(explaining & set(loc.links)),
                                      "action": loc.action or (plan.action if plan else None),
                                      "held": (plan.held or contradicted) if plan is not None and platform is not None
                                      else None})

    locs = rank((planned(loc) for loc in localizations), urgency) if failing else []
    loc = locs[0] if locs else None
    # the job's slowdown raises this node's priority only through a failing link that explains it, or a part whose
    # links explain it, weighed as that part's ticket is: a warning link that explains it beside a failing one that
    # does not is no failing link explaining it
    blamed = degradation if any(f.explains_slowdown and _bad(f) for f in findings) else None
    head = part_level(loc) if loc is not None else None  # ranked first by it: the most urgent part's
    level = max([priority(findings, blamed, thresholds), *([head] if head is not None else [])], key=priority_rank)
    if loc is not None and loc.action is not None:
        action = loc.action
    elif failing and corrupted(findings) is not None:  # a collective's wrong values: find the link, run nothing
        action = WRONG_ACTION.format(node=node_id)
    elif failing and top is not None:  # failing, and no part to name: say what to read, never "routine"
        action = (f"Investigate {top.component} on {node_id}: {top.crossed[0].message if top.crossed else 'failing'}"
                  "; no component is localized, so no part is named")
    elif degraded(findings) is not None:  # a measured all_reduce below its platform's figure: what to read there
        action = BUSBW_ACTION.format(node=node_id)
    elif not has_links:  # nothing read is not "within threshold"; an event that warns judges no link either
        action = NO_LINKS_ACTION
    elif pinned:  # a rate unknown, which may fail: no "warnings only" nor "healthy"
        action = PINNED_ACTION
    elif dropped:
        action = DROPPED_ACTION
    elif unread and not read_once:  # a link of a cut second reading is one read once: said so, below
        action = UNREAD_ACTION
    elif cut_off and rates_known and not read_once and (top is None or top.severity is not Severity.WARNING):
        action = CUT_OFF_ACTION
    elif top is not None and top.severity is Severity.WARNING:
        action = repair_action("warning", platform=platform, node_id=node_id)
    elif not rates_known or read_once:  # a lone reading: of counters (totals), or of states and speeds alone
        read = any(f.counts for f in findings) if counted is None else counted
        action = LONE_READING_ACTION if read else STATES_ONLY_ACTION
    else:
        action = repair_action("healthy", platform=platform, node_id=node_id)
    headline = (loc.component if loc else top.component if top else "None") if failing else "None"
    return Diagnosis(
        node_id=node_id, platform=platform, platform_guess=platform_guess,
        platform_contradicted=contradicted if platform is not None else None,
        platforms_alike=list(platforms_alike or []) if platform is None else [], window_hours=window_hours,
        window_asked_hours=window_asked_hours, window_end=window_end, fault_detected=failing,
        isolated_component=headline, degradation_pct=degradation, repair_action=action,
        ticket_priority=level, findings=findings, thresholds=thresholds.table(),
        warnings=warnings, localization=loc, localizations=locs,
        step_time_ms=job.step_time_ms if job else None,
        baseline_step_time_ms=job.baseline_step_time_ms if job else None,
        job_id=shown.job_id if shown else None,
        job_gpus=job_gpus if shown and shown.nodes else None,
        slowdown_onset=job.onset if job else None, verdict=_verdict(job, shown, findings, node_id, headline,
                                                                  rack is not None),
        rack=rack, tray=tray, lists_every_link=lists_every_link, links_read=has_links,
        rates_known=rates_known and has_links, read_once=read_once, pinned=pinned, dropped=dropped, unread=unread,
        cut_off=cut_off,
        held=every_held(locs),
    )


def _verdict(job: JobExplanation | None, shown: JobExplanation | None, findings: list[Finding], node_id: str,
             headline: str, rack: bool = False) -> str | None:
    software = any(c.rule == SOFTWARE_RULE and _bad(f) for f in findings for c in f.crossed)
    said = _job_verdict(job, findings, node_id, headline) if job is not None else shown.verdict if shown else None
    if not software:
        return said
    down = (FABRIC_DOWN_RACK if rack else FABRIC_DOWN).format(node=node_id)
    return f"{down}; {said}" if said else down


def _job_verdict(job: JobExplanation, findings: list[Finding], node_id: str, headline: str) -> str:
    bad = [f for f in findings if _bad(f)]
    pct = fmt.percent(job.degradation_pct)
    if job.slowdown and any(f.explains_slowdown for f in bad):
        if any(s.explains_slowdown for s in job.links):
            return job.verdict
        event = next(f for f in bad if f.explains_slowdown)  # an event's time, not a series, matched the onset
        return (f"{node_id} {event.component} explains job {job.job_id}'s slowdown ({pct} since "
                f"{fmt.when(job.onset)}): its {event.crossed[0].counter.upper() if event.crossed else 'event'} at "
                f"{fmt.when(event.onset)} began it")
    mine = [u for u in job.unscored if u.node_id == node_id]
    if job.slowdown and mine:
        return f"job {job.job_id} is {pct} slower; {unscored_words(mine)}"
    if job.slowdown and bad:
        return (f"job {job.job_id} is {pct} slower but the failing links of {node_id} do not track it: "
                "not this node's fabric")
    if not job.slowdown and bad:
        return f"{headline} is failing but job {job.job_id} is not slower ({pct})"
    return job.verdict
