"""`fabricbot ticket`: Markdown and JSON tickets from a snapshot file; model calls land in the audit table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlite_utils

from bot.audit import AuditLog
from bot.cli import main
from tests.conftest import FIXTURES
from tests.tickets_helpers import SEED_INPUT

FIELDS = {"node_id", "component_kind", "gpu_index", "peer", "link_id", "lanes", "switch", "switch_port",
          "port_source", "port_find_with", "identity", "replacement_part", "isolation_steps", "repair_steps",
          "capture_first", "priority", "evidence", "estimated_cost", "human_review_required", "drafted_by"}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(autouse=True)
def _no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("FABRICBOT_STORE", raising=False)


def test_seed_file_prints_the_urgent_ticket_and_skips_the_healthy_case(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "ticket", str(FIXTURES / "seed_examples.json"))
    assert code == 0
    assert out.startswith("# Repair ticket: GPU 2 -> GPU 3 NVLink 1 on hpc-gpu-node-12")
    assert "**Priority:** urgent" in out and "nvidia-smi nvlink -R -i 2" in out
    assert "hpc-gpu-node-03" in err and "nothing to repair" in err


def test_json_has_the_ticket_fields(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(SEED_INPUT | {"platform": "hgx-h100-8gpu"}))
    code, out, _ = run(capsys, "ticket", str(path), "--json")
    data = json.loads(out)
    assert code == 0 and set(data) >= FIELDS
    assert (data["gpu_index"], data["peer"], data["link_id"], data["priority"]) == (2, "GPU 3", "nvlink-1", "urgent")
    assert data["port_source"] == "assumed" and data["switch"].startswith("NVSwitch")
    assert data["human_review_required"] is True
    assert "ANTHROPIC_API_KEY is not set" in data["fallback_notes"][0]


def test_link_option_and_unknown_link(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(SEED_INPUT))
    code, out, _ = run(capsys, "ticket", str(path), "--link", "gpu-2", "--json")
    assert code == 0 and json.loads(out)["component_kind"] == "gpu"
    code, _, err = run(capsys, "ticket", str(path), "--link", "nvlink-7")
    assert code == 2 and "nvlink-7" in err and "Traceback" not in err


def test_missing_node_file_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "ticket", "node-17")
    assert code == 2 and err.count("\n") == 1 and "node-17" in err


def test_model_calls_are_recorded_in_the_store_audit_table(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-value")
    # the key is set but model requests are disallowed in tests: the call fails and falls back, and is recorded
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(SEED_INPUT))
    code, out, _ = run(capsys, "ticket", str(path), "--store", str(tmp_path / "store"))
    assert code == 0 and "drafted by rules" in out
    entries = list(AuditLog(sqlite_utils.Database(tmp_path / "store" / "fabricbot.db")).entries("model_call"))
    assert entries and entries[-1]["detail"]["outcome"] == "fallback"
    assert "sk-ant-secret-value" not in json.dumps(entries) and "sk-ant-secret-value" not in out
