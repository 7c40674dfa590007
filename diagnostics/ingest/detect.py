"""Choose a reader for an input by sniffing its head, or by name (`--format`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..config.unread import unread_outputs
from ..errors import InputError
from ..values import limits
from .base import HEAD_BYTES, IngestResult, Reader, Source, damaged_lines, input_text, not_utf8
from .textlines import COMMAND_HINT, classify_line, stated_time
from .wrapping import first_line_unindented

# Reader registry: one entry per format module. Each module defines READER (an object with name/sniff/read).
_READER_MODULES: tuple[str, ...] = (
    "dcgm",
    "nmxt",
    "snapshot",
    "tables",
    "topo_matrix",
    "nccl_xml",
    "nvlink",
    "dcgmi_nvlink",
    "smi_query",
    "imex",
    "lspci",
    "kernel_log",
    "fabric_manager",
    "nccl_tests",
    "steplog",
    "paste",
)

_CACHE: dict[str, Reader] = {}
# Prometheus text, where no line's indentation means anything: a paste whose first line lost the indentation of the
# rest is read without it even when that first line alone tells the format (see `choose`).
_FLAT = frozenset({"dcgm", "nmxt"})
_PASTE = "paste"  # the reader of several outputs pasted together


def readers() -> dict[str, Reader]:
    if not _CACHE:
        import importlib

        for module in _READER_MODULES:
            reader: Reader = importlib.import_module(f"{__package__}.{module}").READER
            _CACHE[reader.name] = reader
    return _CACHE



def _looks_binary(head: bytes) -> bool:
    if head.startswith(b"PAR1"):
        return False
    if b"\x00" in head[:8192]:
        return True
    try:
        head[:8192].decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start < len(head[:8192]) - 4  # a multi-byte character cut at the end is fine
    return False


def _scores(source: Source, available: dict[str, Reader]) -> list[tuple[float, str]]:
    """Each reader's sniff of the head without the paste's indentation, quote markers or fences, best first; a
    parallel shell's prefixes and headers taken off only for the readers that read them (`reads_hosts`): another
    reads the lines as printed, so it sniffs them so."""
    text = source.head_text()
    raw = source.head_text(hosts=False) if source.fanout is not None else text
    return sorted(((r.sniff(text if getattr(r, "reads_hosts", False) else raw), name)
                   for name, r in available.items()), reverse=True)


def choose(source: Source, fmt: str | None = None) -> Reader:
    available = readers()
    if fmt:
        if fmt not in available:
            raise InputError(f"unknown format {fmt!r}; formats: {', '.join(sorted(available))}", source=source.name)
        return available[fmt]
    head = source.head()
    if not head.strip():
        raise InputError("the input is empty", source=source.name)
    if head.startswith(b"PAR1") and "tables" in available:
        return available["tables"]
    if _looks_binary(head):
        raise InputError(not_utf8(head), source=source.name)
    scored = _scores(source, available)
    unread = not scored or scored[0][0] <= 0
    text = head.decode("utf-8", "replace")
    lost = first_line_unindented(text) if unread or scored[0][1] in _FLAT or _apart(text) else None
    if lost is not None:  # the first line lost the indentation of the rest: read the rest without it
        source.rewrap(lost)
        again = _scores(source, available)
        if again and again[0][0] > 0 and (unread or again[0][1] == scored[0][1]):
            scored = again
        else:
            source.rewrap(None)
    if not scored or scored[0][0] <= 0:
        said = unread_outputs().said(source.head_text())
        raise InputError(said or "unrecognized format; force one with --format " + "|".join(sorted(available)),
                         source=source.name)
    if scored[0][1] != _PASTE and _PASTE in available and (whole := _past_head(source)) is not None \
            and available[_PASTE].sniff(whole) > scored[0][0]:
        return available[_PASTE]
    return available[scored[0][1]]


def _apart(head: str) -> bool:
    """Whether the input's first line is a `date` line or a command, which stand apart from the output under them:
    flush left above an output pasted indented, they say nothing of its indentation (an `lspci -vvv` read with its
    indentation kept has no device line)."""
    first = next((line for line in head.splitlines() if line.strip()), "")
    return stated_time(first) is not None or classify_line(0, first).kind == "command"


def _past_head(source: Source) -> str | None:
    """The whole text of an input longer than the head its reader is chosen by, where a shell command or a Markdown
    fence stands past the head (another output may start there: a full `nvidia-smi -q` fills the head, and a
    kernel log pasted after it was read as lines the -q reader did not know); None for an input the head holds
    whole, one longer than the limits' [paste] sniff_bytes (a log, read as the format its head shows), or one with
    no command past its head. Its lines are classified only where `COMMAND_HINT` finds something in them: a day's
    scrape files are long, and hold none."""
    most = limits().paste_sniff_bytes
    size = source.path.stat().st_size if source.path is not None else len(source.text or "")
    if not HEAD_BYTES < size <= most:
        return None
    raw = source.head(most).decode("utf-8", "replace")
    if not COMMAND_HINT.search(raw, len(source.head().decode("utf-8", "replace"))):
        return None
    text = source.head_text(most)
    past = text[len(source.head_text()):]
    if any(classify_line(0, line).kind in ("command", "fence") for line in past.split("\n")
           if COMMAND_HINT.search(line)):
        return text
    return None


def telemetry_not_snapshot(item: str | Path | Source) -> bool:
    """Whether an input that is no snapshot JSON is telemetry another reader takes: a folder (its files read as
    `ingest` reads them), a kernel log (it starts with `[`, as JSON does), a Parquet table."""
    if not isinstance(item, Source) and Path(item).is_dir():
        return True
    try:
        return choose(item if isinstance(item, Source) else Source.from_path(item)).name != "snapshot"
    except InputError:
        return False


def snapshot_text(item: str | Path | Source) -> tuple[str, str] | None:
    """An input's text and name to parse as a snapshot, or None when it is telemetry another reader takes and no
    text (a folder, a Parquet table)."""
    try:
        return input_text(item)
    except InputError:
        if telemetry_not_snapshot(item):
            return None
        raise


def read(source: Source | str | Path, *, fmt: str | None = None, node_id: str | None = None) -> IngestResult:
    """Read one input into normalized tables."""
    src = source if isinstance(source, Source) else Source.from_path(source)
    return read_with(choose(src, fmt), src, node_id=node_id)


def read_with(reader: Reader, source: Source, **options: Any) -> IngestResult:
    """`reader.read(source, **options)`, and a warning for each line damaged by bytes that are no text (every
    door reads through here, so no reader has to look for them)."""
    result = reader.read(source, **options)
    if reader.name != "tables" or not source.head().startswith(b"PAR1"):  # Parquet's bytes are no text
        told = {w.line for w in result.warnings}  # a line the reader already named (not read, say) is told
        result.warnings.extend(w for w in damaged_lines(source) if w.line not in told)
    return result
