"""Keys seen recently, kept in the store's database: an Events API retry (the same `event_id` again) or a replayed
signed request is done once, by whichever of the bot's processes sharing the store gets it first, and also after a
restart inside Slack's retry window.

Slack retries an event it got no 2xx for within 3 seconds, with `X-Slack-Retry-Num` and `X-Slack-Retry-Reason`
headers, up to three times over about five minutes (https://api.slack.com/apis/events-api#retries); Bolt hands
every retry to the listeners again (it reads neither header; bolt-python #731, #868 leave dedupe to the app), so the
app drops what it has seen. A signed request is
accepted for five minutes after its timestamp, so a replay inside that window carries the same signature. A key is
kept `ttl` seconds, by the wall clock (the processes share it), and the expired ones of its kind go as new ones come.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable

import sqlite_utils

from diagnostics.store import StoreDatabase, transaction

log = logging.getLogger("fabricbot")
SEEN = "bot_seen"
EVENT_TTL_S = 3600.0  # longer than Slack's retries of one event (the last about 5 minutes after the first)
REPLAY_TTL_S = 330.0  # Bolt accepts a signature for 300 s; a little more for clock skew
WAIT_S = 1.0  # how long an acknowledgement waits for another writer of the store before it answers regardless


def _own_connection(db: sqlite_utils.Database) -> sqlite_utils.Database:
    """A connection of its own to `db`'s file, waiting at most `WAIT_S` for another writer (a long ingest must not
    hold an acknowledgement past Slack's three seconds); an in-memory database is shared as it is."""
    path = db.execute("pragma database_list").fetchone()[2]
    if not path:
        return db
    return StoreDatabase(sqlite3.connect(path, timeout=WAIT_S, isolation_level="IMMEDIATE", check_same_thread=False))


class Seen:
    """`first(key)` is True once per key of this `kind` within `ttl` seconds, across every process on `db`."""

    def __init__(self, db: sqlite_utils.Database, kind: str, ttl: float, *,
                 clock: Callable[[], float] = time.time) -> None:
        self.kind = kind
        self.ttl = ttl
        self.clock = clock
        with transaction(db):  # two processes starting at once create it once
            db[SEEN].create({"kind": str, "key": str, "at": float}, pk=("kind", "key"),  # type: ignore[union-attr]
                            if_not_exists=True)
            db[SEEN].create_index(["kind", "at"], if_not_exists=True)  # type: ignore[union-attr]
        self.db = _own_connection(db)

    def first(self, key: str) -> bool:
        """True the first time; also when the store stayed locked past `WAIT_S` (answering a retry twice is better
        than dropping a request unanswered)."""
        now = self.clock()
        try:
            with transaction(self.db):
                self.db.execute(f"delete from {SEEN} where kind = ? and at <= ?", [self.kind, now - self.ttl])
                added = self.db.execute(f"insert or ignore into {SEEN} (kind, key, at) values (?, ?, ?)",
                                        [self.kind, key, now])
                return bool(added.rowcount == 1)
        except sqlite3.OperationalError as exc:
            log.warning("fabricbot: could not check whether %s %s was seen before (%s); handling it", self.kind, key,
                        exc)
            return True
