"""journalctl's own forms: the header whose span gives the yearless `-o short` dates under it their year (and zone),
and `-o short-monotonic`/`short-delta`, whose host follows dmesg's seconds since boot."""

from __future__ import annotations

import pandas as pd
import pytest

from diagnostics.ingest.base import IngestResult, Source
from diagnostics.ingest.kernel_log import READER
from tests.ingest.helpers import read_text

XID = "NVRM: Xid (PCI:0000:18:00): 74, pid=1234, name=python, NVLink: fatal error detected on link 5(0x0, 0x0, 0x10000)"
NEW_YEAR = "-- Logs begin at Mon 2024-12-30 22:00:00 UTC, end at Thu 2025-01-02 09:00:00 UTC. --"


def _times(result: IngestResult) -> list[str | None]:
    return [None if pd.isna(t) else f"{t:%Y-%m-%d %H:%M:%S}" for t in result["events"]["timestamp"]]


def _log(header: str, *dates: str, host: str = "gpu-node-07") -> str:
    return "\n".join([header, *(f"{date} {host} kernel: {XID}" for date in dates)]) + "\n"


@pytest.mark.parametrize("reverse", [False, True])
def test_the_header_gives_each_yearless_date_its_year_across_new_year(reverse: bool) -> None:
    """`journalctl -k` (and `-r`, newest first) over New Year: each date takes the year that puts it in the span."""
    dates = ["Dec 31 23:59:58", "Jan  1 00:00:03"]
    result = read_text(_log(NEW_YEAR, *(dates[::-1] if reverse else dates)))
    expected = ["2024-12-31 23:59:58", "2025-01-01 00:00:03"]
    assert _times(result) == (expected[::-1] if reverse else expected)
    [said] = result.warnings  # the header is no line 'skipped': it was read
    assert said.line == 2 and "the year the journalctl header at line 1" in said.message


def test_the_header_zone_is_the_zone_of_the_dates_under_it() -> None:
    """journalctl prints the header and the entries in one zone (the host's, or UTC under --utc); newer systemd
    words the header `Journal begins at`."""
    header = "-- Journal begins at Tue 2024-03-12 09:58:11 CET, ends at Wed 2024-03-13 10:10:02 CET. --"
    result = read_text(_log(header, "Mar 12 11:00:00"))
    assert _times(result) == ["2024-03-12 10:00:00"]


def test_a_journal_of_several_years_takes_the_latest_year_that_fits_then_the_nearest() -> None:
    header = "-- Logs begin at Sun 2022-05-01 00:00:00 UTC, end at Wed 2024-03-13 10:10:02 UTC. --"
    result = read_text(_log(header, "Dec 31 23:00:00", "Mar 12 10:00:00"))
    assert _times(result) == ["2023-12-31 23:00:00", "2024-03-12 10:00:00"]
    assert "spans more than a year" in result.warnings[0].message


def test_a_date_outside_the_span_and_the_follow_header() -> None:
    """A date no year puts in the span has no time (said); `-f` prints the beginning only: a year on from it."""
    header = "-- Logs begin at Tue 2024-03-12 09:58:11 UTC, end at Wed 2024-03-13 10:10:02 UTC. --"
    result = read_text(_log(header, "Jun  1 10:00:00"))
    assert _times(result) == [None]
    assert any("'Jun  1 10:00:00' lies in no year that fits: the year the journalctl header at line 1" in w.message
               for w in result.warnings)
    assert _times(read_text(_log("-- Logs begin at Tue 2024-03-12 09:58:11 UTC. --", "Jan 20 10:00:00"))) == [
        "2025-01-20 10:00:00"]


def test_a_date_printed_with_the_log_gives_its_yearless_dates_the_year_up_to_it() -> None:
    """`date; grep kernel /var/log/syslog`: syslog's dates lie in the year up to the `date` (across New Year, a
    December line is the year before), in the zone it printed; the seconds since boot after `kernel:` are no time
    of their own to warn of. A date after the `date` by more than a day lies in the year before."""
    result = read_text(_log("Tue Jan  2 07:54:00 UTC 2024", "Dec 31 23:59:58", "Jan  1 00:00:03", "Mar  5 10:00:00")
                       .replace("kernel: ", "kernel: [6781753.400584] "))
    assert _times(result) == ["2023-12-31 23:59:58", "2024-01-01 00:00:03", "2023-03-05 10:00:00"]
    said = [w.message for w in result.warnings]
    assert any("read in the year up to the `date` at line 1 (2024-01-02 07:54:00 UTC)" in m for m in said), said
    assert not [m for m in said if "seconds since boot" in m], said
    shifted = read_text(_log("Tue Jan  2 07:54:00 +0200 2024", "Jan  1 00:00:03"))
    assert _times(shifted) == ["2023-12-31 22:00:03"]
    assert _times(read_text(_log("Tue Jan  2 07:54:00 UTC 2024", "Jan  5 00:00:00"))) == ["2023-01-05 00:00:00"]
    assert _times(read_text(_log("2024-01-02T07:54:00+01:00", "Jan  1 00:00:03"))) == ["2023-12-31 23:00:03"]  # -Is
    fanned = read_text("\n".join(  # pdsh: each host's `date` dates its own lines
        [f"gpu07: {line}" for line in _log("Tue Jan  2 07:54:00 UTC 2024", "Dec 31 23:59:58", host="gpu07")
         .splitlines()] + [f"gpu08: {line}" for line in _log("Tue Jul  2 07:54:00 UTC 2024", "Jul  1 00:00:03",
                                                              host="gpu08").splitlines()]) + "\n")
    assert _times(fanned) == ["2023-12-31 23:59:58", "2024-07-01 00:00:03"]


def test_each_fanned_out_host_has_its_own_header() -> None:
    """`pdsh -w gpu[01-02] journalctl -k`: each host's header dates its own lines."""
    text = "\n".join([
        "gpu01: -- Logs begin at Sun 2023-03-12 09:00:00 UTC, end at Mon 2023-03-13 10:00:00 UTC. --",
        "gpu02: -- Logs begin at Tue 2024-03-12 09:00:00 UTC, end at Wed 2024-03-13 10:00:00 UTC. --",
        f"gpu01: Mar 12 10:00:00 gpu01 kernel: {XID}",
        f"gpu02: Mar 12 11:00:00 gpu02 kernel: {XID}",
    ]) + "\n"
    result = read_text(text)
    assert _times(result) == ["2023-03-12 10:00:00", "2024-03-12 11:00:00"]
    assert result["events"]["node_id"].astype(str).tolist() == ["gpu01", "gpu02"]


def test_with_no_header_a_yearless_date_lies_in_the_latest_year_not_after_the_time_the_log_was_taken() -> None:
    """No header and no `date`: as log tools read syslog, each date takes the latest year that puts it no later
    than the time given (`until`: ingest's --at, analyze's --end), else now; said once, with how to give it."""
    on_new_year = pd.Timestamp("2025-01-01T00:30:00Z").to_pydatetime()
    result = READER.read(Source.from_text(_log("", "Dec 31 23:59:58", "Jan  1 00:00:03")), until=on_new_year)
    assert _times(result) == ["2024-12-31 23:59:58", "2025-01-01 00:00:03"]
    said = [w for w in result.warnings if "carry no year" in w.message]
    assert len(said) == 1 and said[0].line == 2, result.warnings
    assert "no later than 2025-01-01 00:30:00 UTC (the time given, taken as" in said[0].message
    assert "`ingest --at TIME`" in said[0].message and "`date` line" in said[0].message
    day_later = pd.Timestamp("2025-06-02T10:15:00Z").to_pydatetime()
    assert _times(READER.read(Source.from_text(_log("", "Jun  1 03:02:11")), until=day_later)) == [
        "2025-06-01 03:02:11"]
    now = pd.Timestamp.now(tz="UTC")
    undated = read_text(_log("", "Jan  1 00:00:03"))
    assert _times(undated) == [f"{now.year}-01-01 00:00:03"]
    assert any("no later than now (no time was given" in w.message for w in undated.warnings), undated.warnings


@pytest.mark.parametrize("stamp", ["[ 1234.567890]", "[ 1234.567890 <    0.000123>]"])
def test_short_monotonic_and_delta_name_the_host(stamp: str) -> None:
    """`-o short-monotonic` and `-o short-delta` put the host after the seconds since boot: it is the node, so
    `--node` is not needed; the time is none (seconds since boot)."""
    result = read_text(f"{NEW_YEAR}\n{stamp} gpu-node-07 kernel: {XID}\n")
    events = result["events"]
    assert events["node_id"].astype(str).tolist() == ["gpu-node-07"] and events["link"].tolist() == [5]
    assert _times(result) == [None]
    assert [w.message for w in result.warnings] == [
        "journalctl -o short-monotonic times are seconds since boot; these events have no timestamp"]
