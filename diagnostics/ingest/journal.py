"""journalctl's prefixes that state a date and year other than ISO's: `-o short-full` (`Tue 2024-03-12 10:00:00 UTC
host kernel:`, systemd.time(7)'s display form: weekday, date, time and the zone it was printed in) and `-o short-unix`
(`1710237600.123456 host kernel:`, seconds since the epoch). Both give an event its time, where a yearless syslog
date cannot.

The default form, `-o short` (and `short-precise`), prints syslog's yearless date (`Mar 12 10:00:01`). Its header
(`-- Logs begin at Tue 2024-03-12 09:58:11 UTC, end at Wed 2024-03-13 10:10:02 UTC. --`, or `-- Journal begins
at ..., ends at ... --` in newer systemd; `-f` prints the beginning only; `-q` none) states the first and last
entry's times in the display form, in the zone the entries are printed in (`--utc`: UTC): each yearless date under
it is read in the year that puts it within that span (`JournalSpan`), so a log crossing New Year is dated right.
A journal kept for more than a year leaves a date more than one year to fit: the latest for the first line (`-k`
shows the current boot, which reaches the journal's end), then the one nearest the line before (the entries go
forward in time, or back with `-r`).

With neither a header nor a `date` line above them, yearless dates are read as log tools read them: in the latest
year that puts them no later than the time the log was taken by (`JournalSpan.taken_by`: the time the command gives,
else now), said once with how to give the year.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

import pandas as pd

from .textlines import MONTH_WORD, Collector, month_number, parse_time, printed_date
from .zones import PRINTED, in_utc

_HOST = r"(?P<host>[^\s\[\]:]+)\s+(?=kernel[:\[])"
# the zone is always printed (UTC, an abbreviation, an IANA name): a zone-less date's next word is the host
_FULL = re.compile(r"^(?:[A-Z][a-z]{2} )?(?P<ts>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)?) "
                   rf"(?P<zone>{PRINTED})\s+" + _HOST)
_UNIX = re.compile(r"^(?P<epoch>\d{9,11}(?:\.\d{1,9})?)\s+" + _HOST)
PREFIXES = (_FULL, _UNIX)


def journal_prefix(body: str, out: Collector, number: int) -> tuple[re.Match[str], pd.Timestamp | None] | None:
    """The prefix `body` starts with, if one of these, and the time it states in UTC (None where it is no time)."""
    if match := _UNIX.match(body):
        try:
            whole, _, fraction = match["epoch"].partition(".")  # exact to the digit: a float would round it
            return match, pd.Timestamp(int(whole) * 10**9 + int(fraction.ljust(9, "0") or 0), unit="ns", tz="UTC")
        except (ValueError, OverflowError):
            out.warn(number, f"the time {match['epoch']!r} is no time (a digit changed?); the event has none")
            return match, None
    if not (match := _FULL.match(body)):
        return None
    stamp = parse_time(match["ts"])
    if stamp is None:
        out.warn(number, f"the time {match['ts']!r} is no time (a digit changed?); the event has none")
        return match, None
    return match, to_utc(stamp, match["zone"], out, number)


def to_utc(stamp: pd.Timestamp, zone: str, out: Collector, number: int) -> pd.Timestamp:
    """A time journalctl printed in `zone` (UTC, an offset, an abbreviation or an IANA name), in UTC; read as UTC
    where the zone cannot be (`zones.in_utc`: an unknown or ambiguous one), and said once."""
    found = in_utc(stamp, zone)
    if isinstance(found, pd.Timestamp):
        return found
    out.once("journal-zone", number, f"the zone {zone!r} {found}; its times are read as UTC")
    return stamp.tz_localize("UTC")


# the header above the entries (see the module's docstring); pdsh's `host: ` may lead it
_SPAN = re.compile(r"^(?:(?P<host>[^\s:\[\]]+):\s+)?-- (?:Logs begin at|Journal begins at) (?P<begin>[^,]+?)"
                   r"(?:, ends? at (?P<end>.+?))?\.? --\s*$")
_DISPLAY = re.compile(r"^(?:[A-Z][a-z]{2} )?(?P<ts>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})(?:\.\d+)? "
                      rf"(?P<zone>{PRINTED})$")
_SYSLOG_DATE = re.compile(rf"^(?P<month>{MONTH_WORD})\s+(?P<day>\d{{1,2}})\s+"
                          r"(?P<clock>\d{2}:\d{2}:\d{2}(?:\.\d+)?)$")
_FANNED = re.compile(r"^\s*(?P<host>[^\s:\[\]]+):\s+(?=\S)")  # pdsh's `host: ` before a line
_SLACK = pd.Timedelta(days=1)  # an entry a little outside the span (a clock set back) still takes its year


@dataclass
class JournalSpan:
    """What a journalctl header states: the first and last entry's times (`end` None under `-f`), in its zone."""

    begin: pd.Timestamp  # without a zone: as printed, in `zone`
    end: pd.Timestamp | None
    zone: str
    line: int
    host: str | None = None  # the `host: ` that leads it (pdsh): the header of that host's lines only
    last: pd.Timestamp | None = None  # the date read last under it
    printed: bool = False  # a `date` line stated it (the year up to it), not a journalctl header
    # nothing in the log states it: the year up to the time it was taken by, and whence that time (`taken_by`)
    assumed: str | None = None

    @classmethod
    def read(cls, text: str, number: int) -> JournalSpan | None:
        """The header a line is, or None."""
        if not (found := _SPAN.match(text.strip())) or not (begin := _DISPLAY.match(found["begin"].strip())):
            return None
        end = _DISPLAY.match(found["end"].strip()) if found["end"] else None
        first, last = parse_time(begin["ts"]), parse_time(end["ts"]) if end else None
        if first is None or (found["end"] and last is None):
            return None
        return cls(first, last, begin["zone"], number, found["host"])

    @classmethod
    def dated(cls, text: str, number: int) -> JournalSpan | None:
        """A `date` line above a syslog log (`date; grep kernel /var/log/syslog`, pdsh's `host: ` before it): its
        yearless dates lie in the year up to it, in the zone it printed (the system's, as syslog's); None where the
        line is no `date`."""
        host = _FANNED.match(text)
        printed = printed_date(text[host.end():] if host else text)
        if printed is None:
            return None
        at, zone = printed
        return cls(at - pd.DateOffset(years=1), at, zone or "UTC", number, host["host"] if host else None,
                   printed=True)

    @classmethod
    def taken_by(cls, until: datetime | None) -> JournalSpan:
        """No header and no `date` above a syslog log: its dates lie in the year up to `until` (UTC; None: now), the
        time it was taken by at the latest, so that a day-old Xid is a day old, not read as new."""
        end = pd.Timestamp.now(tz="UTC") if until is None else pd.Timestamp(until)
        end = end.tz_convert("UTC").tz_localize(None) if end.tzinfo is not None else end
        # now's clock is not said: the same file read twice says the same
        whence = "now (no time was given" if until is None else f"{end:%Y-%m-%d %H:%M:%S} UTC (the time given"
        return cls(end - pd.DateOffset(years=1), end, "UTC", 0, printed=True, assumed=whence)

    @property
    def said(self) -> str:
        """Which year a yearless date is read in, as a note says it."""
        if self.assumed:
            return (f"the latest year that puts them no later than {self.assumed}, taken as the time the log was "
                    "taken; the dates read as UTC); to state the year, give the time the log was taken (`ingest --at "
                    "TIME`, `analyze FILE --end TIME`) or print a `date` line above it (`date; journalctl -k`)")
        if self.printed:
            return f"the year up to the `date` at line {self.line} ({self.end:%Y-%m-%d %H:%M:%S} {self.zone})"
        until = f" to {self.end:%Y-%m-%d %H:%M:%S}" if self.end is not None else " on"
        return (f"the year the journalctl header at line {self.line} ({self.begin:%Y-%m-%d %H:%M:%S}{until} "
                f"{self.zone}) gives")

    def date(self, text: str, out: Collector, number: int) -> pd.Timestamp | None:
        """A yearless syslog date (`Mar 12 10:00:01`) under this header, in UTC; None (said) where none fits."""
        found = _SYSLOG_DATE.match(text)
        month = month_number(found["month"]) if found else None
        top = self.end if self.end is not None else self.begin + pd.DateOffset(years=1)
        fits: list[pd.Timestamp] = []
        if found and month is not None:
            for year in range(self.begin.year - 1, top.year + 2):
                at = parse_time(f"{year:04d}-{month:02d}-{int(found['day']):02d} {found['clock']}")
                if at is not None and self.begin - _SLACK <= at <= top + _SLACK:
                    fits.append(at)
        if not fits:
            out.once(f"journal-outside {self.line}", number, f"the date {text!r} lies in no year that fits: "
                     f"{self.said}; the event has no time (said once)")
            return None
        last = self.last
        chosen = self.last = max(fits) if last is None else min(fits, key=lambda at: abs(at - last))
        several = not self.printed and top - self.begin > pd.Timedelta(days=365)
        out.once(f"journal-year {self.line}", number, f"syslog dates carry no year: read in {self.said}"
                 + (" (its journal spans more than a year: the latest year that fits the first date, then the one "
                    "nearest the date before)" if several else ""))
        return to_utc(chosen, self.zone, out, number)
