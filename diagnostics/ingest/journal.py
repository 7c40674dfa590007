"""journalctl's prefixes that state a date and year other than ISO's: `-o short-full` (`Tue 2024-03-12 10:00:00 UTC
host kernel:`, systemd.time(7)'s display form: weekday, date, time and the zone it was printed in) and `-o short-unix`
(`1710237600.123456 host kernel:`, seconds since the epoch). Both give an event its time, where a yearless syslog
date cannot."""

from __future__ import annotations

import re
import zoneinfo

import pandas as pd

from .textlines import Collector, parse_time

_HOST = r"(?P<host>[^\s\[\]:]+)\s+(?=kernel[:\[])"
# the zone is always printed (UTC, an abbreviation, an IANA name): a zone-less date's next word is the host
_FULL = re.compile(r"^(?:[A-Z][a-z]{2} )?(?P<ts>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)?) "
                   r"(?P<zone>UTC|GMT|[A-Z]{2,5}|[A-Z][A-Za-z_]+/[A-Za-z_/+-]+|[+-]\d{2}:?\d{2})\s+" + _HOST)
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
    zone = match["zone"]
    if zone in ("UTC", "GMT") or zone[0] in "+-":
        offset = pd.Timedelta(0) if zone[0] not in "+-" else (
            (1 if zone[0] == "+" else -1) * pd.Timedelta(hours=int(zone[1:3]), minutes=int(zone[-2:])))
        return match, (stamp - offset).tz_localize("UTC")
    try:
        local = stamp.tz_localize(zoneinfo.ZoneInfo(zone), ambiguous="NaT", nonexistent="NaT")
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):  # a summer abbreviation (CEST, PDT) names no zone
        local = pd.NaT
    if isinstance(local, pd.Timestamp):
        return match, local.tz_convert("UTC")
    out.once("journal-zone", number, f"the zone {zone!r} is no time zone this reader can look up (or the hour is "
                                     "one its clock change skips or repeats); its times are read as UTC")
    return match, stamp.tz_localize("UTC")
