"""Alertmanager's alerts as the alert channel answered them, in the store's SQLite: one message per node and part
(where it was posted, whether it still fires) and each alert's fingerprint under the message it joined, so a
restarted bot updates the message it posted before rather than posting again, and a resolved alert finds its
message by its fingerprint even when the node's diagnosis has changed since. Every write is one transaction."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import sqlite_utils

from .database import lock_of, transaction

MESSAGES = "alertmanager_messages"
FIRING = "alertmanager_firing"


@dataclass(frozen=True)
class AlertMessage:
    """The channel's message for one node and part, and the fingerprints still firing under it."""

    node_id: str
    part: str
    channel: str
    ts: str
    opened_at: datetime
    firing: tuple[str, ...]
    resolved_at: datetime | None = None

    @property
    def key(self) -> tuple[str, str]:
        return self.node_id, self.part


class AlertmanagerBook:
    """The Alertmanager messages and firing fingerprints of one store's database."""

    def __init__(self, db: sqlite_utils.Database) -> None:
        self.db = db
        with transaction(db):
            db[MESSAGES].create({"node_id": str, "part": str, "channel": str, "ts": str,  # type: ignore[union-attr]
                                 "opened_at": str, "resolved_at": str}, pk=("node_id", "part"), if_not_exists=True)
            db[FIRING].create({"fingerprint": str, "node_id": str, "part": str,  # type: ignore[union-attr]
                               "alertname": str, "since": str}, pk="fingerprint", if_not_exists=True)

    def message(self, node_id: str, part: str) -> AlertMessage | None:
        with lock_of(self.db):
            rows = list(self.db[MESSAGES].rows_where("node_id = ? and part = ?", [node_id, part], limit=1))
            firing = [r["fingerprint"] for r in self.db[FIRING].rows_where(
                "node_id = ? and part = ?", [node_id, part], order_by="fingerprint")]
        if not rows:
            return None
        r = rows[0]
        return AlertMessage(r["node_id"], r["part"], r["channel"], r["ts"], datetime.fromisoformat(r["opened_at"]),
                            tuple(firing), datetime.fromisoformat(r["resolved_at"]) if r["resolved_at"] else None)

    def key_of(self, fingerprint: str) -> tuple[str, str] | None:
        """The node and part a firing alert joined, or None for one not firing here."""
        with lock_of(self.db):
            rows = list(self.db[FIRING].rows_where("fingerprint = ?", [fingerprint], limit=1))
        return (rows[0]["node_id"], rows[0]["part"]) if rows else None

    def posted(self, node_id: str, part: str, *, channel: str, ts: str, at: datetime) -> None:
        """A new message for the node and part (replacing a resolved one's: firing again is a new message)."""
        with transaction(self.db):
            self.db[MESSAGES].upsert({"node_id": node_id, "part": part, "channel": channel,  # type: ignore[union-attr]
                                      "ts": ts, "opened_at": at.isoformat(), "resolved_at": None},
                                     pk=("node_id", "part"))

    def firing(self, fingerprint: str, *, node_id: str, part: str, alertname: str, at: datetime) -> None:
        with transaction(self.db):
            self.db[FIRING].upsert({"fingerprint": fingerprint, "node_id": node_id,  # type: ignore[union-attr]
                                    "part": part, "alertname": alertname, "since": at.isoformat()}, pk="fingerprint")

    def resolve(self, fingerprint: str, *, at: datetime) -> AlertMessage | None:
        """The alert no longer fires; its message as it stands after (`firing` empty and `resolved_at` set once the
        last alert under it resolved), or None for an alert not firing here."""
        with transaction(self.db):
            key = self.key_of(fingerprint)
            if key is None:
                return None
            self.db[FIRING].delete(fingerprint)  # type: ignore[union-attr]
            if not self.db.execute(f"select 1 from {FIRING} where node_id = ? and part = ? limit 1", list(key)
                                   ).fetchone():
                self.db.execute(f"update {MESSAGES} set resolved_at = ? where node_id = ? and part = ?",
                                [at.isoformat(), *key])
        return self.message(*key)
