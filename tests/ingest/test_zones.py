"""One zone table for `date` lines and journalctl: abbreviations, offsets and IANA names; an ambiguous one refused."""

from __future__ import annotations

import pandas as pd
import pytest

from diagnostics.ingest.zones import in_utc, offset

_AT = pd.Timestamp("2026-05-13 11:00:00")


@pytest.mark.parametrize(("zone", "utc"), [
    ("UTC", "11:00"), ("CEST", "09:00"), ("CET", "10:00"), ("PDT", "18:00"), ("JST", "02:00"), ("+03", "08:00"),
    ("+0530", "05:30"), ("-07:00", "18:00"), ("Europe/Berlin", "09:00"), ("America/Los_Angeles", "18:00"),
])
def test_a_zone_as_printed_gives_the_utc_time(zone: str, utc: str) -> None:
    assert in_utc(_AT, zone) == pd.Timestamp(f"2026-05-13 {utc}", tz="UTC")


@pytest.mark.parametrize(("zone", "why"), [
    ("IST", "stands for several zones (UTC+01:00, UTC+02:00, UTC+05:30)"),  # Ireland, Israel, India
    ("PST", "stands for several zones (UTC-08:00, UTC+08:00)"),  # the US Pacific, the Philippines
    ("XYZT", "is no time zone this reader can look up"), ("+25", "is no offset from UTC a zone has"),
    ("Mars/Olympus", "is no time zone this reader can look up"),
])
def test_a_zone_that_names_no_one_offset_is_refused_with_why(zone: str, why: str) -> None:
    found = in_utc(_AT, zone)
    assert isinstance(found, str) and found.startswith(why)


def test_offsets_beyond_any_zone_are_none() -> None:
    assert offset("+14:00") == pd.Timedelta(hours=14) and offset("+15") is None and offset("+05:60") is None
