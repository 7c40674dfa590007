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
hosts' journals. Assumed, not verified: that the number is the code the kernel's SXid line gives for the same fault
(the SXid catalog judges it), that the file's times are the host's local time (read as UTC, said), and that a
journal line carries the same message without the `[LEVEL] [tid N]` fields (they are read where present).

Startup, configuration and multicast lines are skipped without a word, and so are the unprefixed lines of a
multi-line message (`Message payload details: ...`). An NVSwitch error cut off before its port is the switch's, as
a kernel SXid line cut before its link is, and said. A line that names an NVSwitch error but cannot be read, and an
ERROR or FATAL line this reader does not read, are each said with their line number and text.
"""

from __future__ import annotations

import re

from .. import format as fmt
from ..enums import EventKind
from .base import IngestResult, Source
from .journal import JournalSpan
from .log_prefix import strip_prefix
from .textlines import Collector, classify, normalize_bus_id, parse_time, skip_shell

_FILE = re.compile(r"^\[(?P<ts>[A-Z][a-z]{2} \d{1,2} \d{4} \d{1,2}:\d{2}:\d{2})\]\s*\[(?P<level>[A-Z]+)\]\s*"
                   r"\[tid \d+\]\s*(?P<msg>.*)$")
_JOURNAL = re.compile(r"^(?:(?P<host>[^\s\[\]:]+)\s+)?nv-fabricmanager\[\d+\]:\s*(?P<msg>.*)$")
_LEVEL = re.compile(r"^\[(?P<level>[A-Z]+)\]\s*(?:\[tid \d+\]\s*)?")  # where a journal line keeps them
_ERROR = re.compile(r"detected\s+NVSwitch\s+(?P<sev>fatal|non-fatal)\s+error", re.IGNORECASE)
_FIELDS = re.compile(r"detected NVSwitch (?P<sev>fatal|non-fatal) error (?P<code>\S+) on fid (?P<fid>\S+) on NVSwitch "
                     r"pci bus id (?P<bus>\S+)(?P<rest>.*)$")
_PORT = re.compile(r"^ physical id \S+ port (?P<port>\S+?)\.?\s*$")
_FAILING = ("ERROR", "FATAL", "CRITICAL")
_ERROR_WORDS = re.compile(r"\b(?:error|failed|failure)\b", re.IGNORECASE)  # a journal line states no level
_SAID = 10  # unread error lines said one by one; the rest in one warning


class FabricManagerReader:
    name = "fabric_manager"

    def sniff(self, head: str) -> float:
        lines = head.splitlines()[:200]
        if any(_FILE.match(line.strip()) for line in lines):
            return 0.9
        return 0.85 if "nv-fabricmanager[" in head else 0.0

    def read(self, source: Source, *, node_id: str | None = None) -> IngestResult:
        out = Collector(source, "Fabric Manager log", node_id)
        spans: dict[str | None, JournalSpan] = {}  # journalctl's header: the year of the syslog dates under it
        unread: list[int] = []
        for line in classify(source, out):
            if line.kind != "text":
                skip_shell(line, out)
                continue
            text = line.text.strip()
            if " begin" in text and (span := JournalSpan.read(text, line.number)):
                spans[span.host] = span
                continue
            found = _message(out, line.number, text, spans, node_id)
            if found is None:
                if _ERROR.search(text) or "[ERROR]" in text or "[FATAL]" in text:  # an error line that lost its prefix
                    _unread(out, line.number, text, unread)
                continue  # a multi-line message's next line, or text around the log
            level, message = found
            if _ERROR.search(message):
                _nvswitch_error(out, line.number, message)
            elif level in _FAILING or (level is None and _ERROR_WORDS.search(message)):
                _unread(out, line.number, message, unread)
        if len(unread) > _SAID:
            more = unread[_SAID:]
            out.warn(more[0], f"{fmt.count(len(more), 'more error line')} of Fabric Manager not read (lines "
                              f"{more[0]}..{more[-1]})")
        out.timestamp = None
        return out.result()


def _message(out: Collector, number: int, text: str, spans: dict[str | None, JournalSpan],
             node_id: str | None) -> tuple[str | None, str] | None:
    """(the line's level where it states one, its message), its time in `out`; None for a line of neither form."""
    if found := _FILE.match(text):
        stamp = parse_time(found["ts"])
        if stamp is None:
            out.warn(number, f"the time {found['ts']!r} is no time (a digit changed?); the event has none")
        else:
            out.once("fm-zone", number, "Fabric Manager's log times state no zone; read as UTC")
        out.timestamp = stamp.tz_localize("UTC") if stamp is not None else None
        return found["level"], found["msg"]
    if "nv-fabricmanager[" not in text:
        return None
    body, ts, host = strip_prefix(text, out, number, spans)
    journal = _JOURNAL.match(body)
    if journal is None:
        return None
    out.timestamp = ts
    if node_id is None and out.node_id is None and (host or journal["host"]):
        out.node_id = host or journal["host"]
    message = journal["msg"]
    level = _LEVEL.match(message)
    return (level["level"], message[level.end():]) if level else (None, message)


def _nvswitch_error(out: Collector, number: int, message: str) -> None:
    """`detected NVSwitch [non-]fatal error N on fid F on NVSwitch pci bus id B physical id P port Q`: an SXid event."""
    found = _FIELDS.search(message)
    code = out.checked("index", number, found["code"], "code", "SXid") if found else None
    if found is None or code is None:
        out.warn(number, f"a Fabric Manager NVSwitch error that cannot be read (cut off, or a word damaged?): "
                         f"{message.strip()[:120]!r}; it is skipped")
        return
    bus = normalize_bus_id(found["bus"])
    if bus is None:
        out.warn(number, f"SXid {code}: {found['bus'][:40]!r} is no PCI bus id; the event is kept without the "
                         "switch it names")
    port_of = _PORT.match(found["rest"])
    if port_of is None:  # cut off before its port, as a kernel SXid line before its link: the switch's fault
        out.warn(number, f"SXid {code}: the line names no port after its bus id (cut off?): "
                         f"{found['rest'].strip()[:60]!r}; read as the switch's, its port unknown", cut=True)
    port = out.checked("index", number, port_of["port"], "link", f"SXid {code} port") if port_of else None
    start = _ERROR.search(message)
    out.add("events", number, pci_bus_id=bus, kind=EventKind.SXID.value, code=code, link=port,
            text=message[start.start() if start else 0:].strip(), severity=found["sev"].lower(), nvswitch=bus)


def _unread(out: Collector, number: int, text: str, unread: list[int]) -> None:
    """An error line this reader does not read: said with its text (the first few), counted (the rest)."""
    unread.append(number)
    if len(unread) <= _SAID:
        out.warn(number, f"a Fabric Manager error this reader does not read: {text.strip()[:120]!r}")


READER = FabricManagerReader()
