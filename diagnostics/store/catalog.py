"""The catalog of the store's Parquet parts and of the nodes each job ran on, in the store's SQLite database.

Each part's row is its partition key (node or job), day, time range, rows, the columns it fills and the time range
of each of its row groups, so a window read picks its files, row groups and columns, and finds the newest
reading, without listing folders or opening footers: its cost follows the window, not the history. A store
written before the catalog existed is catalogued once, from the files' footers, when it is first opened.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import pandas as pd
import pyarrow.parquet as pq
import sqlite_utils

from .parts import PART_TABLES, PartInfo

CATALOG = "parquet_files"
JOB_NODES = "job_nodes"
PART_NODES = "part_nodes"  # the nodes a no-job step part names (nccl-tests runs): a node's runs read alone


@dataclass(frozen=True)
class Part:
    path: Path
    key: str
    columns: frozenset[str]
    groups: tuple[tuple[int | None, int | None, int], ...]  # per row group: first and last time (ns), rows


def _in(names: Collection[str]) -> str:
    return f"({','.join('?' * len(names))})"


def _keys_in(keys: Collection[str] | None) -> str:
    return "" if keys is None else f" AND key IN {_in(keys)}"


def _overlapping(where: list[str], args: list[object], start_ns: int | None, end_ns: int | None) -> None:
    """Conditions for rows whose [t_min, t_max] may hold a reading in (start, end]."""
    if start_ns is not None:
        where.append("t_max > ?")
        args.append(start_ns)
    if end_ns is not None:
        where.append("t_min <= ?")
        args.append(end_ns)


class Catalog:
    def __init__(self, db: sqlite_utils.Database, root: Path) -> None:
        self.db = db
        self.root = root
        if not db.table(CATALOG).exists():
            self._create()
            self._catalog_existing()
        elif not db.table(PART_NODES).exists():  # a store from before: its parts name no node, so each is read
            self._create_part_nodes()

    def _create(self) -> None:
        self.db.table(CATALOG).create({"path": str, "tbl": str, "key": str, "day": str, "t_min": int, "t_max": int,
                                 "rows": int, "columns": str, "groups": str}, pk="path", if_not_exists=True)
        self.db.table(CATALOG).create_index(["tbl", "key", "t_max"], if_not_exists=True)
        self.db.table(CATALOG).create_index(["tbl", "t_max"], if_not_exists=True)
        self.db.table(JOB_NODES).create({"job_id": str, "node_id": str, "t_min": int, "t_max": int},
                                  pk=("job_id", "node_id"), if_not_exists=True)
        self.db.table(JOB_NODES).create_index(["node_id"], if_not_exists=True)
        self._create_part_nodes()

    def _create_part_nodes(self) -> None:
        self.db.table(PART_NODES).create({"path": str, "node_id": str}, pk=("path", "node_id"), if_not_exists=True)
        self.db.table(PART_NODES).create_index(["node_id"], if_not_exists=True)

    def add(self, table: str, key: str, day: str, path: Path, info: PartInfo) -> None:
        self.db.table(CATALOG).upsert({"path": path.relative_to(self.root).as_posix(), "tbl": table, "key": key,
                                 "day": day, "t_min": info.t_min, "t_max": info.t_max, "rows": info.rows,
                                 "columns": ",".join(info.columns), "groups": json.dumps(info.groups)}, pk="path")

    def add_job_nodes(self, job_id: str, node_ids: Collection[str], t_min: int | None, t_max: int | None) -> None:
        for node in node_ids:
            self.db.execute(
                f"INSERT INTO {JOB_NODES} (job_id, node_id, t_min, t_max) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (job_id, node_id) DO UPDATE SET "
                "t_min = min(coalesce(t_min, excluded.t_min), coalesce(excluded.t_min, t_min)), "
                "t_max = max(coalesce(t_max, excluded.t_max), coalesce(excluded.t_max, t_max))",
                [job_id, node, t_min, t_max])

    def add_part_nodes(self, path: Path, node_ids: Collection[str]) -> None:
        name = path.relative_to(self.root).as_posix()
        for node in node_ids:
            self.db.execute(f"INSERT OR IGNORE INTO {PART_NODES} (path, node_id) VALUES (?, ?)", [name, node])

    def parts_naming(self, table: str, key: str, nodes: Collection[str] | None, start_ns: int | None,
                     end_ns: int | None) -> list[Part]:
        """Parts of `table` under `key` that may hold those nodes' rows (any node's when None) in (start, end], an
        undated part whatever the window: a part naming no node (written before parts named theirs) is read."""
        where, args = ["tbl = ?", "key = ?"], list[object]([table, key])
        if nodes is not None:
            where.append(f"(path IN (SELECT path FROM {PART_NODES} WHERE node_id IN {_in(nodes)}) "
                         f"OR path NOT IN (SELECT path FROM {PART_NODES}))")
            args += list(nodes)
        dated: list[str] = []
        _overlapping(dated, args, start_ns, end_ns)
        if dated:
            where.append(f"(t_min IS NULL OR ({' AND '.join(dated)}))")
        sql = f"SELECT path, key, columns, groups FROM {CATALOG} WHERE {' AND '.join(where)} ORDER BY t_min, rowid"
        return [self._part(*row) for row in self.db.execute(sql, args).fetchall()]

    def parts(self, table: str, keys: Collection[str] | None = None, start_ns: int | None = None,
              end_ns: int | None = None) -> list[Part]:
        """Parts of `table` for those keys (all when None) that may hold readings in (start, end], by key and
        time; undated parts only when no bound is given."""
        where, args = ["tbl = ?"], list[object]([table])
        if keys is not None:
            where.append(f"key IN {_in(keys)}")
            args += list(keys)
        _overlapping(where, args, start_ns, end_ns)
        sql = f"SELECT path, key, columns, groups FROM {CATALOG} WHERE {' AND '.join(where)} ORDER BY key, t_min, rowid"
        return [self._part(*row) for row in self.db.execute(sql, args).fetchall()]

    def overlapping(self, table: str, keys: Collection[str] | None, start_ns: int | None,
                    end_ns: int | None) -> set[str]:
        """The keys (of `keys`, all when None) two of whose parts, from two ingests, hold readings of one span in
        (start, end]: only there may two rows read one link at one time."""
        where, args = ["a.tbl = ?"], list[object]([table])
        if keys is not None:
            where.append(f"a.key IN {_in(keys)}")
            args += list(keys)
        _overlapping(where, args, start_ns, end_ns)
        where = [w.replace("t_max", "a.t_max").replace("t_min", "a.t_min") for w in where]
        sql = (f"SELECT DISTINCT a.key FROM {CATALOG} a JOIN {CATALOG} b ON b.tbl = a.tbl AND b.key = a.key "
               "AND b.rowid > a.rowid AND b.t_min <= a.t_max AND a.t_min <= b.t_max "
               f"WHERE {' AND '.join(where)}")
        return {str(key) for (key,) in self.db.execute(sql, args).fetchall()}

    def _part(self, path: str, key: str, columns: str | None, groups: str | None) -> Part:
        return Part(self.root / path, str(key), frozenset(columns.split(",")) if columns else frozenset(),
                    tuple(tuple(g) for g in json.loads(groups or "[]")))

    def crowded(self, table: str, least: int, keys: Collection[str] | None = None
                ) -> list[tuple[str, str, list[Part]]]:
        """(key, day, its parts) of each day of `table` (of `keys`, default all) held in more than `least` parts."""
        sql = (f"SELECT key, day FROM {CATALOG} WHERE tbl = ?{_keys_in(keys)} GROUP BY key, day "
               "HAVING count(*) > ? ORDER BY key, day")
        out = []
        for key, day in self.db.execute(sql, [table, *(keys or []), least]).fetchall():
            rows = self.db.execute(f"SELECT path, key, columns, groups FROM {CATALOG} WHERE tbl = ? AND key = ? "
                                   "AND day = ? ORDER BY t_min, rowid", [table, key, day]).fetchall()
            out.append((str(key), str(day), [self._part(*row) for row in rows]))
        return out

    def replace(self, table: str, key: str, day: str, old: list[Path], path: Path, info: PartInfo) -> bool:
        """The parts `old` of a day swapped for the one at `path` (in the caller's transaction); False, and nothing
        changed, when some of them are no longer listed (another writer merged them meanwhile)."""
        names = [p.relative_to(self.root).as_posix() for p in old]
        listed = self.db.execute(f"SELECT count(*) FROM {CATALOG} WHERE tbl = ? AND path IN {_in(names)}",
                                 [table, *names]).fetchone()[0]
        if listed != len(names):
            return False
        self.db.execute(f"DELETE FROM {CATALOG} WHERE tbl = ? AND path IN {_in(names)}", [table, *names])
        self.add(table, key, day, path, info)
        merged = path.relative_to(self.root).as_posix()  # the merged part names the nodes its parts named, where
        named = self.db.execute(f"SELECT count(DISTINCT path) FROM {PART_NODES} WHERE path IN {_in(names)}",
                                names).fetchone()[0]  # each named its own: one that named none is read by every node
        if named == len(names):
            self.db.execute(f"INSERT OR IGNORE INTO {PART_NODES} (path, node_id) SELECT ?, node_id FROM {PART_NODES} "
                            f"WHERE path IN {_in(names)}", [merged, *names])
        self.db.execute(f"DELETE FROM {PART_NODES} WHERE path IN {_in(names)}", names)
        return True

    def newest(self, table: str, keys: Collection[str] | None = None) -> int | None:
        where, args = "tbl = ?", list[object]([table])
        if keys is not None:
            where += f" AND key IN {_in(keys)}"
            args += list(keys)
        value = self.db.execute(f"SELECT max(t_max) FROM {CATALOG} WHERE {where}", args).fetchone()[0]
        return None if value is None else int(value)

    def reach_by_key(self, table: str, keys: Collection[str] | None) -> tuple[dict[str, int], dict[str, int]]:
        """Per key (every key when None), its newest time and its oldest (where its readings start: a window ending
        before it holds none of them), in one query."""
        sql = f"SELECT key, max(t_max), min(t_min) FROM {CATALOG} WHERE tbl = ?{_keys_in(keys)} GROUP BY key"
        rows = self.db.execute(sql, [table, *(keys or [])]).fetchall()
        return ({str(k): int(hi) for k, hi, _ in rows if hi is not None},
                {str(k): int(lo) for k, _, lo in rows if lo is not None})

    def undated_rows(self, table: str, keys: Collection[str] | None) -> dict[str, int]:
        """Per key (every key when None), the rows of its parts that hold no time at all (a paste ingested without
        --at)."""
        sql = f"SELECT key, sum(rows) FROM {CATALOG} WHERE tbl = ? AND t_min IS NULL{_keys_in(keys)} GROUP BY key"
        return {str(k): int(v) for k, v in self.db.execute(sql, [table, *(keys or [])]).fetchall() if v}

    def keys(self, table: str) -> list[str]:
        rows = self.db.execute(f"SELECT DISTINCT key FROM {CATALOG} WHERE tbl = ? ORDER BY key", [table])
        return [str(k) for (k,) in rows.fetchall()]

    def jobs_on(self, nodes: Collection[str] | None, start_ns: int | None, end_ns: int | None) -> dict[str, set[str]]:
        """Jobs with step samples in (start, end] naming any of the nodes (any node when None) -> all their nodes."""
        where, args = ["1"], list[object]()
        if nodes is not None:
            where.append(f"job_id IN (SELECT job_id FROM {JOB_NODES} WHERE node_id IN {_in(nodes)})")
            args += list(nodes)
        _overlapping(where, args, start_ns, end_ns)
        out: dict[str, set[str]] = {}
        sql = f"SELECT job_id, node_id FROM {JOB_NODES} WHERE {' AND '.join(where)}"
        for job, node in self.db.execute(sql, args).fetchall():
            out.setdefault(str(job), set()).add(str(node))
        return out

    def _catalog_existing(self) -> None:
        """Parts written before the catalog: their ranges from the footers' statistics (a store stays readable)."""
        for table, label in PART_TABLES.items():
            base = self.root / table
            if not base.is_dir():
                continue
            for path in sorted(base.glob(f"{label}=*/day=*/*.parquet")):
                key = unquote(path.parent.parent.name.removeprefix(f"{label}="))
                info = footer_info(path)
                self.add(table, key, path.parent.name.removeprefix("day="), path, info)
                if table == "step_samples":
                    steps = pq.read_table(path, columns=["node_ids"]).column("node_ids").to_pylist()
                    names = {n.strip() for v in steps if v for n in str(v).split(",") if n.strip()}
                    self.add_job_nodes(key, names, info.t_min, info.t_max)


def footer_info(path: Path) -> PartInfo:
    """A part's ranges, rows and filled columns from its footer (an older part, written before the catalog)."""
    meta = pq.read_metadata(path)
    names = [meta.schema.column(i).name for i in range(meta.num_columns)]
    nulls = dict.fromkeys(names, 0)
    groups: list[tuple[int | None, int | None, int]] = []
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        low = high = None
        for i, name in enumerate(names):
            stats = group.column(i).statistics
            if stats is None or not stats.has_null_count:
                nulls[name] = -meta.num_rows  # unknown: taken as filled
            else:
                nulls[name] += stats.null_count
            if name == "timestamp" and stats is not None and stats.has_min_max:
                low, high = pd.Timestamp(stats.min).value, pd.Timestamp(stats.max).value
        groups.append((low, high, group.num_rows))
    lows = [g[0] for g in groups if g[0] is not None]
    highs = [g[1] for g in groups if g[1] is not None]
    filled = tuple(n for n in names if nulls[n] < meta.num_rows)
    return PartInfo(meta.num_rows, min(lows) if lows else None, max(highs) if highs else None, filled, tuple(groups))
