"""One reading per link (a lone `nvidia-smi nvlink -e`: totals since reset) holds no error rate, so the rules of
rate judge nothing: every door says its health is unknown, never "no fabric fault", until a second reading."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.blocks import diagnosis_blocks, fallback_text
from bot.cli import main
from bot.posting import picture_note
from diagnostics import Diagnosis
from diagnostics.ingest import Source
from diagnostics.service import Request, diagnose, files_source
from diagnostics.tickets import rules_answer
from tests.conftest import FIXTURES

LONE = FIXTURES / "real" / "nvlink_e_v100_short_form_1.txt"  # 2,353 replays since reset, CRC pinned at 65,535
DATED = FIXTURES / "real" / "nvlink_e_v100_short_form_dated_2.txt"  # two readings half an hour apart


def _diagnosis(path: Path) -> Diagnosis:
    source, node, _ = files_source([Source.from_text(path.read_text(encoding="utf-8"), name="paste")], node="n1")
    return diagnose(source, Request(node=node)).diagnosis


def test_a_lone_reading_of_totals_is_unknown_through_every_door(capsys: pytest.CaptureFixture[str]) -> None:
    d = _diagnosis(LONE)
    assert not d.fault_detected and not d.rates_known and d.fault_said() == "unknown"
    assert "fabric health unknown, one reading per link, no rate" in fallback_text(d)
    header = diagnosis_blocks(d, 1)[0].to_dict()
    assert "fabric health unknown" in json.dumps(header) and "no fabric fault" not in json.dumps(header)
    assert "health unknown" in picture_note(d) and "healthy" not in picture_note(d)
    said = rules_answer(d)
    assert "no error rate is known" in said and "within thresholds" not in said and "no fabric fault" not in said
    assert main(["analyze", str(LONE), "--node", "n1"]) == 3  # incomplete, as `sweep` and `ticket` say it
    out, err = capsys.readouterr()
    assert "fault=unknown" in out and "answer INCOMPLETE" in err and "no error rate is known" in err
    assert main(["analyze", str(LONE), "--node", "n1", "--json"]) == 3
    answer = json.loads(capsys.readouterr().out)
    assert answer["rates_known"] is False and answer["fault_detected"] is False
    assert main(["ticket", str(LONE), "--node", "n1", "--rules"]) == 3  # unknown, never "nothing to repair"
    err = capsys.readouterr().err
    assert "no error rate is known" in err and "nothing to repair" not in err


def test_two_readings_give_rates_and_a_verdict() -> None:
    d = _diagnosis(DATED)
    assert d.rates_known and d.fault_said() in ("yes", "no")
    assert "one reading" not in fallback_text(d)


def test_the_plain_text_of_a_down_links_summary_says_down() -> None:
    """The summary's plain text (notifications, screen readers) said "GPU 4 NVLink 0 ... failing" of a link every
    other door, its own blocks included, calls down."""
    d = _diagnosis(FIXTURES / "real" / "nvlink_s_v100_inactive_1.txt")
    assert d.fault_detected and d.localization is not None and d.localization.severity.value == "down"
    assert f"{d.isolated_component} down, " in fallback_text(d) and "failing" not in fallback_text(d)
