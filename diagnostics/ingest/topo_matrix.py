"""`nvidia-smi topo -m`: the matrix of NV# counts and PCIe path kinds, NIC rows, CPU/NUMA affinity columns.

Both layouts are read: the old one names NICs by device (`mlx5_0`) in the header, the new one says `NIC0` and
names them in a `NIC Legend`. Pastes are often cut off: each cut row, and each device with no row, is a warning
naming the line, and what is there is still read. The header may start at column 0 (a copy that began at
`GPU0`). In a row cut where the input ends, every value but the last was followed by whitespace and is whole;
the last is kept only when no longer value starts with it (X, PIX, PXB, PHB, NODE, SYS, NV with two digits):
`NV1` may be the start of NV12 or NV18, an affinity list may go on, and such a value is dropped with a warning.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..errors import InputError
from ..values import Refused, describe
from ..values import index as checked_index
from .base import IngestResult, IngestWarning, Source, Tail
from .wrapping import split_lines

READER_NAME = "topo-m"
_OLD_NAMES = {"SOC": "SYS"}  # drivers before 384 said SOC for what is now SYS
_CPUS = re.compile(r"^\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*$")  # an affinity or NUMA id: `0-23,96-119`, `2`
_AFFINITY = {"CPU Affinity": "cpu_affinity", "NUMA Affinity": "numa_affinity", "GPU NUMA ID": "gpu_numa_id"}
_HEADER = re.compile(r"^\s*GPU0(\s|$)")
# `nvidia-smi topo -p2p r|w|n|a|p`'s legend: a matrix of peer-to-peer support, whose cells say nothing of links
_P2P_LEGEND = re.compile(r"^\s*(?:OK|CNS|GNS|TNS|NS|DR)\s+=\s+(?:Status Ok|Chipset not supported|GPU not supported|"
                         r"Topology not supported|Not supported|Disabled by regkey)\b"
                         r"|^\s*GPU\d+(?:\s+(?:X|U))*(?:\s+(?:OK|CNS|GNS|TNS|NS|DR))(?:\s+(?:X|U|OK|CNS|GNS|TNS|NS|DR))*\s*$")
_DEVICE = re.compile(r"^(GPU\d+|NIC\d+|mlx\d+_\d+|[a-z][\w.]*\d)$")
_CELL = re.compile(r"^(X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC)$")
_WHOLE = re.compile(r"^(X|NV\d\d|PIX|PXB|PHB|NODE|SYS|SOC)$")  # no longer value starts with one of these
_NIC_LEGEND = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")
_MLX = re.compile(r"^[a-z]+\d*_(\d+)$")


@dataclass
class _Matrix:
    """One matrix being read: its columns, the rows seen, and the rows it produced."""

    devices: list[str]
    extra: list[str]
    header_line: int
    names: dict[str, str]  # header name -> normalized ("mlx5_2" -> "NIC2")
    repeated: frozenset[str] = frozenset()  # names the header gives two columns: neither column is read
    rows_seen: dict[str, int] = field(default_factory=dict)  # row name -> its line
    out: list[Row] = field(default_factory=list)
    last_line: int = 0
    last_complete: bool = True
    cut: _Cut | None = None  # the last value of a short row, until it is known whether the input ends there


@dataclass(frozen=True)
class _Cut:
    """The last value of a row shorter than the header, with no whitespace after it."""

    row: str
    column: str
    value: str
    number: int
    index: int | None  # its row in `out`, if it made one
    open: bool = False  # no newline ends its line


def _split_header(line: str) -> list[str]:
    return [t.strip() for t in re.split(r"\t+| {2,}", line.strip()) if t.strip()]


def _normalize(devices: list[str]) -> dict[str, str]:
    """Header names -> `GPU<i>` / `NIC<i>`; old layouts name NICs `mlx5_<i>`, taken as NIC<i>."""
    names: dict[str, str] = {}
    nic_order = 0
    used = {int(d[3:]) for d in devices if d.startswith("NIC")}
    for d in devices:
        if d.startswith(("GPU", "NIC")):
            names[d] = d
            continue
        match = _MLX.match(d)
        index = int(match[1]) if match and int(match[1]) not in used else None
        while index is None or index in used:
            index, nic_order = nic_order, nic_order + 1
        used.add(index)
        names[d] = f"NIC{index}"
    return names


# One topology row as the reader keeps it: (a, b, relation, nvlinks, detail, line). Tuples, not dicts, and the
# line as a number (its `file:line` text made once per line at the end): a 10 MB matrix is a million rows.
Row = tuple[str, str | None, str, int | None, str | None, int]
COLUMNS = ["a", "b", "relation", "nvlinks", "detail", "line"]
CHUNK_ROWS = 100_000


def _row(m: _Matrix, number: int, a: str, b: str | None, relation: str, nvlinks: int | None = None,
         detail: str | None = None) -> None:
    m.out.append((a, b, relation, nvlinks, detail, number))


def _parse_header(line: str, number: int) -> _Matrix | None:
    tokens = _split_header(line)
    devices: list[str] = []
    extra: list[str] = []
    for token in tokens:
        if token in _AFFINITY:
            extra.append(token)
        elif not extra and _DEVICE.match(token):
            devices.append(token)
        else:
            return None
    if not any(d.startswith("GPU") for d in devices):
        return None
    return _Matrix(devices=devices, extra=extra, header_line=number, names=_normalize(devices))


def _read_row(m: _Matrix, text: str, number: int, where: str, warnings: list[IngestWarning], ended: bool) -> None:
    _settle(m, where, warnings, at_end=False)  # another row follows: the short row's last value was whole
    tokens = text.split()
    name, cells = tokens[0], tokens[1:]
    a = m.names[name]
    m.last_line = number
    if name in m.rows_seen:
        warnings.append(IngestWarning(where, number, f"row {name} again (its row is line {m.rows_seen[name]}); "
                                                     "this one is not read"))
        return
    if name in m.devices and len(cells) > m.devices.index(name) and cells[m.devices.index(name)] != "X":
        own = [col for col, cell in zip(m.devices, cells, strict=False) if cell == "X"]
        warnings.append(IngestWarning(where, number, f"row {name} has no X in its own column"
                                                     f"{f' (its X is under {own[0]})' if own else ''}; "
                                                     "the row is not read"))
        return
    m.rows_seen[name] = number
    device_cells = cells[: len(m.devices)]
    values = cells[len(m.devices):]
    too_many = len(values) > len(m.extra)  # a value split in two, or one added: which is whose cannot be told
    if too_many:
        warnings.append(IngestWarning(where, number, f"row {name} has {len(values)} values after its device "
                                                     f"columns where the header names {len(m.extra)}; they are "
                                                     "not read"))
    m.last_complete = len(device_cells) == len(m.devices) and (not a.startswith("GPU") or
                                                               len(values) >= len(m.extra))
    open_end = (not m.last_complete or not ended) and bool(cells) and not text[-1:].isspace()
    for i, (col, cell) in enumerate(zip(m.devices, device_cells, strict=False)):
        at_cut = open_end and i == len(cells) - 1
        before = len(m.out)
        b = m.names[col]
        if cell == "X" or a == b or col in m.repeated:
            pass
        elif not _CELL.match(cell):
            if not at_cut:  # at a cut it may be a fragment: told when it is known whether the input ends here
                warnings.append(IngestWarning(where, number, f"{name} -> {col}: unknown path kind {cell!r}, skipped"))
        elif (kind := _OLD_NAMES.get(cell, cell)).startswith("NV"):
            try:
                _row(m, number, a, b, "NV", nvlinks=checked_index(kind[2:], "link"))
            except Refused as why:
                warnings.append(IngestWarning(where, number, f"{name} -> {col}: {describe(cell)}: {why}; "
                                                             "skipped"))
        else:
            _row(m, number, a, b, kind, detail=cell if cell != kind else None)
        if at_cut:
            m.cut = _Cut(name, col, cell, number, before if len(m.out) > before else None, not ended)
    for i, (col, value) in enumerate(zip(m.extra, [] if too_many else values, strict=False)):
        before = len(m.out)
        at_cut = open_end and len(device_cells) + i == len(cells) - 1
        if value in ("N/A", ""):
            pass
        elif not at_cut and not _CPUS.match(value):  # at a cut it may be a fragment: told when the input ends
            warnings.append(IngestWarning(where, number, f"row {name}: {col} = {value[:40]!r} is no CPU or NUMA "
                                                         "number list as nvidia-smi prints one; not read"))
        else:
            _row(m, number, a, None, _AFFINITY[col], detail=value)
        if at_cut:
            m.cut = _Cut(name, col, value, number, before if len(m.out) > before else None, not ended)
    if len(device_cells) < len(m.devices):
        warnings.append(IngestWarning(where, number, f"row {name} is cut off after {len(device_cells)} of "
                                                     f"{len(m.devices)} columns; read what is there"))
    elif not m.last_complete:
        missing = ", ".join(m.extra[len(values):])
        warnings.append(IngestWarning(where, number, f"row {name} has no {missing} value; the line may be cut off"))
    elif not ended and not open_end:  # every cell there and followed by a space: read whole, the cut still said
        warnings.append(Tail(number, text).warning(where))


def _settle(m: _Matrix, where: str, warnings: list[IngestWarning], *, at_end: bool) -> None:
    """Keep or drop a short row's last value: dropped when the input ends there and the value may be cut."""
    cut, m.cut = m.cut, None
    if cut is None:
        return
    device = cut.column in m.devices
    if at_end and not (device and _WHOLE.match(cut.value)):
        if cut.index is not None:
            del m.out[cut.index]
        warnings.append(IngestWarning(where, cut.number, f"the input ends inside this row: its last value "
                                                         f"{cut.value!r} ({cut.row} -> {cut.column}) may be cut, "
                                                         "dropped"))
    elif at_end and cut.open:
        warnings.append(IngestWarning(where, cut.number, f"the input ends inside this row, with no newline after "
                                                         f"it: its last value {cut.value!r} is whole (no longer "
                                                         "value starts with it), kept"))
    elif device and not _CELL.match(cut.value):
        warnings.append(IngestWarning(where, cut.number, f"{cut.row} -> {cut.column}: unknown path kind "
                                                         f"{cut.value!r}, skipped"))


def _checked_header(m: _Matrix, where: str, warnings: list[IngestWarning]) -> _Matrix:
    """A header naming one device twice has a damaged name: neither of its columns can be told whose, and is
    not read (said)."""
    repeated = frozenset(d for d in m.devices if m.devices.count(d) > 1)
    if repeated:
        warnings.append(IngestWarning(where, m.header_line, f"the header names {', '.join(sorted(repeated))} twice "
                                                            "(a damaged name?); those columns are not read"))
        m.repeated = repeated
    return m


def _finish(m: _Matrix, where: str, warnings: list[IngestWarning], ended_at_eof: bool) -> None:
    _settle(m, where, warnings, at_end=ended_at_eof)
    missing = [d for d in m.devices if d not in m.rows_seen]
    if missing:
        warnings.append(IngestWarning(where, m.last_line or m.header_line,
                                      f"the matrix is cut off here: no rows for {', '.join(missing)} "
                                      f"(their columns in the other rows are still read)"))
    devices: list[Row] = [(m.names[d], None if m.names[d] == d else d, "gpu" if d.startswith("GPU") else "nic",
                           None, None, m.header_line) for d in dict.fromkeys(m.devices)]
    m.out[:0] = devices


def parse_lines(lines: Iterable[tuple[int, str, bool]], where: str) -> tuple[list[pd.DataFrame], dict[str, str],
                                                                           list[IngestWarning]]:
    """Rows and warnings from the numbered lines of one or more `topo -m` outputs (with whether a newline ends
    each: a matrix row no newline ends is cut like a short row; any other such line is read up to its last
    space, see `Tail`), and the NIC legend (`NIC0: mlx5_0`). Rows become tables every CHUNK_ROWS or so (whole
    matrices), so a long input is held as tables, not as a million tuples."""
    warnings: list[IngestWarning] = []
    chunks: list[pd.DataFrame] = []
    pending: list[Row] = []
    matrix: _Matrix | None = None
    in_matrix = False
    legend: dict[str, str] = {}
    for number, line, ended in lines:
        tokens = line.split()
        if not ended and not (matrix is not None and in_matrix and tokens and tokens[0] in matrix.names):
            tail = Tail(number, line)
            warnings.append(tail.warning(where))
            line = tail.whole
        if _HEADER.match(line):
            header = _parse_header(line, number)
            if header is not None:
                if matrix is not None:
                    _finish(matrix, where, warnings, ended_at_eof=False)
                    pending = _keep(chunks, pending, matrix.out, where)
                matrix, in_matrix = _checked_header(header, where, warnings), True
                continue
        tokens = line.split()
        if matrix is not None and in_matrix and tokens and tokens[0] in matrix.names:
            _read_row(matrix, line, number, where, warnings, ended)
            continue
        if matrix is not None and in_matrix and len(tokens) > 1 and _DEVICE.match(tokens[0]) and \
                _CELL.match(tokens[1]):
            warnings.append(IngestWarning(where, number, f"row {tokens[0]} names no column of the header (line "
                                                         f"{matrix.header_line}); not read"))
            continue
        if line.strip():  # blank lines after a cut row still leave the input ending inside it
            in_matrix = False
            if matrix is not None:
                _settle(matrix, where, warnings, at_end=False)
        match = _NIC_LEGEND.match(line)
        if match:
            legend[match[1]] = match[2]
    if matrix is not None:
        _finish(matrix, where, warnings, ended_at_eof=in_matrix)
        pending = _keep(chunks, pending, matrix.out, where)
    if pending:
        chunks.append(_frame(pending, where))
    return chunks, legend, warnings


def _keep(chunks: list[pd.DataFrame], pending: list[Row], rows: list[Row], where: str) -> list[Row]:
    """A finished matrix's rows added to those pending; a table of them once there are CHUNK_ROWS."""
    pending.extend(rows)
    if len(pending) < CHUNK_ROWS:
        return pending
    chunks.append(_frame(pending, where))
    return []


def _frame(rows: list[Row], where: str) -> pd.DataFrame:
    """Rows as a table of the schema's kinds: texts as strings, `source` as one category a line."""
    frame = pd.DataFrame(rows, columns=COLUMNS).astype({"a": "string", "b": "string", "relation": "category",
                                                        "detail": "string", "nvlinks": "Int16"})
    numbers, at = np.unique(frame.pop("line").to_numpy(dtype=np.int64), return_inverse=True)
    frame["source"] = pd.Categorical.from_codes(at.astype(np.int64), categories=pd.Index(
        [f"{where}:{n}" for n in numbers], dtype="string"))
    return frame


class TopoMatrixReader:
    name = READER_NAME

    def sniff(self, head: str) -> float:
        lines = split_lines(head)
        header = any(_HEADER.match(line) and _parse_header(line, 0) for line in lines)
        if not header:
            return 0.0
        cells = sum(1 for line in lines if re.match(r"^GPU\d+\s+(X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC)\s", line))
        return 0.95 if cells else 0.6

    def opens(self, text: str) -> bool:
        """The matrix's column header (`GPU0 GPU1 ... CPU Affinity`): no other tool prints one, so it starts this
        output inside a paste even right after another's last line (see `paste`)."""
        return bool(_HEADER.match(text)) and _parse_header(text, 0) is not None

    def read(self, source: Source, *, node_id: str | None = None) -> IngestResult:
        for number, line, _ in source.numbered():
            if _P2P_LEGEND.match(line):
                raise InputError("this is `nvidia-smi topo -p2p` output (a GPU pair's peer-to-peer support: OK, "
                                 "CNS, GNS, TNS, NS), not the topology: it says whether P2P reads, writes or NVLink "
                                 "P2P are supported, not which links join the GPUs; `nvidia-smi topo -m` shows the "
                                 "links", source=source.name, line=number, value=line.strip())
        chunks, legend, warnings = parse_lines(source.numbered(), source.name)
        if not chunks:
            warnings.append(IngestWarning(source.name, None, "no `nvidia-smi topo -m` matrix found"))
        frame = pd.concat(chunks or [_frame([], source.name)], ignore_index=True)
        named = (frame["relation"] == "nic") & frame["a"].isin(list(legend))
        frame.loc[named, "b"] = frame.loc[named, "a"].map(legend)
        frame["node_id"] = node_id
        return IngestResult.of(warnings, topology=frame)


READER = TopoMatrixReader()
