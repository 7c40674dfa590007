"""What every reader shares: the source it reads, the result it returns, the warnings it gives."""

from __future__ import annotations

import io
import json
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol, TextIO, runtime_checkable

import pandas as pd

from ..errors import InputError
from ..tables import TABLES
from . import fanout as fanned
from .wrapping import Wrapping
from .wrapping import detect as detect_wrapping

HEAD_BYTES = 64 * 1024


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number (JSON has no NaN or infinity)")


def loads_strict(text: str) -> Any:
    """JSON as RFC 8259 defines it: Python's `json` also takes NaN, Infinity and -Infinity, which no number a
    reader keeps may be; a ValueError names the one found."""
    return json.loads(text, parse_constant=_no_constant)


@dataclass(frozen=True)
class IngestWarning:
    """Something a reader could not use, with the file and line it came from."""

    file: str
    line: int | None
    message: str
    cut: bool = False  # the input stops short here: what a whole one holds after it is not in it
    unread: bool = False  # lines the reader could not read as its format (not lines it skips as none of its own)

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
    # what the input says of its nodes (a snapshot's platform, and that it lists only the links it chose), kept as
    # an inventory's records are
    nodes: pd.DataFrame | None = None
    # the input covers only some of its node's GPUs (an nvidia-smi output narrowed with -i, or excerpted): what it
    # leaves out is not missing, as with an input cut short (`IngestWarning.cut`)
    partial: bool = False
    # per table, the rows whose time a capture banner gave (`textlines.Collector.take_banner`): a time the command
    # gives (`--at`) replaces it, as it fills the rows that state none
    captured: dict[str, list[int]] = field(default_factory=dict)
    # the nodes only a capture banner names: a node the command asks about (`analyze --node`) is theirs
    banner_nodes: set[str] = field(default_factory=set)

    def __getitem__(self, table: str) -> pd.DataFrame:
        return self.tables[table]

    @property
    def stops_short(self) -> bool:
        """Whether the input stops short or covers some GPUs only (a reader said so): the links and GPUs it does not
        reach are not missing."""
        return self.partial or any(w.cut for w in self.warnings)

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
            start = 0
            for r in results:  # the rows a banner timed, at their places in the concatenated table
                out.captured.setdefault(name, []).extend(start + i for i in r.captured.get(name, []))
                start += len(r.tables[name])
        out.warnings = [w for r in results for w in r.warnings]
        out.partial = any(r.partial for r in results)
        out.banner_nodes = {n for r in results for n in r.banner_nodes}
        records = [r.nodes for r in results if r.nodes is not None and len(r.nodes)]
        out.nodes = pd.concat(records, ignore_index=True).drop_duplicates("node_id", keep="last") if records else None
        return out


BOM = "\ufeff"  # a byte-order mark some editors write first: not part of the output
_BOM_BYTES = BOM.encode()


@dataclass(frozen=True)
class Tail:
    """The last line of an input that no newline ends: it may stop inside a value (a cut file, a full disk).

    A value followed by another character on the line is whole; the text after the line's last space or tab
    is followed by nothing, so it may be the start of a longer value (45 of 45120) and is never read.
    """

    number: int
    text: str  # the line as the tool printed it (wrapping removed)

    @property
    def whole(self) -> str:
        """The line up to and including its last space or tab: every value in it is followed by something."""
        cut = max(self.text.rfind(" "), self.text.rfind("\t"))
        return self.text[: cut + 1]

    @property
    def fragment(self) -> str:
        return self.text[len(self.whole):]

    def warning(self, source: str, what: str | None = None) -> IngestWarning:
        """What is not read of the line: `what` (the whole line's sample or row), else its last part."""
        head = "the input ends inside this line, with no newline after it"
        if what is not None:
            text = f"{head}: {what} ({self.text.strip()[:60]!r}) may be cut off and is not read"
        elif self.fragment:
            text = f"{head}: its last part ({self.fragment[:60]!r}) may be cut off and is not read"
        else:
            text = f"{head}: read up to the cut ({self.text.strip()[:60]!r})"
        return IngestWarning(source, self.number, text, cut=True)


@dataclass(frozen=True)
class Source:
    """One input: a file on disk or text already in memory (a paste, a Slack snippet, stdin).

    `whole_end`: the input ends where its author stopped, so a last line without a newline is whole (text
    handed over in memory: Slack trims the newline of every message). A file's last line always ends with a
    newline as the tool, the shell's `>` or `tee` write it; without one the file was cut (see `Tail`).
    `first_line`: the number of the text's first line (a part of a paste keeps the paste's line numbers);
    readers that number lines themselves from `open_text` see the lines before it as blank.
    """

    name: str
    path: Path | None = None
    text: str | None = None
    whole_end: bool = False
    first_line: int = 1

    @classmethod
    def from_path(cls, path: str | Path) -> Source:
        p = Path(path)
        return cls(name=str(path), path=p)

    @classmethod
    def from_text(cls, text: str, name: str = "<paste>", *, whole_end: bool = True, first_line: int = 1) -> Source:
        return cls(name=name, text=text.removeprefix(BOM), whole_end=whole_end, first_line=first_line)

    def head(self, size: int = HEAD_BYTES) -> bytes:
        """The first bytes as stored, without a BOM (binary checks, Parquet magic); `head_text` is what readers
        sniff."""
        if self.text is not None:
            return self.text[:size].encode("utf-8", "replace")
        assert self.path is not None
        try:
            with self.path.open("rb") as fh:
                return fh.read(size).removeprefix(_BOM_BYTES)
        except FileNotFoundError:
            raise InputError("file not found", source=self.name) from None
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror}", source=self.name) from None

    @cached_property
    def wrapping(self) -> Wrapping:
        """The indentation, quote markers, escaping and fences around the output (see `wrapping`)."""
        return detect_wrapping(self.head().decode("utf-8", "replace"))

    def rewrap(self, wrapping: Wrapping | None) -> None:
        """Read the input as wrapped so from now on (None: as its head shows, `wrapping`): the one change a Source
        takes, made while its reader is chosen and before any line is read."""
        self.__dict__.pop("fanout", None)  # judged through the wrapping
        if wrapping is None:
            self.__dict__.pop("wrapping", None)
        else:
            self.__dict__["wrapping"] = wrapping  # the cached property's slot

    def head_text(self, size: int = HEAD_BYTES, *, hosts: bool = True) -> str:
        """The head as the tool printed it, line for line: what a reader's sniff looks at (a parallel shell's output
        each host's lines together, without their prefixes or headers, a dshbak block once however many hosts it
        names: `fanout`; as printed where `hosts` is False, for a reader that reads the lines as they are)."""
        text = self.head(size).decode("utf-8", "replace")
        wrapping = self.wrapping
        text = text if wrapping.none else "\n".join(wrapping.unwrap(line) for line in text.split("\n"))
        if (form := self.fanout) is None or not hosts:
            return text
        return "\n".join(line for _, line, host in fanned.regroup(enumerate(text.split("\n")), form, once=True)
                         if host is None)

    @cached_property
    def fanout(self) -> str | None:
        """The form of parallel shell output (pdsh's `host: ` prefixes, dshbak's blocks) the head is in, if any."""
        text = self.head().decode("utf-8", "replace")
        wrapping = self.wrapping
        return fanned.detect([line if wrapping.none else wrapping.unwrap(line) for line in text.split("\n")])

    @cached_property
    def tail(self) -> Tail | None:
        """The input's last line when no newline ends it (and it is not blank); None when the input can end
        without one (`whole_end`) or does end with one."""
        if self.whole_end:
            return None
        if self.text is not None:
            if self.text.endswith(("\n", "\r")):
                return None
            number, last = self.text.count("\n") + self.first_line, self.text.rsplit("\n", 1)[-1]
        else:
            found = _file_tail(self.path) if self.path is not None else None
            if found is None:
                return None
            number, last = found
        text = last.rstrip("\r")
        if not text.strip():
            return None
        return Tail(number, text if self.wrapping.none else self.wrapping.unwrap(text))

    def in_memory(self) -> Source:
        """The input read whole into memory, named and ended as before, undecodable bytes as U+FFFD as every reader
        reads them: what several readers of one file read, so it is read from disk once and all read the same text.
        Each reader takes its own (`in_memory` of a text is a fresh copy): choosing a reader may rewrap its input."""
        if self.text is None:
            try:
                with self._raw_text() as fh:
                    text = fh.read()
            except OSError as exc:
                raise InputError(f"cannot read: {exc.strerror}", source=self.name) from None
        else:
            text = self.text
        return Source(self.name, None, text, self.whole_end, self.first_line)

    def _raw_text(self) -> TextIO:
        """The whole input as text, BOM removed, undecodable bytes as U+FFFD, every newline as `\\n`."""
        if self.text is not None:
            return io.StringIO(self.text)
        assert self.path is not None
        return self.path.open("r", encoding="utf-8-sig", errors="replace", newline=None)

    def open_text(self, *, keep_tail: bool = False) -> TextIO:
        """A text stream over the input's whole lines without their wrapping; undecodable bytes become U+FFFD,
        never an exception. A cut last line (`tail`) is left out unless `keep_tail` (a format that shows its own
        end, JSON or XML, tells a cut document by not parsing). A wrapped or cut input is held in memory
        (wrapped inputs are pastes; a cut file is rare)."""
        before = "\n" * (self.first_line - 1)
        if self.wrapping.none and (keep_tail or self.tail is None):
            return io.StringIO(before + self.text) if before and self.text is not None else self._raw_text()
        return io.StringIO(before + "".join(f"{line}\n" for _, line, ended in self.numbered() if ended or keep_tail))

    def numbered(self) -> Iterator[tuple[int, str, bool]]:
        """(line number from 1, line without its newline and its wrapping, whether a newline ends it), streamed.
        Only the last line can lack one; it counts as ended in an input with `whole_end`."""
        unwrap = None if self.wrapping.none else self.wrapping.unwrap
        with self._raw_text() as fh:
            for number, line in enumerate(fh, start=self.first_line):
                text = line.rstrip("\r\n")
                ended = self.whole_end or len(text) < len(line) or not text.strip()
                yield number, (unwrap(text) if unwrap else text), ended

    def read_lines(self, warn: Callable[[IngestWarning], None],
                   shows_end: Callable[[str], bool] | None = None) -> Iterator[tuple[int, str]]:
        """Every line, a cut last line (`tail`) only up to its last space or tab: `warn` gets the warning for
        the rest. What the readers of line-oriented shell text read. `shows_end(text)`: the line shows its own
        end (a JSON object that parses), so it is whole as it stands."""
        for number, text, ended in self.numbered():
            if not ended and not (shows_end is not None and shows_end(text)):
                tail = Tail(number, text)
                warn(tail.warning(self.name))
                text = tail.whole
            yield number, text

    def lines(self) -> Iterator[tuple[int, str]]:
        """(line number from 1, line without its newline and its wrapping) of every whole line, streamed: a cut
        last line (`tail`) is not among them, and the reader warns of it."""
        for number, text, ended in self.numbered():
            if ended:
                yield number, text


STDIN = "-"  # the input a person pipes in (`nvidia-smi nvlink -e | fabricbot analyze -`)
LOG_DATES = "a log printed with its dates: `journalctl -o short-iso`, `dmesg --time-format iso`"
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def not_utf8(head: bytes) -> str:
    """Why bytes that are no UTF-8 text are refused: UTF-16 text (Windows PowerShell's `>` writes it) is named as
    such, with the way to convert it; anything else is binary."""
    if head.startswith(UTF16_BOMS):
        return ("UTF-16 text (as Windows PowerShell's `>` writes it), not UTF-8: save it as UTF-8 (`iconv -f UTF-16 "
                "-t UTF-8`, or PowerShell's `Out-File -Encoding utf8`) and read that")
    return "binary data, not a telemetry file this tool reads"


def decoded(raw: bytes, name: str) -> str:
    """An input's bytes as text, or why they are none."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        said = not_utf8(raw) if raw.startswith(UTF16_BOMS) else f"not UTF-8 text (byte {exc.start})"
        raise InputError(said, source=name) from None


def input_text(item: str | Path | Source) -> tuple[str, str]:
    """An input's whole text and its name, or why it has none (not found, unreadable, no UTF-8 text): what a
    snapshot is parsed from."""
    if isinstance(item, Source) and item.text is not None:
        return item.text, item.name
    path = item.path if isinstance(item, Source) and item.path is not None else Path(str(item))
    name = str(item.name if isinstance(item, Source) else item)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError("file not found", source=name) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", source=name) from None
    return decoded(raw, name), name


def open_input(name: str | Path) -> Source:
    """An input as a person names it: a file, or `-`, standard input, read once into memory (a pipe cannot be read
    again, and it is sniffed for its format before it is read). Piped output ends as a file does, with a newline:
    without one it was cut."""
    if str(name) != STDIN:
        return Source.from_path(name)
    stream = getattr(sys.stdin, "buffer", None)
    text = decoded(stream.read(), "<stdin>") if stream is not None else sys.stdin.read()
    return Source.from_text(text, "<stdin>", whole_end=False)


# Bytes no text format holds: C0 controls but tab and the newlines, DEL, and U+FFFD (what an undecodable byte reads
# as). A line with one was damaged on its way here (a flipped bit, a binary splice), so what is read of it may be wrong.
_NOT_TEXT = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffd]")
_DAMAGE_SAID = 10  # lines named one by one; the rest are counted


def damaged_lines(source: Source) -> list[IngestWarning]:
    """A warning for each line holding a byte that is no text (the first few, then a count), found a block of
    text at a time, so a clean file of any size costs one regular-expression scan."""
    lines: list[int] = []
    chars: list[str] = []
    number = source.first_line  # the line the next block starts on
    with source._raw_text() as fh:
        for block in iter(lambda: fh.read(1 << 16), ""):
            at = 0
            for match in _NOT_TEXT.finditer(block):
                number += block.count("\n", at, match.start())
                at = match.start()
                if not lines or lines[-1] != number:
                    lines.append(number)
                    chars.append(match[0])
            number += block.count("\n", at)
    out = [IngestWarning(source.name, line, f"this line holds {char!r}, which no text holds: the line was damaged, "
                                            "and what is read of it may be wrong")
           for line, char in zip(lines[:_DAMAGE_SAID], chars, strict=False)]
    if len(lines) > _DAMAGE_SAID:
        out.append(IngestWarning(source.name, lines[_DAMAGE_SAID], f"this line and {len(lines) - _DAMAGE_SAID - 1} "
                                                                   "more after it hold bytes that are no text"))
    return out


def _file_tail(path: Path) -> tuple[int, str] | None:
    """(line number, text) of a file's last line when no newline ends it; None when one does (or it is empty)."""
    try:
        with path.open("rb") as fh:
            end = fh.seek(0, io.SEEK_END)
            if end == 0:
                return None
            fh.seek(end - 1)
            if fh.read(1) in (b"\n", b"\r"):
                return None
            fh.seek(0)
            newlines, last, offset, after_cr = 0, -1, 0, False
            for block in iter(lambda: fh.read(1 << 20), b""):
                found = max(block.rfind(b"\n"), block.rfind(b"\r"))
                if found >= 0:
                    last = offset + found
                # a CR, an LF and a CRLF are one newline each (as text mode reads them), across blocks too
                newlines += block.count(b"\n") + block.count(b"\r") - block.count(b"\r\n")
                newlines -= after_cr and block.startswith(b"\n")
                after_cr = block.endswith(b"\r")
                offset += len(block)
            fh.seek(last + 1)
            text = fh.read().removeprefix(_BOM_BYTES if last < 0 else b"").decode("utf-8", "replace")
    except OSError:
        return None
    return newlines + 1, text


class Reader(Protocol):
    """A format reader: says how sure it is that a head of input is its format, and reads it."""

    name: str

    def sniff(self, head: str) -> float:
        """0.0 (not this format) to 1.0 (certainly this format)."""
        ...

    def read(self, source: Source, *, node_id: str | None = None) -> IngestResult: ...


@runtime_checkable
class Opens(Protocol):
    """A reader some of whose lines no other tool prints: such a line starts its output inside a paste, even with no
    blank line or prompt before it (a kernel log's prefixed NVRM line right after an nvidia-smi output)."""

    def opens(self, text: str) -> bool:
        """Whether this line, stripped, is one only this reader's format prints."""
        ...
