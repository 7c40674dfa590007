"""What every reader shares: the source it reads, the result it returns, the warnings it gives."""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Protocol, TextIO

import pandas as pd

from ..errors import InputError
from ..tables import TABLES
from .wrapping import Wrapping
from .wrapping import detect as detect_wrapping

HEAD_BYTES = 64 * 1024


@dataclass(frozen=True)
class IngestWarning:
    """Something a reader could not use, with the file and line it came from."""

    file: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        return f"{where}: {self.message}"

    def as_dict(self) -> dict[str, object]:
        return {"file": self.file, "line": self.line, "message": self.message}


@dataclass
class IngestResult:
    """The normalized tables a reader produced (every table present, possibly empty) and its warnings."""

    tables: dict[str, pd.DataFrame] = field(default_factory=lambda: {n: t.empty() for n, t in TABLES.items()})
    warnings: list[IngestWarning] = field(default_factory=list)

    def __getitem__(self, table: str) -> pd.DataFrame:
        return self.tables[table]

    @property
    def rows(self) -> dict[str, int]:
        return {name: len(df) for name, df in self.tables.items()}

    @property
    def empty(self) -> bool:
        return not any(self.rows.values())

    @classmethod
    def of(cls, warnings: Iterable[IngestWarning] = (), **frames: pd.DataFrame) -> IngestResult:
        """Build a result from (possibly partial) frames, conforming each to its schema."""
        result = cls(warnings=list(warnings))
        for name, frame in frames.items():
            result.tables[name] = TABLES[name].conform(frame)
        return result

    @classmethod
    def combine(cls, results: Iterable[IngestResult]) -> IngestResult:
        results = list(results)
        out = cls()
        for name, schema in TABLES.items():
            frames = [r.tables[name] for r in results if len(r.tables[name])]
            if frames:
                out.tables[name] = schema.conform(pd.concat(frames, ignore_index=True))
        out.warnings = [w for r in results for w in r.warnings]
        return out


@dataclass(frozen=True)
class Source:
    """One input: a file on disk or text already in memory (a paste, a Slack snippet, stdin)."""

    name: str
    path: Path | None = None
    text: str | None = None

    @classmethod
    def from_path(cls, path: str | Path) -> Source:
        p = Path(path)
        return cls(name=str(path), path=p)

    @classmethod
    def from_text(cls, text: str, name: str = "<paste>") -> Source:
        return cls(name=name, text=text)

    def head(self, size: int = HEAD_BYTES) -> bytes:
        """The first bytes as stored (binary checks, Parquet magic); `head_text` is what readers sniff."""
        if self.text is not None:
            return self.text[:size].encode("utf-8", "replace")
        assert self.path is not None
        try:
            with self.path.open("rb") as fh:
                return fh.read(size)
        except FileNotFoundError:
            raise InputError("file not found", source=self.name) from None
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror}", source=self.name) from None

    @cached_property
    def wrapping(self) -> Wrapping:
        """The indentation, quote markers, escaping and fences around the output (see `wrapping`)."""
        return detect_wrapping(self.head().decode("utf-8", "replace"))

    def head_text(self, size: int = HEAD_BYTES) -> str:
        """The head as the tool printed it, line for line: what a reader's sniff looks at."""
        text = self.head(size).decode("utf-8", "replace")
        wrapping = self.wrapping
        return text if wrapping.none else "\n".join(wrapping.unwrap(line) for line in text.split("\n"))

    def _raw_text(self) -> TextIO:
        if self.text is not None:
            return io.StringIO(self.text)
        assert self.path is not None
        return self.path.open("r", encoding="utf-8", errors="replace", newline=None)

    def open_text(self) -> TextIO:
        """A text stream over the whole input without its wrapping; undecodable bytes become U+FFFD, never an
        exception. A wrapped input is held in memory (wrapped inputs are pastes)."""
        if self.wrapping.none:
            return self._raw_text()
        return io.StringIO("".join(f"{line}\n" for _, line in self.lines()))

    def lines(self) -> Iterator[tuple[int, str]]:
        """(line number from 1, line without its newline and its wrapping), streamed."""
        unwrap = None if self.wrapping.none else self.wrapping.unwrap
        with self._raw_text() as fh:
            for number, line in enumerate(fh, start=1):
                text = line.rstrip("\r\n")
                yield number, (unwrap(text) if unwrap else text)


class Reader(Protocol):
    """A format reader: says how sure it is that a head of input is its format, and reads it."""

    name: str

    def sniff(self, head: str) -> float:
        """0.0 (not this format) to 1.0 (certainly this format)."""
        ...

    def read(self, source: Source, *, node_id: str | None = None) -> IngestResult: ...
