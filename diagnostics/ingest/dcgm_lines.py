"""Split a batch of exposition lines into series, value and timestamp with pyarrow's compute kernels.

Python's per-line loop costs microseconds a line and a day of scrapes is a million lines, so lines are read by
pyarrow's CSV reader as one text column (multi-threaded, streamed in blocks), split at whitespace by compute
kernels, and each distinct series text is looked at once in Python. (A capturing regex over the lines was tried:
RE2 with captures was 30x slower than the whitespace split.) Lines that do not split, and values or timestamps
that are not numbers, are returned by position for a warning that names them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from itertools import islice
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from ..values import TIME_RANGE
from .base import Source
from .stamps import EPOCH_UNITS, Unit

NAT_MS = np.iinfo(np.int64).min  # "no timestamp"
SMALL_INPUT = 4 << 20  # bytes; larger inputs stream through the CSV reader in blocks
_LAST_MS = TIME_RANGE[1].value // 1_000_000  # the last millisecond a reading's time may be (2262)
_PER_MS = {"s": 1e3, "ms": 1.0, "us": 1e-3, "ns": 1e-6}  # milliseconds per unit


@dataclass
class Batch:
    """One batch of lines, positions relative to the batch."""

    comments: list[tuple[int, str]]  # (position, text) of lines starting with '#'
    unmatched: np.ndarray  # positions of non-blank lines that are not `series value [ts]`
    positions: np.ndarray  # positions of sample lines, in order
    series: list[str]  # distinct series texts
    series_code: np.ndarray  # per sample: index into `series`
    value: np.ndarray  # per sample: float64, NaN where `bad_value`
    bad_value: np.ndarray  # per sample: bool, the value or timestamp is not a number
    ts_ms: np.ndarray  # per sample: int64 milliseconds, NAT_MS where none was given
    value_text: pa.Array  # per sample: the value's text
    ts_text: pa.Array  # per sample: the timestamp's text, "" where none was given
    ts_units: frozenset[Unit] = frozenset()  # the epoch units the timestamps were in (`stamps.EPOCH_UNITS`)

    @cached_property
    def raw(self) -> pa.Array:
        """The sample lines' value+timestamp text, for messages: joined only when a message needs it."""
        return pc.binary_join_element_wise(self.value_text, self.ts_text, " ")


def _floats(text: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Strings -> (float64, bad mask); Prometheus spellings (+Inf, NaN) included."""
    try:
        return pc.cast(text, pa.float64()).to_numpy(zero_copy_only=False), np.zeros(len(text), dtype=bool)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        out = np.empty(len(text), dtype=np.float64)
        bad = np.zeros(len(text), dtype=bool)
        for i, item in enumerate(text.to_pylist()):
            try:
                out[i] = float(item)
            except (TypeError, ValueError):
                out[i], bad[i] = np.nan, True
        return out, bad


def _timestamps(ts: pa.Array, at_ms: int) -> tuple[np.ndarray, np.ndarray, frozenset[Unit]]:
    """Milliseconds since the epoch, whether each is no time, and the epoch units the times were told to be in by
    magnitude (`stamps.EPOCH_UNITS`: the exposition format writes milliseconds, OpenMetrics seconds; an exporter
    that writes micro- or nanoseconds is read too)."""
    given = pc.greater(pc.utf8_length(ts), 0).to_numpy(zero_copy_only=False)
    out = np.full(len(ts), at_ms, dtype=np.int64)
    bad = np.zeros(len(ts), dtype=bool)
    if not given.any():
        return out, bad, frozenset()
    text = ts if given.all() else ts.filter(pa.array(given))
    numbers, wrong = _floats(text)
    size, ms, low = np.abs(numbers), numbers.copy(), 0.0
    units: set[Unit] = set()
    for unit, _, below in EPOCH_UNITS:
        mask = (size >= low) & (size < below)
        low = below
        if mask.any():
            units.add(unit)
            with np.errstate(over="ignore"):  # 1e308 s is no time: refused below, not a warning here
                ms[mask] = np.round(numbers[mask] * _PER_MS[unit])
    with np.errstate(invalid="ignore"):
        finite = np.isfinite(ms) & ~wrong & (np.abs(ms) <= _LAST_MS)  # a time no int64 of ms holds is none
    where = np.flatnonzero(given)
    out[where] = np.where(finite, ms, 0).astype(np.int64)
    bad[where] = ~finite
    return out, bad, frozenset(units)


def pick(flat: pa.Array, index: np.ndarray) -> pa.Array:
    return flat.take(pa.array(index, type=pa.int64()))


def blanks(n: int) -> pa.Array:
    return pa.array([""] * n, type=pa.string())


def split(arr: pa.Array, at_ms: int) -> Batch:
    """Lines (a string array without newlines) -> a Batch."""
    comment = pc.starts_with(arr, "#").to_numpy(zero_copy_only=False)
    blank = pc.or_(pc.equal(pc.binary_length(arr), 0), pc.ascii_is_space(arr)).to_numpy(zero_copy_only=False)
    comment_at = np.flatnonzero(comment)
    comments = list(zip(comment_at.tolist(), arr.filter(pa.array(comment)).to_pylist(), strict=True))
    candidate = np.flatnonzero(~comment & ~blank)
    lines = pc.ascii_rtrim_whitespace(arr if len(candidate) == len(arr) else arr.take(pa.array(candidate)))
    # `series value [ts]`, split at the last two whitespace runs. A label value may hold spaces: when the first
    # of three parts is not a whole series (it opens `{` but does not close it), the line had no timestamp and
    # is split again at its last whitespace run only.
    parts = pc.ascii_split_whitespace(lines, max_splits=2, reverse=True)
    count = pc.list_value_length(parts).to_numpy(zero_copy_only=False)
    flat = pc.list_flatten(parts)
    start = parts.offsets.to_numpy()[:-1]
    three = np.flatnonzero(count == 3)
    first = flat.take(pa.array(start[three]))
    open_end = np.flatnonzero(~pc.ends_with(first, "}").to_numpy(zero_copy_only=False))
    opened = np.zeros(len(three), dtype=bool)  # only a part that does not end the label set can leave it open
    opened[open_end] = pc.match_substring(first.take(pa.array(open_end)), "{").to_numpy(zero_copy_only=False)
    broken = three[opened]
    with_ts = three[~opened]
    two = np.flatnonzero(count == 2)
    again = pc.ascii_split_whitespace(lines.take(pa.array(broken)), max_splits=1, reverse=True)
    again_ok = pc.equal(pc.list_value_length(again), 2).to_numpy(zero_copy_only=False)
    again_flat, again_start = pc.list_flatten(again), again.offsets.to_numpy()[:-1][again_ok]

    # (parts, where each line's parts start, its lines, whether it has a timestamp), for each nonempty group
    groups = [(flat, start[two], two, False), (flat, start[with_ts], with_ts, True),
              (again_flat, again_start, broken[again_ok], False)]
    groups = [g for g in groups if len(g[2])] or [(flat, start[two], two, False)]
    rows = np.concatenate([g[2] for g in groups])

    def column(offset: int) -> pa.Array:
        """The `offset`-th part of every sample line (2: the timestamp, "" for a line without one)."""
        picked = [pick(parts_of, at + offset) if offset < 2 or has_ts else blanks(len(lines_of))
                  for parts_of, at, lines_of, has_ts in groups]
        return picked[0] if len(picked) == 1 else pa.concat_arrays(picked)

    # the usual batch: every line has a timestamp, so its series parts were taken above already
    series = first if len(with_ts) == len(count) else column(0)
    value_text, ts_text = column(1), column(2)
    if len(groups) > 1:  # each group is in line order; lines of several groups are put back in line order
        order = pa.array(np.argsort(rows, kind="stable"))
        series, value_text, ts_text = series.take(order), value_text.take(order), ts_text.take(order)
    positions = candidate[np.sort(rows) if len(groups) > 1 else rows]
    unmatched = np.sort(candidate[np.concatenate([np.flatnonzero(count < 2), broken[~again_ok]])])
    encoded = pc.dictionary_encode(series)
    value, bad_value = _floats(value_text)
    ts_ms, bad_ts, ts_units = _timestamps(ts_text, at_ms)
    return Batch(
        comments=comments,
        unmatched=unmatched,
        positions=positions,
        series=encoded.dictionary.to_pylist(),
        series_code=encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64),
        value=value,
        bad_value=bad_value | bad_ts,
        ts_ms=ts_ms,
        value_text=value_text,
        ts_text=ts_text,
        ts_units=ts_units,
    )


def _python_batches(source: Source, skip: int, batch_lines: int) -> Iterator[pa.Array]:
    with source.open_text() as fh:
        for _ in islice(fh, skip):
            pass
        while lines := list(islice(fh, batch_lines)):
            yield pa.array([line.rstrip("\r\n") for line in lines], type=pa.string())


def line_batches(source: Source, batch_lines: int = 100_000) -> Iterator[pa.Array]:
    """The source's lines as string arrays, streamed, one array element per line (blank lines kept).

    pyarrow's CSV reader, with a delimiter and quoting that never split a line, reads the lines; a file it
    refuses (bytes that are not UTF-8, a control character it takes for a delimiter) continues through Python's
    text reader from the line where it stopped, with undecodable bytes replaced. A pasted scrape (indented,
    quoted, fenced) goes through the source's own lines, which come without that wrapping. A cut last line
    (`Source.tail`: the exposition format ends every line with a newline) is not among them.
    """
    if not source.wrapping.none:
        yield from _python_batches(source, 0, batch_lines)
        return
    cut = source.tail is not None
    size = len(source.text) if source.text is not None else (source.path.stat().st_size if source.path else 0)
    if size <= SMALL_INPUT:  # one scrape: splitting the text costs less than starting the CSV reader
        text = source.text
        if text is None:
            assert source.path is not None
            text = source.path.read_bytes().decode("utf-8-sig", "replace")
        lines = text.split("\n")
        yield pa.array(lines[:-1] if cut else lines, type=pa.string())
        return
    done = 0
    try:
        stream: Any = (pa.BufferReader(source.text.encode("utf-8")) if source.text is not None
                       else pa.OSFile(str(source.path)))
        reader = pacsv.open_csv(
            stream,
            read_options=pacsv.ReadOptions(column_names=["line"], block_size=1 << 21),
            parse_options=pacsv.ParseOptions(delimiter="\x1f", quote_char=False, escape_char=False,
                                             ignore_empty_lines=False),
            convert_options=pacsv.ConvertOptions(column_types={"line": pa.string()}, strings_can_be_null=False,
                                                 quoted_strings_can_be_null=False),
        )
        held: pa.Array | None = None  # one batch held back: the last one loses a cut last line
        for batch in reader:
            if held is not None:
                yield held
                done += len(held)
            held = batch.column(0)
        if held is not None:
            yield held.slice(0, len(held) - 1) if cut else held
        return
    except (pa.ArrowInvalid, OSError):
        pass
    yield from _python_batches(source, done, batch_lines)
