"""The bot's own small state in the store's database: analyses it showed, drafts it previewed, draft rate.

Buttons carry only short ids into these tables, so a click drafts from exactly the diagnosis the
person saw (not a re-analysis) and button values stay far below Slack's limits.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sqlite_utils

from diagnostics import Diagnosis
from diagnostics.store import transaction

from .storage import db_lock
from .workflow.states import DraftState

ANALYSES = "bot_analyses"
DRAFTS = "bot_drafts"


@dataclass(frozen=True)
class Draft:
    id: int
    analysis_id: int
    node_id: str
    component: str
    slug: str
    markdown: str
    priority: str
    status: str
    drafted_by: str
    channel: str
    message_ts: str
    ticket_id: str | None
    requested_by: str = ""  # who clicked "Draft ticket" (two-person filing compares the approver with them)
    gpu_serial: str | None = None  # the GPU the part is on, as the drafted ticket named it: its history's key
    gpu_uuid: str | None = None


class BotState:
    """Analyses and drafts, guarded by one lock (listeners run on several threads)."""

    def __init__(self, db: sqlite_utils.Database) -> None:
        self.db = db
        self.lock = db_lock(db)
        with transaction(db):  # two bots starting at once add a missing column once
            db[ANALYSES].create({"id": int, "node_id": str, "at": str, "diagnosis": str},  # type: ignore[union-attr]
                                pk="id", if_not_exists=True)
            db[DRAFTS].create(  # type: ignore[union-attr]
                {"id": int, "analysis_id": int, "node_id": str, "component": str, "slug": str, "markdown": str,
                 "priority": str, "status": str, "drafted_by": str, "channel": str, "message_ts": str,
                 "ticket_id": str, "requested_by": str}, pk="id", if_not_exists=True)
            if "slug" not in db[DRAFTS].columns_dict:  # a database from before drafts were keyed by slug
                db[DRAFTS].add_column("slug", str)  # type: ignore[union-attr]
                db.execute(f"update {DRAFTS} set slug = component where slug is null")
            if "requested_by" not in db[DRAFTS].columns_dict:  # a database from before two-person filing
                db[DRAFTS].add_column("requested_by", str)  # type: ignore[union-attr]
            for column in ("gpu_serial", "gpu_uuid"):  # from before tickets followed a GPU's serial
                if column not in db[DRAFTS].columns_dict:
                    db[DRAFTS].add_column(column, str)  # type: ignore[union-attr]

    def save_analysis(self, diagnosis: Diagnosis, at: str) -> int:
        with self.lock:
            table = self.db[ANALYSES]
            table.insert({"node_id": diagnosis.node_id, "at": at,  # type: ignore[union-attr]
                          "diagnosis": diagnosis.model_dump_json()})
            return int(table.last_pk or 0)  # type: ignore[union-attr]

    def analysis_at(self, analysis_id: int) -> str | None:
        """When the analysis was made (ISO 8601, on the bot's clock); None for one not kept."""
        with self.lock:
            rows = list(self.db[ANALYSES].rows_where("id = ?", [analysis_id], select="at"))
        return str(rows[0]["at"]) if rows and rows[0]["at"] else None

    def analysis(self, analysis_id: int) -> Diagnosis | None:
        with self.lock:
            rows = list(self.db[ANALYSES].rows_where("id = ?", [analysis_id]))
        return Diagnosis.model_validate_json(rows[0]["diagnosis"]) if rows else None

    def save_draft(self, **fields: Any) -> int:
        with self.lock:
            table = self.db[DRAFTS]
            table.insert({"status": DraftState.PENDING, "ticket_id": None, "message_ts": "", **fields})  # type: ignore[union-attr]
            return int(table.last_pk or 0)  # type: ignore[union-attr]

    def draft(self, draft_id: int) -> Draft | None:
        with self.lock:
            rows = list(self.db[DRAFTS].rows_where("id = ?", [draft_id]))
        return Draft(**{**rows[0], "requested_by": rows[0].get("requested_by") or ""}) if rows else None

    def update_draft(self, draft_id: int, **fields: Any) -> None:
        with self.lock:
            self.db[DRAFTS].update(draft_id, fields)  # type: ignore[union-attr]

    def ticket_messages(self, ticket_id: str) -> list[tuple[str, str]]:
        """(channel, ts) of every message that filed a draft as the ticket, or added its evidence to it: the
        messages that carry its "Report repair" button."""
        with self.lock:
            rows = list(self.db[DRAFTS].rows_where("ticket_id = ? and status = ? and message_ts != ''",
                                                   [ticket_id, DraftState.FILED], order_by="id"))
        return [(str(r["channel"]), str(r["message_ts"])) for r in rows]

    def decided_drafts(self, channel: str) -> list[Draft]:
        """The drafts filed or discarded in `channel`, each with the message its preview is."""
        with self.lock:
            rows = list(self.db[DRAFTS].rows_where("channel = ? and status in (?, ?) and message_ts != ''",
                                                   [channel, DraftState.FILED, DraftState.DISCARDED], order_by="id"))
        return [Draft(**{**r, "requested_by": r.get("requested_by") or ""}) for r in rows]

    def pending_draft(self, analysis_id: int, slug: str, channel: str) -> Draft | None:
        """The shown draft of this analysis's part in `channel` still waiting to be filed or discarded, if any."""
        with self.lock:
            rows = list(self.db[DRAFTS].rows_where(
                "analysis_id = ? and slug = ? and channel = ? and status = ? and message_ts != ''",
                [analysis_id, slug, channel, DraftState.PENDING], order_by="id desc", limit=1))
        return Draft(**{**rows[0], "requested_by": rows[0].get("requested_by") or ""}) if rows else None

    def claim_draft(self, draft_id: int, status: str) -> Draft | None:
        """Move a pending draft to `status` atomically; None when someone else already decided it."""
        with self.lock, self.db.atomic():
            draft = self.draft(draft_id)
            if draft is None or draft.status != DraftState.PENDING:
                return None
            self.db[DRAFTS].update(draft_id, {"status": status})  # type: ignore[union-attr]
            return draft


class RateLimiter:
    """At most `limit` events per user in any `period` seconds (a sliding window)."""

    def __init__(self, limit: int, period: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self.period = period
        self.clock = clock
        self._seen: dict[str, deque[float]] = defaultdict(deque)
        self._lock = threading.Lock()

    def allow(self, user: str) -> bool:
        now = self.clock()
        with self._lock:
            seen = self._seen[user]
            while seen and now - seen[0] >= self.period:
                seen.popleft()
            if len(seen) >= self.limit:
                return False
            seen.append(now)
            return True

    def refund(self, user: str) -> None:
        """Give back the latest slot `allow` took (the work it was for never happened)."""
        with self._lock:
            if self._seen[user]:
                self._seen[user].pop()
