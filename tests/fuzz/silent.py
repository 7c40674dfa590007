"""The quiet failures: a damaged input read with no new warning whose reading changed beyond the line damaged.

A damaging mutation (a deleted, doubled or changed line) may change what the reader returns, but only where the
damaged line speaks, unless a warning (or a refusal) says so. The reading of the input before the mutation and
after it are compared row by row, each row placed by the line its `source` names (lines mapped across the
mutation). Without a new warning:

- a row of an untouched line is neither lost nor doubled, and a doubled line gives no second row (`row lost`,
  `row doubled`: the silent row losses); a changed line's own row may come instead with a later line, its time that
  line's (a device first seen, a counter's first count: the changed line now names another series);
- a number of an untouched row keeps its value, or takes one the damaged line states (`value changed`,
  `value appeared`: the silent wrong numbers); after a deleted or a doubled line it keeps its value;
- a value is not dropped (`value lost`) unless a line was deleted (it may have been the value's);
- a number changed in place (`number`) reads as the number written, or is refused and said.

Columns derived from several lines (a count of merged events, a generation from a lane rate) may change freely.
A counter may read 0 after a deleted line where the input is the short form of `nvidia-smi nvlink -e` (a `Links
0-2, 4-5: Replay/Recovery/CRC Errors: 0` or `Links 1-5: No errors` line): that form states a zero by leaving its
line out, so no reader can tell a deleted line from a zero.
"""

from __future__ import annotations

import difflib
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from diagnostics.ingest.base import IngestResult

from .mutate import Mutation

# the kinds this module finds, by the two counts
LOSSES = ("row lost", "row doubled", "value lost")
WRONG = ("value changed", "value appeared")
_LINE = re.compile(r":(\d+)$")
_RUN_LINE = re.compile(r":(\d+)(?=@|$)")  # `path:line@sha16`, an nccl-tests run's key
_DIGITS = re.compile(r"\d+")
# a device's name: a PCI bus id or a GPU UUID
_BUS_ID = re.compile(r"[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]|GPU-[0-9a-fA-F]{8}(?:-[0-9a-fA-F]+)+")
_SPAN = re.compile(r"\blines (\d+)-(\d+)")
_NAMED = re.compile(r"[A-Za-z].*\d|\d.*[:.]\d")  # a name with a number in it: GPU3, NIC7, mlx5_7, a bus id
_TOKEN = re.compile(r"[-+]?(?:\d[\d,]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


@dataclass
class LineMap:
    """Lines of the mutant (1-based) mapped to the input's; the lines the mutation touched on either side."""

    back: dict[int, int] = field(default_factory=dict)
    touched_before: set[int] = field(default_factory=set)
    touched_after: set[int] = field(default_factory=set)
    text_before: str = ""  # the touched lines' text, on either side
    text_after: str = ""


def line_map(before: bytes, after: bytes) -> LineMap:
    """Which lines stayed (by a line diff, so a flipped byte that makes or joins a newline is followed too). A line
    inserted beside an identical neighbour is a doubled line: both copies are touched, and the original."""
    a, b = before.splitlines(), after.splitlines()
    out = LineMap()
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out.back.update({j1 + k + 1: i1 + k + 1 for k in range(i2 - i1)})
        else:
            out.touched_before.update(range(i1 + 1, i2 + 1))
            out.touched_after.update(range(j1 + 1, j2 + 1))
    for j in sorted(out.touched_after):
        for twin in (j - 1, j + 1):
            if twin in out.back and 0 < j <= len(b) and b[twin - 1] == b[j - 1]:
                out.touched_before.add(out.back.pop(twin))
                out.touched_after.add(twin)
    out.text_before = "\n".join(a[i - 1].decode("utf-8", "replace") for i in sorted(out.touched_before))
    out.text_after = "\n".join(b[j - 1].decode("utf-8", "replace") for j in sorted(out.touched_after))
    return out


def _said(before: IngestResult, after: IngestResult, lines: LineMap) -> bool:
    """The mutant's reading warns of something the input's did not, or at another line (the numbers in a
    message aside: they move with the lines), or names another span of lines (`lines 7-8 not read`)."""
    def place(number: int, back: dict[int, int] | None) -> int:
        return number if back is None else back.get(number, -number)

    def spelled(number: int) -> str:  # a line number as letters, so that the digits' normalising keeps it
        return "L" + "".join("abcdefghij"[int(c)] for c in str(abs(number))) + ("t" if number < 0 else "")

    def said(result: IngestResult, back: dict[int, int] | None) -> Counter[tuple[Any, str]]:
        return Counter((place(w.line, back) if w.line is not None else None,
                        _DIGITS.sub("#", _SPAN.sub(lambda m: f"lines {spelled(place(int(m[1]), back))}-"
                                                             f"{spelled(place(int(m[2]), back))}", w.message)))
                       for w in result.warnings)

    now, then = said(after, lines.back), said(before, None)
    # a warning the input's reading gave of a line the mutation changed, and no longer given: the line was said to
    # be damaged and is now another (a flipped byte flipped back reads as the file did before any damage)
    gone = then - now
    unsaid = any(line in lines.touched_before for line, _ in gone)
    # or a warning no longer given that named a device the changed line names (two lines that contradict each
    # other, said at one of them: `AER detail of 0000:19:00.0 inside the report of 0000:18:00.0`, `GPU 0 is
    # GPU-... here and GPU-... at line 4`)
    named = set(_BUS_ID.findall(lines.text_before))
    unsaid = unsaid or bool(named and any(
        set(_BUS_ID.findall(w.message)) & named for w in before.warnings
        if (w.line, _DIGITS.sub("#", w.message)) in gone))
    return bool(now - then) or unsaid


def numbers_in(text: str) -> set[float]:
    """Every number `text` spells, each way it may be read: `1,234` is 1234 and 1 and 234; a minus may be a
    separator (`pcie-3`, `node-02`), so the number after it is in the text too."""
    out: set[float] = set()
    for raw in _TOKEN.findall(text):
        for spelling in (raw, raw.replace(",", ""), *raw.split(","), raw.lstrip("-+")):
            try:
                out.add(float(spelling))
            except ValueError:
                continue
    return out


def _close(a: float, b: float) -> bool:
    return a == b or abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def _held(value: float, tokens: set[float], scales: tuple[float, ...]) -> bool:
    return any(_close(value / s, t) for s in scales for t in tokens)


@dataclass(frozen=True)
class Row:
    line: int | None  # the input's line (mapped back for the mutant's rows); None when the source names none
    touched: bool
    cells: tuple[Any, ...]
    group: str | None = None  # the source of a row whose source names no line (a JSON path, a table's own text)


def _value(v: Any) -> Any:
    if v is None or v is pd.NA or v is pd.NaT:
        return None
    if isinstance(v, float | np.floating):
        return None if math.isnan(v) else float(v)
    if isinstance(v, np.integer | int) and not isinstance(v, bool):
        return float(v)
    if isinstance(v, pd.Timestamp):
        return v.isoformat()
    return v


def _rows(frame: pd.DataFrame, lines: dict[int, int] | None, touched: set[int]) -> tuple[list[str], list[Row]]:
    """The frame's rows without their source; `lines` maps a mutant's line to the input's (None: the input's own)."""
    columns = [c for c in frame.columns if c != "source"]
    if not len(frame):
        return columns, []
    sources = frame["source"].astype(object).tolist() if "source" in frame else [None] * len(frame)
    values = frame[columns].to_numpy(dtype=object, na_value=None)
    if lines is not None and "run" in columns:  # a benchmark run's key names its header's line: mapped as a source
        at = columns.index("run")
        for row in values:
            if isinstance(row[at], str):
                row[at] = _RUN_LINE.sub(lambda m: f":{lines.get(int(m[1]), m[1])}", row[at])
    out = []
    for source, row in zip(sources, values, strict=True):
        match = _LINE.search(source) if isinstance(source, str) else None
        number = int(match[1]) if match else None
        hit = number is not None and number in touched
        line = None if number is None or hit else (number if lines is None else lines.get(number))
        out.append(Row(line, hit, tuple(_value(v) for v in row), None if match else str(source)))
    return columns, out


@dataclass
class Compare:
    """One table's rows before and after, and what the mutation allows."""

    table: str
    columns: list[str]
    numeric: dict[str, tuple[float, ...]]  # column -> the scales its number may be stated in
    derived: set[str]
    kind: str  # the mutation's kind
    written: float | None  # the number a `number` mutation wrote
    tokens_after: set[float]
    zeros: frozenset[str] = frozenset()  # the columns that may read 0 where a line was deleted (see the docstring)
    found: list[tuple[str, str]] = field(default_factory=list)

    def cells(self, old: Row, new: Row) -> None:
        touched = old.touched or new.touched or old.line is None  # a row whose line is unnamed may be the changed
        for column, a, b in zip(self.columns, old.cells, new.cells, strict=True):
            if a == b or (isinstance(a, float) and isinstance(b, float) and _close(a, b)):
                continue
            where = f"{self.table}.{column} at line {old.line or new.line}: {a!r} -> {b!r}"
            if column in self.derived:
                continue
            if b is None:
                if self.kind == "delete_line":
                    continue  # the deleted line may have held it
                if touched and self.kind == "number" and self.written is not None and math.isnan(self.written):
                    continue  # NaN is no number: read as no value, as written
                self.found.append(("value lost", where))
            elif column not in self.numeric:
                if self.kind == "double_line":
                    self.found.append(("value changed", where))
            elif not self._allowed(b, column, touched):
                self.found.append(("value changed" if a is not None else "value appeared", where))

    def _allowed(self, value: Any, column: str, touched: bool) -> bool:
        """A new number is one the changed line states (a `number` mutation: the number written)."""
        if self.kind == "delete_line" and value == 0 and column in self.zeros:
            return True
        if not isinstance(value, float) or self.kind in ("delete_line", "double_line"):
            return False
        scales = self.numeric[column]
        if self.kind == "number" and touched:
            return self.written is not None and _held(value, {self.written}, scales)
        return _held(value, self.tokens_after, scales)


def _similar(a: Row, b: Row) -> int:
    return sum(x == y for x, y in zip(a.cells, b.cells, strict=True) if x is not None)


def compare(before: IngestResult, after: IngestResult, lines: LineMap, mutation: Mutation,
            numeric: dict[str, dict[str, tuple[float, ...]]], derived: dict[str, tuple[str, ...]],
            zeros: dict[str, frozenset[str]] | None = None) -> list[tuple[str, str]]:
    """What the mutant's reading lost, doubled or changed without a warning (empty when it warned); `zeros`: the
    columns of each table that may read 0 after a deleted line (see the module's docstring)."""
    if _said(before, after, lines):
        return []
    written = None
    if mutation.kind == "number":
        try:
            written = float(mutation.value.replace(",", ""))
        except ValueError:
            written = None
    found: list[tuple[str, str]] = []
    said_before = {w.line for w in before.warnings}
    # a warning of the input's reading the mutant's no longer gives: a line it said it left out may now read
    unsaid = bool({(w.line, w.message) for w in before.warnings} - {(lines.back.get(w.line or 0, w.line), w.message)
                                                                    for w in after.warnings})
    for table, old_frame in before.tables.items():
        new_frame = after.tables.get(table, old_frame.iloc[0:0])
        columns, old = _rows(old_frame, None, lines.touched_before)
        _, new = _rows(new_frame, lines.back, lines.touched_after)
        check = Compare(table, columns, numeric.get(table, {}), set(derived.get(table, ())), mutation.kind,
                        written, numbers_in(lines.text_after), (zeros or {}).get(table, frozenset()))
        lost, gained = _match(old, new, check)
        unplaced: set[str | None] = set()  # the sources of line-less rows lost: as many as lines deleted
        # a deleted line's own rows name what it defined (`NIC7`, a bus id): rows about that go with it
        named = {c for r in old if r.touched for c in r.cells if isinstance(c, str) and _NAMED.search(c)}
        for row in lost:
            if row.line is None and not row.touched and mutation.kind == "delete_line" and \
                    len(unplaced | {row.group}) <= len(lines.touched_before):
                unplaced.add(row.group)  # a row whose line is not named: maybe the deleted line's
                continue
            if mutation.kind == "delete_line" and (row.touched or named.intersection(row.cells)):
                continue
            check.found.append(("row lost", f"{table} row of line {row.line or 'touched'}: {row.cells[:8]}"))
        moved = _untimed(columns, [r for r in old if r.touched])
        for row in gained:
            if row.line in said_before or unsaid or (row.line is None and lines.touched_before & said_before):
                continue  # a line the input's reading said it left out (a repeat, say) now reads
            if mutation.kind != "double_line" and not row.touched and _untimed(columns, [row]) & moved:
                continue  # a changed line's row (a device first seen, a counter's first count) comes with the next
                # reading of its series, timed by it: the changed line now names another series
            if mutation.kind == "double_line" or not row.touched:
                check.found.append(("row doubled", f"{table} row of line {row.line or 'touched'}: {row.cells[:8]}"))
        found += check.found
    return found


def _untimed(columns: list[str], rows: list[Row]) -> set[tuple[Any, ...]]:
    """The rows' cells without their time."""
    kept = [i for i, c in enumerate(columns) if c != "timestamp"]
    return {tuple(r.cells[i] for i in kept) for r in rows}


def _match(old: list[Row], new: list[Row], check: Compare) -> tuple[list[Row], list[Row]]:
    """Pair each row before with its row after: identical rows of one line first, then rows of one line in
    order, then any two rows most alike (a row whose source line moved). Returns the rows left on each side."""
    def key(row: Row) -> Any:
        return ("touched",) if row.touched else ("line", row.line)

    by_line: dict[Any, tuple[list[Row], list[Row]]] = {}
    for row in old:
        by_line.setdefault(key(row), ([], []))[0].append(row)
    for row in new:
        by_line.setdefault(key(row), ([], []))[1].append(row)
    left_old: list[Row] = []
    left_new: list[Row] = []
    for olds, news in by_line.values():
        counted = Counter(r.cells for r in news)
        rest_old = []
        for row in olds:
            if counted[row.cells]:
                counted[row.cells] -= 1
            else:
                rest_old.append(row)
        rest_new = []
        for row in news:
            if counted[row.cells]:
                counted[row.cells] -= 1
                rest_new.append(row)
        if olds and olds[0].line is None and not olds[0].touched:  # no line named: pair by likeness only
            left_old += rest_old
            left_new += rest_new
            continue
        for a, b in zip(rest_old, rest_new, strict=False):
            check.cells(a, b)
        left_old += rest_old[len(rest_new):]
        left_new += rest_new[len(rest_old):]
    still_new = list(left_new)
    lost = []
    for row in left_old:
        best = max(still_new, key=lambda r: _similar(row, r), default=None)
        present = sum(c is not None for c in row.cells)
        if best is not None and 2 * _similar(row, best) > present:
            still_new.remove(best)
            check.cells(row, best)
        else:
            lost.append(row)
    return lost, still_new
