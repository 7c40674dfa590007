"""The zone a printed time states, as `date` and journalctl print it: one table and one rule for every reader.

`date` prints the zone's abbreviation (`%Z`: `UTC`, `CEST`, `PDT`), or a numeric offset (`+03`) for a zone that has
none; journalctl's `-o short-full` prints the same, or an IANA name. The abbreviations and their offsets are data
(`data/zones.toml`, from the tz database); one that stands for several offsets (`IST`, `CST`) is never guessed.
"""

from __future__ import annotations

import re
import zoneinfo
from functools import cache

import pandas as pd

from ..config.datafiles import DATA_DIR, read_toml

ZONES_FILE = DATA_DIR / "zones.toml"
# a zone as printed, for a reader's pattern: an abbreviation (`UTC`, `CEST`, `ChST`), an IANA name or an offset
# (`+03`, `+0530`, `-07:00`)
PRINTED = r"[A-Z][A-Za-z]{1,5}|[A-Z][A-Za-z_]+/[A-Za-z_/+-]+|[+-]\d{2}(?::?\d{2})?"
_OFFSET = re.compile(r"^(?P<sign>[+-])(?P<hours>\d{2})(?::?(?P<minutes>\d{2}))?$")
_LATEST = pd.Timedelta(hours=14)  # the farthest a zone's offset lies from UTC (Kiribati, +14:00)


@cache
def _table() -> tuple[dict[str, pd.Timedelta], dict[str, tuple[str, ...]]]:
    data = read_toml(ZONES_FILE, "time zone table")
    offsets = {name: offset(text) for name, text in data["offsets"].items()}
    if None in offsets.values():
        raise ValueError(f"{ZONES_FILE.name}: an offset is not written as +HH:MM")
    return {k: v for k, v in offsets.items() if v is not None}, {k: tuple(v) for k, v in data["ambiguous"].items()}


def offset(text: str) -> pd.Timedelta | None:
    """A numeric offset (`+02:00`, `+0530`, `-07`), or None when it is none a zone has."""
    found = _OFFSET.match(text)
    if not found or int(found["minutes"] or 0) >= 60:
        return None
    size = pd.Timedelta(hours=int(found["hours"]), minutes=int(found["minutes"] or 0))
    return None if size > _LATEST else size if found["sign"] == "+" else -size


def in_utc(stamp: pd.Timestamp, zone: str) -> pd.Timestamp | str:
    """`stamp` (no zone: as printed) read in `zone`, in UTC; or why it cannot be, as a phrase after the zone's name
    (`the zone 'IST' <phrase>`)."""
    offsets, ambiguous = _table()
    if zone in offsets or zone[0] in "+-":
        shift = offsets.get(zone, offset(zone))
        if shift is None:
            return "is no offset from UTC a zone has"
        return (stamp - shift).tz_localize("UTC")
    if zone in ambiguous:
        return f"stands for several zones ({', '.join('UTC' + o for o in ambiguous[zone])}), so none is taken"
    if "/" not in zone:
        return f"is no time zone this reader can look up (not in {ZONES_FILE.name})"
    try:
        local = stamp.tz_localize(zoneinfo.ZoneInfo(zone), ambiguous="NaT", nonexistent="NaT")
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return "is no time zone this reader can look up"
    if not isinstance(local, pd.Timestamp):
        return "is one whose clock change skips or repeats this hour"
    return local.tz_convert("UTC")
