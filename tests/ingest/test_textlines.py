"""What every text reader shares: here, a job capture's banner (srt-slurm's hwinfo), which names the node the
capture ran on and when, and its section headings."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd
import pytest

from diagnostics.ingest.base import Source
from diagnostics.ingest.nvlink import READER
from diagnostics.ingest.textlines import Collector, Line, looks_dated, stated_time
from diagnostics.store import read_sources
from tests.ingest.helpers import REAL, read, read_text

CAPTURE = REAL / "nvlink_e_gb300_hwinfo_1.txt"
BANNER = "===== node01 | {phase} | {at} =====\n"
READING = ("GPU 0: NVIDIA GB300\n\t Link 0: Replay Errors: {n}\n\t Link 0: Recovery Errors: 0\n"
           "\t Link 0: CRC Errors: 0\n")


def test_the_banner_names_the_node_and_the_time_of_the_readings_under_it() -> None:
    """srt-slurm #307's capture: its readings are node01's at 07:53:30, said; the section heading is no line unread."""
    result = read(CAPTURE)
    links = result["link_samples"]
    assert links["node_id"].astype(str).tolist() == ["node01"]
    assert links["timestamp"].tolist() == [pd.Timestamp("2026-08-13 07:53:30", tz="UTC")]
    said = result.warnings[0]
    assert said.line == 3 and "capture banner (before)" in said.message and "node 'node01'" in said.message
    assert not any(w.line == 5 for w in result.warnings)  # `# ---------- NVLink ----------`


def test_a_node_given_wins_over_the_banner_and_is_said() -> None:
    result = READER.read(Source.from_path(CAPTURE), node_id="n1")
    links = result["link_samples"]
    assert links["node_id"].astype(str).tolist() == ["n1"]
    assert links["timestamp"].notna().all()
    assert "node 'n1' is kept, not the banner's 'node01'" in result.warnings[0].message


def test_a_time_given_wins_over_the_banner_but_not_over_a_date_line() -> None:
    """`ingest --at`: the command's time replaces the banner's; a `date` line under the banner is the reading's own."""
    text = (BANNER.format(phase="before", at="2026-08-13T07:53:30Z") + READING.format(n=0)
            + "2026-08-13T08:10:00Z\n" + READING.format(n=3))
    given = datetime(2026, 9, 1, tzinfo=UTC)
    [outcome] = read_sources([Source.from_text(text, name="capture.txt")], at=given)
    assert outcome.result is not None
    times = outcome.result["link_samples"]["timestamp"].tolist()
    assert times == [pd.Timestamp(given), pd.Timestamp("2026-08-13 08:10:00", tz="UTC")]


def test_before_and_after_banners_give_two_readings_at_their_times() -> None:
    """A capture before the job and one after it, in one file: two readings of node01, a rate between them."""
    text = (BANNER.format(phase="before", at="2026-08-13T07:53:30Z") + READING.format(n=0)
            + BANNER.format(phase="after", at="2026-08-13T09:53:30Z") + READING.format(n=40))
    links = read_text(text)["link_samples"]
    assert links["replay"].tolist() == [0, 40]
    assert [f"{t:%H:%M}" for t in links["timestamp"]] == ["07:53", "09:53"]
    assert set(links["node_id"].astype(str)) == {"node01"}


def test_in_a_paste_of_several_outputs_the_banner_is_each_ones_node_and_time() -> None:
    """The capture's banner, then `nvidia-smi nvlink -e` and `dmesg` (two readers): both outputs are node01's, and the
    counters (which state no time) were read at the banner's time."""
    text = (BANNER.format(phase="after", at="2026-08-13T09:53:30Z") + "\n# ---------- NVLink ----------\n\n"
            "$ nvidia-smi nvlink -e\n" + READING.format(n=4) + "\n$ dmesg\n[ 1234.567890] NVRM: Xid (PCI:0000:18:00): "
            "74, pid=1, name=python, NVLink: fatal error detected on link 5(0x0, 0x0, 0x10000)\n")
    result = read_text(text)
    assert set(result["link_samples"]["node_id"].astype(str)) | set(result["events"]["node_id"].astype(str)) == {
        "node01"}
    assert result["link_samples"]["timestamp"].tolist() == [pd.Timestamp("2026-08-13 09:53:30", tz="UTC")]
    assert [w.line for w in result.warnings if "capture banner (after)" in w.message] == [1]


@pytest.mark.parametrize(("line", "utc"), [
    ("Wed May 13 11:00:00 UTC 2026", "2026-05-13 11:00"),  # the C locale: `%a %b %e %H:%M:%S %Z %Y`
    ("Wed May  3 11:00:00 UTC 2026", "2026-05-03 11:00"),  # `%e`: a day padded with a space
    ("Wed May 13 11:00:00 AM UTC 2026", "2026-05-13 11:00"),  # en_US: `%a %b %e %r %Z %Y`
    ("Wed May 13 12:30:00 AM UTC 2026", "2026-05-13 00:30"),  # 12 AM is midnight
    ("Wed 13 May 2026 01:30:00 PM UTC", "2026-05-13 13:30"),  # en_US before 2019: `%a %d %b %Y %r %Z`
    ("Wed 13 May 2026 11:00:00 UTC", "2026-05-13 11:00"),  # en_GB's `%a %d %b %Y %T %Z`
    ("Wed 13 May 11:00:00 UTC 2026", "2026-05-13 11:00"),  # en_GB's `%a %e %b %H:%M:%S %Z %Y`
    ("Wed May 13 11:00:00 CEST 2026", "2026-05-13 09:00"),
    ("Wed May 13 11:00:00 PDT 2026", "2026-05-13 18:00"),
    ("Wed May 13 11:00:00 +03 2026", "2026-05-13 08:00"),  # a zone with no abbreviation
    ("Wed, 13 May 2026 11:00:00 +0200", "2026-05-13 09:00"),  # `date -R`
])
def test_date_lines_in_each_locale_form_state_their_utc_time(line: str, utc: str) -> None:
    found = stated_time(line)
    assert found is not None and found.zoned and found.refused is None
    assert found.at == pd.Timestamp(utc, tz="UTC")


@pytest.mark.parametrize(("line", "value"), [
    ("Wed May 13 11:00:00 IST 2026", "the zone 'IST' stands for several zones"),
    ("Wed May 13 11:00:00 XYZT 2026", "the zone 'XYZT' is no time zone"),
])
def test_a_date_line_whose_zone_is_not_known_is_read_as_utc_and_said_at_its_line(line: str, value: str) -> None:
    out = Collector(Source.from_text("", "paste.txt"), "nvidia-smi nvlink")
    assert out.take_time(Line(7, line, "text"))
    assert out.timestamp == pd.Timestamp("2026-05-13 11:00", tz="UTC")
    [warning] = out.warnings
    assert warning.line == 7 and warning.message.startswith(f"{line!r}: {value}")


@pytest.mark.parametrize("line", ["Mi 13. Mai 11:00:00 CEST 2026", "mer. 13 mai 2026 11:00:00 CEST",
                                  "2026-05-13T25:00:00Z", "Wed May 13 25:00:00 UTC 2026"])
def test_a_line_that_looks_like_a_date_but_is_not_read_is_said_not_taken(line: str) -> None:
    out = Collector(Source.from_text("", "paste.txt"), "nvidia-smi nvlink")
    assert stated_time(line) is None and out.take_time(Line(4, line, "text"))
    assert out.timestamp is None and out.unread_times == [4]
    [warning] = out.warnings
    assert warning.line == 4 and line[:20] in warning.message and "looks like a `date` line" in warning.message


@pytest.mark.parametrize("line", ["Link 0: CRC Errors: 2805", "step 100 loss 2 time 11:00:00 2026 x y",
                                  "GPU 0: Tesla V100-SXM2-32GB-LS (UUID: GPU-0)"])
def test_other_lines_are_not_taken_for_dates(line: str) -> None:
    assert not looks_dated(line)
