"""Where a fleet's window ends when none is asked: where the fleet's readings are, not where one runaway clock is.

A node whose readings are dated after the wall clock (its clock ahead, or a zone read as UTC) would move every
node's window past their readings, and the whole fleet would read as silent while a node fails. Every door that
judges the fleet (sweep, digest, watch, the alert loop, the Slack fleet view) ends its window here."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol, runtime_checkable

from .. import format as fmt
from ..config.thresholds import Thresholds


@dataclass(frozen=True)
class FleetEnd:
    """The fleet window's end (None: the source holds no dated link reading, or none that says) and the nodes left
    past it, each with how far its newest reading runs after the end."""

    end: datetime | None
    ahead: dict[str, timedelta] = field(default_factory=dict)

    def note(self) -> str | None:
        """Why the view leaves the nodes past the end out: said, never silent."""
        if not self.ahead or self.end is None:
            return None
        shown = sorted(self.ahead.items(), key=lambda kv: (-kv[1], kv[0]))
        return (f"{fmt.count(len(shown), 'node')} not judged past the window's end at {fmt.when(self.end)}: "
                + "; ".join(f"{n}'s readings run {fmt.hours(round(d.total_seconds() / 3600, 1))} ahead of the fleet's"
                            for n, d in shown[:10]) + (" ..." if len(shown) > 10 else "")
                + ", dated after the wall clock: its clock runs ahead, or its zone was read wrong (`fabricbot "
                "analyze --store ... --node NODE` judges it alone)")


def clock_tolerance(thresholds: Thresholds) -> timedelta:
    """How far after the wall clock a reading may be dated before its clock is taken to run ahead."""
    return timedelta(minutes=thresholds.setting("clock_ahead_min"))


def fleet_end(newest: dict[str, datetime], *, thresholds: Thresholds, now: datetime | None = None) -> FleetEnd:
    """The newest reading of the nodes whose readings are dated no later than the wall clock (beyond
    `clock_ahead_min`): a node dated after it is left past the end and named. Where every node is dated after the
    wall clock, the fleet is where its readings are. A node dated ahead of the others but not of the wall clock
    (old readings read today) is not left out: the store cannot tell its zone read wrong from the others having
    stopped reporting, and a node that stopped is never to pass as live, so the others read as silent, said."""
    if not newest:
        return FleetEnd(None)
    now = now or datetime.now(UTC)
    kept = {n: t for n, t in newest.items() if t <= now + clock_tolerance(thresholds)} or newest
    end = max(kept.values())
    return FleetEnd(end, {n: t - end for n, t in newest.items() if n not in kept})


@runtime_checkable
class Dated(Protocol):
    """A source that says each node's newest link reading without reading them (the store, from its catalog)."""

    def newest_each(self) -> dict[str, datetime]: ...


def source_end(source: object, *, thresholds: Thresholds, now: datetime | None = None) -> FleetEnd:
    """`fleet_end` of a source that dates its nodes (`Dated`); else no end (the source's read picks its own)."""
    if not isinstance(source, Dated):
        return FleetEnd(None)
    return fleet_end(source.newest_each(), thresholds=thresholds, now=now)
