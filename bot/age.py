"""How old the readings an answer judged are, said in one wording at every door (the CLI's stderr, Slack's summary and
fleet view), so a fault of months ago is never taken for today's: a store no longer fed answers as confidently as
a live one, all-clears included."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from diagnostics import format as fmt

OLD_READINGS = timedelta(days=1)  # readings whose window ends longer ago than this are not now's


def old_readings(end: datetime | None, *, what: str, option: str | None = None, ask: str = "",
                 now: datetime | None = None) -> str | None:
    """Where a window judged to the newest reading ends long before `now` (a store no longer fed, a copy of old data,
    a snapshot from an old ticket), that said (`ask`: what to check first; `option`: the door's way to judge another
    end, where it has one); None otherwise."""
    if end is None:
        return None
    age = (now or datetime.now(UTC)) - end
    if age <= OLD_READINGS:
        return None
    another = f"; give {option} TIME to judge another" if option else ""
    return (f"{what} newest reading is from {fmt.when(end)}, {fmt.count(age.days, 'day')} before now: this answer "
            f"judges the window to it, not now{f' ({ask})' if ask else ''}{another}")
