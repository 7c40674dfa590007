"""Rows' identities as small integer codes: the order a read hands a key's rows in (`row_order`: link by link, each
in time order) and each distinct combination of identities (`distinct_rows`), computed from Arrow columns without
converting them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .columns import integers

_STAMP = pa.timestamp("ns", tz="UTC")


def row_order(table: pa.Table, keys: Iterable[str]) -> np.ndarray | None:
    """The order of rows by the key columns (by value, NA first) then time (None: already so): each key's rows
    together, in time order.

    Row groups come hour by hour, each link by link, so a stable sort by key alone (timsort, a few passes over
    sorted runs) usually leaves every link in time order; a full sort only when not."""
    if table.num_rows < 2:
        return None
    schema = table.schema
    names = [k for k in keys if schema.get_field_index(k) >= 0]  # a table's names are a list built at each ask
    key = np.zeros(table.num_rows, dtype=np.int64)
    for name in names:
        codes, bits = _rank_codes(name, table.column(name))
        key = (key << bits) | codes
    t = table.column("timestamp")
    t = (t if t.type == _STAMP else t.cast(_STAMP)).to_numpy().view(np.int64)  # NaT: the least
    if ((key[1:] > key[:-1]) | ((key[1:] == key[:-1]) & (t[1:] > t[:-1]))).all():
        return None  # as written: nothing to reorder
    order = np.argsort(key, kind="stable")
    k, tt = key[order], t[order]
    if not ((tt[1:] > tt[:-1]) | (k[1:] != k[:-1])).all():
        order = np.lexsort((t, key))
    return None if (np.diff(order) == 1).all() else order


def distinct_rows(table: pa.Table, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The first row of each distinct combination of the columns' values (NA a value of its own), and each row's
    combination (a position in the first): each column's values as small codes, packed into as few integers as
    fit, each run of equal rows then hashed once."""
    packs: list[np.ndarray] = []
    packed, used = np.zeros(table.num_rows, dtype=np.int64), 0
    for name in names:
        codes = value_codes(table.column(name))
        bits = max(int(codes.max()).bit_length(), 1) if len(codes) else 1
        if used and used + bits > 62:
            packs.append(packed)
            packed, used = np.zeros(table.num_rows, dtype=np.int64), 0
        packed = (packed << bits) | codes
        used += bits
    packs.append(packed)
    heads = np.zeros(table.num_rows, dtype=bool)  # a run of equal rows (a link's hour, as parts are written) is
    heads[:1] = True  # hashed once, at its head
    for pack in packs:
        heads[1:] |= pack[1:] != pack[:-1]
    at = np.flatnonzero(heads)
    combination = pd.factorize(packs[0][at])[0].astype(np.int64)
    for pack in packs[1:]:
        codes, uniques = pd.factorize(pack[at])
        combination = pd.factorize(combination * len(uniques) + codes)[0].astype(np.int64)
    first = np.zeros(int(combination.max()) + 1 if len(combination) else 0, dtype=np.int64)
    first[combination[::-1]] = at[::-1]  # the earliest run of each wins
    return first, combination[np.cumsum(heads) - 1]


def value_codes(column: pa.ChunkedArray) -> np.ndarray:
    """Per row, a small code of its value, equal for equal values, 0 for NA (in no order): a dictionary column's
    rank among its chunks' dictionaries' values, an integer's offset from the smallest (its order of first sight
    where the range is too wide to pack)."""
    if column.null_count == len(column):  # a PCIe link's NVSwitch, an NVLink's lane: nothing to read
        return np.zeros(len(column), dtype=np.int64)
    if pa.types.is_dictionary(column.type):
        return _dictionary_ranks(column)[0]
    if not (pa.types.is_integer(column.type) or pa.types.is_boolean(column.type)):
        return _rank_codes("", column)[0]
    if not column.null_count:  # as numpy reads them: Arrow's calls cost more than a key's rows
        values = np.asarray(column.to_numpy(), dtype=np.int64)
        low, high = int(values.min()), int(values.max())
        if high - low < 1 << 40:
            return values - (low - 1)
    none = np.iinfo(np.int64).min
    values = integers(column, none)
    known = values != none
    if not known.any():
        return np.zeros(len(values), dtype=np.int64)
    low, high = int(values[known].min()), int(values[known].max())
    if high - low >= 1 << 40:  # too wide to pack: the values' order of first sight instead
        return np.where(known, pd.factorize(values)[0] + 1, 0)
    return np.where(known, values - low + 1, 0)


_BITS = {"node_id": 20, "gpu": 12, "link_type": 4, "link": 12, "lane": 8}


def _rank_codes(name: str, column: pa.ChunkedArray) -> tuple[np.ndarray, int]:
    """Per row, the rank of its value among the column's distinct values, NA as 0; and the bits it takes.
    A dictionary column is ranked through its (small) dictionaries, never value by value."""
    bits = _BITS.get(name, 20)
    if pa.types.is_dictionary(column.type):
        codes, count = _dictionary_ranks(column)
        return codes, max(bits, (count + 1).bit_length())
    if pa.types.is_string(column.type):
        uniques = pc.unique(column).drop_null()
        ordered = pc.take(uniques, pc.array_sort_indices(uniques))
        found = pc.fill_null(pc.add(pc.index_in(column, value_set=ordered), 1), 0)
        return np.asarray(found.to_numpy(), dtype=np.int64), max(bits, (len(ordered) + 1).bit_length())
    if column.null_count == len(column):  # a lane column of NVLink rows: nothing to read
        return np.zeros(len(column), dtype=np.int64), bits
    return integers(column, -1) + 1, bits


def _dictionary_ranks(column: pa.ChunkedArray) -> tuple[np.ndarray, int]:
    """Per row, the rank of its value among its column's dictionaries' values (sorted), NA as 0; and how many
    values. A value no row holds takes a rank that none uses: the rows' order is the same as among the held alone,
    and each chunk's few values are ranked once, with no pass over the rows to find which are held."""
    chunks = [c for c in column.chunks if len(c)]
    dictionaries = [c.dictionary.to_pylist() for c in chunks]
    rank = {v: i for i, v in enumerate(sorted({v for d in dictionaries for v in d if v is not None}), 1)}
    ranks, at = np.zeros(len(column), dtype=np.int64), 0
    for chunk, names in zip(chunks, dictionaries, strict=True):
        lookup = np.array([*(rank.get(v, 0) for v in names), 0], dtype=np.int64)  # the last: NA's
        indices = chunk.indices
        # every index is in range, NA's made the last: "clip" checks none, some times faster than indexing
        np.take(lookup, (pc.fill_null(indices, len(names)) if chunk.null_count else indices).to_numpy(),
                out=ranks[at:at + len(chunk)], mode="clip")
        at += len(chunk)
    return ranks, len(rank)
