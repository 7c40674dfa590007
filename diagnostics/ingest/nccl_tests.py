"""nccl-tests output (`all_reduce_perf` and its siblings): collective time, algbw and busbw per message size.

The column header names the layout, so old (`error`, no `root`) and new (`root`, `#wrong`) tables read alike.
Each size gives an out-of-place and an in-place row (`in_place`); `# Avg bus bandwidth` gives one row with no
size. The collective comes from the `*_perf` command line when the paste has it; the hosts from the `Rank` lines.
"""

from __future__ import annotations

import re

from .base import IngestResult, Source
from .textlines import Collector, Line, classify, skip_shell

_COMMAND = re.compile(r"(?:^|/|\s)(?P<coll>[a-z_]+?)_perf(?:_mpi)?\b")
_RANK = re.compile(r"^#\s*Rank\s+\d+\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+(?P<host>\S+)\s+device")
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(?P<value>\S+)")
_KNOWN = re.compile(r"^(?:NCCL version|#)")
_KINDS = ("collective_time_us", "bandwidth_gbps", "bandwidth_gbps")  # the limits of time, algbw and busbw
# The layouts seen before a header is: newest first. Each name is a column, `time` starts a figures group.
_DEFAULT_LAYOUTS = (
    ["size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong"],
    ["size", "count", "type", "redop", "time", "algbw", "busbw", "error", "time", "algbw", "busbw", "error"],
)


class NcclTestsReader:
    name = "nccl_tests"

    def sniff(self, head: str) -> float:
        if "# Avg bus bandwidth" in head or re.search(r"^#.*\balgbw\b.*\bbusbw\b", head, re.MULTILINE):
            return 0.9
        if "nThread" in head and "nGpus" in head:
            return 0.8
        return 0.0

    def read(self, source: Source, *, node_id: str | None = None) -> IngestResult:
        out = Collector(source, "nccl-tests", node_id)
        collective: str | None = None
        hosts: list[str] = []
        columns: list[str] | None = None
        rows = 0
        for line in classify(source, out):
            if line.kind in ("command", "continuation") and (cmd := _COMMAND.search(line.command or "")):
                collective = cmd["coll"]
            if skip_shell(line, out):
                continue
            text = line.text.strip()
            if rank := _RANK.match(text):
                if rank["host"] not in hosts:
                    hosts.append(rank["host"])
            elif avg := _AVG.match(text):
                value = out.checked("gauge", line.number, avg["value"], "bandwidth_gbps", "Avg bus bandwidth")
                if value is not None:
                    out.add("step_samples", line.number, collective=collective, busbw_gbps=value)
            elif text.startswith("#") and "size" in text and "time" in text:
                columns = text.lstrip("#").split()
            elif _KNOWN.match(text):
                out.flush()  # a known line ends a run of unread ones
            elif text[0].isdigit():
                rows += _data_row(out, line, columns, collective)
            else:
                out.unread(line)
        if rows and collective is None:
            out.warn(None, "no `*_perf` command line names the collective; the rows carry none")
        frame_hosts = ",".join(hosts) or node_id
        for row in out.rows.get("step_samples", []):
            row["collective"] = row["collective"] or collective
            row["node_ids"] = frame_hosts
        return out.result()


def _data_row(out: Collector, line: Line, columns: list[str] | None, collective: str | None) -> int:
    tokens = line.text.split()
    layout = columns or next((c for c in _DEFAULT_LAYOUTS if len(c) == len(tokens)), None)
    if layout is None:
        out.unread(line)
        return 0
    size = out.checked("index", line.number, tokens[0], "size_bytes", "size")
    starts = [i for i, name in enumerate(layout) if name == "time"]
    read = 0
    for group, start in enumerate(starts):
        figures = tokens[start:start + 3]
        if len(figures) < 3:
            out.warn(line.number, f"this row is cut off after {len(tokens)} of {len(layout)} columns; "
                                  "its whole figures are read")
            break
        values = [out.checked("gauge", line.number, t, kind, f"{name} ({'in' if group else 'out-of'}-place)")
                  for t, kind, name in zip(figures, _KINDS, ("time", "algbw", "busbw"), strict=True)]
        if None in values:
            continue  # N/A (this collective has no such figures), or refused and said
        out.add("step_samples", line.number, collective=collective, size_bytes=size,
                collective_time_us=values[0], algbw_gbps=values[1], busbw_gbps=values[2], in_place=group == 1)
        read += 1
    return read


READER = NcclTestsReader()
