"""The telemetry store's SQLite database as the bot shares it across listener threads and with other processes:
one connection, one lock, WAL and `BEGIN IMMEDIATE` (see `diagnostics.store.database`)."""

from __future__ import annotations

import threading
from pathlib import Path

import sqlite_utils

from diagnostics.store import DB_NAME, connect, lock_of

ENV_STORE = "FABRICBOT_STORE"  # the store folder a command or the bot reads when none is given


def open_db(store: Path | None) -> sqlite_utils.Database:
    """The database under a store folder (created if missing), or an in-memory one for `None`."""
    return connect(None if store is None else store / DB_NAME)


def db_lock(db: sqlite_utils.Database) -> threading.RLock:
    """The lock every writer of `db` holds (the audit log, the tracker, the bot's own tables)."""
    return lock_of(db)
