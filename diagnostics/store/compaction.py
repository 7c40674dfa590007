"""A store fed scrape by scrape, compacted: each ingested file writes its own part per node and day, so a cron job
that ingests every few minutes leaves a node's day in hundreds of small files, and every read pays for each (a
32-node sweep over 6 h of 5-minute scrapes took 3.8 s against 1.4 s for the same rows in one part per node and day).
A node's (or job's) day held in more than `COMPACT_PARTS` parts is rewritten as one part of the same rows, as an
ingest writes it (row groups of whole hours, each link's readings together, its directory), and the catalog swaps
the parts for it in one transaction: a read sees either the old parts or the merged one, never both.

A read that listed the old parts just before the swap still opens them: they are retired, not deleted, and a later
compaction deletes them once `RETIRED_GRACE_S` has passed.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

import sqlite_utils

from ..errors import InputError
from ..tables import LINK_IDENTITY, TableSchema
from .busy import Bars
from .catalog import Catalog, Part
from .database import transaction
from .parts import PartInfo, read_parts, write_part

COMPACT_PARTS = 16  # a day of a node or job in more parts than this is merged into one
RETIRED_GRACE_S = 600.0  # a merged part's old files are kept this long for the reads that listed them
RETIRED = "retired_parts"


@dataclass
class Compacted:
    """What a compaction did: the days merged, the parts they held, the retired files deleted, and the days it
    could not merge (a part damaged or deleted by hand: key and day -> why; they stay as they were)."""

    days: int = 0
    parts: int = 0
    deleted: int = 0
    merged: list[Path] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)

    def add(self, other: Compacted) -> None:
        self.days += other.days
        self.parts += other.parts
        self.deleted += other.deleted
        self.merged += other.merged
        self.failed.update(other.failed)


def compact(db: sqlite_utils.Database, catalog: Catalog, schema: TableSchema, order: tuple[str, ...], *,
            keys: Collection[str] | None = None, least: int | None = None,
            grace_s: float | None = None, busy: Bars | None = None) -> Compacted:
    """Each day of `schema`'s table (of `keys`, default every key) held in more than `least` parts (default
    COMPACT_PARTS), merged into one part (its busy links apart, given `busy`: busy.py); retired parts older than
    `grace_s` (default RETIRED_GRACE_S) deleted."""
    done = Compacted(deleted=_delete_retired(db, catalog.root, RETIRED_GRACE_S if grace_s is None else grace_s))
    for key, day, parts in catalog.crowded(schema.name, COMPACT_PARTS if least is None else least, keys):
        try:
            merged = _merge(parts, schema, order, busy)
        except InputError as exc:  # a part damaged or deleted by hand: the day stays as it is, and is said
            done.failed[f"{key} {day}"] = str(exc)
            continue
        with transaction(db):
            if not catalog.replace(schema.name, key, day, [p.path for p in parts], merged.path, merged.info):
                merged.path.unlink(missing_ok=True)  # another compaction took these parts meanwhile
                continue
            _retire(db, catalog.root, [p.path for p in parts])
        done.days += 1
        done.parts += len(parts)
        done.merged.append(merged.path)
    return done


@dataclass(frozen=True)
class _Merged:
    path: Path
    info: PartInfo


def _merge(parts: list[Part], schema: TableSchema, order: tuple[str, ...], busy: Bars | None) -> _Merged:
    """The parts' rows, every column they fill, written as one part beside them: named by the parts it holds and
    by its writer (two writers merging the same day at once each write their own file, and the one whose swap
    comes second deletes its own)."""
    rows, _ = read_parts(parts, schema, None, None, order=order, workers=1)
    name = hashlib.sha256("\n".join(sorted(p.path.name for p in parts)).encode()).hexdigest()[:16]
    path = parts[0].path.with_name(f"merged-{name}-{uuid.uuid4().hex[:12]}.parquet")
    info = write_part(path, schema.conform(rows), schema, order,
                      directory=LINK_IDENTITY if schema.name == "link_samples" else (), busy=busy)
    return _Merged(path, info)


def _retire(db: sqlite_utils.Database, root: Path, paths: list[Path]) -> None:
    now = time.time()
    db.table(RETIRED).upsert_all([{"path": p.relative_to(root).as_posix(), "at": now} for p in paths], pk="path")


def _delete_retired(db: sqlite_utils.Database, root: Path, grace_s: float) -> int:
    """The retired files whose grace has passed, deleted (a file already gone counts as deleted)."""
    if not db.table(RETIRED).exists():
        return 0
    cutoff = time.time() - grace_s
    due = [str(path) for (path,) in db.execute(f"SELECT path FROM {RETIRED} WHERE at <= ?", [cutoff]).fetchall()]
    if not due:  # most ingests: no write lock taken for nothing
        return 0
    for path in due:
        (root / path).unlink(missing_ok=True)
    with transaction(db):
        db.execute(f"DELETE FROM {RETIRED} WHERE at <= ?", [cutoff])
    return len(due)
