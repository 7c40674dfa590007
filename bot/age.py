"""How old the readings an answer judged are, said in one wording at every door (the CLI's stderr, Slack's summary and
fleet view), so a fault of months ago is never taken for today's: a store no longer fed answers as confidently as
a live one, all-clears included."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from diagnostics import format as fmt
from diagnostics.service import StoreSource

OLD_READINGS = timedelta(days=1)  # readings whose window ends longer ago than this are not now's


def is_old(end: datetime | None, *, now: datetime | None = None) -> bool:
    return end is not None and (now or datetime.now(UTC)) - end > OLD_READINGS


def source_readings(end: datetime | None, source: object, *, asked: str | None, option: str | None = None,
                    now: datetime | None = None) -> str | None:
    """`old_readings` of an answer from `source` (a store, else the input) to `end`, worded as every door words it:
    whose newest reading it is (the node or rack `asked`, where its window ends before the store's newest: its own
    kernel log alone; None for a job's answer or the fleet's), with what to check first. The store is asked its
    newest reading only when the note is said."""
    if not is_old(end, now=now):
        return None
    if not isinstance(source, StoreSource):
        return old_readings(end, what="the input's", option=option, now=now)
    newest = source.newest() if asked else None
    what = f"{asked}'s" if newest is not None and end is not None and end < newest else "the store's"
    return old_readings(end, what=what, ask="is the store still fed?", option=option, now=now)


def old_readings(end: datetime | None, *, what: str, option: str | None = None, ask: str = "",
                 now: datetime | None = None) -> str | None:
    """Where a window judged to the newest reading ends long before `now` (a store no longer fed, a copy of old data,
    a snapshot from an old ticket), that said (`ask`: what to check first; `option`: the door's way to judge another
    end, where it has one); None otherwise."""
    if end is None or not is_old(end, now=now):
        return None
    age = (now or datetime.now(UTC)) - end
    another = f"; give {option} TIME to judge another" if option else ""
    return (f"{what} newest reading is from {fmt.when(end)}, {fmt.count(age.days, 'day')} before now: this answer "
            f"judges the window to it, not now{f' ({ask})' if ask else ''}{another}")
