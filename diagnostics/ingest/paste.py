"""A paste that mixes outputs: split it into sections, read each with the reader detection picks, warn the rest.

Sections start at a shell command (with or without its prompt) and at Markdown fences; within a section,
blank-line blocks that different readers claim are split apart, and so is an output pasted right after another with
no blank line between, where its first line is one only its reader's format prints (`base.Opens`). Each part is
read by the registered reader whose sniff scores it highest, so readers added later (topology, dcgm) are picked up
with no change here.
Line numbers stay those of the whole paste: each part is handed over as a source starting at its first line.
This reader only wins detection when the input really holds more than one kind of output. A paste is held in
memory whole (pastes are small); a large file of one format goes straight to its own reader, which streams.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from ..values import limits
from . import detect
from .base import IngestResult, Opens, Reader, Source
from .textlines import Collector, Line, classify_line, stated_time
from .wrapping import split_lines, unwrap_text

MIXED_SCORE = 0.99  # above the 0.95 a reader gives its own format: a mixed paste is more than any one of them


@dataclass
class Part:
    """Lines one reader (or none) takes, and the command that introduced them."""

    reader: str | None
    lines: list[Line] = field(default_factory=list)
    host: str | None = None

    def text(self) -> str:
        return "\n".join(line.text for line in self.lines)


class PasteReader:
    name = "paste"

    def sniff(self, head: str) -> float:
        lines = _lines(split_lines(head))
        readers = {part.reader for part in plan(lines, _others())[0] if part.reader}
        return MIXED_SCORE if len(readers) >= 2 else 0.0

    def read(self, source: Source, *, node_id: str | None = None, until: datetime | None = None) -> IngestResult:
        """`until`: the time the paste was taken by, for the readers that date by it (a log's yearless dates)."""
        notes = Collector(source, "paste", node_id)
        lines = _lines(text for _, text in source.read_lines(notes.note))
        others = _others()
        results = []
        parts, stopped = plan(lines, others, limits().paste_max_outputs)
        banner: Line | None = None  # a capture banner (`Collector.take_banner`): the node and time of the parts after
        for part in parts:
            body = [line for line in part.lines if line.kind not in ("blank", "fence", "provenance", "heading")]
            banners = [line for line in body if line.kind == "banner"]
            if part.reader is None:
                for line in banners:
                    notes.take_banner(line)  # said here; the outputs after it are its node's, at its time
                _warn_unread(notes, [line for line in body if line.kind != "banner"])
                banner = banners[-1] if banners else banner
                continue
            first, text = _span(part.lines)
            own = Source.from_text(text, name=source.name, first_line=first)
            host = part.host if part.host != (banners[0].host if banners else None) else None  # its own: read
            reader = others[part.reader]
            dated = {"until": until} if "until" in inspect.signature(reader.read).parameters else {}
            result = reader.read(own, node_id=node_id or host or (banner.host if banner else None), **dated)
            if banner is not None and not banners:
                _timed(result, banner)
                result.banner_nodes |= {banner.host} if banner.host and not node_id and not host else set()
            banner = banners[-1] if banners else banner
            results.append(result)
        if stopped is not None:
            notes.warn(stopped, f"this paste holds more than {limits().paste_max_outputs} outputs (the limits' "
                                f"[paste] max_outputs): lines {stopped}-{lines[-1].number} not read; give them as "
                                "files or in another paste")
        results.append(notes.result())
        combined = IngestResult.combine(results)
        combined.warnings.sort(key=lambda w: w.line or 0)
        return combined


def _timed(result: IngestResult, banner: Line) -> None:
    """The readings of an output after a capture banner that state no time of their own take the banner's (marked
    as such: `IngestResult.captured`)."""
    found = stated_time(banner.text.split("|")[-1].strip(" =\t"))
    if found is None:
        return
    for name in ("link_samples", "step_samples", "events"):
        frame = result.tables[name]
        if len(frame) and (unset := frame["timestamp"].isna()).any():
            result.captured.setdefault(name, []).extend(int(i) for i in unset.to_numpy().nonzero()[0])
            frame["timestamp"] = frame["timestamp"].fillna(found[0])


def _lines(texts: Iterable[str]) -> list[Line]:
    """Classify a paste's lines, keeping a command's `\\` continuations with it."""
    out: list[Line] = []
    continuing = False
    for number, text in enumerate(texts, start=1):
        if continuing:
            out.append(Line(number, text, "continuation", text.strip()))
        else:
            out.append(classify_line(number, text))
        continuing = out[-1].kind in ("command", "continuation") and text.rstrip().endswith("\\")
    return out


def _others() -> dict[str, Reader]:
    return {name: reader for name, reader in detect.readers().items() if name != PasteReader.name}


def _best(text: str, others: dict[str, Reader]) -> str | None:
    text = unwrap_text(text)  # a block quoted or indented on its own inside the paste
    scored = sorted(((reader.sniff(text), name) for name, reader in others.items()), reverse=True)
    return scored[0][1] if scored and scored[0][0] > 0 else None


def plan(lines: list[Line], others: dict[str, Reader], limit: int | None = None) -> tuple[list[Part], int | None]:
    """Cut the paste into parts, each claimed by one reader or by none; with `limit`, stop before the part that
    would be the limit's + 1st claimed one: (parts, the line it starts at), None where all were planned."""
    merged: list[Part] = []
    claimed = 0
    for section in _sections(lines):
        for part in _split(section, others):
            if merged and merged[-1].reader is None and _only_a_time(merged[-1]):
                part.lines[:0] = merged.pop().lines  # `$ date` before an output: the time of that output
            if merged and part.reader is not None and merged[-1].reader == part.reader:
                merged[-1].lines.extend(part.lines)  # neighbours one reader claims: read together (one row a link)
                merged[-1].host = merged[-1].host or part.host
                continue
            claimed += part.reader is not None
            if limit is not None and claimed > limit:
                return merged, part.lines[0].number
            merged.append(part)
    return merged, None


def _sections(lines: list[Line]) -> list[list[Line]]:
    sections: list[list[Line]] = [[]]
    for line in lines:
        if line.kind in ("command", "fence") and sections[-1]:
            sections.append([])
        sections[-1].append(line)
    return [s for s in sections if s]


def _split(section: list[Line], others: dict[str, Reader]) -> list[Part]:
    host = next((line.host for line in section if line.host), None)
    head = [line for line in section if line.kind in ("command", "continuation", "fence")]
    body = section[len(head):] if section[: len(head)] == head else section
    blocks = _blocks(body, others)
    # one block: it is the section, judged whole below (each reader's sniff is most of a paste's detection)
    claims = [_best("\n".join(line.text for line in block), others) for block in blocks] if len(blocks) > 1 else []
    if len({c for c in claims if c}) <= 1:
        whole = _best("\n".join(line.text for line in section), others)
        if whole is None and any(line.kind == "text" for line in body):
            return [Part(None, section, host)]
        return [Part(whole, section, host)]
    parts: list[Part] = [Part(claims[0], head + blocks[0], host)]
    for block, claim in zip(blocks[1:], claims[1:], strict=True):
        if claim is None or claim == parts[-1].reader:
            parts[-1].lines.extend(block)  # an unclaimed block stays with the output before it
        else:
            parts.append(Part(claim, block, host))
    return parts


def _blocks(body: list[Line], others: dict[str, Reader]) -> list[list[Line]]:
    """A section's blank-line blocks, each cut again before a line that opens another reader's output (`Opens`: a
    prefixed NVRM line, a dcgm `# HELP`, a `topo -m` header, an nvlink GPU header) where the reader of the block so
    far does not read that line: an output pasted right after another, with no blank line or prompt between. A cut
    that the reader of the opening line would not take (its lines are not its format after all) is undone."""
    openers = {name: reader for name, reader in others.items() if isinstance(reader, Opens)}
    blocks: list[list[Line]] = [[]]
    opened: dict[int, str] = {}  # a block cut off before its first line -> the reader that line opens
    kept: set[str] = set()  # readers whose opening lines the current block keeps: asked once each
    for line in body:
        if line.kind == "blank" and blocks[-1]:
            blocks.append([])
            kept = set()
        elif line.kind == "text" and openers:
            text = line.text.strip()
            opener = next((name for name, reader in openers.items() if reader.opens(text)), None)
            if opener is not None and opener not in kept:
                kept.add(opener)
                if _cuts(blocks[-1], text, opener, others):
                    blocks.append([])
                    opened[len(blocks) - 1] = opener
                    kept = {opener}
        blocks[-1].append(line)
    out: list[list[Line]] = []
    for index, block in enumerate(blocks):
        if index in opened and _best("\n".join(line.text for line in block), others) != opened[index]:
            out[-1].extend(block)
        else:
            out.append(block)
    return out


def _cuts(block: list[Line], text: str, opener: str, others: dict[str, Reader]) -> bool:
    """Whether a line that opens `opener`'s output starts a new block: the block so far is another reader's, and
    that reader sees nothing of its own format in the line."""
    if not any(line.kind == "text" for line in block):
        return False
    reader = _best("\n".join(line.text for line in block), others)
    return reader is not None and reader != opener and others[reader].sniff(text) <= 0


def _only_a_time(part: Part) -> bool:
    text = [line for line in part.lines if line.kind == "text"]
    return bool(text) and all(stated_time(line.text) for line in text)


def _span(lines: list[Line]) -> tuple[int, str]:
    """(first line number, text) of a part: its lines at their own numbers, a line between them of another part
    blank. The part is read as a source that starts at that line, so its warnings name the paste's lines."""
    by_number = {line.number: line.text for line in lines}
    first = min(by_number)
    return first, "\n".join(by_number.get(n, "") for n in range(first, max(by_number) + 1))


def _warn_unread(notes: Collector, body: list[Line]) -> None:
    commands = [line for line in body if line.kind == "command"]
    text = [line for line in body if line.kind not in ("command", "continuation")]
    if text:
        span = f"lines {text[0].number}-{text[-1].number}" if len(text) > 1 else f"line {text[0].number}"
        notes.warn(text[0].number, f"{span}: not output of a format fabricbot reads "
                                   f"(starts {text[0].text.strip()[:60]!r}); skipped")
    elif commands:
        notes.warn(commands[0].number, f"the command {commands[0].command!r} has no output here that fabricbot reads")


READER = PasteReader()
