"""The audit trail: every command, analysis, model call, draft, approval, discard and filing, with actor and time.

Stored in the telemetry store's SQLite database (table `audit`), exported as Markdown for ACTION_LOG.md.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

import sqlite_utils

from diagnostics import redact_values

TABLE = "audit"
KINDS = ("command", "analysis", "model_call", "draft", "approval", "discard", "filing", "mention", "denied",
         "recovery", "repair", "verification", "maintenance", "alert", "storm", "watch")

# Keys whose values never reach the trail, whoever passes them.
_SECRET_SUFFIXES = ("token", "api_key", "apikey", "secret", "password", "authorization")


def _secret(key: str) -> bool:
    return key.lower().endswith(_SECRET_SUFFIXES)


def _scrub(detail: Mapping[str, Any]) -> dict[str, Any]:
    """Secret-named keys blanked; every other string cleared of anything shaped like a key or token."""
    return {k: ("[redacted]" if _secret(k) else redact_values(v)) for k, v in detail.items()}


class AuditLog:
    """Append-only audit records in `db`."""

    def __init__(self, db: sqlite_utils.Database) -> None:
        self.db = db
        self.db[TABLE].create(  # type: ignore[union-attr]
            {"id": int, "at": str, "kind": str, "actor": str, "subject": str, "detail": str},
            pk="id", if_not_exists=True,
        )

    def record(self, kind: str, *, actor: str, subject: str = "", detail: Mapping[str, Any] | None = None,
               at: datetime | None = None) -> int:
        if kind not in KINDS:
            raise ValueError(f"unknown audit kind {kind!r}")
        when = (at or datetime.now(UTC)).astimezone(UTC).isoformat(timespec="seconds")
        table = self.db[TABLE]
        table.insert({"at": when, "kind": kind, "actor": actor, "subject": subject,  # type: ignore[union-attr]
                      "detail": json.dumps(_scrub(detail or {}), default=str, sort_keys=True)})
        return int(table.last_pk or 0)  # type: ignore[union-attr]

    def entries(self, kind: str | None = None) -> Iterator[dict[str, Any]]:
        where, args = ("kind = ?", [kind]) if kind else (None, [])
        for row in self.db[TABLE].rows_where(where, args, order_by="id"):
            yield {**row, "detail": json.loads(row["detail"])}

    def to_markdown(self, title: str = "Action log") -> str:
        lines = [f"# {title}", "", "| # | time (UTC) | kind | actor | subject | detail |",
                 "| --- | --- | --- | --- | --- | --- |"]
        for e in self.entries():
            detail = "; ".join(f"{k}={v}" for k, v in e["detail"].items() if v is not None)  # unset: not said
            detail = detail.replace("|", "\\|").replace("\n", " ")
            lines.append(f"| {e['id']} | {e['at']} | {e['kind']} | {e['actor']} | {e['subject']} | {detail} |")
        return "\n".join(lines) + "\n"
