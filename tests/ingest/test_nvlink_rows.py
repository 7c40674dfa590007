"""`nvidia-smi nvlink -e` readings pasted one after another keep their own counters (and times); the short form of
a public board test (`Links 0-2, 4-5: Replay/Recovery/CRC Errors: 0`) is read link by link, nothing in it cut off."""

from __future__ import annotations

import pandas as pd
import pytest

from diagnostics.ingest.base import IngestResult
from tests.ingest.helpers import REAL, links_per_gpu, read, read_text, warning_lines

COUNTERS = ["replay", "recovery", "crc_flit"]
V100 = "GPU 0: Tesla V100-SXM2-32GB-LS (UUID: GPU-5261e3df-82f6-67b4-9953-4e63527e0e9d)\n"


def _readings(result: IngestResult, gpu: int, link: int) -> list[tuple[str | None, list[float | None], int]]:
    """Each reading of one link: (its time, its replay, recovery and CRC counts, the line its row starts at)."""
    rows = result["link_samples"]
    rows = rows[(rows["gpu"] == gpu) & (rows["link"] == link)]
    return [(None if pd.isna(r["timestamp"]) else f"{r['timestamp']:%H:%M}",
             [None if pd.isna(r[c]) else float(r[c]) for c in COUNTERS], int(r["source"].rsplit(":", 1)[1]))
            for _, r in rows.iterrows()]


def _per_time(result: IngestResult) -> dict[str | None, dict[int, list[int]]]:
    rows = result["link_samples"]
    return {None if pd.isna(t) else f"{t:%H:%M}": links_per_gpu(rows[rows["timestamp"] == t] if not pd.isna(t)
                                                                 else rows[rows["timestamp"].isna()])
            for t in rows["timestamp"].unique()}


def test_two_dated_readings_each_keep_their_own_counters() -> None:
    """Test 2 of the board write-up, a `date` before each reading: GPU 2 link 0's 2 replays are the 11:30
    reading's (its line 18), never the 11:00 one's; the 11:00 reading lists no replay there, so it had none."""
    result = read(REAL / "nvlink_e_v100_short_form_dated_2.txt")
    assert _readings(result, 2, 0) == [("11:00", [0, 0, 2805], 9), ("11:30", [2, 0, 45068], 18)]
    assert _readings(result, 0, 3) == [("11:00", [0, 0, 0], 6), ("11:30", [104, 0, 0], 14)]
    assert _readings(result, 2, 5) == [("11:00", [0, 0, 0], 10), ("11:30", [0, 0, 0], 20)]
    every = {0: list(range(6)), 2: list(range(6))}
    assert _per_time(result) == {"11:00": every, "11:30": every}
    assert result.warnings == []


def test_two_undated_readings_stay_two() -> None:
    """The same readings as the write-up gives them, each after its command and no time: two rows a link."""
    result = read(REAL / "nvlink_e_v100_short_form_2.txt")
    assert _readings(result, 2, 0) == [(None, [0, 0, 2805], 8), (None, [2, 0, 45068], 16)]
    assert _readings(result, 0, 3) == [(None, [0, 0, 0], 5), (None, [104, 0, 0], 12)]
    assert len(result["link_samples"]) == 24 and result["link_samples"]["timestamp"].isna().all()
    [said] = result.warnings  # the analysis keeps the last of each link: the paste says what the earlier ones held
    assert said.line == 12 and said.message.startswith("2 readings of the same links (from lines 5, 12) state no time")
    assert "only the last of each link is judged, as a total" in said.message
    assert "GPU 2 link 0 CRC flit errors rose: 2,805 to 45,068" in said.message
    assert "GPU 0 link 3 replays rose: 0 to 104" in said.message
    assert "put a `date` line before each reading" in said.message


def test_three_undated_readings_compare_each_with_the_next_of_the_same_gpu() -> None:
    """Test 1 then Test 2's two readings, no time: the GPUs were replaced between the first and the second (other
    UUIDs), so only the second and third are compared."""
    first = (REAL / "nvlink_e_v100_short_form_1.txt").read_text().splitlines()
    second = (REAL / "nvlink_e_v100_short_form_2.txt").read_text().splitlines()
    result = read_text("\n".join([*first[2:], *second[2:]]))
    [said] = [w for w in result.warnings if "readings of the same links" in w.message]
    assert said.message.startswith("3 readings of the same links")
    assert "GPU 2 link 0 CRC flit errors rose from reading 2 to 3: 2,805 to 45,068" in said.message
    assert "GPU 0 is another GPU (UUID) from reading 2 on: not compared" in said.message
    assert "2,353" not in said.message


def test_one_short_form_reading_every_link_read() -> None:
    """Test 1 after the stress test: the links a `Links` line names are read too, a listed link's unlisted
    counters are 0, and the 65535 CRC count is flagged saturated."""
    result = read(REAL / "nvlink_e_v100_short_form_1.txt")
    links = result["link_samples"]
    assert links_per_gpu(links) == {0: list(range(6)), 2: list(range(6))}
    assert _readings(result, 0, 3) == [(None, [2353, 0, 0], 4)]
    assert _readings(result, 2, 0) == [(None, [148, 0, 65535], 8)]
    assert _readings(result, 0, 4) == [(None, [0, 0, 0], 5)]
    assert links.loc[links["saturated"], ["gpu", "link"]].values.tolist() == [[2, 0]]
    assert result.warnings == []


def test_no_errors_and_crc_only_forms() -> None:
    """`Links 1-5: No errors` covers the three -e counters; `Links 1-5: CRC Errors: 0` only CRC: the replays and
    recoveries of that reading are unknown, and not cut off."""
    result = read(REAL / "nvlink_e_v100_no_errors_forms_1.txt")
    assert _readings(result, 2, 0) == [("10:00", [0, 0, 8814], 8), ("10:30", [None, None, 65535], 15)]
    assert _readings(result, 0, 0) == [("10:00", [0, 0, 0], 5), ("10:30", [None, None, 0], 12)]
    assert _readings(result, 2, 3) == [("10:00", [0, 0, 0], 9), ("10:30", [None, None, 0], 16)]
    every = {0: list(range(6)), 2: list(range(6))}
    assert _per_time(result) == {"10:00": every, "10:30": every}
    assert result.warnings == []


@pytest.mark.parametrize(("line", "links", "counts"), [
    ("Links 0-2, 4-5: Replay/Recovery/CRC Errors: 0", [0, 1, 2, 4, 5], [0, 0, 0]),
    ("Links 1,3: CRC Errors: 7", [1, 3], [None, None, 7]),
    ("Links 0 - 1: Replay Errors/CRC Errors: 2", [0, 1], [2, None, 2]),
    ("Links 0-17: No errors", list(range(18)), [0, 0, 0]),
])
def test_links_lines(line: str, links: list[int], counts: list[float | None]) -> None:
    result = read_text(V100 + f"         {line}\n")
    assert links_per_gpu(result["link_samples"]) == {0: links}
    assert [_readings(result, 0, link) for link in links] == [[(None, counts, 2)]] * len(links)
    assert result.warnings == []


def test_a_links_line_that_cannot_be_read_is_said() -> None:
    result = read_text(V100 + "         Links 0-1: Replay/Frobnication Errors: 0\n         Links 5-3: CRC Errors: 0\n"
                              "         Links 2-3: CRC Errors:\n", fmt="nvlink")
    assert links_per_gpu(result["link_samples"]) == {0: [0, 1]}
    assert _readings(result, 0, 0) == [(None, [0, None, None], 2)]
    assert warning_lines(result) == [2, 3, 4]
    assert "'Frobnication Errors' is not in nvlink_counters.toml" in result.warnings[0].message
    assert "the range 5-3 runs backwards" in result.warnings[1].message
    assert "cut off" in result.warnings[2].message


FULL = """GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-1)
         Link 0: Replay Errors: {replay}
         Link 0: Recovery Errors: 1
         Link 0: CRC Errors: 9
         Link 1: Replay Errors: 2
         Link 1: Recovery Errors: 0
"""


def test_a_cut_reading_is_said_even_when_a_later_one_is_whole() -> None:
    """The full form states every counter of a link: the first reading's link 1 lacks its CRC line (cut), the
    second's is whole; each reading is checked, and the first's CRC stays unknown."""
    text = ("2026-11-29T16:00:00Z\n" + FULL.format(replay=4) + "2026-11-29T16:21:00Z\n" + FULL.format(replay=7)
            + "         Link 1: CRC Errors: 0\n")
    result = read_text(text)
    assert _readings(result, 1, 1) == [("16:00", [2, 0, None], 6), ("16:21", [2, 0, 0], 13)]
    assert warning_lines(result) == [7]
    assert "GPU 1 link 1: no crc_flit after this line" in result.warnings[0].message


@pytest.mark.parametrize(("value", "said"), [("-3", "never negative"), ("1x2", "not a number"), ("N/A", None)])
def test_a_counter_line_not_read_is_no_cut(value: str, said: str | None) -> None:
    """Link 1's CRC line is there with a value not read (refused and said, or N/A): the output is not cut before
    it, so only the value is said, never 'cut off'."""
    result = read_text(FULL.format(replay=4) + f"         Link 1: CRC Errors: {value}\n", fmt="nvlink")
    assert _readings(result, 1, 1) == [(None, [2, 0, None], 5)]
    assert not any("cut off" in w.message for w in result.warnings)
    assert [w.line for w in result.warnings] == ([7] if said else [])
    assert said is None or said in result.warnings[0].message
