"""Thresholds applied to a link's rates, and the priority policy applied to a node's findings."""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from .. import format as fmt
from ..config.thresholds import GPU_LOST_RULES, LINK_DOWN_RULE, Thresholds, load_thresholds
from ..enums import LinkState, Priority, Severity, priority_rank, severity_rank
from ..model import Crossing, Diagnosis, Finding


@dataclass(frozen=True)
class LinkFacts:
    """What a rule may need of a link beyond its rates: its lifetime totals (since the counters last restarted), its
    PCIe generation and width, and its GPU's NVLink generation (5 on Blackwell; None where not known)."""

    totals: Mapping[str, float] = field(default_factory=dict)
    gen: float | None = None
    width: float | None = None
    nvlink_generation: int | None = None


def crossings(link_type: str, rates_per_hour: Mapping[str, float], thresholds: Thresholds,
              windows_over: Mapping[str, int] | None = None, facts: LinkFacts | None = None) -> list[Crossing]:
    """Every rule this link's rates break, worst first.

    A rule with `persist = [k, m]` needs a history: it fires when `windows_over[rule]` (how many of the last m
    windows exceeded) is at least k, and is skipped when no history is given. A rule counted in totals (`since
    reset`) judges the link's lifetime total; a rule with a per-lane limit judges against the link's own generation
    and width; a rule `before_nvlink5` skips a link whose GPU is known to be Blackwell or newer.
    """
    facts = facts or LinkFacts()
    found: list[Crossing] = []
    totals, total = facts.totals, fmt.Unit.TOTAL
    for rule in thresholds.rules:  # most rules judge a counter the link has no value of: asked first, it is cheapest
        values = totals if rule.unit is total else rates_per_hour
        if rule.counter not in values or not rule.applies_to(link_type):
            continue
        if rule.before_nvlink5 and (facts.nvlink_generation or 0) >= 5:
            continue
        rate = values[rule.counter]
        if rule.persist is not None:
            k, m = rule.persist
            over = (windows_over or {}).get(rule.name)
            if over is None or over < k:
                continue
            found.append(Crossing(
                rule=rule.name, counter=rule.counter, rate_per_hour=rate, above=rule.above,
                severity=rule.severity,
                unit=rule.unit,
                message=f"{fmt.label(rule.counter)} above {fmt.value(rule.above, rule.unit)} in {over} of the last "
                        f"{m} windows ({rule.name})",
            ))
            continue
        limit = rule.limit(facts.gen, facts.width)
        if limit is None or not rule.crosses(rate, limit):
            continue
        sign = ">=" if rule.inclusive else ">"
        scaled = f" (Gen{int(facts.gen or 0)} x{int(facts.width or 0)})" if rule.per_lane_by_gen else ""
        found.append(Crossing(
            rule=rule.name, counter=rule.counter, rate_per_hour=rate, above=limit,
            severity=rule.severity,
            unit=rule.unit,
            message=f"{fmt.metric(rule.counter, rate, unit=rule.unit)} {sign} {fmt.value(limit, rule.unit)}{scaled} "
                    f"({rule.name})",
        ))
    found.sort(key=lambda c: (severity_rank(c.severity), _ratio(c)), reverse=True)
    return found


def state_crossing(state: LinkState) -> Crossing | None:
    if state in (LinkState.DOWN, LinkState.INACTIVE):
        return Crossing(rule=LINK_DOWN_RULE, counter="link_state", severity=Severity.DOWN, unit=fmt.Unit.STATE,
                        message=f"link is {state.value}")
    if state is LinkState.DEGRADED:
        return Crossing(rule="link_degraded", counter="link_state", severity=Severity.WARNING, unit=fmt.Unit.STATE,
                        message="link reports a degraded state")
    return None


def _ratio(c: Crossing) -> float:
    if c.rate_per_hour is None or c.above is None:
        return float("inf")
    return c.rate_per_hour / c.above if c.above > 0 else float("inf") if c.rate_per_hour > 0 else 0.0


def summarize(crossed: list[Crossing]) -> tuple[Severity, float | None]:
    """A link's severity (its worst crossing) and its worst rate/threshold ratio (None if down or unbounded)."""
    if not crossed:
        return Severity.OK, None
    severity = max((c.severity for c in crossed), key=severity_rank)
    if severity is Severity.DOWN:
        return severity, None
    ratio = max(_ratio(c) for c in crossed if c.severity == severity)
    # a zero threshold (any event fires) has no finite ratio: None ranks it like a down link
    return severity, round(ratio, 3) if math.isfinite(ratio) else None


def worst(findings: Iterable[Finding]) -> Finding | None:
    """The worst link: highest severity, then highest rate against its threshold (a down link is worst)."""
    candidates = [f for f in findings if f.severity is not Severity.OK]
    if not candidates:
        return None
    return max(candidates, key=lambda f: (severity_rank(f.severity),
                                          f.worst_ratio if f.worst_ratio is not None else float("inf")))


def stops(f: Finding, thresholds: Thresholds) -> bool:
    """Whether a fatal event is among the link's: a rule counting only fatal ones, or a fatal Xid among a rule's. It
    stops the link until a restart."""
    stopping = {r.name for r in thresholds.rules if r.fatal}
    return any(c.fatal or c.rule in stopping for c in f.crossed)


def priority(findings: Iterable[Finding], degradation_pct: float | None, thresholds: Thresholds) -> Priority:
    """The first row of the priority table whose conditions hold."""
    findings = list(findings)
    severities = {f.severity for f in findings}
    failing = bool(severities & {Severity.FAILING, Severity.DOWN})
    holds = {
        "failing": failing,
        "down": Severity.DOWN in severities or any(stops(f, thresholds) for f in findings),
        "gpu_lost": any(c.rule in GPU_LOST_RULES for f in findings for c in f.crossed),
        "warning": not failing and Severity.WARNING in severities,
        "none": not failing and Severity.WARNING not in severities,
    }
    for row in thresholds.priority:
        if not holds[row.when]:
            continue
        if row.min_degradation_pct is not None and (
            degradation_pct is None or degradation_pct < row.min_degradation_pct
        ):
            continue
        return row.level
    return Priority.LOW


def part_priority(diagnosis: Diagnosis, links: Collection[str], *, headline: bool,
                  thresholds: Thresholds | None = None, own: list[Finding] | None = None) -> Priority:
    """The priority of a ticket for one part of the diagnosis, whose unhealthy links are `links` (their component
    names): the node's for the headline, unless another part's links explain the job's slowdown and its own do not;
    for any other part, the policy over its own links alone, the slowdown counted only where they explain it, never
    above the node's (planned work keeps every part low). The headline is the most urgent part (`localize.rank`), so
    its ticket is the node's: weighed over the part's links alone, a Fabric Manager part (its state beside the
    links) read lower in the digest than in its ticket. A part none of whose links the diagnosis holds (a
    rack's part seen from one of its hosts) keeps the node's. `thresholds`: the priority policy (default: the
    thresholds file in force). `own`: the diagnosis's findings of those links, where the caller has them."""
    if own is None:
        names = set(links)
        own = [f for f in diagnosis.findings if f.component in names]
    explains = any(f.explains_slowdown for f in own)
    if not own or (headline and (explains or not any(f.explains_slowdown for f in diagnosis.findings))):
        return diagnosis.ticket_priority
    mine = priority(own, diagnosis.degradation_pct if explains else None, thresholds or load_thresholds())
    return min(mine, diagnosis.ticket_priority, key=priority_rank)
