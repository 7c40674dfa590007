"""The telemetry store's SQLite database as the bot shares it across listener threads: one connection, one lock."""

from __future__ import annotations

import sqlite3
import threading
import weakref
from pathlib import Path

import sqlite_utils

from diagnostics.store import DB_NAME

_LOCKS: weakref.WeakKeyDictionary[sqlite_utils.Database, threading.RLock] = weakref.WeakKeyDictionary()
_GUARD = threading.Lock()


def open_db(store: Path | None) -> sqlite_utils.Database:
    """The database under a store folder (created if missing), or an in-memory one for `None`."""
    if store is None:
        conn = sqlite3.connect(":memory:", check_same_thread=False)
    else:
        store.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(store / DB_NAME, check_same_thread=False, timeout=30)
    return sqlite_utils.Database(conn)


def db_lock(db: sqlite_utils.Database) -> threading.RLock:
    """The lock every writer of `db` holds (the audit log, the tracker, the bot's own tables)."""
    with _GUARD:
        lock = _LOCKS.get(db)
        if lock is None:
            lock = _LOCKS[db] = threading.RLock()
        return lock
