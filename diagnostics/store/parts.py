"""The store's Parquet files ("parts"): written in time-sorted row groups, read back by window.

Each part holds one partition's rows from one ingested file in row groups that each cover whole hours of readings
(each link's readings inside a group in time order), so the groups' time ranges are tight and a window's read
skips the hours outside it. Their ranges are kept in the catalog (catalog.py).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import InputError
from ..tables import TableSchema
from .columns import FrameBuilder, frame_of_all
from .rowkeys import distinct_rows, row_order

if TYPE_CHECKING:
    from .catalog import Part

# Arrow's default pool (mimalloc) hands freed pages back to the system as soon as a read lets go of them, so a read of
# hundreds of parts pays for its pages over and over in the kernel: the system allocator keeps them for the next part.
# ARROW_DEFAULT_MEMORY_POOL, when set, still chooses.
if "ARROW_DEFAULT_MEMORY_POOL" not in os.environ and pa.default_memory_pool().backend_name == "mimalloc":
    pa.set_memory_pool(pa.system_memory_pool())

ROW_GROUP_NS = 3_600_000_000_000  # row groups cover whole hours of readings
MIN_GROUP_ROWS = 4096
PART_TABLES = {"link_samples": "node", "step_samples": "job"}

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
            values = series.astype("string")
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


def write_part(path: Path, frame: pd.DataFrame, schema: TableSchema, order: Iterable[str]) -> PartInfo:
    """Write one partition's rows: ordered by (time bucket, `order` columns, time), a row group per bucket.

    Only the columns the rows fill are written (a reader makes the others as nulls, as it does for an older
    writer's part), with statistics for the time alone (the catalog keeps each row group's range; a rebuilt catalog
    reads it from them): every read parses a part's footer, and the schema's empty columns and their statistics were
    most of it. Written under a hidden name and renamed, so a reader never sees half a file."""
    t = _times(frame)
    nat = np.iinfo(np.int64).min
    keys = [_sort_codes(frame[c]) for c in reversed(list(order))]
    span = group_span(t[t != nat])
    hour = np.where(t == nat, nat, t // span)
    rows = np.lexsort([t, *keys, hour])
    filled = tuple(c for c in frame.columns if frame[c].notna().any())
    table = to_arrow(frame.iloc[rows].reset_index(drop=True), schema, {*filled, "timestamp"})
    hours = hour[rows]
    bounds = [0, *(np.flatnonzero(hours[1:] != hours[:-1]) + 1).tolist(), len(rows)]
    tmp = path.with_name(f".{path.name}.tmp")
    with pq.ParquetWriter(tmp, table.schema, write_statistics=["timestamp"]) as writer:
        for lo, hi in pairwise(bounds):
            writer.write_table(table.slice(lo, hi - lo), row_group_size=hi - lo)
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
        values = series.astype("string")
        codes, _ = pd.factorize(values, sort=True)
        return np.asarray(codes)
    return np.asarray(pd.to_numeric(series, errors="coerce").to_numpy(np.float64, na_value=-1.0))


@dataclass
class ScanStats:
    """What a read touched: files opened, row groups read (those left after pruning) and their rows, rows kept."""

    files: int = 0
    row_groups: int = 0
    rows_scanned: int = 0
    rows: int = 0
    unreadable: dict[str, str] = field(default_factory=dict)  # key -> why its parts were not read (`read_parts`)

    def add(self, other: ScanStats) -> None:
        self.files += other.files
        self.row_groups += other.row_groups
        self.rows_scanned += other.rows_scanned
        self.rows += other.rows
        self.unreadable.update(other.unreadable)


def read_parts(parts: Sequence[Part], schema: TableSchema, start_ns: int | None, end_ns: int | None, *,
               order: Sequence[str], keep: Collection[str] = (), skip: Collection[str] = (),
               workers: int = 2, exact: bool = True, columns: Collection[str] | None = None,
               select: Selection | None = None, partial: bool = False) -> tuple[pd.DataFrame, ScanStats]:
    """The parts' rows with timestamps in (start, end] (every row without bounds), key by key as the parts come,
    each key's rows ordered by `order` then time; only the columns some part fills (and `keep`), less `skip`.

    Row groups whose time range (from the catalog) lies outside the window are not read, and only row groups
    that cross a bound are filtered. Files are read `workers` at a time (Arrow decodes outside the GIL). A part
    of other column types than the schema's (an older writer) is cast to it. Measured on this layout, reading
    each file's chosen row groups directly is about twice as fast as a pyarrow dataset scan with the same
    pruning: the dataset's per-fragment filtering and projection cost more than the rows themselves. `exact=False`
    keeps the whole of a row group that crosses the window's start (a reader that bounds its own rows, as the
    analysis engine does, is spared the filter). `columns` reads only those (of the others); `select` keeps only
    the rows whose values of its columns it chooses, before they are ordered. `partial`: a key with a part that
    cannot be read (cut, changed or deleted after it was written) is left out, and why said in the stats'
    `unreadable`, rather than failing the read of every key."""
    target = arrow_schema(schema)
    filled = frozenset().union(*(p.columns for p in parts))
    out = pa.schema([target.field(n) for n in target.names if (n in filled or n in keep) and n not in skip
                     and (columns is None or n in columns)])
    by_key: dict[str, list[Part]] = {}
    for part in parts:
        by_key.setdefault(part.key, []).append(part)
    lower = start_ns if exact else None
    names = out.names
    if select is not None:  # what names a row first: the rest only of the rows kept, a key at a time
        names = [n for n in out.names if n in select.columns]

    def one(group: list[Part]) -> tuple[pa.Table | None, Any, ScanStats]:
        try:
            table, stats = _read_key(group, out, names, start_ns, end_ns, lower)
        except InputError as exc:
            if not partial:
                raise
            return None, None, ScanStats(unreadable={group[0].key: str(exc)})
        if table is None:
            return None, None, stats
        if select is not None:  # each key's distinct identities and each row's, where the workers share the work;
            first, combination = distinct_rows(table, table.column_names)  # its rows' identities are not held
            return table.take(first), combination.astype(np.int32), stats
        return table, row_order(table, order), stats

    groups = list(by_key.values())
    stats = ScanStats()
    if select is None:  # each key's rows written into the frame by the thread that read them, in the keys' order
        builder = FrameBuilder(out, capacity=sum(_most_rows(g, start_ns, end_ns) for g in groups))

        def into(turn: int) -> tuple[ScanStats, tuple[pa.Table, Any] | None]:
            table, rank, read = None, None, ScanStats()
            try:
                table, rank, read = one(groups[turn])
            finally:  # a failed read still takes its turn: the keys after it must not wait for it
                at = builder.claim(table.num_rows if table is not None else 0, turn=turn)
            if table is None:
                return read, None
            if at is None:  # more rows than the catalog foresaw: added after the others, in order
                return read, (table, rank)
            builder.put(at, table, rank)
            return read, None

        late = []
        for read, left in _each(into, list(range(len(groups))), workers):
            stats.add(read)
            if left is not None:
                late.append(left)
        for table, rank in late:
            builder.add(table, rank)
        return builder.frame(), stats
    done = _each(one, groups, workers)
    for _, _, s in done:
        stats.add(s)
    read = [(t, o) for t, o, _ in done if t is not None]
    tables = _selected(read, [g for g, (t, _, _) in zip(groups, done, strict=True) if t is not None], select, out,
                       order, workers,
                       read=lambda group, names: _read_key(group, out, names, start_ns, end_ns, lower)[0]) \
        if read else []
    stats.rows = sum(t.num_rows for t, _ in tables)
    return frame_of_all(tables, out, capacity=stats.rows), stats


def _most_rows(group: list[Part], start_ns: int | None, end_ns: int | None) -> int:
    """The rows of a key's row groups in the window: as many as a read of it can keep."""
    return sum(rows for part in group for lo, hi, rows in part.groups if _overlaps(lo, hi, start_ns, end_ns))


def _each(work: Callable[[Any], Any], items: list[Any], workers: int) -> list[Any]:
    if workers > 1 and len(items) > 1:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(work, items))
    return [work(i) for i in items]


def _read_key(group: list[Part], out: pa.Schema, names: Collection[str], start_ns: int | None, end_ns: int | None,
              lower: int | None) -> tuple[pa.Table | None, ScanStats]:
    """One key's rows in the window, `names` of the schema `out`'s columns, its parts' rows one after another (the
    same rows, in the same order, whichever columns are asked)."""
    stats, tables = ScanStats(), []
    schema = pa.schema([f for f in out if f.name in names])
    for part in group:
        chosen = [i for i, (lo, hi, _) in enumerate(part.groups) if _overlaps(lo, hi, start_ns, end_ns)]
        if not chosen:
            continue
        # opened as a local file and read as asked: a filesystem's layer and its read-ahead threads cost more than
        # a small part's rows; a column the part leaves empty (most parts fill about half the table's) or lacks
        # (an older writer's) is not decoded here but made as nulls by `_cast`
        filtered = any(not _inside(*part.groups[i][:2], lower, end_ns) for i in chosen)
        wanted = [n for n in schema.names if n in part.columns]
        reading = [*wanted, "timestamp"] if filtered and "timestamp" not in wanted else wanted
        try:
            with pa.OSFile(str(part.path)) as source:
                table = pq.ParquetFile(source, pre_buffer=False).read_row_groups(chosen, columns=reading,
                                                                                 use_threads=False)
        except FileNotFoundError as exc:  # gone since the catalog listed it
            raise InputError("a part of the store the catalog lists is missing: it was deleted after it was "
                             "written; ingest its sources into a new store", source=str(part.path)) from exc
        except (pa.ArrowException, OSError) as exc:  # cut short or overwritten since the catalog listed it
            raise InputError(f"a part of the store cannot be read ({exc}): it was cut or changed after it was "
                             "written; ingest its sources into a new store", source=str(part.path)) from exc
        stats.files += 1
        stats.row_groups += len(chosen)
        stats.rows_scanned += table.num_rows
        if filtered:
            table = table.filter(_in_window(table.column("timestamp"), lower, end_ns))
        tables.append(_cast(table, schema))
    if not tables:
        return None, stats
    table = tables[0] if len(tables) == 1 else pa.concat_tables(tables)
    stats.rows = table.num_rows
    return table, stats


@dataclass(frozen=True)
class Selection:
    """Rows chosen by their values of some columns: `keep` is handed each distinct combination of them once (all
    keys' together, as a table) and says which to keep."""

    columns: Sequence[str]
    keep: Callable[[pa.Table], np.ndarray]


def _selected(tables: list[tuple[pa.Table, np.ndarray]], groups: list[list[Part]], select: Selection, out: pa.Schema,
              order: Sequence[str], workers: int, *,
              read: Callable[[list[Part], list[str]], pa.Table | None]) -> list[tuple[pa.Table, np.ndarray | None]]:
    """Each key's rows whose identities `select` keeps (asked once, of every key's distinct identities and each
    row's, as `distinct_rows` gives them), each key's ordered: the key's other columns `read` (the same rows as its
    identities) only where it keeps a row, its kept rows' identities taken from its distinct ones."""
    keep = np.asarray(select.keep(pa.concat_tables([d for d, _ in tables], promote_options="default")), dtype=bool)
    rest = [n for n in out.names if n not in tables[0][0].column_names]
    offsets = np.cumsum([0] + [d.num_rows for d, _ in tables[:-1]]).tolist()

    def one(at: int) -> tuple[pa.Table, np.ndarray | None] | None:
        (distinct, combination), lo = tables[at], offsets[at]
        mine = keep[lo:lo + distinct.num_rows][combination]
        if not mine.any():
            return None
        named = distinct.take(pa.array(combination[mine]))
        if rest:
            others = read(groups[at], rest)
            assert others is not None and others.num_rows == len(mine)
            others = others.filter(pa.array(mine))
            columns = {n: named.column(n) if n in named.column_names else others.column(n) for n in out.names}
            named = pa.Table.from_arrays(list(columns.values()), schema=out)
        return named, row_order(named, order)

    return [t for t in _each(one, list(range(len(tables))), workers) if t is not None]


def _overlaps(lo: int | None, hi: int | None, start: int | None, end: int | None) -> bool:
    if start is None and end is None:
        return True
    if lo is None or hi is None:
        return False  # an undated row group has no reading in a window
    return (start is None or hi > start) and (end is None or lo <= end)


def _inside(lo: int | None, hi: int | None, start: int | None, end: int | None) -> bool:
    if start is None and end is None:
        return True
    return lo is not None and hi is not None and (start is None or lo > start) and (end is None or hi <= end)


def _in_window(t: pa.ChunkedArray, start: int | None, end: int | None) -> pa.ChunkedArray:
    stamp = pa.timestamp("ns", tz="UTC")
    mask = None
    if start is not None:
        mask = pc.greater(t, pa.scalar(start, stamp))
    if end is not None:
        upto = pc.less_equal(t, pa.scalar(end, stamp))
        mask = upto if mask is None else pc.and_(mask, upto)
    return pc.fill_null(mask, False)


def _cast(table: pa.Table, schema: pa.Schema) -> pa.Table:
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
