from __future__ import annotations

from datetime import UTC, datetime

import pytest
import sqlite_utils

from bot.audit import AuditLog


def test_records_in_order_and_redacts_secrets() -> None:
    log = AuditLog(sqlite_utils.Database(memory=True))
    log.record("command", actor="U1", subject="/fabric node-1", at=datetime(2026, 1, 1, tzinfo=UTC))
    log.record("model_call", actor="fabricbot", detail={"model": "m", "api_key": "sk-123", "tokens": 10})
    rows = list(log.entries())
    assert [r["kind"] for r in rows] == ["command", "model_call"]
    assert rows[0]["at"] == "2026-01-01T00:00:00+00:00"
    assert rows[1]["detail"] == {"model": "m", "api_key": "[redacted]", "tokens": 10}
    md = log.to_markdown()
    assert "sk-123" not in md and "/fabric node-1" in md
    assert [r["kind"] for r in log.entries("command")] == ["command"]


def test_the_markdown_leaves_out_what_was_not_set() -> None:
    log = AuditLog(sqlite_utils.Database(memory=True))
    log.record("analysis", actor="fabricbot", subject="node-12", detail={"job": None, "priority": "urgent"})
    (row,) = log.entries()
    assert row["detail"] == {"job": None, "priority": "urgent"}  # the trail keeps it
    assert "job=" not in log.to_markdown() and "priority=urgent" in log.to_markdown()


def test_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown audit kind"):
        AuditLog(sqlite_utils.Database(memory=True)).record("reset_register", actor="x")


def test_a_key_echoed_in_an_error_is_redacted_wherever_it_sits_in_the_detail() -> None:
    log = AuditLog(sqlite_utils.Database(memory=True))
    cut_key = "sk-ant-api03-AbCdEfGhIjKl"  # an API error echoing the start of a key
    log.record("model_call", actor="fabricbot", detail={"outcome": "fallback", "detail": f"401 invalid key {cut_key}",
                                                          "calls": [{"error": "Bearer xyz.123"}]})
    (row,) = log.entries()
    assert cut_key not in str(row["detail"]) and "xyz.123" not in str(row["detail"])
    assert row["detail"]["detail"] == "401 invalid key [redacted]" and row["detail"]["outcome"] == "fallback"
