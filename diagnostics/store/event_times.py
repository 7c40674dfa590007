"""When the store's events happened, asked of its database: times are written as UTC ISO texts, which sort as the
times do, so SQLite finds the candidates by text and only the events in the second below a bound are read to decide
exactly."""

from __future__ import annotations

from collections.abc import Collection
from datetime import UTC, datetime

import pandas as pd
import sqlite_utils

from .. import format as fmt
from ..config.thresholds import load_thresholds
from ..tables import EVENTS
from ..times import utc_datetime, utc_ns


def _nodes(nodes: Collection[str] | None) -> tuple[str, list[str]]:
    """A `node_id IN (...)` condition for those nodes (none: every node), and its arguments."""
    if nodes is None:
        return "", []
    names = sorted({str(n) for n in nodes})
    return f"node_id IN ({', '.join('?' * len(names))})", names


def newest_event(db: sqlite_utils.Database, nodes: Collection[str] | None = None) -> int | None:
    """The newest event's time (ns) (of those nodes); None when no event has a time."""
    if not db.table(EVENTS.name).exists():
        return None
    which, args = _nodes(nodes)
    where = f" WHERE {which}" if which else ""
    top = db.execute(f"SELECT MAX(timestamp) FROM [{EVENTS.name}]{where}", args).fetchone()
    if top is None or top[0] is None:
        return None
    bound = (pd.Timestamp(top[0]) - pd.Timedelta(seconds=1)).isoformat()
    near = db.execute(f"SELECT timestamp FROM [{EVENTS.name}]{where}{' AND' if where else ' WHERE'} timestamp >= ?",
                      [*args, bound]).fetchall()
    return max(utc_ns(pd.Timestamp(t)) for (t,) in near)


def events_after(db: sqlite_utils.Database, nodes: Collection[str] | None, end_ns: int,
                 reading: Collection[str]) -> dict[str, datetime]:
    """The nodes with no link reading (not in `reading`) whose events run past a window's end (a host whose kernel
    log alone was ingested, newer than the others' readings): each with its newest event."""
    if not db.table(EVENTS.name).exists():
        return {}
    which, args = _nodes(nodes)
    bound = (pd.Timestamp(end_ns, tz="UTC") - pd.Timedelta(seconds=1)).isoformat()
    where = " AND ".join(["timestamp >= ?", *([which] if which else [])])
    out: dict[str, datetime] = {}
    for node, stamp in db.execute(f"SELECT node_id, timestamp FROM [{EVENTS.name}] WHERE {where}", [bound, *args]):
        t = utc_ns(pd.Timestamp(stamp))
        if node is not None and str(node) not in reading and t > end_ns:
            out[str(node)] = max(out.get(str(node), utc_datetime(t)), utc_datetime(t))
    return out


def end_with_events(reading_ns: int | None, event_ns: int | None, *, now: datetime | None = None) -> int | None:
    """Where a node's question's window ends when none is asked: its newest link reading, or its own newest event
    where that comes later (a kernel log saved after the counters: its fatal Xid is the news), by at most
    `late_event_min` (a `dmesg -T` log's local time read as UTC runs hours off: the window stays with the counters
    and the events past it are said, `late_note`) and not after the wall clock (`clock_ahead_min`)."""
    if event_ns is None or (reading_ns is not None and event_ns <= reading_ns):
        return reading_ns
    settings = load_thresholds()
    wall = utc_ns(now or datetime.now(UTC)) + int(settings.setting("clock_ahead_min") * 60e9)
    near = reading_ns is None or event_ns - reading_ns <= int(settings.setting("late_event_min") * 60e9)
    return event_ns if event_ns <= wall and near else reading_ns


def late_note(node: str, event: datetime, reading: datetime | None) -> str:
    """A node's events past its answer's window, said rather than judged (`end_with_events` left them out)."""
    after = f", {fmt.hours(round((event - reading).total_seconds() / 3600, 1))} after its newest link reading" \
        if reading is not None else ""
    return (f"{node} has events after the window's end, up to {fmt.when(event)}{after}: not judged here (a `dmesg -T` "
            "log prints local time, read as UTC); ask with the window's end at their time to judge them")
