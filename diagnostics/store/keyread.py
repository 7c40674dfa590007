"""Reading one key's parts (a node's link samples, a job's steps) in a window: the files' row groups, their columns,
as the schema's types, and what the read touched.

A part's directory (directory.py), where it has one, is read from its footer here (`listed`); the reads that use it
are in selection.py.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from functools import lru_cache
from operator import attrgetter, methodcaller
from typing import TYPE_CHECKING, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import InputError
from .directory import covers, directory_of

if TYPE_CHECKING:
    from .catalog import Part


_T = TypeVar("_T")
_STAMP = pa.timestamp("ns", tz="UTC")
Listed = list[tuple["Part", pq.FileMetaData, pa.Table]]  # a key's parts with their footers and directories


@dataclass
class ScanStats:
    """What a read touched: files opened, row groups read (those left after pruning) and their rows, rows kept."""

    files: int = 0
    row_groups: int = 0
    rows_scanned: int = 0
    rows: int = 0
    unreadable: dict[str, str] = field(default_factory=dict)  # key -> why its parts were not read (`partial`)

    def add(self, other: ScanStats) -> None:
        self.files += other.files
        self.row_groups += other.row_groups
        self.rows_scanned += other.rows_scanned
        self.rows += other.rows
        self.unreadable.update(other.unreadable)


def read_key(group: list[Part], out: pa.Schema, names: Collection[str], start_ns: int | None,
             end_ns: int | None) -> tuple[pa.Table | None, ScanStats]:
    """One key's rows in the window, `names` of the schema `out`'s columns, its parts' rows one after another (the
    same rows, in the same order, whichever columns are asked)."""
    table, kept, stats = read_key_rows(group, out, names, start_ns, end_ns)
    if table is None:
        return None, stats
    if kept is not None:
        table = table.filter(pa.array(kept))
    return cast_to(table, of_names(out, tuple(names))), stats


def read_key_rows(group: list[Part], out: pa.Schema, names: Collection[str], start_ns: int | None,
                  end_ns: int | None) -> tuple[pa.Table | None, np.ndarray | None, ScanStats]:
    """One key's rows in its parts' row groups that reach into the window, and which of them lie in it (None: all):
    `names` of the schema `out`'s columns, of its types, less those no part of the key fills (as nulls they need
    no decoding), its parts' rows one after another."""
    stats, tables, kept = ScanStats(), [], []
    schema = of_names(out, tuple(names))
    for part in group:
        chosen = [i for i, (lo, hi, _) in enumerate(part.groups) if overlaps(lo, hi, start_ns, end_ns)]
        if not chosen:
            continue
        # opened as a local file and read as asked: a filesystem's layer and its read-ahead threads cost more than
        # a small part's rows
        filtered = any(not inside(*part.groups[i][:2], start_ns, end_ns) for i in chosen)
        # a part always holds its time, though its catalog lists it only where it fills it (an undated paste's)
        wanted = [n for n in schema.names if n in part.columns or n == "timestamp"]
        reading = [*wanted, "timestamp"] if filtered and "timestamp" not in wanted else wanted
        table = opened(part, methodcaller("read_row_groups", chosen, columns=reading, use_threads=False))
        stats.files += 1
        stats.row_groups += len(chosen)
        stats.rows_scanned += table.num_rows
        mask = window_mask(table.column("timestamp"), start_ns, end_ns) if filtered else None
        if filtered and "timestamp" not in wanted:
            table = table.drop_columns(["timestamp"])
        tables.append(cast_to(table, of_names(schema, tuple(table.schema.names))))
        kept.append(mask)
    if not tables:
        return None, None, stats
    same = all(t.schema.equals(tables[0].schema) for t in tables[1:])
    table = tables[0] if len(tables) == 1 else pa.concat_tables(tables, promote_options="none" if same else "default")
    mask = None if all(k is None for k in kept) else np.concatenate(
        [np.ones(t.num_rows, bool) if k is None else k for t, k in zip(tables, kept, strict=True)])
    stats.rows = table.num_rows if mask is None else int(mask.sum())
    return table, mask, stats


def opened(part: Part, read: Callable[[pq.ParquetFile], _T], *, metadata: pq.FileMetaData | None = None) -> _T:
    """What `read` takes from the part's file (opened as a local file, given its footer if already parsed); a file
    deleted, cut or changed since the catalog listed it is an error that names it."""
    try:
        with pa.OSFile(str(part.path)) as source:
            return read(pq.ParquetFile(source, pre_buffer=False, metadata=metadata))
    except FileNotFoundError as exc:  # gone since the catalog listed it
        raise InputError("a part of the store the catalog lists is missing: it was deleted after it was "
                         "written; ingest its sources into a new store", source=str(part.path)) from exc
    except (pa.ArrowException, OSError) as exc:  # cut short or overwritten since the catalog listed it
        raise InputError(f"a part of the store cannot be read ({exc}): it was cut or changed after it was "
                         "written; ingest its sources into a new store", source=str(part.path)) from exc


def overlaps(lo: int | None, hi: int | None, start: int | None, end: int | None) -> bool:
    if start is None and end is None:
        return True
    if lo is None or hi is None:
        return False  # an undated row group has no reading in a window
    return (start is None or hi > start) and (end is None or lo <= end)


def inside(lo: int | None, hi: int | None, start: int | None, end: int | None) -> bool:
    if start is None and end is None:
        return True
    return lo is not None and hi is not None and (start is None or lo > start) and (end is None or hi <= end)


def window_mask(t: pa.ChunkedArray, start: int | None, end: int | None) -> np.ndarray:
    """Which times lie in (start, end] (an undated row in none), as numpy reads them: cheaper to ask of a key's
    few thousand rows than Arrow's compute functions are to call."""
    ns = (t if t.type == _STAMP else t.cast(_STAMP)).to_numpy().view(np.int64)
    mask = ns != np.iinfo(np.int64).min
    if start is not None:
        mask &= ns > start
    if end is not None:
        mask &= ns <= end
    return mask


@lru_cache(maxsize=256)
def of_names(schema: pa.Schema, names: tuple[str, ...]) -> pa.Schema:
    """The schema's fields of those names, in the schema's order: built once for the many keys a read asks alike
    (some 40 us each, as much as a small part's mask)."""
    return pa.schema([f for f in schema if f.name in names])


def cast_to(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """The table with exactly the schema's columns and types: a missing column as nulls, another type cast."""
    if table.schema.equals(schema):
        return table
    have = {f.name: (i, f.type) for i, f in enumerate(table.schema)}  # a table's names and types are built at each ask
    columns = []
    for wanted in schema:
        at, kind = have.get(wanted.name, (None, None))
        if at is None:
            columns.append(pa.nulls(table.num_rows, wanted.type))
            continue
        column = table.column(at)
        if kind != wanted.type:
            if pa.types.is_dictionary(wanted.type):
                column = pc.dictionary_encode(column.cast(pa.string()))
            else:
                column = column.cast(wanted.type)
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=schema)


def listed(group: list[Part], start_ns: int | None, end_ns: int | None) -> Listed | None:
    """The key's parts with rows in the window, each with its footer and the runs of its directory in the window's
    row groups; None when a part has no directory (written before them)."""
    out: Listed = []
    for part in group:
        wanted = [i for i, (lo, hi, _) in enumerate(part.groups) if overlaps(lo, hi, start_ns, end_ns)]
        if not wanted:
            continue
        metadata = opened(part, attrgetter("metadata"))
        directory = _directory(metadata, part)
        if directory is None:
            return None
        if not covers(directory, wanted, [metadata.row_group(g).num_rows for g in wanted]):
            raise InputError("a part of the store has a directory that does not match its row groups: it was "
                             "changed after it was written; ingest its sources into a new store",
                             source=str(part.path))
        in_window_groups = pc.is_in(directory.column("group"), value_set=pa.array(wanted, pa.int32()))
        out.append((part, metadata, directory.filter(in_window_groups)))
    return out


def _directory(metadata: pq.FileMetaData, part: Part) -> pa.Table | None:
    try:
        return directory_of(metadata)
    except ValueError as exc:
        raise InputError(f"a part of the store has a directory that cannot be read ({exc}): it was changed after it "
                         "was written; ingest its sources into a new store", source=str(part.path)) from exc
