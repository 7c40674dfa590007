"""Which analysis each summary message shows: a button on a message drafts from that analysis only.

A button's value names an analysis; a value edited to name another (node-03's analysis clicked on node-12's
message) is refused, because the message's own analysis is looked up here by channel and message ts. A click that
races the summary's own post (the ts is known only once Slack answers) waits for that post to be remembered.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

import sqlite_utils

from .storage import db_lock

POSTED = "bot_posted"
WAIT_S = 10.0


class PostedAnalyses:
    """Which analysis each summary message shows, by channel and message ts."""

    def __init__(self, db: sqlite_utils.Database) -> None:
        self.db = db
        self._pending: Counter[str] = Counter()  # summaries being posted, per channel
        self._cond = threading.Condition()
        with db_lock(db):
            db[POSTED].create({"channel": str, "ts": str, "analysis_id": int},  # type: ignore[union-attr]
                              pk=("channel", "ts"), if_not_exists=True)

    @contextmanager
    def posting(self, channel: str) -> Iterator[None]:
        """Around a summary's post and `remember`: clicks in that channel wait until both are done."""
        with self._cond:
            self._pending[channel] += 1
        try:
            yield
        finally:
            with self._cond:
                self._pending[channel] -= 1
                self._cond.notify_all()

    def remember(self, channel: str, ts: str, analysis_id: int) -> None:
        with db_lock(self.db):
            self.db[POSTED].insert({"channel": channel, "ts": ts, "analysis_id": analysis_id},  # type: ignore[union-attr]
                                   replace=True)

    def _lookup(self, channel: str, ts: str) -> int | None:
        with db_lock(self.db):
            rows = list(self.db[POSTED].rows_where("channel = ? and ts = ?", [channel, ts], limit=1))
        return int(rows[0]["analysis_id"]) if rows else None

    def analysis_of(self, channel: str, ts: str, *, wait_s: float = WAIT_S) -> int | None:
        """The analysis message `ts` shows; None when it shows none (waiting while a post there is under way)."""
        deadline = time.monotonic() + wait_s
        while True:
            found = self._lookup(channel, ts)
            with self._cond:
                left = deadline - time.monotonic()
                if found is not None or not self._pending[channel] or left <= 0:
                    return found
                self._cond.wait(timeout=left)
