"""Reads that keep only some rows, chosen by their identities (a slowed job's flagged links over its day: a few rows in
a hundred of those its nodes hold): the identities are asked of first, and only the chosen rows are converted.

A part with a directory (directory.py) is asked of through it: its identities come from its footer, and only the
row groups that hold a chosen run are decoded, without their identity columns (repeated from the directory). A part
written before directories has its identity columns decoded, each key's distinct identities asked of, and its other
columns read for the keys with a row kept.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from operator import methodcaller
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pyarrow as pa

from ..errors import InputError
from ..tables import TableSchema
from .columns import frame_of_all
from .directory import Chosen
from .keyread import Listed, ScanStats, cast_to, inside, listed, opened, read_key, window_mask
from .parts import each, keyed, output_schema
from .rowkeys import distinct_rows, row_order

if TYPE_CHECKING:
    from .catalog import Part


@dataclass(frozen=True)
class Selection:
    """Rows chosen by their values of some columns: `keep` is handed each distinct combination of them once (all
    keys' together, as a table) and says which to keep."""

    columns: Sequence[str]
    keep: Callable[[pa.Table], np.ndarray]


@dataclass(frozen=True)
class _Key:
    """One key's identities to ask of: the distinct ones, and which is each row's (or each listed run's); `listed`
    when they come from its parts' directories."""

    group: list[Part]
    distinct: pa.Table
    combination: np.ndarray
    listed: Listed | None


def read_selected(parts: Sequence[Part], schema: TableSchema, start_ns: int, end_ns: int, *, order: Sequence[str],
                  select: Selection, keep: Collection[str] = (), skip: Collection[str] = (),
                  columns: Collection[str] | None = None, workers: int = 2,
                  partial: bool = False) -> tuple[pd.DataFrame, ScanStats]:
    """The rows in (start, end] whose identities `select` keeps, as `parts.read_parts` gives rows (key by key, each
    key's in `order` then time, the columns some part fills and `keep`, less `skip`, of `columns`); `select` is asked
    once, of every key's distinct identities together."""
    out = output_schema(parts, schema, keep=keep, skip=skip, columns=columns)
    names = [n for n in out.names if n in select.columns]
    identity = pa.schema([out.field(n) for n in names])

    def identities(group: list[Part]) -> tuple[_Key | None, ScanStats]:
        try:
            through = listed(group, start_ns, end_ns)
            if through is not None:
                if not through:
                    return None, ScanStats()
                runs = pa.concat_tables([cast_to(d.select([n for n in names if n in d.column_names]), identity)
                                         for _, _, d in through])
                first, combination = distinct_rows(runs, names)
                return _Key(group, runs.take(first), combination, through), ScanStats()
            table, stats = read_key(group, out, names, start_ns, end_ns)
        except InputError as exc:
            if not partial:
                raise
            return None, ScanStats(unreadable={group[0].key: str(exc)})
        if table is None:
            return None, stats
        first, combination = distinct_rows(table, names)
        return _Key(group, table.take(first), combination, None), stats

    stats = ScanStats()
    keys = []
    for key, read in each(identities, keyed(parts), workers):
        stats.add(read)
        if key is not None:
            keys.append(key)
    if not keys:
        return frame_of_all([], out, capacity=0), stats
    chosen = np.asarray(select.keep(pa.concat_tables([k.distinct for k in keys])), dtype=bool)
    offsets = np.cumsum([0] + [k.distinct.num_rows for k in keys[:-1]]).tolist()

    def rows(at: int) -> tuple[pa.Table | None, ScanStats] | None:
        key, lo = keys[at], offsets[at]
        mine = chosen[lo:lo + key.distinct.num_rows][key.combination]
        if not mine.any():
            return None
        try:
            return _kept(key, mine)
        except InputError as exc:  # a part cut or changed where only its values are decoded, or since
            if not partial:
                raise
            return None, ScanStats(unreadable={key.group[0].key: str(exc)})

    def _kept(key: _Key, mine: np.ndarray) -> tuple[pa.Table | None, ScanStats] | None:
        if key.listed is not None:
            return _runs(key.listed, mine, out, names, start_ns, end_ns)
        named = key.distinct.take(pa.array(key.combination[mine]))
        rest = [n for n in out.names if n not in names]
        if not rest:
            return named, ScanStats()
        others, read = read_key(key.group, out, rest, start_ns, end_ns)
        assert others is not None and others.num_rows == len(mine)
        others = others.filter(pa.array(mine))
        columns = [named.column(n) if n in named.column_names else others.column(n) for n in out.names]
        return pa.Table.from_arrays(columns, schema=out), read

    tables = []
    for done in each(rows, list(range(len(keys))), workers):
        if done is not None:
            stats.add(done[1])
            if done[0] is not None:
                tables.append((done[0], row_order(done[0], order)))
    stats.rows = sum(t.num_rows for t, _ in tables)
    return frame_of_all(tables, out, capacity=stats.rows), stats


def _runs(listed: Listed, keep: np.ndarray, out: pa.Schema, names: Sequence[str], start_ns: int,
          end_ns: int) -> tuple[pa.Table, ScanStats] | None:
    """The kept runs' rows in the window, part after part: the columns other than the identity decoded from the
    row groups that hold a kept run, the identity repeated from the directory."""
    stats, tables, at = ScanStats(), [], 0
    for part, metadata, directory in listed:
        mine, at = keep[at:at + directory.num_rows], at + directory.num_rows
        if not mine.any():
            continue
        chosen = Chosen(directory, mine)
        groups = chosen.groups()
        values = [n for n in out.names if n not in names and n in part.columns]
        reading = values if "timestamp" in values else [*values, "timestamp"]
        table = opened(part, methodcaller("read_row_groups", groups, columns=reading, use_threads=False),
                       metadata=metadata)
        rows, run = chosen.rows(groups, [metadata.row_group(g).num_rows for g in groups])
        stats.rows_scanned += table.num_rows
        taken = table.take(pa.array(rows))
        same = directory.select([n for n in names if n in directory.column_names]).take(pa.array(run))
        table = pa.Table.from_arrays([*taken.columns, *same.columns], names=[*taken.column_names, *same.column_names])
        stats.files += 1
        stats.row_groups += len(groups)
        if any(not inside(*part.groups[g][:2], start_ns, end_ns) for g in groups):
            table = table.filter(pa.array(window_mask(table.column("timestamp"), start_ns, end_ns)))
        tables.append(cast_to(table, out))
    if not tables:
        return None
    return (tables[0] if len(tables) == 1 else pa.concat_tables(tables)), stats
