"""Fabric Manager's own log: `/var/log/fabricmanager.log` (LOG_FILE_NAME in fabricmanager.cfg) or
`journalctl -u nvidia-fabricmanager`. Its NVSwitch errors become the SXid events a kernel SXid line gives.

The file's lines are `[Feb 27 2025 15:10:02] [ERROR] [tid 12727] <message>`; the journal's are a syslog or
journalctl prefix read as the kernel log's are (`log_prefix`), then `host nv-fabricmanager[6313]: <message>`. The
NVSwitch error message is `detected NVSwitch non-fatal error 12028 on fid 0 on NVSwitch pci bus id
00000000:86:00.0 physical id 3 port 61` (`fatal error` for a fatal one): an SXid event of code 12028 on the switch
at that bus id, port 61 its `link`, the line's fatal or non-fatal its `severity`. The log names the switch by bus
id and physical id, not by the driver's `nvidia-nvswitchN` index, so the bus id names it (`nvswitch`); the
physical id and fabric id stay in the event's text.

Sources: the message's wording and the file's prefix are gpud's (leptonai/gpud, components/accelerator/nvidia/
fabric-manager: testdata/fabricmanager.log and log_matcher.go, which reads the number as an SXid); the journal
form (`host nv-fabricmanager[pid]: message`) is as OpenNebula/one issue 7385 and NVIDIA/gpu-operator issue 610 quote
hosts' journals; newer packages run the daemon through a start script whose lines carry its messages
(`host nvidia-fabricmanager-start.sh[pid]: message`, data-infra/cube-studio issue 29). A message whose cause is known
(`NV_WARN_NOTHING_TO_DO`: no NVSwitch to manage) is said with its meaning and what to check (data/fm_messages.toml).
Assumed, not verified: that the number is the code the kernel's SXid line gives for the same fault
(the SXid catalog judges it), that the file's times are the host's local time (read as UTC, said), and that a
journal line carries the same message without the `[LEVEL] [tid N]` fields (they are read where present).

Startup, configuration and multicast lines are skipped without a word, and so are the unprefixed lines of a
multi-line message (`Message payload details: ...`). An NVSwitch error cut off before its port is the switch's, as
a kernel SXid line cut before its link is, and said. A line that names an NVSwitch error but cannot be read, and an
ERROR or FATAL line this reader does not read, are each said with their line number and text; so are the first
lines of a file none of whose lines is Fabric Manager's (read under `--format fabric_manager`).

A file that also holds the kernel's driver lines (the system's journal, `journalctl` without `-u`, or the two logs
pasted together) is read by the kernel log's reader from its first line as soon as one is met, even under
`--format fabric_manager`: that reader reads this one's lines of either form too (`fm_lines`), so neither log's
events are lost.
"""

from __future__ import annotations

import itertools
import re
from datetime import datetime

from .. import format as fmt
from ..errors import InputError
from .base import IngestResult, Source
from .fm_lines import ERROR, FILE, JOURNAL, FabricManagerLines, file_form, leveled, names_manager
from .journal import JournalSpan
from .kernel_log import READER as KERNEL
from .log_prefix import strip_prefix
from .textlines import Collector, classify, skip_shell

_SAID_NONE = 3  # lines said one by one when no line is Fabric Manager's
# the IMEX daemon's own lines: `IMEX Log initializing at: ...`, `[date] [INFO] [tid 77] IMEX version 580.. is running`
_IMEX = re.compile(r"^\s*IMEX Log initializing at:|\]\s*IMEX version \S+ is running")


class FabricManagerReader:
    name = "fabric_manager"
    reads_hosts = True  # through textlines.classify: a parallel shell's output each host's (`fanout`)

    def sniff(self, head: str) -> float:
        lines = head.splitlines()[:200]
        if any(FILE.match(line.strip()) for line in lines):
            return 0.9
        if names_manager(head):
            return 0.85
        # a kernel driver line: read too (`read` hands the file over), so a paste of this log with the kernel's
        # lines right after it is one output, never cut in two; the kernel log's reader claims its own log first
        return 0.5 if any(KERNEL.opens(line.strip()) for line in lines) else 0.0

    def read(self, source: Source, *, node_id: str | None = None, until: datetime | None = None) -> IngestResult:
        """`until`: the time the log was taken by at the latest (None: now), as the kernel log's reader reads it."""
        head = itertools.islice(source.numbered(), 200)
        imex = next((number for number, line, _ in head if _IMEX.search(line)), None)
        if imex is not None:  # the IMEX daemon logs in Fabric Manager's form, but none of its messages are hers
            raise InputError("this is the nvidia-imex daemon's log (in Fabric Manager's line form), which fabricbot "
                             "does not read; it reads `nvidia-imex-ctl -N -H`, the IMEX domain's state as each node "
                             "sees it", source=source.name, line=imex)
        out = Collector(source, "Fabric Manager log", node_id)
        # journalctl's header (else the time the log was taken by): the year of the syslog dates under it
        spans: dict[str | None, JournalSpan] = {None: JournalSpan.taken_by(until)}
        lines = FabricManagerLines(out)
        passed: list[tuple[int, str]] | None = []  # lines of neither form, until one is of either (`_none_read`)
        for line in classify(source, out):
            if line.kind != "text":
                skip_shell(line, out)
                continue
            text = line.text.strip()
            if " begin" in text and (span := JournalSpan.read(text, line.number)):
                spans[span.host] = span
                continue
            if KERNEL.opens(text):  # the system's journal, the kernel's lines among Fabric Manager's: the kernel
                return KERNEL.read(source, node_id=node_id, until=until)  # log's reader reads both (and hers)
            found = _message(out, line.number, text, spans, node_id)
            if found is None:
                if ERROR.search(text) or "[ERROR]" in text or "[FATAL]" in text:  # an error line that lost its prefix
                    lines.unread(line.number, text)
                elif passed is not None and text:
                    passed.append((line.number, text))
                continue  # a multi-line message's next line, or text around the log
            passed = None
            lines.message(line.number, *found)
        if passed:
            _none_read(out, passed)
        lines.done()
        out.timestamp = None
        return out.result()


def _none_read(out: Collector, passed: list[tuple[int, str]]) -> None:
    """No line was Fabric Manager's (a log of another tool read under `--format fabric_manager`, or a prefix this
    reader does not know): the first lines are said with their text, so the answer is not a bare "nothing read"."""
    for number, text in passed[:_SAID_NONE]:
        out.warn(number, f"not a Fabric Manager line (neither its log's `[date] [LEVEL] [tid N] ...` nor a journal's "
                         f"`nv-fabricmanager[pid]: ...` or `nvidia-fabricmanager-start.sh[pid]: ...`): {text[:80]!r}")
    if len(passed) > _SAID_NONE:
        out.warn(passed[_SAID_NONE][0], f"{fmt.count(len(passed) - _SAID_NONE, 'more line')} not read as Fabric "
                                        "Manager's either")


def _message(out: Collector, number: int, text: str, spans: dict[str | None, JournalSpan],
             node_id: str | None) -> tuple[str | None, str] | None:
    """(the line's level where it states one, its message), its time in `out`; None for a line of neither form."""
    if (found := file_form(out, number, text)) is not None:
        return found
    if not names_manager(text):
        return None
    body, ts, host = strip_prefix(text, out, number, spans)
    journal = JOURNAL.match(body)
    if journal is None:
        return None
    named = host or journal["host"]  # a journal of several hosts: each line its host's, the node's own full name
    if node_id is None and named and (host or not _same_machine(out.node_id, named)):  # keeping the prompt's
        out.enter(named)
    out.timestamp = ts
    return leveled(journal["msg"])


def _same_machine(node: str | None, logged: str) -> bool:
    """Whether the host a journal line names is the node a prompt named: itself, its full name (`dgx-07` and
    `dgx-07.cluster.local`), or the name a machine logs itself by (`localhost`)."""
    if node is None:
        return False
    short = logged.split(".", 1)[0]
    return logged == node or short == node.split(".", 1)[0] or short == "localhost"


READER = FabricManagerReader()
