"""The store's Parquet files ("parts"): written in time-sorted row groups, read back by window.

Each part holds one partition's rows from one ingested file in row groups that each cover whole hours of readings
(each link's readings inside a group in time order), so the groups' time ranges are tight and a window's read
skips the hours outside it; a link-sample part's busy links (busy.py) fill row groups of their own, after the
others'. Their ranges are kept in the catalog (catalog.py).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import InputError
from ..tables import TableSchema, as_text
from .busy import Bars, busy_rows
from .columns import FrameBuilder
from .directory import KEY as DIRECTORY
from .directory import checked, encoded, runs
from .keyread import ScanStats, overlaps, read_key_rows
from .rowkeys import row_order

if TYPE_CHECKING:
    from .catalog import Part

# Arrow's default pool (mimalloc) hands freed pages back to the system as soon as a read lets go of them, so a read of
# hundreds of parts pays for its pages over and over in the kernel: the system allocator keeps them for the next part.
# ARROW_DEFAULT_MEMORY_POOL, when set, still chooses.
_CHOSEN = "ARROW_DEFAULT_MEMORY_POOL" in os.environ
_OWN_POOL = pa.default_memory_pool()
if not _CHOSEN and _OWN_POOL.backend_name == "mimalloc":
    pa.set_memory_pool(pa.system_memory_pool())


_writing = threading.Lock()
_writers: list[pa.MemoryPool] = []  # the pool the first writer found, once for each writer at work


@contextmanager
def writing_pool() -> Iterator[None]:
    """Arrow's own pool while an ingest parses and writes, the reads' after the last writer is done: what keeps a
    read's pages for the next part kept a parse's too (a node's day of 1-minute scrapes, `bench_ingest_day.py`:
    584-601 MB peak against 472-474 MB). The pool is the process's: a read on another thread meanwhile uses it too,
    as fast, its buffers freed to the pool that gave them."""
    if _CHOSEN:
        yield
        return
    with _writing:
        _writers.append(_writers[0] if _writers else pa.default_memory_pool())
        pa.set_memory_pool(_OWN_POOL)
    try:
        yield
    finally:
        with _writing:
            found = _writers.pop()
            if not _writers:
                pa.set_memory_pool(found)

ROW_GROUP_NS = 3_600_000_000_000  # row groups cover whole hours of readings
MIN_GROUP_ROWS = 4096
PART_TABLES = {"link_samples": "node", "step_samples": "job"}
FEWEST_RUN_ROWS = 4  # a part whose runs hold fewer rows on average gets no directory (it would weigh as much),
SMALL_DIRECTORY = 1024  # unless it lists no more runs than this (a part of one scrape: a run a link)

_ARROW: dict[str, pa.DataType] = {
    "datetime64[ns, UTC]": pa.timestamp("ns", tz="UTC"), "category": pa.dictionary(pa.int32(), pa.string()),
    "string": pa.string(), "float64": pa.float64(), "boolean": pa.bool_(), "Int8": pa.int8(), "Int16": pa.int16(),
    "Int32": pa.int32(), "Int64": pa.int64(),
}


def arrow_schema(schema: TableSchema) -> pa.Schema:
    return pa.schema([(name, _ARROW[dtype]) for name, dtype in schema.columns.items()])


def to_arrow(frame: pd.DataFrame, schema: TableSchema, columns: Collection[str] | None = None) -> pa.Table:
    """A conformed frame as an Arrow table of the schema's types (categories as dictionaries of strings); given
    `columns`, only those of the schema's."""
    target = arrow_schema(schema)
    if columns is not None:
        target = pa.schema([f for f in target if f.name in columns])
    arrays = []
    for name in target.names:
        series = frame[name]
        kind = target.field(name).type
        if isinstance(series.dtype, pd.CategoricalDtype):
            values = as_text(series)
            arrays.append(pa.array(values, type=pa.string(), from_pandas=True).dictionary_encode())
        else:
            arrays.append(pa.array(series, from_pandas=True).cast(kind))
    return pa.Table.from_arrays(arrays, schema=target)


@dataclass(frozen=True)
class PartInfo:
    rows: int
    t_min: int | None
    t_max: int | None
    columns: tuple[str, ...]
    groups: tuple[tuple[int | None, int | None, int], ...]  # per row group: first and last time, rows


def _times(frame: pd.DataFrame) -> np.ndarray:
    return np.asarray(frame["timestamp"].array.asi8 if len(frame) else np.zeros(0, np.int64))


def write_part(path: Path, frame: pd.DataFrame, schema: TableSchema, order: Iterable[str], *,
               directory: Sequence[str] = (), busy: Bars | None = None) -> PartInfo:
    """Write one partition's rows: ordered by (time bucket, `order` columns, time), a row group per bucket; with
    the runs of rows of each identity (the values of `directory`'s columns) listed in its footer (directory.py).
    Given `busy` (and a directory), the busy links' rows (busy.py), with every row that shares their `order` columns'
    values, come after the others, in time buckets of their own.

    Only the columns the rows fill are written (a reader makes the others as nulls, as it does for an older
    writer's part), with statistics for the time alone (the catalog keeps each row group's range; a rebuilt catalog
    reads it from them): every read parses a part's footer, and the schema's empty columns and their statistics were
    most of it. Written under a hidden name and renamed, so a reader never sees half a file."""
    t = _times(frame)
    nat = np.iinfo(np.int64).min
    keys = [_sort_codes(frame[c]) for c in reversed(list(order))]
    apart = busy_rows(frame, list(directory), busy, apart=list(order)) if busy is not None and directory \
        else np.zeros(len(t), bool)
    hour = np.empty(len(t), dtype=np.int64)
    for mine in (~apart, apart):  # each its own buckets: the busy are few, their day in one row group or a few
        dated = t[mine]
        hour[mine] = np.where(dated == nat, nat, dated // group_span(dated[dated != nat]))
    rows = np.lexsort([t, *keys, hour, apart])
    filled = tuple(c for c in frame.columns if frame[c].notna().any())
    table = to_arrow(frame.iloc[rows].reset_index(drop=True), schema, {*filled, "timestamp"})
    hours, kinds = hour[rows], apart[rows]
    bounds = [0, *(np.flatnonzero((hours[1:] != hours[:-1]) | (kinds[1:] != kinds[:-1])) + 1).tolist(), len(rows)]
    listed = runs(table, directory, bounds[:-1]) if directory else None
    if listed is not None and listed.num_rows > SMALL_DIRECTORY and listed.num_rows * FEWEST_RUN_ROWS > len(rows):
        listed = None  # runs of a few rows (a switch tray's two chips' ports, interleaved): no cheaper to read by
    tmp = path.with_name(f".{path.name}.tmp")
    with pq.ParquetWriter(tmp, table.schema, write_statistics=["timestamp"]) as writer:
        for lo, hi in pairwise(bounds):
            writer.write_table(table.slice(lo, hi - lo), row_group_size=hi - lo)
        if listed is not None:
            writer.add_key_value_metadata({DIRECTORY: checked(encoded(listed))})
    os.replace(tmp, path)
    dated = t[t != nat]
    ts = t[rows]
    groups = tuple(_group(ts[lo:hi]) for lo, hi in pairwise(bounds))
    return PartInfo(len(frame), int(dated.min()) if len(dated) else None, int(dated.max()) if len(dated) else None,
                    filled, groups)


def _group(t: np.ndarray) -> tuple[int | None, int | None, int]:
    dated = t[t != np.iinfo(np.int64).min]
    return (int(dated.min()), int(dated.max()), len(t)) if len(dated) else (None, None, len(t))


def group_span(t: np.ndarray) -> int:
    """The time a row group covers: the shortest of 1, 2, 3, 4, 6, 12 or 24 hours that puts about MIN_GROUP_ROWS
    rows in each (a row group costs its own decoding, so small ones make a wide read slow), in ns."""
    if len(t) < 2:
        return ROW_GROUP_NS
    per_hour = len(t) / max((int(t.max()) - int(t.min())) / ROW_GROUP_NS, 1.0)
    for hours in (1, 2, 3, 4, 6, 12):
        if per_hour * hours >= MIN_GROUP_ROWS:
            return hours * ROW_GROUP_NS
    return 24 * ROW_GROUP_NS


def _sort_codes(series: pd.Series) -> np.ndarray:
    """Integer codes that order a key column by value (NA first)."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        values = as_text(series)
        codes, _ = pd.factorize(values, sort=True)
        return np.asarray(codes)
    return np.asarray(pd.to_numeric(series, errors="coerce").to_numpy(np.float64, na_value=-1.0))


def read_parts(parts: Sequence[Part], schema: TableSchema, start_ns: int | None, end_ns: int | None, *,
               order: Sequence[str], keep: Collection[str] = (), skip: Collection[str] = (),
               workers: int = 2, columns: Collection[str] | None = None,
               partial: bool = False) -> tuple[pd.DataFrame, ScanStats]:
    """The parts' rows with timestamps in (start, end] (every row without bounds), key by key as the parts come,
    each key's rows ordered by `order` then time; only the columns some part fills (and `keep`), less `skip`.

    Row groups whose time range (from the catalog) lies outside the window are not read, and only row groups
    that cross a bound are filtered. Files are read `workers` at a time (Arrow decodes outside the GIL). A part
    of other column types than the schema's (an older writer) is cast to it. Measured on this layout, reading
    each file's chosen row groups directly is about twice as fast as a pyarrow dataset scan with the same
    pruning: the dataset's per-fragment filtering and projection cost more than the rows themselves. `columns`
    reads only those (of the others). `partial`: a key with a part that cannot be read (cut, changed or deleted
    after it was written) is left out, and why said in the stats' `unreadable`, rather than failing the read of every
    key."""
    out = output_schema(parts, schema, keep=keep, skip=skip, columns=columns)

    def one(group: list[Part]) -> tuple[pa.Table | None, Any, ScanStats]:
        try:
            table, kept, stats = read_key_rows(group, out, out.names, start_ns, end_ns)
        except InputError as exc:
            if not partial:
                raise
            return None, None, ScanStats(unreadable={group[0].key: str(exc)})
        if table is None:
            return None, None, stats
        return table, kept_in_order(row_order(table, order), kept), stats

    groups = keyed(parts)
    stats = ScanStats()
    # each key's rows written into the frame by the thread that read them, in the keys' order
    builder = FrameBuilder(out, capacity=sum(_most_rows(g, start_ns, end_ns) for g in groups))

    def into(turn: int) -> tuple[ScanStats, tuple[pa.Table, Any] | None]:
        table, rank, read = None, None, ScanStats()
        try:
            table, rank, read = one(groups[turn])
        finally:  # a failed read still takes its turn: the keys after it must not wait for it
            at = builder.claim(read.rows if table is not None else 0, turn=turn)
        if table is None:
            return read, None
        if at is None:  # more rows than the catalog foresaw: added after the others, in order
            return read, (table, rank)
        builder.put(at, table, rank)
        return read, None

    late = []
    for read, left in each(into, list(range(len(groups))), workers):
        stats.add(read)
        if left is not None:
            late.append(left)
    for table, rank in late:
        builder.add(table, rank)
    return builder.frame(), stats


def kept_in_order(order: np.ndarray | None, kept: np.ndarray | None) -> np.ndarray | None:
    """The rows `kept` (a mask; None: all) in `order` (None: as they are): the positions a frame takes them from."""
    if kept is None:
        return order
    if order is None:
        return np.flatnonzero(kept)
    return order[kept[order]]


def output_schema(parts: Sequence[Part], schema: TableSchema, *, keep: Collection[str], skip: Collection[str],
                  columns: Collection[str] | None) -> pa.Schema:
    """The columns a read of the parts gives: those some part fills (and `keep`, and the time, which every part
    holds, filled or not: an undated paste's), less `skip`, of `columns`."""
    target = arrow_schema(schema)
    filled = frozenset().union(*(p.columns for p in parts), ["timestamp"])
    return pa.schema([target.field(n) for n in target.names if (n in filled or n in keep) and n not in skip
                      and (columns is None or n in columns)])


def keyed(parts: Sequence[Part]) -> list[list[Part]]:
    """The parts key by key, in the order the keys first come."""
    by_key: dict[str, list[Part]] = {}
    for part in parts:
        by_key.setdefault(part.key, []).append(part)
    return list(by_key.values())


def _most_rows(group: list[Part], start_ns: int | None, end_ns: int | None) -> int:
    """The rows of a key's row groups in the window: as many as a read of it can keep."""
    return sum(rows for part in group for lo, hi, rows in part.groups if overlaps(lo, hi, start_ns, end_ns))


def each(work: Callable[[Any], Any], items: list[Any], workers: int) -> list[Any]:
    if workers > 1 and len(items) > 1:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(work, items))
    return [work(i) for i in items]


