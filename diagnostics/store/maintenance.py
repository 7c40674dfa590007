"""Planned work: which nodes are in maintenance, from when until when, why and on whose word.

A node in maintenance is still diagnosed and its findings still shown, but nothing pages and no ticket is drafted
from it: a reboot or a reseat is not a fault. Planned work is a window set from the CLI or Slack (table
`maintenance`), or a scheduler state an inventory file gives that says maintenance: Slurm's MAINT (a maintenance
reservation; `+`-joined too, such as IDLE+MAINTENANCE+RESERVED), or a state that keeps jobs off the node (Slurm's
DRAIN, DRAINED, DRAINING; Kubernetes' cordoned / SchedulingDisabled) whose reason says maintenance ("kernel
upgrade", "planned maintenance"). A drain for a fault, or with no reason, is no planned work: health checkers and
fabricbot's own tickets drain nodes on faults, and the fault must still be ticketed. An inventory's hold starts when
the scheduler says it did (the file's `since`) or, failing that, at the first ingest that saw the state: readings
before it are not held. It lasts until a later inventory gives another state, or someone ends it. Slurm's state flags
(`*`, `~`, `#`, ...) after the name are ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import sqlite_utils

from .. import format as fmt
from ..errors import InputError

TABLE = "maintenance"
NODES = "nodes"  # the store's node records: an inventory's `state` column lands there
MAINTENANCE_STATES = frozenset({"maint", "maintenance"})  # the scheduler itself says planned work
OFF_STATES = frozenset({"drain", "drained", "draining", "drng", "cordon", "cordoned", "schedulingdisabled"})
PLANNED_REASON = re.compile(r"maint|planned|upgrad|scheduled|reservation", re.IGNORECASE)


def _words(state: str | None) -> set[str]:
    return {w.strip().rstrip("*~#!%$@^-").lower().replace(" ", "") for w in str(state or "").split("+")}


def held(state: str | None, reason: str | None = None) -> bool:
    """Whether a scheduler state (with its reason) is planned work, as the module's words say."""
    words = _words(state)
    if words & MAINTENANCE_STATES:
        return True
    return bool(words & OFF_STATES) and bool(PLANNED_REASON.search(str(reason or "")))


MAX_SPAN = timedelta(days=30)  # a window longer than a month is more likely a typo than a plan


@dataclass(frozen=True)
class Maintenance:
    """One node's planned-work window; `until` None: open-ended (an inventory's drain state)."""

    node_id: str
    start: datetime
    until: datetime | None
    reason: str
    set_by: str
    source: str = "cli"

    def covers(self, moment: datetime) -> bool:
        return self.start <= moment and (self.until is None or moment < self.until)

    @property
    def note(self) -> str:
        """As the answer says it: "in maintenance until 2026-03-01 10:00 UTC: swap GPU 3 (set by UALICE)"."""
        until = f"until {fmt.when(self.until)}" if self.until else f"({self.source}, no end set)"
        return f"in maintenance {until}: {self.reason or 'planned work'} (set by {self.set_by})"

    def beside(self, others: list[Maintenance]) -> str | None:
        """Said where this window is set while others of its node are open: each stands (the node is in maintenance
        while any is), and `end` ends every one; None where none is."""
        open_ = [w for w in others if w != self and w.covers(self.start)]
        if not open_:
            return None
        return (f"already {'; '.join(w.note for w in open_)}: {'both stand' if len(open_) == 1 else 'all stand'}, "
                "the node in maintenance while any is open; `end` ends every one")

    def after_readings(self, newest: datetime | None) -> str | None:
        """Said where work set now starts after the node's newest reading, so it holds none of the readings an answer
        is judged on (a store of old or replayed readings, older than a window reaches back): the window is not
        stretched over them, and how to place it is said."""
        if newest is None or _utc(newest) >= self.start:
            return None
        return (f"its newest reading ({fmt.when(newest)}) is before this window, so answers judged on its readings "
                f"are not held by it: to hold them, place the work there (`fabricbot maintenance {self.node_id} "
                "DURATION --at TIME`)")


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


class MaintenanceLog:
    """The maintenance windows in a store's database."""

    def __init__(self, db: sqlite_utils.Database) -> None:
        self.db = db
        db[TABLE].create({"id": int, "node_id": str, "start": str, "until": str,  # type: ignore[union-attr]
                          "reason": str, "set_by": str, "source": str, "ended_by": str},
                         pk="id", not_null={"node_id", "start"}, if_not_exists=True)

    def set(self, node_id: str, *, start: datetime, span: timedelta, reason: str, set_by: str,
            source: str = "cli") -> Maintenance:
        if not timedelta(0) < span <= MAX_SPAN:
            said = f"{span.total_seconds() / 86400:g} days" if span >= timedelta(days=1) else \
                fmt.period(span.total_seconds())
            raise InputError(f"a maintenance window is more than 0 and at most {MAX_SPAN.days} days",
                             field="duration", value=said)
        start = _utc(start)
        window = Maintenance(node_id, start, start + span, reason, set_by, source)
        with self.db.atomic():
            self.db[TABLE].insert({"node_id": node_id, "start": start.isoformat(),  # type: ignore[union-attr]
                                   "until": window.until.isoformat() if window.until else None,
                                   "reason": reason, "set_by": set_by, "source": source})
        return window

    def begin(self, node_id: str, *, now: datetime, newest: datetime | None, span: timedelta, reason: str,
              set_by: str, source: str = "cli") -> Maintenance:
        """Planned work set `now` for `span`: from the node's newest reading when that is earlier, so the readings
        up to now (the work's own, and an analysis window that ends at the newest reading) are covered too; not
        from readings so old that the window would pass its longest span (they are no part of this work)."""
        now = _utc(now)
        start = min(now, _utc(newest)) if newest is not None else now
        if span + (now - start) > MAX_SPAN:
            start = now
        return self.set(node_id, start=start, span=span + (now - start), reason=reason, set_by=set_by, source=source)

    def end(self, node_id: str, *, at: datetime, by: str) -> list[Maintenance]:
        """End every window of the node still open at `at`, an inventory's hold too (until a later inventory gives
        another state); the windows ended."""
        at = _utc(at)
        ended = [w for w in self.windows(node_id) if w.covers(at)]
        with self.db.atomic():
            if any(w.source == "inventory" for w in ended):
                self.db[NODES].update(node_id, {"hold_ended_at": at.isoformat(),  # type: ignore[union-attr]
                                                "hold_ended_by": by}, alter=True)
            for row in self.db[TABLE].rows_where("node_id = ?", [node_id]):
                window = self._window(row)
                if window.covers(at):
                    self.db[TABLE].update(row["id"], {"until": at.isoformat(),  # type: ignore[union-attr]
                                                      "ended_by": by})
        return ended

    def keep(self, windows: list[Maintenance]) -> None:
        """Windows as another log holds them (ended ones too), for a copy of it in another process."""
        with self.db.atomic():
            self.db[TABLE].insert_all([{"node_id": w.node_id, "start": w.start.isoformat(),  # type: ignore[union-attr]
                                        "until": w.until.isoformat() if w.until else None, "reason": w.reason,
                                        "set_by": w.set_by, "source": w.source} for w in windows])

    @staticmethod
    def _window(row: dict[str, object]) -> Maintenance:
        until = row.get("until")
        return Maintenance(str(row["node_id"]), datetime.fromisoformat(str(row["start"])),
                           datetime.fromisoformat(str(until)) if until else None, str(row.get("reason") or ""),
                           str(row.get("set_by") or ""), str(row.get("source") or "cli"))

    def windows(self, node_id: str | None = None) -> list[Maintenance]:
        """Every window, the open-ended ones of an inventory's state first."""
        where, args = ("node_id = ?", [node_id]) if node_id else (None, [])
        return self._inventory(where, args) + [self._window(r) for r in self.db[TABLE].rows_where(where, args,
                                                                                                   order_by="start")]

    def _inventory(self, where: str | None, args: list[str]) -> list[Maintenance]:
        if not self.db[NODES].exists() or "state" not in self.db[NODES].columns_dict:
            return []
        out = []
        for r in self.db[NODES].rows_where(where, args):
            if not held(r.get("state"), r.get("state_reason")):
                continue
            start = _since(r.get("state_since")) or _since(r.get("state_seen")) or _since(r.get("last_seen"))
            if start is None:
                continue  # a state with no time at all holds nothing: no reading is hidden by it
            ended = _since(r.get("hold_ended_at"))
            reason = f" ({r['state_reason']})" if r.get("state_reason") else ""
            out.append(Maintenance(str(r["node_id"]), start, ended, f"the inventory's state is {r['state']}{reason}",
                                   "inventory", "inventory"))
        return out


def _since(value: object) -> datetime | None:
    """An inventory's time (ISO 8601, Slurm's `2026-03-01T10:00:00` in UTC) or None when it gives none or a bad one."""
    if not value:
        return None
    try:
        return _utc(datetime.fromisoformat(str(value).strip()))
    except ValueError:
        return None
