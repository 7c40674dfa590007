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
from itertools import islice
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from .base import Source

NAT_MS = np.iinfo(np.int64).min  # "no timestamp"
SMALL_INPUT = 4 << 20  # bytes; larger inputs stream through the CSV reader in blocks
SECONDS_BELOW = 100_000_000_000  # a timestamp below this is seconds (OpenMetrics; year 5138), above it milliseconds


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
    raw: pa.Array  # the sample lines' value+timestamp text, for messages


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


def _timestamps(ts: pa.Array, at_ms: int) -> tuple[np.ndarray, np.ndarray]:
    given = pc.greater(pc.utf8_length(ts), 0).to_numpy(zero_copy_only=False)
    out = np.full(len(ts), at_ms, dtype=np.int64)
    bad = np.zeros(len(ts), dtype=bool)
    if not given.any():
        return out, bad
    text = ts.filter(pa.array(given))
    numbers, wrong = _floats(text)
    seconds = np.abs(numbers) < SECONDS_BELOW
    finite = np.isfinite(numbers) & ~wrong
    ms = np.where(seconds, np.round(numbers * 1000), numbers)
    where = np.flatnonzero(given)
    out[where] = np.where(finite, ms, 0).astype(np.int64)
    bad[where] = ~finite
    return out, bad


def pick(flat: pa.Array, index: np.ndarray) -> pa.Array:
    return flat.take(pa.array(index, type=pa.int64()))


def blanks(n: int) -> pa.Array:
    return pa.array([""] * n, type=pa.string())


def split(arr: pa.Array, at_ms: int) -> Batch:
    """Lines (a string array without newlines) -> a Batch."""
    comment = pc.starts_with(arr, "#").to_numpy(zero_copy_only=False)
    blank = pc.equal(pc.binary_length(pc.ascii_trim_whitespace(arr)), 0).to_numpy(zero_copy_only=False)
    comments = [(int(i), str(arr[int(i)].as_py())) for i in np.flatnonzero(comment)]
    candidate = np.flatnonzero(~comment & ~blank)
    lines = pc.ascii_rtrim_whitespace(arr.take(pa.array(candidate)))
    # `series value [ts]`, split at the last two whitespace runs. A label value may hold spaces: when the first
    # of three parts is not a whole series (it opens `{` but does not close it), the line had no timestamp and
    # is split again at its last whitespace run only.
    parts = pc.ascii_split_whitespace(lines, max_splits=2, reverse=True)
    count = pc.list_value_length(parts).to_numpy(zero_copy_only=False)
    flat = pc.list_flatten(parts)
    start = parts.offsets.to_numpy()[:-1]
    three = np.flatnonzero(count == 3)
    first = flat.take(pa.array(start[three]))
    opened = pc.and_(pc.match_substring(first, "{"), pc.invert(pc.ends_with(first, "}")))
    broken = three[opened.to_numpy(zero_copy_only=False)]
    with_ts = three[~opened.to_numpy(zero_copy_only=False)]
    two = np.flatnonzero(count == 2)
    again = pc.ascii_split_whitespace(lines.take(pa.array(broken)), max_splits=1, reverse=True)
    again_ok = pc.equal(pc.list_value_length(again), 2).to_numpy(zero_copy_only=False)
    again_flat, again_start = pc.list_flatten(again), again.offsets.to_numpy()[:-1][again_ok]

    rows = np.concatenate([two, with_ts, broken[again_ok]])
    series = pa.concat_arrays([pick(flat, start[two]), pick(flat, start[with_ts]), pick(again_flat, again_start)])
    value_text = pa.concat_arrays([pick(flat, start[two] + 1), pick(flat, start[with_ts] + 1),
                                   pick(again_flat, again_start + 1)])
    ts_text = pa.concat_arrays([blanks(len(two)), pick(flat, start[with_ts] + 2), blanks(len(again_start))])
    order = pa.array(np.argsort(rows, kind="stable"))
    series, value_text, ts_text = series.take(order), value_text.take(order), ts_text.take(order)
    positions = candidate[np.sort(rows)]
    unmatched = np.sort(candidate[np.concatenate([np.flatnonzero(count < 2), broken[~again_ok]])])
    encoded = pc.dictionary_encode(series)
    value, bad_value = _floats(value_text)
    ts_ms, bad_ts = _timestamps(ts_text, at_ms)
    return Batch(
        comments=comments,
        unmatched=unmatched,
        positions=positions,
        series=encoded.dictionary.to_pylist(),
        series_code=encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64),
        value=value,
        bad_value=bad_value | bad_ts,
        ts_ms=ts_ms,
        raw=pc.binary_join_element_wise(value_text, ts_text, " "),
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
    text reader from the line where it stopped, with undecodable bytes replaced.
    """
    size = len(source.text) if source.text is not None else (source.path.stat().st_size if source.path else 0)
    if size <= SMALL_INPUT:  # one scrape: splitting the text costs less than starting the CSV reader
        text = source.text
        if text is None:
            assert source.path is not None
            text = source.path.read_bytes().decode("utf-8", "replace")
        yield pa.array(text.split("\n"), type=pa.string())
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
        for batch in reader:
            column = batch.column(0)
            done += len(column)
            yield column
        return
    except (pa.ArrowInvalid, OSError):
        pass
    yield from _python_batches(source, done, batch_lines)
