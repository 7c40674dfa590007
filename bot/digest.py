"""The daily digest: what changed on the fabric since yesterday, for the ops channel or a terminal.

New offenders (a failing part with no open ticket yet), the watch list, tickets waiting for their repair to be
verified, and the nodes in maintenance. It reads the store and the tracker; it files nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence, Sized
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from diagnostics import Diagnosis, InputError, Localization, SweepResult, Thresholds, load_thresholds, priority_rank
from diagnostics import format as fmt
from diagnostics.analysis import Watch, part_priority, places
from diagnostics.service import Request, Source, WatchAnswer, sweep, watched
from diagnostics.store import Maintenance

from .options import time_of_day
from .workflow.states import TicketState
from .workflow.tracker import Ticket, Tracker

SHOWN = 10  # of each list; the rest are counted


NOTHING_CLIMBING = "nothing climbing toward a threshold"  # what an empty watch list says when none was asked


@dataclass(frozen=True)
class NewOffender:
    node_id: str
    component: str
    slug: str
    priority: str
    why: str
    held: bool = False  # its ticket is held until the input and the platform agree (`Localization.held`)


@dataclass(frozen=True)
class Digest:
    at: datetime
    new: list[NewOffender] = field(default_factory=list)
    ticketed: int = 0  # failing parts that already have an open ticket
    watches: list[Watch] = field(default_factory=list)
    verifying: list[Ticket] = field(default_factory=list)
    maintenance: list[Maintenance] = field(default_factory=list)
    incomplete: list[str] = field(default_factory=list)
    watch_quiet: str = NOTHING_CLIMBING  # what the empty watch list says
    not_watched: list[str] = field(default_factory=list)  # the nodes the watch list could not judge, and why
    unwatched: dict[str, str] = field(default_factory=dict)  # every one of them -> why (`not_watched` lists a few)
    watch_judged: bool = True  # whether the watch list judged the fleet's nodes (false: "cannot judge yet")

    @property
    def quiet(self) -> bool:
        return not (self.new or self.watches or self.verifying or self.maintenance or not self.watch_judged)

    @property
    def complete(self) -> bool:
        """Whether the digest speaks for the whole fleet: the sweep read every node and the watch judged them."""
        return not self.incomplete and self.watch_judged


def assemble(*, at: datetime, diagnoses: Iterable[Diagnosis], tracker: Tracker, maintenance: list[Maintenance],
             watched: WatchAnswer | None = None, incomplete: list[str] | None = None,
             thresholds: Thresholds | None = None, ranked: Sequence[str] = ()) -> Digest:
    """The digest from the fleet's diagnoses as of `at`, the watch list (`watched`, the service's answer with the
    nodes it could not judge; none, an empty list), the tracker and the maintenance windows open at `at`.
    `thresholds`: the policy the diagnoses were judged by, which ranks each part as its ticket would (default: the
    thresholds file in force). `ranked`: the nodes in the sweep's order (`SweepResult.ranked`): the new parts of one
    priority are listed in it, so a GPU off the bus comes before replays as the sweep lists it (default: by name)."""
    thresholds = thresholds or load_thresholds()  # read once, not once per part
    place_of = {n: i for i, n in enumerate(ranked)}
    new: list[NewOffender] = []
    rank: dict[int, tuple[int, str]] = {}  # each new part's node's place in the sweep's order
    ticketed = 0
    seen: set[tuple[str, str]] = set()
    for d in sorted(diagnoses, key=lambda d: (place_of.get(d.node_id, len(place_of)), d.node_id)):
        if d.maintenance or not d.fault_detected:
            continue
        place = places(d, thresholds)  # a node's parts in the order every fleet door lists them

        def first(loc: Localization, place: dict[str, int] = place) -> int:
            return min((place[n] for n in loc.links if n in place), default=len(place))

        for loc in sorted(d.localizations, key=first):
            owner = d.owner_of(loc.ref.slug)  # a rack's part is listed once, under the rack
            if (owner, loc.ref.slug) in seen:
                continue
            seen.add((owner, loc.ref.slug))
            if tracker.open_ticket(owner, loc.ref.slug, wider=d.wider_owner(loc.ref.slug)) is not None:
                ticketed += 1
                continue
            prio = part_priority(d, loc.links, headline=loc == d.localization, thresholds=thresholds)
            new.append(NewOffender(owner, loc.ref.name, loc.ref.slug, prio.value,
                                   loc.evidence[0] if loc.evidence else d.repair_action, held=loc.held is not None))
            rank[id(new[-1])] = (place_of.get(d.node_id, len(place_of)), d.node_id)
    # urgent first; within a priority the sweep's order of nodes, a node's in its parts' order
    new.sort(key=lambda o: (-priority_rank(o.priority), *rank[id(o)]))
    return Digest(at=at, new=new, ticketed=ticketed, watches=watched.watches if watched else [],
                  verifying=[t for t in tracker.tickets() if t.status == TicketState.VERIFYING],
                  maintenance=[w for w in maintenance if w.covers(at)], incomplete=list(incomplete or []),
                  watch_quiet=watched.quiet() if watched else NOTHING_CLIMBING,
                  not_watched=[] if watched is None or watched.complete or not watched.asked  # the quiet line says it
                  else watched.not_judged(), watch_judged=watched is None or watched.complete,
                  unwatched={} if watched is None or watched.complete or not watched.asked else dict(watched.unjudged))


def digest_from(swept: SweepResult, watch: WatchAnswer, *, tracker: Tracker, maintenance: list[Maintenance],
                thresholds: Thresholds, at: datetime | None = None) -> Digest:
    """The digest from the service's sweep (the offending nodes' diagnoses, and why its view is incomplete: nodes
    whose parts cannot be read, nodes of one reading per link) and watch answer, as of `at` (default: the sweep's):
    what `fabricbot digest`, `/fabric digest` and the scheduled post all say. `thresholds`: the policy the sweep
    was judged by."""
    return assemble(at=at or swept.at, diagnoses=swept.diagnoses.values(), tracker=tracker, watched=watch,
                    maintenance=maintenance, incomplete=swept.incomplete_reasons, thresholds=thresholds,
                    ranked=swept.ranked())


def build_digest(source: Source, tracker: Tracker, *, thresholds: Thresholds,
                 at: datetime | None = None) -> Digest:
    """The digest of a source (the store) as of `at` (default: its newest reading)."""
    swept = sweep(source, Request(end=at, thresholds=thresholds))
    end = at or swept.at
    return digest_from(swept, watched(source, end=end, thresholds=thresholds), tracker=tracker,
                       maintenance=source.maintenance().windows(), thresholds=thresholds, at=end)


def more_line(items: Sized, shown: int, where: str) -> list[str]:
    """The line under a list cut to its first `shown`: how many more, and the command that lists every one."""
    return [f"… and {len(items) - shown} more (`{where}`)"] if len(items) > shown else []


def digest_lines(d: Digest) -> list[str]:
    """The digest as plain lines, in the order a person reads it: what is new first."""
    lines = [f"Fabric digest for {fmt.when(d.at)}"]
    if d.quiet:
        return [*lines, "Nothing new: no new failing part, nothing climbing, no repair waiting, no node in "
                        "maintenance.", *[f"Incomplete: {r}" for r in d.incomplete]]
    lines.append(f"New failing parts ({len(d.new)}; {d.ticketed} more already ticketed):" if d.new else
                 f"New failing parts: none ({d.ticketed} already ticketed)")
    lines += [f"  {fmt.priority(o.priority, held=o.held):<7} {o.node_id} / {o.component}: {o.why}"
              for o in d.new[:SHOWN]] + more_line(d.new, SHOWN, "fabricbot digest --json")
    lines.append(f"Watch ({len(d.watches)}):" if d.watches else f"Watch: {d.watch_quiet}")
    lines += [f"  {w.node_id} {w.summary}" for w in d.watches[:SHOWN]] + more_line(d.watches, SHOWN,
                                                                                     "fabricbot watch")
    lines += [f"  {n}" for n in d.not_watched[:SHOWN]] + more_line(d.not_watched, SHOWN, "fabricbot watch")
    lines.append(f"Waiting for verification ({len(d.verifying)}):" if d.verifying else
                 "Waiting for verification: none")
    lines += [f"  {t.id} {t.node_id} / {t.component}, repaired "
              f"{fmt.when(datetime.fromisoformat(t.repaired_at)) if t.repaired_at else '(time unknown)'} "
              f"by {t.repaired_by}"
              for t in d.verifying[:SHOWN]] + more_line(d.verifying, SHOWN, "fabricbot tickets list")
    lines.append(f"In maintenance ({len(d.maintenance)}):" if d.maintenance else "In maintenance: none")
    lines += [f"  {w.node_id} {w.note}" for w in d.maintenance[:SHOWN]]
    lines += more_line(d.maintenance, SHOWN, "fabricbot maintenance")
    lines += [f"Incomplete: {r}" for r in d.incomplete]
    return lines


def next_run(now: datetime, at_hhmm: str) -> datetime:
    """The next time of day `HH:MM` (UTC) after `now`: when the scheduled digest posts."""
    try:
        hours, minutes = time_of_day(at_hhmm)
    except ValueError:
        raise InputError("a digest time is HH:MM (UTC)", field="FABRICBOT_DIGEST_AT", value=at_hhmm) from None
    today = now.astimezone(UTC).replace(hour=hours, minute=minutes, second=0, microsecond=0)
    return today if today > now else today + timedelta(days=1)
