"""Training step logs -> step_samples: JSONL or CSV step records, or text logs through configurable patterns.

Step time is job-wide (every rank waits for the slowest), so one row per step is enough; `node_ids` lists the
job's nodes when the log says them. Column names and text patterns live in `data/step_patterns.toml`;
`StepLogReader.from_file(path)` reads a user's own file of the same shape.
"""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd

from ..config.datafiles import DATA_DIR, read_toml
from ..errors import ConfigError, InputError
from ..values import gauge, no_value, number
from .base import IngestResult, Source, loads_strict
from .stamps import UNIT_NAMES, epoch_time
from .textlines import Collector, Line, classify, near, one_edit, parse_time, skip_shell
from .wrapping import split_lines

PATTERNS_FILE = DATA_DIR / "step_patterns.toml"
_MORE_NUMBER = re.compile(r"\d|\.\d|[eE][-+]?\d")  # what goes on from a number: more digits, a fraction, an exponent


@dataclass
class Pattern:
    name: str
    regex: re.Pattern[str]
    scale_to_ms: float
    anchor: str | None = None  # text each of its lines holds

    @cached_property
    def near(self) -> re.Pattern[str] | None:
        """The anchor, or it with one character damaged."""
        return near(self.anchor) if self.anchor else None


class StepLogReader:
    name = "steplog"
    reads_hosts = True  # through textlines.classify: a parallel shell's output each host's (`fanout`)

    def __init__(self, fields: dict[str, list[str]], patterns: list[Pattern]) -> None:
        self.fields = fields
        self.patterns = patterns

    @classmethod
    def from_file(cls, path: str | Path = PATTERNS_FILE) -> StepLogReader:
        where = Path(path)
        try:
            data = read_toml(where, "step log pattern file")
            fields = {key: [str(n).lower() for n in names] for key, names in data["fields"].items()}
            patterns = [
                Pattern(p["name"], re.compile(p["regex"]), 1000.0 if p.get("time_unit", "ms") == "s" else 1.0,
                        p.get("anchor"))
                for p in data.get("pattern", [])
            ]
        except (KeyError, TypeError, re.error) as exc:
            raise ConfigError(f"{where.name}: cannot read the step log patterns: {exc}") from None
        for pattern in patterns:
            if "step_time" not in pattern.regex.groupindex:
                raise ConfigError(f"{where.name}: pattern {pattern.name!r} has no (?P<step_time>...) group")
        return cls(fields, patterns)

    def sniff(self, head: str) -> float:
        lines = [t for t in split_lines(head)[:50] if t.strip() and not t.lstrip().startswith("#")]
        if not lines:
            return 0.0
        first = lines[0].strip()
        if first.startswith("{"):
            try:
                keys = {k.lower() for k in json.loads(first)}
            except (json.JSONDecodeError, AttributeError):
                return 0.0
            return 0.6 if self._has_time(keys) else 0.0
        if "," in first and self._has_time({c.strip().lower() for c in first.split(",")}):
            return 0.6
        hits = sum(1 for t in lines if any(p.regex.search(t) for p in self.patterns))
        return 0.8 if hits else 0.0

    def _has_time(self, keys: set[str]) -> bool:
        return bool(keys & set(self.fields.get("step_time_ms", []) + self.fields.get("step_time_s", [])))

    def read(self, source: Source, *, node_id: str | None = None) -> IngestResult:
        out = Collector(source, "step log", node_id)
        times = _Times(out)
        header: list[str] | None = None
        mode: str | None = None
        for line in classify(source, out, _json_object):
            if skip_shell(line, out) or line.text.lstrip().startswith("#"):
                continue
            text = line.text.strip()
            if mode is None:
                mode = "jsonl" if text.startswith("{") else "csv" if self._is_header(text) else "text"
                if mode == "csv":
                    header = [c.strip().lower() for c in next(csv.reader([text]))]
                    self._misspelt(out, line, header)
                    continue
            if mode == "jsonl":
                self._json(out, line, times)
            elif mode == "csv" and header is not None:
                values = next(csv.reader([text]))
                if len(values) != len(header):
                    out.warn(line.number, f"{len(values)} fields where the header has {len(header)}; row skipped")
                    continue
                self._record(out, line, dict(zip(header, values, strict=True)), times)
            else:
                self._text(out, line, times)
        times.check()
        if not out.rows.get("step_samples") and not out.warnings:
            out.warn(None, "no step records found")
        return out.result()

    def _is_header(self, text: str) -> bool:
        return "," in text and self._has_time({c.strip().lower() for c in text.split(",")})

    def _json(self, out: Collector, line: Line, times: _Times) -> None:
        try:
            record = loads_strict(line.text)
        except json.JSONDecodeError as exc:
            out.warn(line.number, f"not valid JSON ({exc.msg}); the line is skipped")
            return
        except ValueError as exc:
            out.warn(line.number, f"{exc}; the line is skipped")
            return
        if not isinstance(record, dict):
            out.warn(line.number, "a step record must be a JSON object; the line is skipped")
            return
        keyed = {str(k).lower(): v for k, v in record.items()}
        self._misspelt(out, line, list(keyed))
        self._record(out, line, keyed, times)

    def _misspelt(self, out: Collector, line: Line, names: list[str]) -> None:
        """A column or key one letter from a name the reader takes (`joc_id`, `timestalp`) is said: a flipped byte
        would otherwise drop the job id or the time of every record it names."""
        known = {name for names_of in self.fields.values() for name in names_of}
        for name in names:
            near = next((k for k in sorted(known) if one_edit(name, k)), None) if name not in known else None
            if near is not None:
                out.warn(line.number, f"{name[:40]!r} is one letter from {near!r}, a name the reader takes; it is "
                                      "not read (a damaged name?)")

    def _pick(self, record: dict[str, Any], field: str) -> Any:
        return self._named(record, field)[1]

    def _named(self, record: dict[str, Any], field: str) -> tuple[str, Any]:
        """(the column the record names the field by, its value), or (the field, None)."""
        for name in self.fields.get(field, []):
            if record.get(name) not in (None, ""):
                return name, record[name]
        return field, None

    def _record(self, out: Collector, line: Line, record: dict[str, Any], times: _Times) -> None:
        ms, seconds = self._pick(record, "step_time_ms"), self._pick(record, "step_time_s")
        raw, scale, name = (ms, 1.0, "step_time_ms") if ms is not None else (seconds, 1000.0, "step_time_s")
        if _value(raw) is None:
            out.warn(line.number, "no usable step time in this record; it is skipped")
            return
        step_time = _step_time(out, line, raw, scale, name)  # a refused value is said, naming it
        if step_time is None:
            return
        if step_time <= 0:
            out.warn(line.number, f"{name} = {raw!r}: a step takes some time; the record is skipped")
            return
        step = _step(out, line, self._pick(record, "step"))
        nodes = self._pick(record, "node_ids")
        if isinstance(nodes, list):
            nodes = ",".join(str(n) for n in nodes)
        self._add(out, line, step, step_time, times.read(*self._named(record, "timestamp"), line),
                  self._pick(record, "job_id"), nodes)

    def _text(self, out: Collector, line: Line, times: _Times) -> None:
        for pattern in self.patterns:
            if match := pattern.regex.search(line.text):
                groups = match.groupdict()
                before = line.text[: match.start()]
                if "timestamp" in pattern.regex.groupindex and groups["timestamp"] is None and \
                        any(c.isdigit() for c in before):
                    out.warn(line.number, f"{pattern.name}: {before.strip()[:40]!r} before the step is no time the "
                                          "pattern reads (damaged?); the row has none")
                if cut := _inside_a_number(line.text, match):
                    out.warn(line.number, f"{pattern.name}: {cut!r} is not a number this pattern reads; the line is "
                                          "skipped")
                    return
                step_time = _step_time(out, line, groups["step_time"], pattern.scale_to_ms, "step time")
                if step_time is not None:
                    self._add(out, line, _step(out, line, groups.get("step")), step_time,
                              times.read("timestamp", groups.get("timestamp"), line), groups.get("job_id"), None)
                return
        # Text logs are mostly other lines; those are not worth a warning each, but a line holding a pattern's
        # anchor is one of its lines that did not read.
        if named := next((p.name for p in self.patterns if p.near and p.near.search(line.text)), None):
            out.warn(line.number, f"a {named} line that does not read as one (a value damaged?); it is skipped")

    def _add(self, out: Collector, line: Line, step: int | None, step_time: float, timestamp: pd.Timestamp | None,
             job_id: Any, nodes: Any) -> None:
        out.add("step_samples", line.number, step=step, step_time_ms=step_time,
                timestamp=timestamp, job_id=str(job_id) if job_id is not None else None,
                node_ids=str(nodes) if nodes else out.node_id)


def _inside_a_number(text: str, match: re.Match[str]) -> str | None:
    """The whole token when a pattern's number is only the start of one (`1` of `1e400`, `812.5` of `812.5.1`);
    a unit after it (`0.5s`) ends the number."""
    for group in ("step_time", "step"):
        if match.groupdict().get(group) is None:
            continue
        if _MORE_NUMBER.match(text, match.end(group)):
            return text[match.start(group):].split()[0]
    return None


def _json_object(text: str) -> bool:
    """A JSON step record shows its own end: one that parses is whole without a newline after it."""
    try:
        return text.lstrip().startswith("{") and isinstance(json.loads(text), dict)
    except ValueError:
        return False


def _value(raw: Any) -> str | float | None:
    """A record's value as a number or its text; None for a value that is no number at all (true, a list)."""
    if isinstance(raw, bool) or not isinstance(raw, int | float | str) or (isinstance(raw, str) and no_value(raw)):
        return None
    return raw


def _step_time(out: Collector, line: Line, raw: Any, scale: float, what: str) -> float | None:
    """A step time in milliseconds, from a value in ms (scale 1) or seconds (1000): finite and bounded."""
    value = _value(raw)
    if value is None:
        return None
    checked = out.value(line.number, value, lambda r: gauge(number(r) * scale, "step_time_ms"), what)
    return float(checked) if checked is not None else None


def _step(out: Collector, line: Line, raw: Any) -> int | None:
    value = _value(raw)
    return out.checked("index", line.number, value, "step", "step") if value is not None else None


class _Times:
    """One step log's times: ISO 8601 or epoch numbers (the unit said once); a log whose every time is unreadable
    is refused, naming one value, rather than read as if it had none."""

    def __init__(self, out: Collector) -> None:
        self.out = out
        self.given = self.read_ok = 0
        self.first_bad: tuple[int, str, Any] | None = None
        self.units: set[str] = set()

    def read(self, column: str, raw: Any, line: Line) -> pd.Timestamp | None:
        if raw is None or (isinstance(raw, str) and not raw.strip()):
            return None
        self.given += 1
        found = self._parse(raw, line)
        if found is None:
            self.first_bad = self.first_bad or (line.number, column, raw)
            self.out.warn(line.number, f"cannot read the time {raw!r}; the row has none")
            return None
        self.read_ok += 1
        return found

    def _parse(self, raw: Any, line: Line) -> pd.Timestamp | None:
        if (epoch := epoch_time(raw)) is not None:
            stamp, unit = epoch
            if unit not in self.units:
                self.units.add(unit)
                self.out.warn(line.number, f"step times are epoch {UNIT_NAMES[unit]} (told by magnitude), read as UTC")
            return stamp
        if not isinstance(raw, str):
            return None
        ts = parse_time(raw)
        if ts is None:
            return None
        if ts.tzinfo is None:
            self.out.once("naive", line.number, "step times state no zone; read as UTC")
            return ts.tz_localize("UTC")
        return ts.tz_convert("UTC")

    def check(self) -> None:
        if self.given and not self.read_ok and self.first_bad is not None:
            number, column, raw = self.first_bad
            raise InputError(f"the time column {column!r} cannot be read: its values are neither ISO 8601 times nor "
                             "epoch seconds, milliseconds, microseconds or nanoseconds", source=self.out.source.name,
                             line=number, field=column, value=raw)


READER = StepLogReader.from_file()
