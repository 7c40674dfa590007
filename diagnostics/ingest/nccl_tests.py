"""nccl-tests output (`all_reduce_perf` and its siblings): collective time, algbw and busbw per message size.

Every collective prints one table, and the column header names its layout: `size count type redop root` (today;
`none` and -1 where the collective has no reduction or root), or an older one without `root`, without `redop`
(all_gather, broadcast), or with an empty `redop` cell (alltoall); then out-of-place and in-place groups of
`time algbw busbw #wrong` (or `error`), optionally with per-iteration columns and a `timestamp`. A row's cells are
matched to the header by count, else by where each ends (the tool right-aligns them under their names; not
where a tab stands between cells, its width unknown), else from the right (a paste that lost its alignment); a row
that fits none of these is said, never dropped silently.
`# Avg bus bandwidth` gives one row with no size. The collective comes from the `*_perf` command line, the
`# Collective test starting/concluded:` lines or a script's `==== x_perf ====` banner; the hosts from the `Rank`
lines. Several runs pasted in one input are told apart (a `# nThread` line, or `Rank` lines after results, starts
one): each row carries its own run's hosts, GPU count (nccl-tests prints one `Rank` line per GPU; none read:
nThread x nGpus) and device name, and the values it found wrong (`#wrong`, `# Out of bounds values`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .base import IngestResult, Source
from .textlines import Collector, Line, classify, near, one_edit, parse_time, skip_shell

_COMMAND = re.compile(r"(?:^|/|\s)(?P<coll>[a-z_]+?)_perf(?:_mpi)?\b")
_NAMED = re.compile(r"^#\s*Collective test (?P<when>starting|concluded):\s*(?P<coll>[a-z_]+?)_perf\b|"
                    r"^=+\s*(?P<banner>[a-z_]+?)_perf\s*=+$")
_RANK = re.compile(r"^#\s*Rank\s+\d+\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(?P<host>\S+)\s+device")
_RANK_LIKE = re.compile(r"^#\s*Rank\s+\S+\s.*\bon\s")  # a rank line _RANK does not read: a damaged one
_PARAMS = re.compile(r"^#\s*nThread\s+(?P<threads>\d+)\s+nGpus\s+(?P<gpus>\d+)\b")
_RANK_DEVICE = re.compile(r"\bdevice\s+\d+\s+\[[^\]]*\]\s+(?P<name>.+)$")
_BOUNDS = re.compile(r"^#\s*Out of bounds values\s*:\s*(?P<count>\d+)\b")
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(?P<value>\S+)")
_AVG_NEAR = near("Avg bus bandwidth")  # the line with a flipped byte: said, not passed over as a comment
_KNOWN = re.compile(r"^(?:NCCL\s+version|#|\S+:\d+:\d+\s+\[\d+\]\s+NCCL\s+INFO\s)")  # NCCL's INFO lines between
_TAGGED = re.compile(r"^\[\d+,\d+\]<std(?:out|err)>:")  # mpirun --tag-output
_STAMP = re.compile(r"(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})")  # `timestamp` cells: `%Y-%m-%d %H:%M:%S`
_MAGNITUDE = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")  # a finite number as printed
_NAMES = {"bytes": "size", "N": "count", "op": "redop", "cputime": "time", "res": "#wrong", "error": "#wrong"}
_FIGURES = (("time", "collective_time_us", "collective_time_us"), ("algbw", "algbw_gbps", "bandwidth_gbps"),
            ("busbw", "busbw_gbps", "bandwidth_gbps"))
# Every column name nccl-tests prints (src/common.cu, util.cu: 2.13 to 2.17 and the per-iteration columns), as
# _NAMES spells them
_COLUMN_NAMES = frozenset({"size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "timestamp",
                           "i_min", "i_max", "i_p99", "i_cv%"})
_REDOPS = {"sum", "prod", "max", "min", "avg", "mulsum", "none"}
# The data types nccl-tests prints (src/common.cu test_typenames; `char` and `int` before NCCL 2; the fp8 pair
# with NCCL 2.24, assumed from its ncclFloat8e4m3/e5m2 types)
_TYPES = frozenset({"int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "float", "double", "bfloat16",
                    "f8e4m3", "f8e5m2", "char", "int"})
_SLACK = 2  # characters a cell's right edge may sit from its header's: the header is `# ` plus the row's widths


@dataclass(frozen=True)
class _Column:
    name: str
    end: int | None  # where the name ends on the header line; None for a layout not read from one


# The layouts for rows with no header before them: newest first.
_DEFAULT_LAYOUTS = tuple(
    [_Column(name, None) for name in layout.split()]
    for layout in ("size count type redop root time algbw busbw #wrong time algbw busbw #wrong",
                   "size count type redop time algbw busbw #wrong time algbw busbw #wrong"))


@dataclass
class _Run:
    """One run's header: where it starts, its hosts, GPUs and device names, and its out-of-bounds count."""

    start: str
    per_rank: int | None = None  # nThread x nGpus: a process's GPUs
    hosts: list[str] = field(default_factory=list)
    ranks: int = 0
    names: list[str] = field(default_factory=list)
    out_of_bounds: int = 0
    rows: list[dict[str, Any]] = field(default_factory=list)
    results: bool = False

    def took(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        self.results = True

    def close(self, node_id: str | None) -> None:
        """Each of the run's rows names the run's hosts, GPUs and device; its last row the out-of-bounds count."""
        gpus = self.ranks or self.per_rank
        for row in self.rows:
            row.update(node_ids=",".join(self.hosts) or node_id, run=self.start, gpus=gpus,
                       gpu_name="; ".join(self.names) or None)
        if self.out_of_bounds and self.rows:  # the run's total: on its average row, else on its last
            last = next((r for r in self.rows if "size_bytes" not in r), self.rows[-1])
            last["wrong_values"] = max(last.get("wrong_values") or 0, self.out_of_bounds)


@dataclass
class _Table:
    columns: list[_Column]
    in_place_first: bool = False  # the line above the header says which group comes first


class NcclTestsReader:
    name = "nccl_tests"
    reads_hosts = True  # through textlines.classify: a parallel shell's output each host's (`fanout`)

    def sniff(self, head: str) -> float:
        if "# Avg bus bandwidth" in head or re.search(r"^#.*\balgbw\b.*\bbusbw\b", head, re.MULTILINE):
            return 0.9
        if "nThread" in head and "nGpus" in head:
            return 0.8
        return 0.0

    def read(self, source: Source, *, node_id: str | None = None) -> IngestResult:
        out = Collector(source, "nccl-tests", node_id)
        collective: str | None = None
        named: list[str] = []
        unnamed: list[dict[str, Any]] = []  # rows read before any line names their collective
        runs: list[_Run] = []
        table: _Table | None = None
        in_place_first = False
        last: int | None = None
        results = False  # a line of its results (a row, read or not, or its average)
        for line in classify(source, out):
            last = line.number
            if line.kind in ("command", "continuation") and (cmd := _COMMAND.search(line.command or "")):
                collective = _named(cmd["coll"], named)
            if skip_shell(line, out):
                continue
            text = _TAGGED.sub("", line.text).rstrip()
            stripped = text.strip()
            if said := _NAMED.match(stripped):
                collective = _named(said["coll"] or said["banner"], named)
                if said["when"] == "concluded":  # said after its table: the rows no earlier line named are its
                    for row in unnamed:
                        row["collective"] = collective
                    unnamed.clear()
                    collective = None
            elif params := _PARAMS.match(stripped):
                run = _Run(out.where(line.number), int(params["threads"]) * int(params["gpus"]))
                runs.append(run)
            elif rank := _RANK.match(stripped):
                run = _current(runs, out, line.number, fresh=True)
                run.ranks += 1
                if rank["host"] not in run.hosts:
                    run.hosts.append(rank["host"])
                if (device := _RANK_DEVICE.search(stripped)) and device["name"].strip() not in run.names:
                    run.names.append(device["name"].strip())
            elif bounds := _BOUNDS.match(stripped):
                count = out.checked("index", line.number, bounds["count"], "size_bytes", "Out of bounds values")
                if count is not None:  # a count past any run's elements is said, not read
                    _current(runs, out, line.number).out_of_bounds += int(count)
            elif _RANK_LIKE.match(stripped):
                out.warn(line.number, f"{stripped[:60]!r} is not a `# Rank N Pid P on HOST device D` line as "
                                      "nccl-tests prints one (a damaged line?); its host is not read")
            elif avg := _AVG.match(stripped):
                results = True
                value = out.checked("gauge", line.number, avg["value"], "bandwidth_gbps", "Avg bus bandwidth")
                if value is not None:
                    row = out.add("step_samples", line.number, collective=collective, busbw_gbps=value)
                    _current(runs, out, line.number).took(row)
                    if collective is None:
                        unnamed.append(row)
            elif stripped.startswith("#") and _AVG_NEAR.search(stripped):
                out.warn(line.number, f"{stripped[:60]!r} is not the `# Avg bus bandwidth : <GB/s>` line nccl-tests "
                                      "prints (a damaged line?); not read")
            elif stripped.startswith("#") and "out-of-place" in stripped and "in-place" in stripped:
                in_place_first = stripped.index("in-place") < stripped.index("out-of-place")
            elif stripped.startswith("#") and _is_header(stripped):
                columns = _header(text)
                if damage := _damaged(columns):
                    out.warn(line.number, f"{damage} (a damaged header?); the rows under it are read by the "
                                          "layouts nccl-tests prints, by their count of cells")
                table = None if damage else _Table(columns, in_place_first)
            elif _KNOWN.match(stripped):
                out.flush()  # a known line ends a run of unread ones
            elif stripped[:1].isdigit():
                results = True
                for row in _data_row(out, line, text, table):
                    _current(runs, out, line.number).took(row)
                    row["collective"] = collective
                    if collective is None:
                        unnamed.append(row)
            else:
                out.unread(line)
        if unnamed and len(named) == 1:  # one collective named anywhere: the rows before its name are its own
            for row in unnamed:
                row["collective"] = named[0]
        elif any("size_bytes" in row for row in unnamed):
            out.warn(None, "no `*_perf` command line or `Collective test` line names the collective of "
                           f"{len(unnamed)} rows; they carry none")
        hosts = len({h for run in runs for h in run.hosts})
        if not results and (hosts or named or collective or table is not None):
            out.warn(last, f"the run's header ({hosts} host{'s' if hosts != 1 else ''}) is read, but the "
                           "output ends before any row of its results table or its `# Avg bus bandwidth` line (cut "
                           "off?): no bandwidth is read")
        for run in runs:
            run.close(node_id)
        return out.result()


def _current(runs: list[_Run], out: Collector, number: int, *, fresh: bool = False) -> _Run:
    """The run a line belongs to: the last one begun, or a new one where none has (or, `fresh`: where the last one
    already has results: a `Rank` line after a table begins the next run's header)."""
    if not runs or (fresh and runs[-1].results):
        runs.append(_Run(out.where(number)))
    return runs[-1]


def _named(found: str, named: list[str]) -> str:
    if found not in named:
        named.append(found)
    return found


def _is_header(line: str) -> bool:
    """A column header: a time (or one letter from it) and busbw, or `size` and `busbw` (one damaged name)."""
    words = line.split()
    return "busbw" in line and bool({"time", "cputime", "size"} & set(words) or any(one_edit(w, "time") for w in words))


def _damaged(columns: list[_Column]) -> str | None:
    """What is wrong with a header whose names are not nccl-tests': a name one letter from one it prints, or a
    group without exactly one time, algbw and busbw."""
    names = [c.name for c in columns]
    for name in names:
        if name not in _COLUMN_NAMES and (near := next((k for k in _COLUMN_NAMES if one_edit(name, k)), None)):
            return f"header column {name!r} is one letter from {near!r}"
    if names[:1] != ["size"]:  # nccl-tests prints size first: a cell before it would shift every row's cells
        return f"the header's first column is {names[0][:20] if names else None!r}, not size"
    if names.count("time") != names.count("algbw") or names.count("time") != names.count("busbw"):
        return f"the header names size {names.count('size')}, time {names.count('time')}, algbw " \
               f"{names.count('algbw')} and busbw {names.count('busbw')} times"
    return None


def _header(text: str) -> list[_Column]:
    """The header's column names, with where each ends (none when a tab is between them: its width is unknown)."""
    line = text.replace("#", " ", 1)  # the `#` stands in the first cell's place: positions stay the row's
    tabbed = "\t" in line.strip()
    return [_Column(_NAMES.get(m[0], m[0]), None if tabbed else m.end()) for m in re.finditer(r"\S+", line)]


def _cells(tokens: list[re.Match[str]], columns: list[_Column], tabbed: bool) -> dict[int, str] | None:
    """Which column each of a row's cells is in (by column index), or None when they cannot be told. A row
    holding a tab (`tabbed`) has no positions to go by: its cells are told apart by their values."""
    if len(tokens) == len(columns):
        return {i: t[0] for i, t in enumerate(tokens)}
    if len(tokens) > len(columns):
        return None
    if tabbed:
        return _from_right(tokens, columns)
    placed: dict[int, str] = {}
    start = 0
    for k, token in enumerate(tokens):  # by position: each cell under the column whose right edge is nearest
        room = range(start, len(columns) - (len(tokens) - k - 1))
        ends = [c for c in room if columns[c].end is not None]
        best = min(ends, key=lambda c: abs((columns[c].end or 0) - token.end()), default=None)
        if best is None or abs((columns[best].end or 0) - token.end()) > _SLACK:
            if k and k == len(tokens) - 1 and 0 in placed:  # the line's last cell, cut short: the row stops here
                return placed
            return _from_right(tokens, columns)
        placed[best] = token[0]
        start = best + 1
    return placed if 0 in placed else _from_right(tokens, columns)  # a size under another name is misplaced


def _from_right(tokens: list[re.Match[str]], columns: list[_Column]) -> dict[int, str] | None:
    """A row that lost its alignment: the figures from the right, size and count first, and the cells between
    told apart by their values (a reduction name is `redop`, an integer `root`, a word `type`)."""
    first = next((i for i, c in enumerate(columns) if c.name == "time"), None)
    tail = len(columns) - first if first is not None else 0
    head = len(tokens) - tail
    if first is None or head < 2 or head > first:
        return None
    placed = {0: tokens[0][0], 1: tokens[1][0]}
    free = {c.name: i for i, c in enumerate(columns[:first]) if i > 1}
    for token in tokens[2:head]:
        kind = _kind(token[0])
        if kind not in free:
            return None
        placed[free.pop(kind)] = token[0]
    placed.update({first + i: t[0] for i, t in enumerate(tokens[head:])})
    return placed


def _from_left(tokens: list[re.Match[str]], columns: list[_Column]) -> dict[int, str] | None:
    """The start of a row that lost its alignment (the input ends inside it): size and count, each cell before
    the figures under the column its value fits (an empty one skipped), then the figures in order."""
    first = next((i for i, c in enumerate(columns) if c.name == "time"), None)
    if first is None or len(tokens) < 2:
        return None
    placed = {0: tokens[0][0], 1: tokens[1][0]}
    k = 2
    for i in range(2, first):
        if k < len(tokens) and _kind(tokens[k][0]) == columns[i].name:
            placed[i] = tokens[k][0]
            k += 1
    if len(tokens) - k > len(columns) - first:
        return None
    placed.update({first + i: t[0] for i, t in enumerate(tokens[k:])})
    return placed


def _kind(value: str) -> str:
    """The column a cell before the figures is in, by its value."""
    return "redop" if value in _REDOPS else "root" if re.fullmatch(r"-?\d+", value) else "type"


def _data_row(out: Collector, line: Line, text: str, table: _Table | None) -> list[dict[str, Any]]:
    """A size's out-of-place and in-place rows; none, said, when the row cannot be read."""
    text = _STAMP.sub(r"\1T\2", text)  # one cell, the same width
    body = text.lstrip()
    if table is not None and table.columns[0].end is not None and "\t" in text[: len(text) - len(body)]:
        # tabs before the size (an editor's indentation): the size right-aligned under its name again
        text = " " * max(0, table.columns[0].end - len(body.split()[0])) + body
    tokens = list(re.finditer(r"\S+", text))
    if table is None:
        layout = next((c for c in _DEFAULT_LAYOUTS if len(c) == len(tokens)), None)
        table = _Table(layout) if layout else None
    tabbed = "\t" in body.rstrip()
    if table is None:
        cells = None
    elif tabbed and line.cut:  # what is there is the row's start: told apart from the left
        cells = _from_left(tokens, table.columns)
    else:
        cells = _cells(tokens, table.columns, tabbed)
    if table is None or cells is None:
        out.unread(line)
        return []
    columns = table.columns
    named = {columns[i].name: v for i, v in cells.items() if columns[i].name not in ("time", "algbw", "busbw")}
    size = out.checked("index", line.number, named.get("size", ""), "size_bytes", "size")
    if size is None:
        return []
    common: dict[str, Any] = {"size_bytes": size, "data_type": named.get("type"),
                              "redop": None if named.get("redop") in (None, "none") else named["redop"]}
    strange = [f"{name} = {named[name]!r} is no {what} nccl-tests prints"
               for name, what, known in (("type", "data type", _TYPES), ("redop", "reduction", _REDOPS))
               if named.get(name) not in (None, *known)]
    if strange:  # a cell out of its place (a flipped byte made a space a cell): the two names are not read
        out.warn(line.number, f"{'; '.join(strange)} (a damaged row?); its type and reduction are not read")
        common.update(data_type=None, redop=None)
    if named.get("root") not in (None, "-1"):  # -1: a collective with no root
        common["root"] = out.checked("index", line.number, named["root"], "rank", "root")
    if stamp := named.get("timestamp"):
        when = parse_time(stamp)
        if when is None:
            out.warn(line.number, f"timestamp = {stamp!r} is no time; the row is not dated by it")
        else:
            out.once("local-time", line.number, "nccl-tests writes its timestamps in the host's local time and "
                                                "states no zone; read as UTC")
            common["timestamp"] = when.tz_localize("UTC") if when.tzinfo is None else when.tz_convert("UTC")
    starts = [i for i, c in enumerate(columns) if c.name == "time"]
    groups = [_figures(columns, cells, start, starts[g + 1] if g + 1 < len(starts) else len(columns))
              for g, start in enumerate(starts)]
    rows: list[dict[str, Any]] = []
    for g, figures in enumerate(groups):
        where = "in-place" if (g == 1) != table.in_place_first else "out-of-place"
        if not any(figures.values()):
            if g == len(groups) - 1 and rows:
                out.warn(line.number, f"this row is cut off before its {where} figures are whole; the figures "
                                      "before them are read")
            continue  # a group the run did not time (a trace replay prints no out-of-place figures)
        if not all(figures.values()):
            missing = ", ".join(k for k, v in figures.items() if not v)
            out.warn(line.number, f"{where} {missing} missing from this row; its {where} figures are not read")
            continue
        values = [out.checked("gauge", line.number, figures[name] or "", kind, f"{name} ({where})")
                  for name, _, kind in _FIGURES]
        if None in values:
            continue  # N/A (this collective has no such figures), or refused and said
        row = out.add("step_samples", line.number, **common, in_place=where == "in-place",
                      wrong_values=_wrong(out, line.number, columns, cells, starts[g], where),
                      **{column: v for (_, column, _), v in zip(_FIGURES, values, strict=True)})
        rows.append(row)
    if not rows and line.cut:  # the cut took the row's figures: the whole row is dropped, not its last part alone
        out.retell(line.number, f"the input ends inside this row, before its figures ({text.strip()[:60]!r}): the "
                                "row is not read")
    return rows


def _wrong(out: Collector, number: int, columns: list[_Column], cells: dict[int, str], start: int,
           where: str) -> int | None:
    """A group's #wrong cell: the elements the run's check found wrong (None: not checked, `N/A` with -c 0)."""
    cell = next((cells.get(i) for i in range(start, len(columns)) if columns[i].name == "#wrong"), None)
    if cell is None or cell.upper() == "N/A":
        return None
    if not cell.isdigit():  # an old layout's `error` is the largest error (`4e-07`), no count; a damaged cell is said
        if not _MAGNITUDE.match(cell):
            out.warn(number, f"#wrong ({where}) = {cell!r}: neither a count of wrong values nor an error; not read")
        return None
    return out.checked("index", number, cell, "size_bytes", f"#wrong ({where})")


def _figures(columns: list[_Column], cells: dict[int, str], start: int, stop: int) -> dict[str, str | None]:
    """One group's time, algbw and busbw cells as written (None for an empty one)."""
    found: dict[str, str | None] = dict.fromkeys(name for name, _, _ in _FIGURES)
    for i in range(start, stop):
        if columns[i].name in found:
            found[columns[i].name] = cells.get(i)
    return found


READER = NcclTestsReader()
