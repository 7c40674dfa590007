"""What every reader must do with any input, checked on one input at a time.

- It returns tables and warnings, or raises the project's InputError: any other exception is a bug.
- Every number it returns is finite, non-negative where the column is a counter, gauge or index, and is a
  number the input holds (a counter read from `1,234` is 1234; a step time in seconds is that number x 1000).
- A cut input (a file whose last line has no newline) gives no value the whole input does not give at the
  same line, and a warning names the line where it is cut.
- An input only wrapped differently (CRLF, a BOM, indented, quoted, tabs, another host name) reads the same (a
  text it holds may keep its tabs for spaces).
"""

from __future__ import annotations

import json
import re
import signal
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from diagnostics.errors import InputError
from diagnostics.ingest import detect
from diagnostics.ingest.base import IngestResult, Source
from diagnostics.ingest.nvlink import _shows_end as nvlink_line_ends
from diagnostics.ingest.smi_query import _shows_end as smi_query_line_ends
from diagnostics.tables import AER_COUNTERS, COUNTERS

from . import silent
from .mutate import Mutation, renamed_host

HANG_SECONDS = 20  # one reader on one input of a few KB: anything near this is a hang

# Numeric columns per table, by what the number is. `scales`: the input may state it in another unit.
COUNTS = {"link_samples": (*COUNTERS, *AER_COUNTERS)}
INDEXES = {
    "link_samples": ("gpu", "link", "lane"),
    "events": ("gpu", "code", "caused_by", "link"),
    "topology": ("nvlinks", "link", "remote_port"),
    "gpus": ("gpu",),
    "step_samples": ("step", "size_bytes"),
}
GAUGES: dict[str, dict[str, tuple[float, ...]]] = {
    "link_samples": {"speed_gbps": (1.0,), "symbol_ber": (1.0,), "effective_ber": (1.0,), "width": (1.0,),
                     "max_width": (1.0,), "tx_bytes_per_s": (1.0, 1e3, 1e6, 1e9),
                     "rx_bytes_per_s": (1.0, 1e3, 1e6, 1e9)},
    "step_samples": {"step_time_ms": (1.0, 1e3), "collective_time_us": (1.0,), "algbw_gbps": (1.0,),
                     "busbw_gbps": (1.0,)},
}
DERIVED = {"link_samples": ("gen", "max_gen"), "events": ("count",)}  # finite, non-negative, whole
# what a row takes from another line (a kernel event's driver version from the driver's banner, which claims the
# events logged shortly before it): changed with that line, as it may be, not by the row's own
FROM_OTHER_LINES = {"events": ("driver_version",)}
MAX_GEN = 7  # PCIe generations a speed maps to (lspci states GT/s, not the generation)

class Hang(Exception):
    """A read that ran past HANG_SECONDS."""


@dataclass
class Outcome:
    """One read: the result, or the InputError it raised."""

    result: IngestResult | None
    error: InputError | None = None
    reader: str | None = None


@dataclass
class Problems:
    """What an input broke, by kind; empty when the reader did everything right."""

    items: list[tuple[str, str]] = field(default_factory=list)

    def add(self, kind: str, text: str) -> None:
        self.items.append((kind, text))

    def __bool__(self) -> bool:
        return bool(self.items)

    def __str__(self) -> str:
        return "\n".join(f"[{k}] {t}" for k, t in self.items[:12])


@contextmanager
def _deadline(seconds: int) -> Iterator[None]:
    def expire(signum: int, frame: Any) -> None:
        raise Hang(f"no answer in {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def read_bytes(data: bytes, name: str, fmt: str | None = None) -> Outcome:
    """Read `data` as a file called `name` (its suffix kept, so detection sees what a user's file shows)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / Path(name).name
        path.write_bytes(data)
        source = Source(name=name, path=path)
        with _deadline(HANG_SECONDS):
            try:
                reader = detect.choose(source, fmt)
                return Outcome(detect.read_with(reader, source), reader=reader.name)
            except InputError as exc:
                return Outcome(None, exc)


def _tokens(text: str) -> np.ndarray:
    return np.unique(np.array(sorted(silent.numbers_in(text)), dtype=np.float64))


def _held(value: float, tokens: np.ndarray, scales: tuple[float, ...]) -> bool:
    for scale in scales:
        want = value / scale
        i = np.searchsorted(tokens, want)
        for j in (i - 1, i):
            if 0 <= j < len(tokens) and abs(tokens[j] - want) <= 1e-9 * max(1.0, abs(want)):
                return True
    return False


def _numbers(frame: pd.DataFrame, column: str) -> np.ndarray:
    series = frame[column]
    return series.to_numpy(dtype=np.float64, na_value=np.nan) if len(series) else np.zeros(0)


def check_numbers(result: IngestResult, text: str | None, problems: Problems, *, baseline: bool = False) -> None:
    """Finite, non-negative, whole where the column is a count or an index, and held by the input (a binary
    input, `text` None, holds its numbers encoded: only the first three are checked)."""
    tokens = _tokens(text) if text is not None else None
    if tokens is not None and baseline:  # a snapshot is stored as a zero reading, then its counts (see snapshot.py)
        tokens = np.union1d(tokens, [0.0])
    for table, frame in result.tables.items():
        kinds: list[tuple[str, tuple[float, ...] | None, bool]] = []
        kinds += [(c, (1.0,), True) for c in (*COUNTS.get(table, ()), *INDEXES.get(table, ()))]
        kinds += [(c, scales, False) for c, scales in GAUGES.get(table, {}).items()]
        kinds += [(c, None, True) for c in DERIVED.get(table, ())]
        for column, scales, whole in kinds:
            if column not in frame.columns:
                continue
            values = _numbers(frame, column)
            if (table, column) == ("link_samples", "link") and text is not None:
                values = values[~_counted_links(frame, text)]
            if (table, column) == ("events", "code") and "text" in frame.columns:  # the driver's off-the-bus
                off_bus = frame["text"].astype("string").str.contains(  # message, or the PCIe core's can't recover:
                    "fallen off the bus|AER: can't recover", case=False, na=False)  # an Xid 79 it does not number
                values = values[~(off_bus.to_numpy(bool) & (values == 79))]
            present = values[~np.isnan(values)] if values.dtype.kind == "f" else values
            for value in present[:2000]:
                where = f"{table}.{column} = {value!r}"
                if not np.isfinite(value):
                    problems.add("not finite", where)
                elif value < 0:
                    problems.add("negative", where)
                elif whole and value != np.round(value):
                    problems.add("not whole", where)
                elif tokens is None:
                    continue
                elif not _held(float(value), tokens, scales or (1.0,)) and (scales is not None or value > MAX_GEN):
                    problems.add("not in the input", where)  # a generation may be derived from a lane rate


_LINKS = re.compile(r"\bLinks ([\d\s,-]+):", re.IGNORECASE)
_SHORT_FORM = re.compile(r"\bLinks [\d\s,-]+:\s*(?:No errors\b|[A-Za-z /]*Errors\s*:)", re.IGNORECASE)  # see `silent`


def _counted_links(frame: pd.DataFrame, text: str) -> np.ndarray:
    """Rows whose link index their line does not spell: NVML's `all links are inActive` line (they count that GPU's
    links, as the paste's other GPUs list them or as its model has), a `Links 0-2, 4-5:` line's (a link
    between the ends of one of its ranges), and a `dcgmi nvlink -s` line's (one state a link, link 0 first)."""
    lines = text.split("\n")  # as the readers number lines: a vertical tab or form feed splits none

    def counted(source: Any, link: float) -> bool:
        n = _line_of(source)
        if n is None or not 0 < n <= len(lines):
            return False
        if "all links are inactive" in lines[n - 1].lower():
            return True
        states = lines[n - 1].split()
        if sum(state in ("U", "D", "X", "_") for state in states) * 2 >= len(states) > link:
            return True
        ranges = _LINKS.search(lines[n - 1])
        return ranges is not None and any(
            min(ends) <= link <= max(ends) for part in ranges[1].split(",")
            if (ends := [int(e) for e in re.findall(r"\d+", part)]))

    return np.array([counted(s, link) for s, link in zip(frame["source"], _numbers(frame, "link"), strict=True)],
                    dtype=bool)


def read_and_check(data: bytes, name: str, problems: Problems, fmt: str | None = None) -> Outcome | None:
    """The first property: no exception but InputError, no hang, and every number sound."""
    try:
        outcome = read_bytes(data, name, fmt)
    except Hang as exc:
        problems.add("hang", str(exc))
        return None
    except Exception as exc:  # the bug this suite looks for: anything but InputError
        problems.add("traceback", f"{type(exc).__name__}: {exc}"[:300])
        return None
    if outcome.result is not None:
        check_numbers(outcome.result, None if is_binary(name) else data.decode("utf-8", "replace"), problems,
                      baseline=outcome.reader == "snapshot")
    return outcome


def is_binary(name: str) -> bool:
    """Parquet: its bytes are not text, so wrapping it means nothing and its numbers are not spelled out."""
    return name.endswith(".parquet")


def _line_of(source: Any) -> int | None:
    match = re.search(r":(\d+)$", str(source)) if isinstance(source, str) else None
    return int(match[1]) if match else None


def _cells(result: IngestResult) -> dict[tuple[str, int, str], set[float]]:
    """(table, line, column) -> the numbers read there."""
    out: dict[tuple[str, int, str], set[float]] = {}
    for table, frame in result.tables.items():
        if "source" not in frame.columns or not len(frame):
            continue
        lines = [_line_of(s) for s in frame["source"].astype(object)]
        columns = [c for c in (*COUNTS.get(table, ()), *INDEXES.get(table, ()), *GAUGES.get(table, {}),
                               *DERIVED.get(table, ())) if c in frame.columns]
        for column in columns:
            for line, value in zip(lines, _numbers(frame, column), strict=True):
                if line is not None and not np.isnan(value):
                    out.setdefault((table, line, column), set()).add(float(value))
    return out


def _json_object(line: bytes) -> bool:
    """A JSON object shows its own end: a last line that is one is whole without a newline."""
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


def _shows_end(line: bytes, reader: str | None) -> bool:
    """A last line that shows its own end is whole without a newline: a JSON object, an `nvlink -s` link line
    ending in a speed or `<inactive>`, or an `nvidia-smi -q` value ending in its unit, `N/A` or a state, which their
    readers read as it stands."""
    text = line.decode("utf-8", "replace")
    return _json_object(line) or (reader == "nvlink" and nvlink_line_ends(text)) or (
        reader == "smi_query" and smi_query_line_ends(text))


def check_prefix(whole: Outcome, cut: Outcome, data: bytes, problems: Problems) -> None:
    """A cut input gives no number the whole gives otherwise at that line, and warns where it is cut."""
    if cut.result is None or whole.result is None:
        return
    before = _cells(whole.result)
    for key, values in _cells(cut.result).items():
        known = before.get(key)
        if known is not None and not values <= known:
            problems.add("cut value kept", f"{key[0]}.{key[2]} at line {key[1]}: {sorted(values - known)} "
                                           f"where the whole input has {sorted(known)}")
    tail = data.rsplit(b"\n", 1)[-1]
    if tail.strip() and not data.endswith((b"\n", b"\r")) and not _shows_end(tail, cut.reader):
        last = data.count(b"\n") + 1
        if not any(w.line == last for w in cut.result.warnings):
            problems.add("cut line not told", f"the input ends inside line {last} ({tail[-40:]!r}); no warning "
                                              f"names it")


def _records(result: IngestResult, rename: tuple[str, str] | None, spaced: bool = False
             ) -> dict[str, list[tuple[Any, ...]]]:
    """Each table's rows as tuples (missing values None); `rename` applied to every text; `spaced`: each run of
    whitespace in a text as one space (a message is kept as written, its gaps included)."""
    def text(v: Any) -> Any:
        if not isinstance(v, str):
            return v
        v = v.replace(*rename) if rename else v
        return " ".join(v.split()) if spaced else v

    out: dict[str, list[tuple[Any, ...]]] = {}
    for table, frame in result.tables.items():
        rows = frame.to_numpy(dtype=object, na_value=None) if len(frame) else []
        out[table] = [tuple(text(v) for v in row) for row in rows]
    return out


def check_same(original: Outcome, wrapped: Outcome, data: bytes, mutation: Mutation, problems: Problems) -> None:
    """A wrapping mutation reads as the original does (a renamed host renamed in the original's tables)."""
    if original.error is not None or original.result is None:
        return
    if wrapped.result is None:
        problems.add("wrapping changed the reading", f"{mutation.kind}: refused ({wrapped.error})")
        return
    if wrapped.reader != original.reader:
        problems.add("wrapping changed the reading", f"{mutation.kind}: read as {wrapped.reader}, "
                                                     f"not {original.reader}")
        return
    rename = renamed_host(data, mutation)
    spaced = mutation.kind == "inner_tabs"
    a, b = _records(original.result, rename, spaced), _records(wrapped.result, None, spaced)
    if rename is not None:  # another name may sort elsewhere: the same rows, in any order
        a = {t: sorted(rows, key=repr) for t, rows in a.items()}
        b = {t: sorted(rows, key=repr) for t, rows in b.items()}
    for table in a:
        if a[table] != b[table]:
            diff = [(x, y) for x, y in zip(a[table], b[table], strict=False) if x != y][:1]
            problems.add("wrapping changed the reading", f"{mutation.kind}: {table}: {len(a[table])} rows vs "
                                                         f"{len(b[table])}; first difference {diff}"[:600])


_ORIGINALS: dict[tuple[str, bytes], Outcome | None] = {}


def _original(data: bytes, name: str) -> Outcome | None:
    """The unmutated input's reading, once per seed (readers are deterministic)."""
    key = (name, data)
    if key not in _ORIGINALS:
        _ORIGINALS[key] = read_and_check(data, name, Problems())
    return _ORIGINALS[key]


def _numeric() -> dict[str, dict[str, tuple[float, ...]]]:
    """Each table's number columns and the scales their numbers may be stated in."""
    out: dict[str, dict[str, tuple[float, ...]]] = {}
    for table in {*COUNTS, *INDEXES, *GAUGES}:
        out[table] = {c: (1.0,) for c in (*COUNTS.get(table, ()), *INDEXES.get(table, ()))}
        out[table].update(GAUGES.get(table, {}))
    return out


def check_silent(original: Outcome, damaged: Outcome, data: bytes, mutant: bytes, mutation: Mutation,
                 problems: Problems) -> None:
    """A damaged input read without a new warning changed nothing beyond its damaged line (see `silent`)."""
    if original.result is None or damaged.result is None:
        return
    lines = silent.line_map(data, mutant)
    short = _SHORT_FORM.search(mutant.decode("utf-8", "replace")) is not None
    zeros = {"link_samples": frozenset(COUNTERS)} if short else {}
    free = {t: (*DERIVED.get(t, ()), *FROM_OTHER_LINES.get(t, ())) for t in {*DERIVED, *FROM_OTHER_LINES}}
    for kind, text in silent.compare(original.result, damaged.result, lines, mutation, _numeric(), free, zeros):
        problems.add(kind, f"{mutation.kind}: {text}"[:400])


def check(data: bytes, name: str, mutation: Mutation) -> Problems:
    """Every property that applies to this mutant of `data` (a seed file called `name`, read under a name of
    its suffix only, so that a renamed host is renamed nowhere but in the input)."""
    problems = Problems()
    name = "input" + Path(name).suffix
    mutant = mutation.apply(data)
    outcome = read_and_check(mutant, name, problems)
    if outcome is None:
        return problems
    if is_binary(name):
        return problems
    original = _original(data, name)
    if original is None:
        return problems
    if mutation.kind == "truncate":
        check_prefix(original, outcome, mutant, problems)
    elif not mutation.wrapping:
        check_silent(original, outcome, data, mutant, mutation, problems)
    else:
        check_same(original, outcome, data, mutation, problems)
    return problems


def check_many(data: bytes, name: str, mutations: list[Mutation]) -> Problems:
    """`mutations` made one after the other; the last is checked as `check` checks one (a wrapping or a cut
    compared with the input the others made)."""
    for earlier in mutations[:-1]:
        data = earlier.apply(data)
    if len(_ORIGINALS) > 512:  # the inputs earlier mutations made are seldom drawn twice
        _ORIGINALS.clear()
    return check(data, name, mutations[-1])
