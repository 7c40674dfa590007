"""The alert channel's memory in the store's SQLite: each part's alert (its message, status and last failing pass)
and each storm (its incident message, counts, who acknowledged it), and when the watch began, so a restarted bot
neither repeats nor forgets an alert nor takes its first pass again. Every write is one transaction
(`database.transaction`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

import sqlite_utils

from .database import lock_of, transaction

ALERTS = "alerts"
STORMS = "alert_storms"
WATCH = "alert_watch"  # when the watch began on this store, and what it found already failing
BLIND = "alert_blind"  # each stretch of passes whose fleet view was incomplete, and its one message


class AlertStatus(StrEnum):
    OPEN = "open"  # posted; failing, or clean for less than the soak
    HELD = "held"  # newly failing inside a storm: waits for a person to acknowledge the incident
    RECOVERED = "recovered"  # clean for the soak: closed; failing again is a new alert


@dataclass(frozen=True)
class Alert:
    """One part's alert as the store keeps it."""

    node_id: str
    slug: str
    component: str
    status: AlertStatus
    rank: int
    opened_at: datetime
    failing_at: datetime  # the last pass it was failing in, or its node silent (not known clean)
    ticket: str | None = None
    storm: int | None = None
    channel: str | None = None
    ts: str | None = None  # the message, once posted
    silent_since: datetime | None = None  # the pass its node was first found silent (no reading), while it lasts
    held: bool = False  # its part's ticket was held when last told (the input contradicted the platform)
    owed: bool = False  # the channel is to be told of it and has not been yet (its post failed, or never ran)
    planned_since: datetime | None = None  # the pass its node was first found under planned work, while it lasts

    @property
    def key(self) -> tuple[str, str]:
        return self.node_id, self.slug




@dataclass(frozen=True)
class BlindRecord:
    """A stretch of passes whose fleet view was incomplete (nodes silent or unreadable): said once, its message
    updated when what is missing changes and when the view is whole again."""

    id: int
    since: datetime
    key: str  # what was missing, as last said: a change updates the message
    said: str
    channel: str | None = None
    ts: str | None = None


@dataclass(frozen=True)
class StormRecord:
    id: int
    opened_at: datetime
    factor: str
    nodes: list[str]
    reason: str
    held: int
    acknowledged_by: str | None = None
    acknowledged_at: datetime | None = None
    channel: str | None = None
    ts: str | None = None


def _row(alert: Alert) -> dict[str, Any]:
    row = asdict(alert)
    row.update(status=alert.status.value, opened_at=alert.opened_at.isoformat(),
               failing_at=alert.failing_at.isoformat(),
               silent_since=alert.silent_since.isoformat() if alert.silent_since else None,
               planned_since=alert.planned_since.isoformat() if alert.planned_since else None)
    return row


def _alert(row: dict[str, Any]) -> Alert:
    return Alert(**{**row, "status": AlertStatus(row["status"]), "opened_at": datetime.fromisoformat(row["opened_at"]),
                    "failing_at": datetime.fromisoformat(row["failing_at"]),
                    "silent_since": datetime.fromisoformat(row["silent_since"]) if row.get("silent_since") else None,
                    "planned_since": datetime.fromisoformat(row["planned_since"]) if row.get("planned_since") else None,
                    "held": bool(row.get("held")), "owed": bool(row.get("owed"))})


class AlertBook:
    """The alerts and storms of one store's database."""

    def __init__(self, db: sqlite_utils.Database) -> None:
        self.db = db
        with transaction(db):
            db[ALERTS].create({"node_id": str, "slug": str, "component": str, "status": str,  # type: ignore[union-attr]
                               "rank": int, "opened_at": str, "failing_at": str, "ticket": str, "storm": int,
                               "channel": str, "ts": str, "silent_since": str, "held": int,
                               "owed": int, "planned_since": str},
                              pk=("node_id", "slug"), if_not_exists=True)
            for column, kind in (("silent_since", str), ("held", int), ("owed", int), ("planned_since", str)):
                if column not in db[ALERTS].columns_dict:  # a store from before the column
                    db[ALERTS].add_column(column, kind)  # type: ignore[union-attr]
            db[STORMS].create({"id": int, "opened_at": str, "factor": str, "nodes": str,  # type: ignore[union-attr]
                               "reason": str, "held": int, "acknowledged_by": str, "acknowledged_at": str,
                               "channel": str, "ts": str}, pk="id", if_not_exists=True)
            db[WATCH].create({"id": int, "started_at": str, "known": int, "channel": str,  # type: ignore[union-attr]
                              "ts": str}, pk="id", if_not_exists=True)
            db[BLIND].create({"id": int, "since": str, "key": str, "said": str, "ended_at": str,  # type: ignore[union-attr]
                              "channel": str, "ts": str}, pk="id", if_not_exists=True)

    def watch_began(self) -> datetime | None:
        """When the watch's first pass ran on this store; None before it has."""
        with lock_of(self.db):
            rows = list(self.db[WATCH].rows_where(order_by="id", limit=1))
        return datetime.fromisoformat(rows[0]["started_at"]) if rows else None

    def begin_watch(self, *, at: datetime, known: int) -> bool:
        """The first pass recorded (with how many parts it found failing); False when another bot's was first."""
        with transaction(self.db):
            if self.db[WATCH].count:
                return False
            self.db[WATCH].insert({"started_at": at.isoformat(), "known": known})  # type: ignore[union-attr]
        return True

    def watch_owed(self) -> datetime | None:
        """When the watch began, where its first message (the parts it found already failing) was never posted: its
        post failed, or the bot stopped before it."""
        with lock_of(self.db):
            rows = list(self.db[WATCH].rows_where("known > 0 and ts is null", order_by="id", limit=1))
        return datetime.fromisoformat(rows[0]["started_at"]) if rows else None

    def watch_posted(self, *, channel: str, ts: str) -> None:
        """The first message posted (`ts` empty: nothing was left to say of the parts it would have named)."""
        with transaction(self.db):
            self.db.execute(f"update {WATCH} set channel = ?, ts = ?", [channel, ts])

    def active(self) -> dict[tuple[str, str], Alert]:
        """Every alert not recovered, by node and part."""
        with lock_of(self.db):
            rows = list(self.db[ALERTS].rows_where("status != ?", [AlertStatus.RECOVERED.value]))
        return {(r["node_id"], r["slug"]): _alert(r) for r in rows}

    def get(self, node_id: str, slug: str) -> Alert | None:
        with lock_of(self.db):
            rows = list(self.db[ALERTS].rows_where("node_id = ? and slug = ?", [node_id, slug], limit=1))
        return _alert(rows[0]) if rows else None

    def save(self, alerts: list[Alert], failing: list[tuple[str, str]] | None = None,
             at: datetime | None = None) -> None:
        """The pass's alerts written, and the still-failing ones' last failing time moved to `at`, in one go."""
        with transaction(self.db):
            if alerts:
                self.db[ALERTS].upsert_all([_row(a) for a in alerts], pk=("node_id", "slug"))  # type: ignore[union-attr]
            if failing and at is not None:
                saved = {a.key for a in alerts}
                for node, slug in failing:
                    if (node, slug) not in saved:
                        self.db.execute(f"update {ALERTS} set failing_at = ? where node_id = ? and slug = ?",
                                        [at.isoformat(), node, slug])

    def posted(self, node_id: str, slug: str, *, channel: str, ts: str) -> None:
        """The alert's message posted: it is owed no longer."""
        with transaction(self.db):
            self.db[ALERTS].update((node_id, slug), {"channel": channel, "ts": ts, "owed": 0})  # type: ignore[union-attr]

    def open_storm(self, *, at: datetime, factor: str, nodes: list[str], reason: str, held: int) -> StormRecord:
        with transaction(self.db):
            table = self.db[STORMS]
            table.insert({"opened_at": at.isoformat(), "factor": factor, "nodes": ",".join(nodes),  # type: ignore[union-attr]
                          "reason": reason, "held": held})
            storm_id = int(str(table.last_pk))  # type: ignore[union-attr]
        found = self.storm(storm_id)
        assert found is not None
        return found

    def storm(self, storm_id: int) -> StormRecord | None:
        with lock_of(self.db):
            rows = list(self.db[STORMS].rows_where("id = ?", [storm_id], limit=1))
        if not rows:
            return None
        r = rows[0]
        return StormRecord(id=int(r["id"]), opened_at=datetime.fromisoformat(r["opened_at"]), factor=r["factor"],
                           nodes=[n for n in (r["nodes"] or "").split(",") if n], reason=r["reason"],
                           held=int(r["held"] or 0), acknowledged_by=r["acknowledged_by"],
                           acknowledged_at=datetime.fromisoformat(r["acknowledged_at"]) if r["acknowledged_at"]
                           else None, channel=r["channel"], ts=r["ts"])

    def waiting_storm(self) -> StormRecord | None:
        """The storm waiting for a person's acknowledgement (at most one: new parts join it meanwhile)."""
        with lock_of(self.db):
            rows = list(self.db[STORMS].rows_where("acknowledged_by is null", order_by="id desc", limit=1))
        return self.storm(int(rows[0]["id"])) if rows else None

    def storm_posted(self, storm_id: int, *, channel: str, ts: str) -> None:
        with transaction(self.db):
            self.db[STORMS].update(storm_id, {"channel": channel, "ts": ts})  # type: ignore[union-attr]

    def grow_storm(self, storm_id: int, nodes: list[str], held: int) -> None:
        with transaction(self.db):
            old = self.storm(storm_id)
            if old is None:
                return
            merged = sorted(set(old.nodes) | set(nodes))
            self.db[STORMS].update(storm_id, {"nodes": ",".join(merged), "held": old.held + held})  # type: ignore[union-attr]

    def acknowledge(self, storm_id: int, *, by: str, at: datetime) -> StormRecord | None:
        """The storm acknowledged (once: a second click changes nothing); None for an unknown storm."""
        with transaction(self.db):
            found = self.storm(storm_id)
            if found is None or found.acknowledged_by is not None:
                return found
            self.db[STORMS].update(storm_id, {"acknowledged_by": by,  # type: ignore[union-attr]
                                              "acknowledged_at": at.isoformat()})
        return self.storm(storm_id)

    def blind(self) -> BlindRecord | None:
        """The incomplete stretch not yet ended, if any."""
        with lock_of(self.db):
            rows = list(self.db[BLIND].rows_where("ended_at is null", order_by="id desc", limit=1))
        if not rows:
            return None
        r = rows[0]
        return BlindRecord(id=int(r["id"]), since=datetime.fromisoformat(r["since"]), key=r["key"] or "",
                           said=r["said"] or "", channel=r["channel"], ts=r["ts"])

    def begin_blind(self, *, at: datetime, key: str, said: str) -> BlindRecord | None:
        """An incomplete stretch begun; None when another bot's already was."""
        with transaction(self.db):
            if list(self.db[BLIND].rows_where("ended_at is null", limit=1)):
                return None
            self.db[BLIND].insert({"since": at.isoformat(), "key": key, "said": said})  # type: ignore[union-attr]
        return self.blind()

    def blind_said(self, blind_id: int, *, key: str | None = None, said: str | None = None,
                   channel: str | None = None, ts: str | None = None) -> None:
        """What the stretch's message says now, or where it was posted."""
        changed = {k: v for k, v in (("key", key), ("said", said), ("channel", channel), ("ts", ts)) if v is not None}
        with transaction(self.db):
            self.db[BLIND].update(blind_id, changed)  # type: ignore[union-attr]

    def end_blind(self, blind_id: int, *, at: datetime) -> None:
        with transaction(self.db):
            self.db[BLIND].update(blind_id, {"ended_at": at.isoformat()})  # type: ignore[union-attr]
