"""Readings of one node whose order, time or card is not what their dates say: a clock that stepped back, two
readings of one time, a GPU replaced between readings. The file itself (`analyze FILE`) and the store it was
ingested into reading by reading (`ingest` + `analyze --store --node`) give the same rates, verdict and words."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main
from tests.shared import answered_exit

NODE = "gpu-07"
PLATFORM = ("--platform", "hgx-h100-8gpu", "--window", "4h")


def reading(date: str, crc: int, replays: int, card: str = "3333") -> str:
    """`date; nvidia-smi nvlink -e` of an 8-GPU H100 whose GPU 3 link 7 carries the errors; `card`: GPU 3's UUID
    tail."""
    out = [date, "$ nvidia-smi nvlink -e"]
    for g in range(8):
        out.append(f"GPU {g}: NVIDIA H100 80GB HBM3 (UUID: GPU-0000000{g}-aaaa-bbbb-cccc-00000000"
                   f"{card if g == 3 else f'000{g}'})")
        for link in range(18):
            c, r = (crc, replays) if (g, link) == (3, 7) else (0, 0)
            out += [f"         Link {link}: Replay Errors: {r}", f"         Link {link}: Recovery Errors: 0",
                    f"         Link {link}: CRC Errors: {c}"]
    return "\n".join(out) + "\n"


def both_doors(tmp: Path, capsys: pytest.CaptureFixture[str],
               readings: list[str]) -> list[tuple[dict[str, Any], str]]:
    """The JSON and the text answer of the readings pasted in one file (in the order they were taken), then of the
    same readings ingested one by one into a store."""

    def answers(*source: str) -> tuple[dict[str, Any], str]:
        said = []
        for extra in (["--json"], []):
            capsys.readouterr()
            code = main(["analyze", *source, "--node", NODE, *PLATFORM, *extra])
            out = capsys.readouterr().out
            assert code == answered_exit(out), out
            said.append(out)
        return json.loads(said[0]), said[1]

    paste = tmp / "readings.txt"
    paste.write_text("".join(readings), encoding="utf-8")
    direct = answers(str(paste))
    for i, text in enumerate(readings):
        one = tmp / f"reading-{i}.txt"
        one.write_text(text, encoding="utf-8")
        assert main(["ingest", str(one), "--store", str(tmp / "store"), "--node", NODE]) == 0
    return [direct, answers("--store", str(tmp / "store"))]


def link_rates(answer: dict[str, Any]) -> dict[str, float]:
    return next(f["rates_per_hour"] for f in answer["findings"] if f["gpu"] == 3 and f["link"] == 7)


def test_a_reading_dated_before_the_one_taken_before_it_is_left_out_not_counted_again(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """06:30 (1,000 CRC), 07:30 (2,000), then a reading taken later but dated 07:00 (2,500): sorted by date, 2,500 to
    2,000 would read as a counter restart and count the 2,000 again (3,500/h, a drain). The 07:00 reading lies
    above its later neighbour while its neighbours agree: it is left out, the rate is 1,000/h, and it is said."""
    answers = both_doors(tmp_path, capsys, [reading("Sun Mar  8 06:30:00 UTC 2026", 1000, 100),
                                            reading("Sun Mar  8 07:30:00 UTC 2026", 2000, 1100),
                                            reading("Sun Mar  8 07:00:00 UTC 2026", 2500, 1600)])
    for answer, text in answers:
        assert link_rates(answer)["crc"] == pytest.approx(1000)
        assert link_rates(answer)["replay"] == pytest.approx(1000)
        assert answer["fault_detected"] is False
        assert "the reading dated 2026-03-08 07:00 UTC holds counts above the one dated 2026-03-08 07:30 UTC" in text
        assert "clock stepped back" in text
    assert answers[0][0]["warnings"] == answers[1][0]["warnings"]


def test_a_counter_restart_is_still_a_restart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """1,000 then 2,000 CRC, a driver reload (5), then 40: the reading before the drop lies above both its
    neighbours, so it is no reading out of order; the counts after the restart count from zero, and the text answer
    says the restart (a link that only warns shows no evidence there)."""
    answers = both_doors(tmp_path, capsys, [reading("Sun Mar  8 06:30:00 UTC 2026", 1000, 100),
                                            reading("Sun Mar  8 07:30:00 UTC 2026", 2000, 1100),
                                            reading("Sun Mar  8 08:30:00 UTC 2026", 5, 5),
                                            reading("Sun Mar  8 09:30:00 UTC 2026", 40, 40)])
    for answer, text in answers:
        assert link_rates(answer)["crc"] == pytest.approx((1000 + 5 + 35) / 3)
        assert "clock stepped back" not in text
        assert "the counters of GPU 3 NVLink 7 restarted from zero inside the window" in text
    assert link_rates(answers[0][0]) == link_rates(answers[1][0])


def test_a_replaced_gpu_is_rated_from_its_first_reading_not_across_the_swap(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """GPU 3 reads 1,000 CRC errors at 06:30; at 07:30 GPU 3 is another card (another UUID) reading 3,000 of its
    own: no rate is taken across the two cards (it would read as 2,000/h, a drain), the swap is said, and no header
    is called damaged."""
    answers = both_doors(tmp_path, capsys, [reading("Sun Mar  8 06:30:00 UTC 2026", 1000, 100),
                                            reading("Sun Mar  8 07:30:00 UTC 2026", 3000, 2100, card="9999")])
    for answer, text in answers:
        assert "crc" not in link_rates(answer)
        assert answer["fault_detected"] is False
        assert ("GPU 3 is another card from 2026-03-08 07:30 UTC (UUID GPU-00000003-aaaa-bbbb-cccc-000000003333 -> "
                "GPU-00000003-aaaa-bbbb-cccc-000000009999): its counters are rated from then") in text
        assert "damaged" not in text
    assert answers[0][0]["warnings"] == answers[1][0]["warnings"]


@pytest.mark.parametrize("last", ["conflict", "first"])
def test_two_readings_of_one_time_keep_the_last_taken_in_through_each_door(
        last: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two readings dated 07:30 (2,000 and 5,000 CRC errors), pasted one after the other or ingested one after the
    other: the file keeps the last pasted and warns; the store kept whichever its part names sorted last, silently.
    Both keep the last taken in, whichever order that is, and both say it."""
    first, conflict = (reading("Sun Mar  8 07:30:00 UTC 2026", 2000, 1100),
                       reading("Sun Mar  8 07:30:00 UTC 2026", 5000, 3000))
    pair = [first, conflict] if last == "conflict" else [conflict, first]
    answers = both_doors(tmp_path, capsys, [reading("Sun Mar  8 06:30:00 UTC 2026", 1000, 100), *pair])
    crc = 4000 if last == "conflict" else 1000
    for answer, text in answers:
        assert link_rates(answer)["crc"] == pytest.approx(crc)
        assert "2 readings of the same links" in text and "share one time (2026-03-08 07:30 UTC" in text
        assert "GPU 3 link 7 CRC flit errors" in text
    assert answers[0][0]["fault_detected"] == answers[1][0]["fault_detected"]
