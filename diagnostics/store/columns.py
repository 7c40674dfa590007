"""Rows read from the store's parts written into pandas columns as each key's rows arrive.

A wide read (a fleet's hours of link samples: millions of rows by some thirty columns) once joined every key's Arrow
table and then converted the whole: two copies of the rows at the peak, the second made of pages the process had
never touched. Where fresh pages are dear (a virtual machine whose host backs each page on first touch, seconds a
gigabyte) that was most of the read's time. Here each column is allocated once, for as many rows as the read can
hold (pages never written cost nothing), each key's rows are written into it in order as soon as they are read, and
the key's Arrow table is let go of at once, so its memory serves the next key's.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any, Protocol

import numpy as np
import pandas as pd
import pyarrow as pa

_PANDAS: dict[pa.DataType, Any] = {
    pa.int8(): pd.Int8Dtype(), pa.int16(): pd.Int16Dtype(), pa.int32(): pd.Int32Dtype(), pa.int64(): pd.Int64Dtype(),
    pa.bool_(): pd.BooleanDtype(), pa.string(): pd.StringDtype(),
}
_NAT = np.iinfo(np.int64).min
_STAMP = pa.timestamp("ns", tz="UTC")


class FrameBuilder:
    """A frame of the schema's columns (the normalized tables' dtypes: nullable ints, categories, UTC times) filled
    table by table, each table's rows (in `order`, given) after those of the tables before it.

    `add` writes a table after the last. Several threads fill at once with `claim` and `put`: the n-th claim
    (`turn` n, counted from 0) waits for those before it, so the rows lie in the order of the turns whichever
    thread reads faster, and the writing itself, most of the work, runs side by side. `capacity` is the most rows
    foreseen; `add` grows the columns past it, `claim` never does (another thread may be writing)."""

    def __init__(self, schema: pa.Schema, *, capacity: int) -> None:
        self.schema = schema
        self.rows = 0
        self._capacity = capacity
        self._columns = [_column(f.type, capacity) for f in schema]
        self._turn = 0
        self._full = False
        self._ready = threading.Condition()

    def add(self, table: pa.Table, order: np.ndarray | None = None) -> None:
        """The table's rows (`order`: those rows, in that order) after those already added (the columns grow as
        needed)."""
        count = _count(table, order)
        if self.rows + count > self._capacity:
            self._capacity = max(self.rows + count, 2 * self._capacity)
            for column in self._columns:
                column.grow(self._capacity)
        at, self.rows = self.rows, self.rows + count
        self.put(at, table, order)

    def claim(self, rows: int, *, turn: int | None = None) -> int | None:
        """Where the next `rows` rows go, once every turn before `turn` has claimed its own (None: now). None when
        they do not fit (more rows than were foreseen), nor will any later turn's: those tables are `add`ed after
        the others, in turn order, once no thread is writing."""
        with self._ready:
            if turn is not None:
                self._ready.wait_for(lambda: self._turn == turn)
            self._turn += 1
            self._ready.notify_all()
            self._full = self._full or self.rows + rows > self._capacity
            if self._full:
                return None
            at, self.rows = self.rows, self.rows + rows
        return at

    def put(self, at: int, table: pa.Table, order: np.ndarray | None = None) -> None:
        """The table's rows (`order`: those rows, in that order) at the rows claimed for them. The table holds some
        of the schema's columns, of its types: one it lacks (a part leaves empty about half a window's) is nulls."""
        count = _count(table, order)
        if not count:  # an empty table's place is the next table's too: it must write nothing there
            return
        names = table.schema.names
        at_name = {n: i for i, n in enumerate(names)}
        for field, column in zip(self.schema, self._columns, strict=True):
            i = at_name.get(field.name)
            if i is None:
                column.nulls(at, count)
            else:
                column.put(at, table.column(i), order)

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame({f.name: c.done(self.rows) for f, c in zip(self.schema, self._columns, strict=True)},
                            copy=False)


def frame_of(table: pa.Table, order: np.ndarray | None = None) -> pd.DataFrame:
    """One table (`order`: those rows, in that order) as a frame of the normalized tables' dtypes."""
    builder = FrameBuilder(table.schema, capacity=_count(table, order))
    builder.add(table, order)
    return builder.frame()


def frame_of_all(tables: Iterable[tuple[pa.Table, np.ndarray | None]], schema: pa.Schema, *,
                 capacity: int) -> pd.DataFrame:
    """Tables one after another (each its `order`'s rows in that order) as one frame."""
    builder = FrameBuilder(schema, capacity=capacity)
    for table, order in tables:
        builder.add(table, order)
    return builder.frame()


class _Column(Protocol):
    def grow(self, capacity: int) -> None: ...
    def put(self, at: int, data: pa.ChunkedArray, order: np.ndarray | None) -> None: ...
    def nulls(self, at: int, count: int) -> None: ...
    def done(self, rows: int) -> Any: ...


def _count(data: pa.Table | pa.ChunkedArray, order: np.ndarray | None) -> int:
    """The rows a table or column gives: `order`'s, else all of its own."""
    return len(data) if order is None else len(order)


def _column(kind: pa.DataType, capacity: int) -> _Column:
    if pa.types.is_dictionary(kind):
        return _Codes(capacity)
    if pa.types.is_timestamp(kind):
        return _Times(capacity)
    if pa.types.is_floating(kind):
        return _Floats(capacity)
    if pa.types.is_integer(kind) or pa.types.is_boolean(kind):
        return _Masked(kind, capacity)
    return _Pieces(kind)


def _write(into: np.ndarray, at: int, values: np.ndarray, order: np.ndarray | None) -> None:
    if order is None:
        into[at:at + len(values)] = values
    else:
        # `order` holds positions of the rows: no index to check, and numpy's default ("raise") copies through a
        # buffer when given `out` (measured four times slower)
        np.take(values, order, out=into[at:at + len(order)], mode="clip")


def integers(data: pa.ChunkedArray, none: int) -> np.ndarray:
    """An integer (or boolean) column's values as int64, `none` where null."""
    if not data.null_count:
        return np.asarray(data.to_numpy(), dtype=np.int64)
    values, missing = _unpacked(data, np.dtype(data.type.to_pandas_dtype()))
    return np.where(missing, none, values.astype(np.int64))


def _unpacked(data: pa.ChunkedArray, dtype: np.dtype[Any]) -> tuple[np.ndarray, np.ndarray]:
    """A fixed-width column with nulls as its values (whatever its buffer holds where null) and where it is null,
    read from its buffers: Arrow's compute functions cost more to call than a key's rows to fill."""
    values, missing = [], []
    for chunk in data.chunks:
        validity, buffer = chunk.buffers()[:2]
        lo, hi = chunk.offset, chunk.offset + len(chunk)
        if pa.types.is_boolean(chunk.type):
            values.append(np.unpackbits(np.frombuffer(buffer, np.uint8), count=hi, bitorder="little")[lo:]
                          .view(bool))
        else:
            values.append(np.frombuffer(buffer, dtype, count=hi)[lo:])
        missing.append(np.zeros(len(chunk), bool) if validity is None else
                       ~np.unpackbits(np.frombuffer(validity, np.uint8), count=hi, bitorder="little")[lo:].view(bool))
    if len(values) == 1:
        return values[0], missing[0]
    return np.concatenate(values), np.concatenate(missing)


def _grown(values: np.ndarray, capacity: int) -> np.ndarray:
    bigger = np.empty(capacity, dtype=values.dtype)
    bigger[:len(values)] = values
    return bigger


class _Floats:
    def __init__(self, capacity: int) -> None:
        self.values = np.empty(capacity, np.float64)

    def grow(self, capacity: int) -> None:
        self.values = _grown(self.values, capacity)

    def put(self, at: int, data: pa.ChunkedArray, order: np.ndarray | None) -> None:
        if data.null_count == len(data):
            self.nulls(at, _count(data, order))
            return
        _write(self.values, at, data.to_numpy(), order)  # nulls as NaN

    def nulls(self, at: int, count: int) -> None:
        self.values[at:at + count] = np.nan

    def done(self, rows: int) -> np.ndarray:
        return self.values[:rows]


class _Times:
    """UTC times as nanoseconds, NaT where none."""

    def __init__(self, capacity: int) -> None:
        self.values = np.empty(capacity, np.int64)

    def grow(self, capacity: int) -> None:
        self.values = _grown(self.values, capacity)

    def put(self, at: int, data: pa.ChunkedArray, order: np.ndarray | None) -> None:
        if data.type != _STAMP:
            data = data.cast(_STAMP)
        _write(self.values, at, data.to_numpy().view(np.int64), order)  # null as NaT, the smallest int64

    def nulls(self, at: int, count: int) -> None:
        self.values[at:at + count] = _NAT

    def done(self, rows: int) -> Any:
        # as a UTC dtype, not localized: localizing checks every value and costs fifty times more
        return pd.DatetimeIndex(self.values[:rows].view("datetime64[ns]"), dtype=pd.DatetimeTZDtype(tz="UTC")).array


class _Masked:
    """A nullable integer or boolean: values and a mask of the missing."""

    def __init__(self, kind: pa.DataType, capacity: int) -> None:
        self.boolean = pa.types.is_boolean(kind)
        self.values = np.empty(capacity, dtype=kind.to_pandas_dtype())
        self.mask = np.empty(capacity, dtype=bool)

    def grow(self, capacity: int) -> None:
        self.values, self.mask = _grown(self.values, capacity), _grown(self.mask, capacity)

    def put(self, at: int, data: pa.ChunkedArray, order: np.ndarray | None) -> None:
        count, nulls = _count(data, order), data.null_count
        if nulls == len(data):  # nothing filled (a lane column of NVLink rows): no values to read or reorder
            self.nulls(at, count)
            return
        if not nulls:
            _write(self.values, at, data.to_numpy(), order)
            self.mask[at:at + count] = False
            return
        values, missing = _unpacked(data, self.values.dtype)
        _write(self.values, at, values, order)
        _write(self.mask, at, missing, order)

    def nulls(self, at: int, count: int) -> None:
        self.values[at:at + count] = 0
        self.mask[at:at + count] = True

    def done(self, rows: int) -> Any:
        if self.boolean:
            return pd.arrays.BooleanArray(self.values[:rows], self.mask[:rows])
        return pd.arrays.IntegerArray(self.values[:rows], self.mask[:rows])


class _Codes:
    """A category: each row's code among the values in the order first seen, ranked by value at the end (every
    table has a dictionary of its own, each chunk of it too: each looked up once, never row by row)."""

    def __init__(self, capacity: int) -> None:
        self.codes = np.empty(capacity, np.int32)
        self.seen: dict[str, int] = {}
        self._lock = threading.Lock()

    def grow(self, capacity: int) -> None:
        self.codes = _grown(self.codes, capacity)

    def put(self, at: int, data: pa.ChunkedArray, order: np.ndarray | None) -> None:
        pieces = []
        for chunk in data.chunks:
            if not len(chunk):
                continue
            names = chunk.dictionary.to_pylist()
            with self._lock:
                codes = [-1 if v is None else self.seen.setdefault(v, len(self.seen)) for v in names]
            lookup = np.array([*codes, -1], dtype=np.int32)
            if chunk.null_count:
                indices, missing = _unpacked(pa.chunked_array([chunk.indices]),
                                              np.dtype(chunk.indices.type.to_pandas_dtype()))
                indices = np.where(missing, len(names), indices)
            else:
                indices = chunk.indices.to_numpy()
            pieces.append(lookup[indices])
        if pieces:
            _write(self.codes, at, pieces[0] if len(pieces) == 1 else np.concatenate(pieces), order)
        else:
            self.nulls(at, _count(data, order))

    def nulls(self, at: int, count: int) -> None:
        self.codes[at:at + count] = -1

    def ranked(self, rows: int) -> tuple[list[str], np.ndarray]:
        """The values some row holds, sorted, and each row's code among them (-1 for null), in the integers pandas
        keeps a category's codes in (it would convert them otherwise): a dictionary's values no row kept (a row
        group read whole, its rows outside the window) are no category."""
        codes = self.codes[:rows]
        held = np.zeros(len(self.seen) + 1, dtype=bool)  # the last stands for null (code -1), left out
        held[codes[::_SAMPLED]] = True  # every value a window holds fills many rows: some rows usually find them all
        if not held[:-1].all():
            held[codes] = True  # a mark per row: half a count's cost over a window's millions of rows
        values = sorted(v for v, code in self.seen.items() if held[code])
        at = [self.seen[v] for v in values]
        kind = _code_type(len(values))
        if at == list(range(len(self.seen))):  # every value held, first seen in order (a fleet's node names): as is
            return values, codes.astype(kind)
        rank = np.full(len(self.seen) + 1, -1, dtype=kind)
        rank[at] = np.arange(len(values), dtype=kind)
        return values, np.take(rank, codes, mode="wrap")  # -1 wraps to the last, null's

    def done(self, rows: int) -> pd.Categorical:
        values, codes = self.ranked(rows)
        return pd.Categorical.from_codes(codes, categories=pd.Index(values, dtype="str"))


_SAMPLED = 64  # rows apart, the rows whose values are looked for first


def _code_type(count: int) -> np.dtype[Any]:
    """The integers pandas keeps the codes of a category of `count` values in."""
    for kind in (np.int8, np.int16, np.int32):
        if count < np.iinfo(kind).max:
            return np.dtype(kind)
    return np.dtype(np.int64)


class _Pieces:
    """Any other type (texts): each table's values kept in Arrow, converted once at the end."""

    def __init__(self, kind: pa.DataType) -> None:
        self.kind = kind
        self.pieces: dict[int, pa.ChunkedArray] = {}  # by the row they start at

    def grow(self, capacity: int) -> None:
        return

    def put(self, at: int, data: pa.ChunkedArray, order: np.ndarray | None) -> None:
        self.pieces[at] = data if order is None else data.take(order)

    def nulls(self, at: int, count: int) -> None:
        self.pieces[at] = pa.chunked_array([pa.nulls(count, self.kind)])

    def done(self, rows: int) -> Any:
        chunks = [c for _, piece in sorted(self.pieces.items()) for c in piece.chunks]
        return pa.chunked_array(chunks, type=self.kind).to_pandas(types_mapper=_PANDAS.get).array
