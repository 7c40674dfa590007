"""The one order of a node's offending parts, most urgent first, which every door that lists them keeps (`fabricbot
sweep`, its JSON, `/fabric fleet`, the digest): a list that ranked them by severity alone put a fatal Xid behind
three others of the same severity, in bus order, and left it out of a list cut at three."""

from __future__ import annotations

from ..config.thresholds import Thresholds, load_thresholds
from ..enums import Priority, Severity, priority_rank, severity_rank
from ..model import Diagnosis, Finding
from .rules import part_priority, stops


def urgent_first(diagnosis: Diagnosis, thresholds: Thresholds | None = None) -> list[tuple[int, Finding]]:
    """The node's unhealthy findings, most urgent first, each with its index in the diagnosis: by the priority of the
    ticket for its part (as the digest gives it), then a fatal event before none, then the part the node is isolated
    on, then severity, then how far over its threshold (a rule any event breaks, or a link down, as far as can be),
    then the diagnosis's own order. `thresholds`: the priority policy the diagnosis was judged by (default: the
    thresholds file in force)."""
    found = [(i, f) for i, f in enumerate(diagnosis.findings) if f.severity is not Severity.OK]
    if not found:
        return []
    policy = thresholds or load_thresholds()
    headline = set(diagnosis.localization.links) if diagnosis.localization is not None else set()
    parts = _parts(diagnosis, policy)
    named: dict[str, list[Finding]] = {}  # each name's findings, its name built once (a sweep ranks thousands)
    for f in diagnosis.findings:
        named.setdefault(f.component, []).append(f)
    alone: dict[str, Priority] = {}

    def part_of(name: str) -> int:
        mine = [p for links, p in parts if name in links]
        if not mine:  # a link no suspect names: its own part
            if name not in alone:
                alone[name] = part_priority(diagnosis, [name], headline=False, thresholds=policy, own=named[name])
            mine = [alone[name]]
        return max(priority_rank(p) for p in mine)

    def key(pair: tuple[int, Finding]) -> tuple[int, bool, bool, int, float, int]:
        i, f = pair
        name = f.component
        ratio = f.worst_ratio if f.worst_ratio is not None else float("inf")
        return (-part_of(name), not stops(f, policy), name not in headline, -severity_rank(f.severity), -ratio, i)

    return sorted(found, key=key)


def places(diagnosis: Diagnosis, thresholds: Thresholds | None = None) -> dict[str, int]:
    """Each unhealthy part's place in `urgent_first` (0 the most urgent), by the name its findings give it."""
    out: dict[str, int] = {}
    for place, (_, f) in enumerate(urgent_first(diagnosis, thresholds)):
        out.setdefault(f.component, place)
    return out


def _parts(diagnosis: Diagnosis, thresholds: Thresholds) -> list[tuple[set[str], Priority]]:
    """Each suspect's links and the priority of its ticket, as the digest gives it: a link takes its most urgent
    part's."""
    locs = diagnosis.localizations or ([diagnosis.localization] if diagnosis.localization is not None else [])
    return [(set(loc.links), part_priority(diagnosis, loc.links, headline=loc == diagnosis.localization,
                                           thresholds=thresholds)) for loc in locs]
