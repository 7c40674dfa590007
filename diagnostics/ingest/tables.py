"""CSV, JSONL and Parquet files already in a normalized schema (diagnostics/schema.py).

Which table a file holds is told by its columns: the table whose required columns are all present and that shares
the most columns with the file. Unknown columns are dropped with one warning; a value that does not fit its
column's dtype is a warning naming the row (file line for CSV/JSONL) and the value, and that cell becomes NA,
never a guessed number. Large CSV/JSONL files are read in chunks, Parquet by row group.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from ..errors import InputError
from ..tables import TABLES, TableSchema, as_text
from ..values import unheld
from .base import IngestResult, IngestWarning, Source, loads_strict
from .stamps import epoch_note, read_times
from .wrapping import split_lines

CHUNK_ROWS = 200_000
MAX_VALUE_WARNINGS = 20

# Columns a file must hold to be a table of that kind.
REQUIRED: dict[str, tuple[str, ...]] = {
    "link_samples": ("node_id", "gpu", "link_type"),
    "step_samples": ("step_time_ms",),
    "events": ("node_id", "kind"),
    "topology": ("node_id", "a", "b", "relation"),
    "gpus": ("node_id", "gpu", "uuid"),
}
# Columns without which a row says nothing its table can place: such a row is not read, and said (a link reading of
# no link type names no link). A row of no node is not one: it takes the node the rest of the input names.
VALUED: dict[str, tuple[str, ...]] = {"link_samples": ("link_type",)}
ENUMS: dict[str, tuple[str, ...]] = {
    "link_type": ("nvlink", "pcie", "nvswitch"),
    "link_state": ("up", "down", "degraded", "inactive", "unknown"),
    "kind": ("xid", "sxid", "aer", "fabric_state", "recovery_action", "imex_state"),
}


def table_for(columns: list[str], source: str) -> TableSchema:
    """The schema a file's header names, or an InputError saying what is missing."""
    present = set(columns)
    best: tuple[int, str] | None = None
    for name, needed in REQUIRED.items():
        if set(needed) <= present:
            score = len(present & set(TABLES[name].columns))
            if best is None or score > best[0]:
                best = (score, name)
    if best is None:
        near = max(REQUIRED, key=lambda n: len(present & set(TABLES[n].columns)))
        missing = [c for c in REQUIRED[near] if c not in present]
        raise InputError(f"columns match no normalized table; closest is {near}, which needs {', '.join(missing)}",
                         source=source, value=", ".join(columns[:12]))
    return TABLES[best[1]]


def _typed(series: pd.Series, dtype: str) -> bool:
    """Whether a column read from a typed format already has the schema's kind of values."""
    kind = series.dtype
    if dtype.startswith("datetime"):
        return isinstance(kind, pd.DatetimeTZDtype)
    if dtype.startswith("Int"):
        return pd.api.types.is_integer_dtype(kind)
    if dtype.startswith("float"):
        return pd.api.types.is_numeric_dtype(kind) and not pd.api.types.is_bool_dtype(kind)
    if dtype == "boolean":
        return pd.api.types.is_bool_dtype(kind)
    return False


def _coerce(frame: pd.DataFrame, schema: TableSchema, source: str, lines: list[int] | None,
            warnings: list[IngestWarning]) -> pd.DataFrame:
    """Check each value against its column's dtype and enumeration; a bad one becomes NA with a warning."""
    out = frame.copy()
    for col in [c for c in out.columns if c in schema.columns]:
        dtype = schema.columns[col]
        raw = out[col]
        numeric = dtype.startswith(("Int", "float"))
        number = pd.Series(False, index=raw.index)
        if _typed(raw, dtype) and col not in ENUMS and not numeric:
            continue  # a typed column (Parquet) already holds only valid values of its kind
        if dtype.startswith("datetime"):
            parsed: pd.Series = _times(col, raw, source, lines, warnings)
        elif numeric:  # typed or not, a number is one its column can hold (`values.unheld`)
            parsed = pd.to_numeric(raw, errors="coerce").astype("float64")
            number = parsed.notna()
            held = ~unheld(col, parsed.to_numpy(np.float64, na_value=np.nan))
            if dtype.startswith("Int"):
                info = np.iinfo(dtype.lower())
                # below -min, not up to max: as a float, int64's max rounds up to 2**63, which no int64 holds
                within = (parsed >= info.min) & (parsed < -float(info.min))
                held &= (parsed.isna() | ((parsed == parsed.round()) & within)).to_numpy()
                if pd.api.types.is_unsigned_integer_dtype(raw.dtype):  # 2**63 is 2**63 - 1 as a float: exact here
                    held &= raw.to_numpy() <= np.uint64(info.max)
            parsed = parsed.where(held)
            if _typed(raw, dtype) and bool(held.all()):
                continue
        elif dtype == "boolean":
            text = raw.astype("string").str.strip().str.lower()
            parsed = text.map({"true": True, "false": False, "1": True, "0": False, "1.0": True, "0.0": False})
        elif col in ENUMS:
            parsed = as_text(raw).str.strip().str.lower()
            parsed = parsed.where(parsed.isin(ENUMS[col]))
        else:
            out[col] = raw
            continue
        lost = parsed.isna() & raw.notna()
        if not lost.any():
            out[col] = parsed
            continue
        bad = lost & (raw.astype("string").str.strip() != "")
        if col in ENUMS and col in VALUED.get(schema.name, ()):
            bad[:] = False  # its row is not read: said there, with its value
        for idx in bad[bad].index[: max(0, MAX_VALUE_WARNINGS - len(warnings))]:
            line = lines[int(idx)] if lines else None
            where = "" if line else f"row {int(idx) + 1}: "
            why = (f"is not a value {col} can hold (negative, infinite, fractional or above its limit)"
                   if numeric and number[idx] else f"is not a valid {dtype}")
            warnings.append(IngestWarning(source, line, f"{where}{col} = {raw[idx]!r} {why}"))
        out[col] = parsed
    return out


def _times(col: str, raw: pd.Series, source: str, lines: list[int] | None,
           warnings: list[IngestWarning]) -> pd.Series:
    """A time column: ISO 8601 or epoch numbers (said once per file); none of its values a time refuses the file."""
    parsed, units = read_times(raw)
    given = raw.notna() & (raw.astype("string").str.strip() != "")
    if given.any() and not parsed[given].notna().any():
        first = int(np.flatnonzero(given.to_numpy())[0])
        raise InputError(f"the time column {col!r} cannot be read: its values are neither ISO 8601 times nor epoch "
                         "seconds, milliseconds, microseconds or nanoseconds", source=source,
                         line=lines[first] if lines else None, field=col, value=raw.iloc[first])
    note = epoch_note(col, units) if units else None
    if note and not any(w.message == note for w in warnings):
        warnings.append(IngestWarning(source, lines[0] if lines else None, note))
    return parsed


# What a CSV cell holds where its writer had no value (pandas' own defaults for read_csv, less the odd ones).
CSV_NA = frozenset({"", "NA", "N/A", "n/a", "NaN", "nan", "-NaN", "-nan", "null", "NULL", "None", "<NA>", "#N/A"})
# One chunk: its rows and the line of the input each row starts on (None for Parquet, which has no lines).
Chunk = tuple[pd.DataFrame, list[int] | None]


def _csv_frame(rows: list[list[str]], header: list[str]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=header, dtype=object)
    return frame.where(~frame.isin(CSV_NA), None)


def _csv_chunks(source: Source, warnings: list[IngestWarning]) -> Iterator[Chunk]:
    """Rows of the header's width, each with the line it starts on (a quoted cell may span lines); a row of
    another width is a warning naming its line, never a row read into the wrong columns or dropped unsaid."""
    with source.open_text() as fh:
        reader = csv.reader(fh)
        try:
            header = next(reader)
        except StopIteration:
            raise InputError("not a readable CSV table: no header", source=source.name) from None
        except csv.Error as exc:
            raise InputError(f"not a readable CSV table: {exc}", source=source.name, line=1) from None
        rows: list[list[str]] = []
        lines: list[int] = []
        start = reader.line_num + 1
        while True:
            try:
                row = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                warnings.append(IngestWarning(source.name, start, f"not a CSV row: {exc}; not read"))
                start = reader.line_num + 1
                continue
            line, start = start, reader.line_num + 1
            if not row:
                continue
            if len(row) != len(header):
                warnings.append(IngestWarning(source.name, line, f"{len(row)} fields where the header names "
                                                                 f"{len(header)}; row not read"))
                continue
            rows.append(row)
            lines.append(line)
            if len(rows) >= CHUNK_ROWS:
                yield _csv_frame(rows, header), lines
                rows, lines = [], []
        if rows or not lines:
            yield _csv_frame(rows, header), lines


def _jsonl_chunks(source: Source, warnings: list[IngestWarning]) -> Iterator[Chunk]:
    rows: list[dict[str, Any]] = []
    lines: list[int] = []
    for number, text, _ in source.numbered():  # a JSON object shows its own end: a cut one does not parse
        if not text.strip():
            continue
        try:
            item = loads_strict(text)
            if not isinstance(item, dict):
                raise ValueError("not a JSON object")
        except ValueError as exc:
            warnings.append(IngestWarning(source.name, number, f"not a JSON object line: {exc}"))
            continue
        rows.append(item)
        lines.append(number)
        if len(rows) >= CHUNK_ROWS:
            yield pd.DataFrame(rows), lines
            rows, lines = [], []
    if rows:
        yield pd.DataFrame(rows), lines


def _parquet_chunks(source: Source) -> Iterator[Chunk]:
    assert source.path is not None, "Parquet needs a file"
    try:
        handle = pq.ParquetFile(source.path)
        if handle.metadata.num_rows == 0:  # a table with no rows is still a table: its columns say which
            yield handle.schema_arrow.empty_table().to_pandas(), None
        for batch in handle.iter_batches(batch_size=CHUNK_ROWS):
            yield batch.to_pandas(), None
    except Exception as exc:  # pyarrow raises several unrelated types for a damaged file
        raise InputError(f"not a readable Parquet file: {exc}", source=source.name) from None


class TablesReader:
    name = "tables"

    def sniff(self, head: str) -> float:
        first = next((line for line in split_lines(head) if line.strip()), "")
        if first.startswith("{"):
            try:
                keys = list(json.loads(first))
            except ValueError:
                return 0.0
        else:
            keys = [k.strip() for k in first.split(",")]
        try:
            table_for(keys, "")
        except InputError:
            return 0.0
        return 0.9

    def read(self, source: Source, *, node_id: str | None = None) -> IngestResult:
        warnings: list[IngestWarning] = []
        if source.head(4).startswith(b"PAR1"):
            chunks = _parquet_chunks(source)
        elif source.head_text(4096).lstrip().startswith("{"):
            chunks = _jsonl_chunks(source, warnings)
        else:
            chunks = _csv_chunks(source, warnings)
            if source.tail is not None:  # a CSV row no newline ends may be cut inside its last field
                warnings.append(source.tail.warning(source.name, "the row"))
        frames: list[pd.DataFrame] = []
        at: list[int | None] = []  # each row's line (none in Parquet)
        schema: TableSchema | None = None
        for chunk, lines in chunks:
            if schema is None:
                schema = table_for([str(c) for c in chunk.columns], source.name)
                extra = [str(c) for c in chunk.columns if c not in schema.columns]
                if extra:
                    warnings.append(IngestWarning(source.name, 1 if lines is not None else None,
                                                  f"columns not in {schema.name} ignored: {', '.join(extra)}"))
            raw, chunk = chunk, _coerce(chunk, schema, source.name, lines, warnings)
            chunk, lines = _valued(chunk, raw, schema, lines, source.name, warnings)
            at.extend(lines or [None] * len(chunk))
            if node_id is not None and "node_id" in schema.columns:
                chunk["node_id"] = node_id
            if "source" in schema.columns and "source" not in chunk:
                chunk["source"] = [f"{source.name}:{n}" for n in (lines or range(1, len(chunk) + 1))]
            frames.append(schema.conform(chunk))
        if schema is None:
            raise InputError("no rows", source=source.name)
        table = _once_each(pd.concat(frames, ignore_index=True), at, source.name, warnings)
        return IngestResult.of(warnings, **{schema.name: table})


def _valued(chunk: pd.DataFrame, raw: pd.DataFrame, schema: TableSchema, lines: list[int] | None, where: str,
            warnings: list[IngestWarning]) -> tuple[pd.DataFrame, list[int] | None]:
    """The chunk less its rows with no value (or none valid: `raw` holds them as read) in a column its table cannot
    place a row without (`VALUED`), each said with its line."""
    needed = [c for c in VALUED.get(schema.name, ()) if c in chunk.columns]
    if not needed or not (empty := chunk[needed].isna().any(axis=1)).any():
        return chunk, lines
    dropped = np.flatnonzero(empty.to_numpy())
    for count, i in enumerate(dropped):
        line = lines[i] if lines else None
        if count == MAX_VALUE_WARNINGS:
            warnings.append(IngestWarning(where, line, f"and {len(dropped) - count} more rows with no valid "
                                                       f"{' or '.join(needed)}; not read"))
            break
        gone = [c for c in needed if pd.isna(chunk[c].iloc[i])]
        said = "; ".join(_lacking(c, raw[c].iloc[i]) for c in gone)
        warnings.append(IngestWarning(where, line, f"{'' if line else f'row {i + 1}: '}{said}; row not read"))
    keep = ~empty.to_numpy()
    return chunk[keep].reset_index(drop=True), [n for n, k in zip(lines, keep, strict=True) if k] if lines else lines


def _lacking(col: str, value: Any) -> str:
    """Why a row's `col` holds no value its table can use: it was empty, or not one its column allows."""
    allowed = f" (one of {', '.join(ENUMS[col])})" if col in ENUMS else ""
    if pd.isna(value) or not str(value).strip():
        return f"no {col}{allowed}"
    return f"{col} = {value!r} is not a valid {col}{allowed}"


REPEATS_SAID = 10  # repeated rows named one by one; the rest are counted


def _once_each(table: pd.DataFrame, numbers: list[int | None], where: str,
               warnings: list[IngestWarning]) -> pd.DataFrame:
    """A row that repeats an earlier one in every column but its source is one reading written twice (a copy,
    a retried export): read once, and said. Rows are compared by a hash of their values, then exactly."""
    columns = [c for c in table.columns if c != "source"]
    if len(table) < 2 or not columns:
        return table
    hashed = pd.util.hash_pandas_object(table[columns], index=False)
    suspects = hashed.duplicated(keep=False)
    if not suspects.any():
        return table
    candidates = table.loc[suspects, columns]
    again = candidates.duplicated(keep="first")
    first = candidates.groupby(hashed[suspects], sort=False).head(1)
    first_at = {hashed[i]: i for i in first.index}
    repeats = again[again].index
    for count, i in enumerate(repeats):
        if count == REPEATS_SAID:
            warnings.append(IngestWarning(where, numbers[i], f"and {len(repeats) - REPEATS_SAID} more rows repeat "
                                                             "earlier ones; each read once"))
            break
        earlier = numbers[first_at[hashed[i]]]
        warnings.append(IngestWarning(where, numbers[i], f"this row repeats the row of line {earlier} in every value; "
                                                         "read once" if earlier is not None else
                                                         "this row repeats an earlier one in every value; read once"))
    return table.drop(index=repeats).reset_index(drop=True)


READER = TablesReader()
