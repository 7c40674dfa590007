"""Link samples ordered for array work: each link's rows together and in time order, one row per (link, time),
read from the table at the positions a computation needs (`Prepared`), with the per-row increase of a counter.

The table is never reordered or copied: a link's key is packed into one int64 from its key columns' small codes, and
a table that already comes link by link is recognised without building it. A value that drops is a counter reset
(reboot, driver reload): the new value counts from zero, never a negative increase (`deltas`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..metrics import COUNTERS
from ..times import ns
from ..times import utc as _utc

KEYS: tuple[str, ...] = ("node_id", "gpu", "link_type", "nvswitch", "link", "lane")
KEY_BITS: tuple[int, ...] = (20, 12, 4, 6, 12, 8)  # 62 bits: one int64 per link


def key_codes(series: pd.Series, rows: np.ndarray | None) -> np.ndarray:
    """Small integer codes for one key column at the given rows (NA -> -1), in the column's narrow dtype."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        codes = series.cat.codes.to_numpy()
        return codes if rows is None else codes[rows]
    values = series.array if rows is None else series.array.take(rows)
    if pd.api.types.is_signed_integer_dtype(series.dtype):
        dtype = getattr(series.dtype, "numpy_dtype", series.dtype)
        return np.asarray(values.to_numpy(dtype=dtype, na_value=-1))
    if pd.api.types.is_integer_dtype(series.dtype):
        return np.asarray(values.to_numpy(dtype=np.int64, na_value=-1))
    codes, _ = pd.factorize(values, use_na_sentinel=True)
    return np.asarray(codes)


def floats_at(series: pd.Series, rows: np.ndarray | None) -> np.ndarray:
    """A column's values as floats (NA as NaN) at the given rows, a new array: only those rows converted, and a
    float column's taken straight from its values (one copy, not a copy to fill its NaN and another to take)."""
    if series.dtype == np.float64:
        values = series.to_numpy()
        return values.copy() if rows is None else values[rows]
    taken = series.array if rows is None else series.array.take(rows)
    return np.asarray(taken.to_numpy(np.float64, na_value=np.nan))


def link_keys(codes: list[np.ndarray | None], at: np.ndarray | None = None) -> np.ndarray:
    """One int64 link key from the key columns' codes (a missing column counts as NA), at rows `at`."""
    size = next((len(c) for c in codes if c is not None), 0) if at is None else len(at)
    key = np.zeros(size, dtype=np.int64)
    for c, bits in zip(codes, KEY_BITS, strict=True):
        key <<= bits
        if c is not None:
            key |= (c if at is None else c[at]).astype(np.int64) + 1
    return key


@dataclass
class Prepared:
    """Link samples ordered by (link, time) with one row per (link, timestamp), ready for array work.

    The table itself is never reordered: `rows` are the positions of the ordered rows in `source` (None: the
    source is already in order), and columns are read at the positions a computation needs. Window bounds per
    link and counter arrays are cached, so several windows over the same history cost only their own rows.
    """

    source: pd.DataFrame
    rows: np.ndarray | None  # position in `source` of each ordered row
    t: np.ndarray  # int64 ns UTC per row
    starts: np.ndarray  # bool: first row of a link
    _cache: dict[str, Any] = field(default_factory=dict)

    @property
    def frame(self) -> pd.DataFrame:
        """The ordered rows as a table (built on first use; array work reads `source` at `rows` instead)."""
        return self.cached("frame", lambda: self.source if self.rows is None else self.source.iloc[self.rows])

    @property
    def segment_starts(self) -> np.ndarray:
        return self.cached("heads_idx", lambda: np.flatnonzero(self.starts))

    @property
    def seg(self) -> np.ndarray:
        """The link number (0..links-1) of each row."""
        return self.cached("seg", lambda: np.cumsum(self.starts) - 1)

    @property
    def nseg(self) -> int:
        return len(self.segment_starts)

    @property
    def counters(self) -> list[str]:
        return self.cached("counters", lambda: [c for c in COUNTERS if c in self.source.columns
                                                 and _any_value(self.column(c), self.rows)])

    def positions(self, idx: np.ndarray) -> np.ndarray:
        """Positions in `source` of ordered rows `idx`."""
        return idx if self.rows is None else self.rows[idx]

    def take(self, columns: list[str], idx: np.ndarray) -> pd.DataFrame:
        """The given columns at ordered rows `idx`, indexed 0..n-1."""
        at = self.positions(idx)
        return pd.DataFrame({c: self.source[c].array.take(at) for c in columns})

    def heads(self) -> pd.DataFrame:
        """One row per link: its key columns."""
        return self.cached("heads", lambda: self.take([k for k in KEYS if k in self.source.columns],
                                                       self.segment_starts))

    def column(self, column: str) -> np.ndarray:
        """A numeric column of `source` as float64 (NA -> NaN), in source order."""
        return self.cached(f"c:{column}", lambda: self.source[column].to_numpy(np.float64, na_value=np.nan))

    def values(self, column: str) -> np.ndarray:
        return self.cached(f"v:{column}", lambda: self.column(column)[self.positions(np.arange(len(self.t)))])

    def delta(self, counter: str) -> tuple[np.ndarray, np.ndarray]:
        return self.cached(f"d:{counter}", lambda: deltas(self.values(counter), self.starts))

    def first_after(self, when_ns: int) -> np.ndarray:
        """Per link, the index of its first row later than `when_ns` (one past its last row when none)."""
        def make() -> np.ndarray:
            if len(self.t) == 0:
                return np.zeros(0, dtype=np.int64)
            upto = np.add.reduceat(self.t <= when_ns, self.segment_starts, dtype=np.int64)
            return self.segment_starts + upto
        return self.cached(f"after:{when_ns}", make)

    def last_upto(self, end_ns: int) -> np.ndarray:
        """Per link, the index of its newest row at or before `end_ns` (-1 when none)."""
        hi = self.first_after(end_ns)
        return np.where(hi > self.segment_starts, hi - 1, -1)

    def cached(self, name: str, make: Any) -> Any:
        """A value derived from these rows, made on first use (the rows never change, so it never goes stale)."""
        if name not in self._cache:
            self._cache[name] = make()
        return self._cache[name]


ANY_CHUNK = 1 << 16  # rows gathered at a time while looking for a counter's reading


def _any_value(column: np.ndarray, rows: np.ndarray | None) -> bool:
    """Whether the column holds a reading at any of the rows (a few of the newest rows are looked at first)."""
    recent = column[-4096:] if rows is None else column[rows[-4096:]]
    if not np.isnan(recent).all():
        return True
    if len(column) == 0:
        return False
    if rows is None or len(rows) == len(column):  # every row (reordered): no need to gather them
        return not np.isnan(np.fmax.reduce(column))  # fmax skips NaN: NaN only when every value is NaN
    if np.isnan(np.fmax.reduce(column)):  # no reading on any row: none to look for among these
        return False
    for stop in range(len(rows), 0, -ANY_CHUNK):  # newest first, a chunk at a time: a sparse counter is found early
        if not np.isnan(column[rows[max(stop - ANY_CHUNK, 0):stop]]).all():
            return True
    return False


def prepare(samples: pd.DataFrame) -> Prepared:
    """Order rows by link then time, drop rows without a time and duplicated (link, time) rows (last wins)."""
    frame = samples
    ts = _utc(frame["timestamp"])
    if ts is not frame["timestamp"]:
        frame = frame.assign(timestamp=ts)
    return prepare_rows(frame, ns(frame["timestamp"]), None)


def prepare_rows(frame: pd.DataFrame, t_all: np.ndarray, rows: np.ndarray | None) -> Prepared:
    """`prepare` over the rows at positions `rows` of a table (None: all), given its UTC nanosecond times.

    Only key and time columns are read; the table is not copied or reordered. A table that comes link by link
    is recognised from where its narrow key codes change, without building a wide key per row.
    """
    t = t_all if rows is None else t_all[rows]
    valid = t != np.iinfo(np.int64).min
    if not valid.all():
        keep_at = np.flatnonzero(valid)
        rows = keep_at if rows is None else rows[keep_at]
        t = t[keep_at]
    codes = [key_codes(frame[col], rows) if col in frame.columns else None for col in KEYS]
    starts = np.ones(len(t), dtype=bool)
    if len(t) < 2:
        return Prepared(frame, rows, t, starts)
    change = np.zeros(len(t) - 1, dtype=bool)
    for c in codes:
        if c is not None:
            np.logical_or(change, c[1:] != c[:-1], out=change)
    later = t[1:] > t[:-1]
    if np.logical_or(later, change, out=later).all():  # each run of one link is in time order
        heads = np.concatenate(([0], np.flatnonzero(change) + 1))
        run_keys = link_keys(codes, heads)
        if (np.diff(run_keys) > 0).all():
            starts[1:] = change
            return Prepared(frame, rows, t, starts)
        by_key = np.argsort(run_keys, kind="stable")
        if (np.diff(run_keys[by_key]) > 0).all():  # one run per link: order the runs, not the rows
            sizes = np.diff(np.append(heads, len(t)))[by_key]
            order = run_rows(heads[by_key], heads[by_key] + sizes)[0]
            starts = np.zeros(len(t), dtype=bool)
            starts[np.cumsum(sizes) - sizes] = True
            return Prepared(frame, order if rows is None else rows[order], t[order], starts)
    key = link_keys(codes)
    order = _link_order(key, t)
    key, t = key[order], t[order]
    same = (key[1:] == key[:-1]) & (t[1:] == t[:-1])
    if same.any():
        frame = _coalesced(frame, order if rows is None else rows[order], same)
        keep = np.ones(len(key), dtype=bool)
        keep[:-1] = ~same  # of equal (link, time) rows keep the last, holding each column the group reads
        order, key, t = order[keep], key[keep], t[keep]
    rows = order if rows is None else rows[order]
    starts = np.ones(len(key), dtype=bool)
    starts[1:] = key[1:] != key[:-1]
    return Prepared(frame, rows, t, starts)  # positional access only: the index is left as it came


def _coalesced(frame: pd.DataFrame, positions: np.ndarray, same: np.ndarray) -> pd.DataFrame:
    """The table with the last of each group of rows reading one link at one time (`same[i]`: ordered rows i and
    i + 1 are one such reading) holding, in each column it leaves empty, the newest value another row of its group
    gives: two sources of one instant (a table stating the link's state, a scrape of its counters stating none)
    are one reading, whichever was read last. Only the columns that change are copied; the caller's table is kept."""
    member = np.zeros(len(positions), dtype=bool)
    member[:-1] |= same
    member[1:] |= same
    group = np.cumsum(np.concatenate(([True], ~same)))[member]
    rows = positions[member]
    last = np.flatnonzero(np.append(group[1:] != group[:-1], True))  # each group's kept row, among `rows`
    kept = rows[last]
    changed: dict[str, pd.Series] = {}
    for name in frame.columns:
        column = frame[name]
        empty = column.iloc[kept].isna().to_numpy()
        if not empty.any():
            continue
        filled = column.iloc[rows].groupby(group, sort=False).last()  # the newest value of each group (NA skipped)
        values = filled.to_numpy()[empty]
        present = pd.notna(values)
        if not present.any():
            continue
        patched = column.copy()
        patched.iloc[kept[empty][present]] = values[present]
        changed[str(name)] = patched.array  # by position: the index may repeat
    return frame.assign(**changed) if changed else frame


def _link_order(key: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The row order by (link, time) of rows that are not grouped by link: a table that comes time by time
    (a scrape) needs only a stable sort by link; anything else gets a full sort."""
    if (np.diff(t) >= 0).all():
        return np.argsort(key, kind="stable")
    return np.lexsort((t, key))


def deltas(values: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-row increase since the link's previous reading of the counter (0 on a link's first row) and a reset
    flag (`starts`: a link's first row, as a mask or positions).

    A drop is a reset: the counter restarted at zero, so the increase is the new value. A row without the counter
    (NaN: a field left out of one scrape, a section cut short) adds nothing, and the increase across it is counted
    at the link's next reading, as a scrape gap's is: 10, -, 30 is an increase of 20, not 0.
    """
    d = np.empty_like(values, dtype=np.float64)
    if len(values) == 0:
        return d, np.zeros(0, dtype=bool)
    d[0] = 0.0
    np.subtract(values[1:], values[:-1], out=d[1:])
    gaps = not np.isfinite(d).all()  # one pass, on every series: the rest only where a reading is missing
    if gaps:
        values = _carried(values, starts)
        np.subtract(values[1:], values[:-1], out=d[1:])
    reset = d < 0
    np.copyto(d, values, where=reset)
    reset[starts] = False
    d[starts] = 0.0
    if gaps:  # nan_to_num makes several passes: done in place only when it must
        np.nan_to_num(d, copy=False, nan=0.0)
    return d, reset


def _carried(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Each missing reading as its link's last reading before it (still missing before the link's first)."""
    first = np.zeros(len(values), dtype=bool)
    first[starts] = True
    at = np.where(~np.isnan(values) | first, np.arange(len(values)), 0)
    np.maximum.accumulate(at, out=at)
    return values[at]



def run_rows(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows of each link's run [lo, hi) laid end to end: row indices, their link, and run-start flags."""
    size = np.maximum(hi - lo, 0)
    offsets = np.cumsum(size) - size
    idx = np.arange(int(size.sum()), dtype=np.int64) + np.repeat(lo - offsets, size)
    owner = np.repeat(np.arange(len(lo)), size)
    first = np.zeros(len(idx), dtype=bool)
    first[offsets[size > 0]] = True
    return idx, owner, first
