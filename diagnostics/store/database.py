"""The store's SQLite database as several writers share it: the bot's listener threads on one connection, and other
processes (a second bot, `fabricbot ingest --store` run from cron) on connections of their own.

- WAL journal: readers and the one writer never block each other, and a process killed mid-write leaves the last
  committed state (https://www.sqlite.org/wal.html).
- Every transaction that writes begins with `BEGIN IMMEDIATE`, so it holds the write lock before its first read. A
  deferred transaction that reads and then writes cannot wait for another writer: SQLite answers "database is
  locked" at once, since waiting could deadlock, and in WAL a snapshot that another commit made stale cannot be
  upgraded at all (https://www.sqlite.org/lang_transaction.html, "BEGIN IMMEDIATE").
- A busy timeout: a writer that finds the lock taken waits for it, up to `BUSY_TIMEOUT_S`, rather than failing.
- One lock per connection: threads sharing a connection take turns, one transaction at a time, so one thread's
  statement never lands inside another's transaction.

`connect` opens such a database; `transaction(db)` is the one way to write several statements as one. Tables of
every package (the store's catalog, the tracker, the audit trail, the bot's own state) go through it.
"""

from __future__ import annotations

import sqlite3
import threading
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlite_utils

from ..errors import InputError

BUSY_TIMEOUT_S = 30.0

_LOCKS: weakref.WeakKeyDictionary[sqlite_utils.Database, threading.RLock] = weakref.WeakKeyDictionary()
_GUARD = threading.Lock()


class StoreDatabase(sqlite_utils.Database):
    """sqlite-utils' database whose transactions take the write lock when they begin, one thread at a time.

    sqlite-utils wraps each of its writes in `atomic()`; here a top-level `atomic()` is `BEGIN IMMEDIATE` (a nested
    one stays a savepoint), and a write outside one opens its implicit transaction the same way
    (`isolation_level="IMMEDIATE"`)."""

    def __init__(self, conn: sqlite3.Connection, path: Path | None = None) -> None:
        self.lock = threading.RLock()
        self.path = path  # the file, named when it is found damaged
        super().__init__(conn)

    @contextmanager
    def atomic(self) -> Iterator[StoreDatabase]:
        with self.lock:
            if self.conn.in_transaction:
                with super().atomic():  # a savepoint inside this thread's own transaction
                    yield self
                return
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self
            except BaseException:
                self.rollback()
                raise
            try:
                self.conn.execute("COMMIT")
            except BaseException:
                self.rollback()
                raise

    def execute(self, sql: str, parameters: Sequence[Any] | dict[str, Any] | None = None) -> sqlite3.Cursor:
        with self.lock:
            try:
                return super().execute(sql, parameters)
            except sqlite3.DatabaseError as exc:
                raise damaged(self.path, exc) from exc


def damaged(path: Path | None, exc: sqlite3.DatabaseError) -> Exception:
    """A database whose pages are damaged (or that is no database) as what to do about it, naming its file; any
    other error as it came."""
    if path is None or exc.sqlite_errorcode & 0xFF not in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
        return exc
    return InputError(
        f"the store's database is damaged ({exc}); the readings' Parquet files beside it are intact: move {path.name} "
        f"and its {path.name}-wal and {path.name}-shm files aside and the next command catalogs those files again, "
        "but the events, GPUs, topology, node records and planned work it kept are not in them: restore it from a "
        "backup, or ingest their files again", source=str(path))


def connect(path: Path | None) -> StoreDatabase:
    """The database at `path` (its folder created if missing), WAL with a busy timeout; in memory for `None`."""
    if path is None:
        conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level="IMMEDIATE")
        return StoreDatabase(conn)
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, check_same_thread=False, timeout=BUSY_TIMEOUT_S, isolation_level="IMMEDIATE")
    db = StoreDatabase(conn, path)
    with db.ensure_autocommit_on():
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            db.execute("PRAGMA journal_mode = wal")  # kept in the file: every later connection finds it on
        conn.execute("PRAGMA synchronous = NORMAL")  # WAL's advised level: a commit survives a killed process
    return db


def lock_of(db: sqlite_utils.Database) -> threading.RLock:
    """The lock the threads sharing `db` take turns on (a plain sqlite-utils database gets one too)."""
    if isinstance(db, StoreDatabase):
        return db.lock
    with _GUARD:
        lock = _LOCKS.get(db)
        if lock is None:
            lock = _LOCKS[db] = threading.RLock()
        return lock


@contextmanager
def transaction(db: sqlite_utils.Database) -> Iterator[sqlite_utils.Database]:
    """One transaction that writes: the connection's lock, then `BEGIN IMMEDIATE` (a savepoint when nested)."""
    with lock_of(db), db.atomic():
        yield db
