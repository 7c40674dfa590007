"""The board write-up's `nvidia-smi nvlink -e` readings (the short form, two readings a paste) through each door:
`analyze FILE` and `ingest` then `analyze --store --node` give one answer, each reading's counters its own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main
from diagnostics import format as fmt
from tests.conftest import FIXTURES
from tests.shared import answered_exit

REAL = FIXTURES / "real"
AT = "2026-05-13T12:00:00Z"  # when the undated readings were taken, said to both doors


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == (answered_exit(out) if argv[0] == "analyze" else 0), err
    return out


def _doors(capsys: pytest.CaptureFixture[str], store: Path, name: str,
           *dated: str) -> tuple[list[dict[str, Any]], str]:
    """The JSON answers of the file itself and of the store it was ingested into, and the text answer they give
    alike (but for the file's word that its readings carry no time, where it has none: the store was told the
    time at ingest)."""
    path = str(REAL / name)
    end = ["--end", dated[0]] if dated else []
    at = ["--at", dated[0]] if dated else []
    direct = [_run(capsys, "analyze", path, "--node", "v100", *end, *form) for form in (["--json"], [])]
    _run(capsys, "ingest", path, "--store", str(store), "--node", "v100", *at)
    stored = [_run(capsys, "analyze", "--store", str(store), "--node", "v100", *form) for form in (["--json"], [])]
    undated = [line for line in direct[1].splitlines() if "carry no time" in line]
    pasted = [line for line in direct[1].splitlines() if "readings of the same links" in line]  # the reader's word
    assert [line for line in direct[1].splitlines() if line not in undated] == stored[1].splitlines()
    assert len(undated) == bool(dated) and len(pasted) == bool(dated)  # the store says the reader's word too
    return [json.loads(direct[0]), json.loads(stored[0])], stored[1]


def _link(diagnosis: dict[str, Any], gpu: int, link: int) -> dict[str, Any]:
    return next(f for f in diagnosis["findings"] if (f["gpu"], f["link"]) == (gpu, link))


@pytest.mark.parametrize(("name", "rates"), [
    # GPU 2 link 0 from 11:00 to 11:30: replays 0 -> 2, CRC errors 2,805 -> 45,068
    ("nvlink_e_v100_short_form_dated_2.txt", {"replay": 4.0, "recovery": 0.0, "crc": 84526.0}),
    ("nvlink_e_v100_no_errors_forms_1.txt", {"crc": 113442.0}),  # 8,814 -> 65,535 from 10:00 to 10:30
])
def test_dated_readings_give_one_answer_and_their_own_rates(name: str, rates: dict[str, float], tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    answers, _ = _doors(capsys, tmp_path / "store", name)
    for answer in answers:
        found = _link(answer, 2, 0)
        assert {k: found["rates_per_hour"][k] for k in rates} == rates
        assert found["severity"] == "warning" and [c["rule"] for c in found["crossed"]] == ["crc"]
        assert len(answer["findings"]) == 12 and not any("cut off" in w or "not read" in w for w in answer["warnings"])
    assert answers[0] == answers[1]


def test_undated_readings_give_one_answer_from_the_later_reading(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Two readings with no time: no rate, and the totals are the later reading's (2 replays, 45,068 CRC errors)."""
    answers, _ = _doors(capsys, tmp_path / "store", "nvlink_e_v100_short_form_2.txt", AT)
    for answer in answers:
        found = _link(answer, 2, 0)
        assert found["rates_per_hour"] == {} and found["counts"]["replay"] == 2 and found["counts"]["crc"] == 45068
        assert _link(answer, 0, 3)["counts"]["replay"] == 104
    assert answers[0]["findings"] == answers[1]["findings"]
    assert {k: v for k, v in answers[0].items() if k != "warnings"} == {k: v for k, v in answers[1].items()
                                                                         if k != "warnings"}


def test_a_pinned_counter_is_said_a_lower_bound_through_each_door(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """GPU 2 link 0's CRC count reaches 65535, its maximum, at 10:30: the text and JSON answers and the tickets, of
    the file and of the store, say in one wording that its 113,442/h is a lower bound."""
    said = fmt.pinned(["crc_flit"], 65535)
    name = "nvlink_e_v100_no_errors_forms_1.txt"
    answers, text = _doors(capsys, tmp_path / "store", name)
    for answer in answers:
        assert [c["message"] for c in _link(answer, 2, 0)["crossed"]] == [f"CRC errors 113,442/h > 100/h (crc); {said}"]
    row = next(line for line in text.splitlines() if line.lstrip().startswith("GPU 2 -> GPU 0 NVLink 0"))
    assert row.endswith(f"CRC errors 113,442/h > 100/h (crc); {said}")
    tickets = [_run(capsys, "ticket", str(REAL / name), "--node", "v100", "--link", "gpu2-nvlink0"),
               _run(capsys, "ticket", "v100", "--store", str(tmp_path / "store"), "--link", "gpu2-nvlink0")]
    for ticket in tickets:
        assert f"- GPU 2 -> GPU 0 NVLink 0: CRC errors 113,442/h > 100/h (crc); {said}" in ticket.splitlines()
