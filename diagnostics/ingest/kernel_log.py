"""Kernel log lines: NVRM Xid, NVSwitch SXid and PCIe AER messages, as events.

Each line's log prefix (dmesg, syslog, journalctl, ...: its time and host) is read in `log_prefix`. A `caused by
previous Xid N` tail fills `caused_by`; an NVLink Xid or an SXid that names a link fills `link`.

An SXid is printed as several lines with the same switch and code: the first says `Fatal`/`Non-fatal` and the
link (`24007, Fatal, Link 12 sourcetrack timeout error (First)`), the next `Severity S Engine instance I ...`
(S = 1 fatal, 0 non-fatal: NVSWITCH_ERROR_SEVERITY_TYPE) and one or two `Data {...}` lines. They are one event,
whatever other lines come between; a continuation whose first line is not in the input (cut off above)
is still one event, and a warning says so. The driver's identity and off-the-bus lines are read in
`kernel_gpu`. Fabric Manager's lines in the system's journal (`journalctl` without `-u`) are read as its own log's
are (`fm_lines`). A prefix's host is the node of the line's events (given no --node): a
log of several hosts (a log server's syslog, `pdsh -w gpu[01-64] dmesg -T`, whose `host: ` leads each line) puts each
event on its own host, each host's driver lines its own.
"""

from __future__ import annotations

import re
from dataclasses import InitVar, dataclass, field
from datetime import datetime
from typing import Any

import pandas as pd

from .. import format as fmt
from ..config.catalogs import load_xid_catalog
from ..enums import EventKind, LinkType
from . import fanout
from .base import IngestResult, Source
from .fm_lines import JOURNAL, FabricManagerLines, file_form, leveled, names_manager
from .journal import JournalSpan
from .kernel_gpu import AER_LOST, BANNER_DAMAGED, OFF_BUS_CODE, DriverLines, damaged_banner
from .log_prefix import kernel_lines, prefixed, strip_prefix
from .textlines import Collector, classify, normalize_bus_id, one_edit, skip_shell

# a line that may be a `date` alone (a weekday first, or ISO's year), pdsh's `host: ` before it: cheap, before parsing
_MAYBE_DATE = re.compile(r"^\s*(?:[^\s:\[\]]+:\s+)?(?:(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)\b|\d{4}-\d{2}-\d{2}[T ]\d)")

_WORD_NUMBER = re.compile(r"\b(?P<word>[A-Za-z]{3,5})\s+\d")
_BAD_LINK = re.compile(r"\blink\W*\S*\d\S*|\blink\s+[-+]?(?:nan|inf(?:inity)?)\b", re.IGNORECASE)

_XID = re.compile(r"NVRM: Xid \((?:PCI:)?(?P<bus>[^)]*)\): (?P<code>\d+),\s*(?P<rest>.*)$")
_SXID = re.compile(r"(?P<dev>nvidia-nvswitch(?P<index>\d*)): SXid \((?:PCI:)?(?P<bus>[^)]*)\): (?P<code>\d+),\s*"
                   r"(?P<rest>.*)$")
_SXID_HEAD = re.compile(r"^(?P<sev>Fatal|Non-?fatal)\s*,", re.IGNORECASE)
_SXID_MORE = re.compile(r"^(?:Data \{|Severity (?P<sev>\d+) Engine instance)")
# NVLink5 (Xid 144-150): `NETIR_LINK_EVT  Fatal   XC0 i0 Link 01 (...)`, its fields apart by one space or several
_XID_SEVERITY = re.compile(r"^(?P<sub>[A-Z][A-Z0-9_]*)\s+(?P<sev>Fatal|Non-?fatal)\b", re.IGNORECASE)
_CAUSED = re.compile(r"caused by previous Xid (?P<n>\d[\w.,+-]*?)[.,]?(?=[\s(:;]|$)", re.IGNORECASE)
# an Xid or SXid line whose keyword is damaged (`Xie`, `SXie`): its shape is still the driver's
_XID_SHAPE = re.compile(r"(?:NVRM: |nvswitch\d*: )(?P<word>\S{3,4}) \((?:PCI:)?[0-9a-fA-F:.]+\): \d")
# `link 5(0x0...`, `Link 01 (...)`: the whole token, so `Link 1,000,000` or `link 1E+308` is refused, never read as 1
_LINK = re.compile(r"\blink\s*(?P<n>[-+]?\d[\w.,+-]*?)[.,]?(?=[\s(:;]|$)", re.IGNORECASE)
_NO_LINK = "-1"  # an NVLink Xid's `Link -1`: the driver names no single link (the GPU's, not one link's)
_AER_KIND = EventKind.AER.value
_DEVICE = r"(?:[\w-]+\s+)?(?P<bus>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]):\s+"
_AER_RECEIVED = re.compile(_DEVICE + r"AER: (?P<msg>.*?error received: (?P<src>\S+))\s*$")
_AER_DETAIL = re.compile(_DEVICE + r"(?:AER:\s*)?(?P<msg>PCIe Bus Error:.*|device \[.*|\[\s*\d+\]\s*\S.*)$")


class KernelLogReader:
    name = "kernel_log"

    def sniff(self, head: str) -> float:
        if "NVRM: Xid" in head or ": SXid (" in head or "fallen off the bus" in head:
            return 0.9
        if "NVRM: GPU at PCI:" in head or "NVRM: GPU " in head:
            return 0.7
        if "AER:" in head or "PCIe Bus Error" in head:
            return 0.8
        return 0.3 if kernel_lines(head) else 0.0  # read to say it holds no driver line

    def opens(self, text: str) -> bool:
        """A driver message (NVRM, an SXid, a PCIe AER report) after a log prefix this reader knows, or an Xid or
        SXid line quoted bare (as a ticket or an issue quotes them): no other tool prints one (see `paste`)."""
        if "NVRM:" not in text and "SXid" not in text and "AER:" not in text and "PCIe Bus Error" not in text:
            return False
        body = prefixed(text.strip())
        return bool(_OPENS.match(body)) if body is not None else bool(_BARE_OPENS.match(text.strip()))

    def read(self, source: Source, *, node_id: str | None = None, until: datetime | None = None) -> IngestResult:
        """`until`: the time the log was taken by at the latest (None: now), the year of its yearless syslog dates
        where no journalctl header or `date` line gives it (`journal.JournalSpan.taken_by`)."""
        out = Collector(source, "kernel log", node_id)
        nvlink_xids = load_xid_catalog().interconnect_codes(LinkType.NVLINK)  # the Xids whose `Link N` is read
        last: dict[str, Any] | None = None
        open_sxids: dict[tuple[str | None, int], dict[str, Any]] = {}  # (switch bus id, code) -> its event
        driver = DriverLines(out)  # identity lines (bus -> UUID) and off-the-bus messages
        hosts = _Hosts(driver, open_sxids)
        skipped = _Skipped()
        clocks = _Clocks()  # when each event's line was logged, for the driver banner after it
        # journalctl's header or a `date`, per the fan-out host that leads it: the year of the syslog dates under it
        spans: dict[str | None, JournalSpan] = {None: JournalSpan.taken_by(until)}
        manager = FabricManagerLines(out)
        # each pdsh line names its host (`log_prefix`); a dshbak block is each host's of its header's range
        for line in classify(source, out, hosts=source.fanout == fanout.BLOCKS):
            if line.kind != "text":
                skip_shell(line, out)
                if out.node_id is not None and out.node_id != hosts.at and node_id is None:  # a prompt of a host
                    driver, open_sxids = hosts.enter(out.node_id, out)
                    last = None
                continue
            if driver.message is not None and not driver.continues(line.text):
                skipped.extend(driver.interrupted())
            if " begin" in line.text and (span := JournalSpan.read(line.text, line.number)):
                spans[span.host] = span  # journalctl's header: the year of the syslog dates under it
                continue
            if _MAYBE_DATE.match(line.text) and (span := JournalSpan.dated(line.text, line.number)):
                spans[span.host] = span  # a `date` printed with the log: the year of the syslog dates under it
                continue
            if "[tid " in line.text and (said := file_form(out, line.number, line.text.strip())) is not None:
                manager.message(line.number, *said)  # Fabric Manager's own file, pasted with the kernel's lines
                continue
            if not _maybe_event(line.text, last):
                # a cheap guard first: a banner with one byte changed still holds `UNIX` here, or else its `NVRM:`
                # took it to the driver's reader, which says it
                if "UNIX" in line.text:
                    _damaged_banner(out, line.number, line.text)
                skipped.add(line.number)
                continue
            body, ts, host = strip_prefix(line.text, out, line.number, spans)
            # the system's journal holds Fabric Manager's lines too
            managers = JOURNAL.match(body) if names_manager(body) else None
            if managers and not host:  # a prefix of its own form (`host nv-fabricmanager[pid]:`) names the host
                host = managers["host"]
            if node_id is None and host and host != hosts.at:  # a log of several hosts (a log server's, syslog's)
                driver, open_sxids = hosts.enter(host, out)
                last = None  # another host's event is never continued by this one's lines
            out.timestamp = ts
            clocks.line(out, driver, ts, line.text)
            if managers:
                manager.message(line.number, *leveled(managers["msg"]))
                continue
            if driver.message is not None:
                last = driver.read(line.number, body, last)[1] or last
                continue
            xid = _XID.search(body)
            code = out.checked("index", line.number, xid["code"], "code", "Xid") if xid else None
            sxid = _SXID.search(body) if xid is None else None
            if xid and code is not None:
                last = _xid(out, line.number, xid, code, body[xid.start():].removeprefix("NVRM: "), driver,
                            code in nvlink_xids)
            elif xid:
                pass  # its code is refused, and said
            elif sxid and out.checked("index", line.number, sxid["code"], "code", "SXid") is not None:
                last = _sxid(out, line.number, sxid, open_sxids)
            elif "AER:" in body and (lost := AER_LOST.search(body)) and (bus := normalize_bus_id(lost["bus"])):
                last = driver.aer_lost(line.number, bus, lost["msg"])
            elif "AER:" in body and (aer := _AER_RECEIVED.search(body)):
                src = normalize_bus_id(aer["src"]) or normalize_bus_id(aer["bus"])
                if normalize_bus_id(aer["src"]) is None:
                    out.warn(line.number, f"AER: the error's source {aer['src'][:40]!r} is no PCI bus id; kept under "
                                          f"the port that reports it ({src})")
                last = out.add("events", line.number, pci_bus_id=src, kind=EventKind.AER.value, text=aer["msg"],
                               **driver.identity(src))
            elif _maybe_aer_detail(body, last) and (detail := _AER_DETAIL.search(body)):
                bus = normalize_bus_id(detail["bus"])
                if last and last["kind"] == EventKind.AER.value and last["pci_bus_id"] == bus:
                    last["text"] += "; " + " ".join(detail["msg"].split())
                else:
                    starts = detail["msg"].startswith("PCIe Bus Error")  # else it goes on a report of its device
                    open_aer = last is not None and last["kind"] == EventKind.AER.value
                    if last and open_aer and (not starts or "error received" in last["text"]):
                        out.warn(line.number, f"AER detail of {bus} inside the report of {last['pci_bus_id']}: one of "
                                              "the two bus ids is damaged; read apart")
                    last = out.add("events", line.number, pci_bus_id=bus, kind=EventKind.AER.value,
                                   text=" ".join(detail["msg"].split()), **driver.identity(bus))
            elif ("Xid" in body and ("NVRM" in body or "SXid" in body)) or _XID_SHAPE.search(body):
                out.warn(line.number, "an Xid line that cannot be read (cut off, or a word damaged?); it is skipped",
                         unread=True)
            elif "NVRM:" in body and (taken := driver.read(line.number, body, last))[0]:
                last = taken[1] or last
            elif body.startswith(_BOOT):  # the kernel's first line: the host booted, its driver not yet loaded
                driver.booted()
            else:
                _damaged_banner(out, line.number, body)
                skipped.add(line.number)
        clocks.line(out, None, None, "")
        manager.done()
        for each in hosts.drivers:
            skipped.extend(each.interrupted())
        if skipped.count:
            one = skipped.count == 1
            out.warn(skipped.first, f"{fmt.count(skipped.count, 'line')} {'holds' if one else 'hold'} no Xid, SXid, "
                                    f"AER or off-the-bus message and {'was' if one else 'were'} skipped (lines "
                                    f"{skipped.first}..{skipped.last})")
        out.timestamp = None
        out.node_id = hosts.first or out.node_id  # what names no host (lines before any) is the first host's
        return out.result()


_BOOT = "Linux version "  # the kernel's first line at boot
# dmesg's seconds since boot, after any host prefix (journalctl -o short-delta adds `<` the time since the last `>`)
_UPTIME_ANY = re.compile(r"\[\s*(\d+\.\d+)(?:\s*<\s*[\d.]+>)?\]")


@dataclass
class _Clocks:
    """Hands each event to its host's driver lines with the clock of its line: the log's time where the prefix gives
    one, else dmesg's seconds since boot (a reboot starts it again), else none."""

    seen: int = 0
    at: tuple[DriverLines, tuple[int, int] | None] | None = None

    def line(self, out: Collector, driver: DriverLines | None, ts: pd.Timestamp | None, text: str) -> None:
        """Before a line is read (and once at the end): the events the previous line made, to its driver."""
        events = out.rows.get("events", [])
        if self.at is not None:
            for event in events[self.seen:]:
                self.at[0].logged(event, self.at[1])
        self.seen = len(events)
        if driver is None:
            self.at = None
            return
        up = _UPTIME_ANY.search(text) if ts is None else None
        clock = (0, int(ts.value)) if ts is not None else (1, round(float(up[1]) * 1e9)) if up else driver.clock
        if clock is not None and driver.clock is not None and clock[0] == driver.clock[0] == 1 \
                and clock[1] < driver.clock[1]:
            driver.booted()  # dmesg's seconds since boot started again
        self.at = (driver, clock)  # a line without a time of its own (a message's continuation): its first line's
        driver.clock = clock


@dataclass
class _Hosts:
    """The hosts a log's prefixes name, each its own node with what its driver's lines said (a bus's UUID on one
    host is not another's), in the order they come."""

    driver: InitVar[DriverLines]  # the state of the lines before any host (the first host's, once one comes)
    open_sxids: InitVar[dict[tuple[str | None, int], dict[str, Any]]]
    at: str | None = None
    first: str | None = None
    _state: dict[str | None, tuple[DriverLines, dict[tuple[str | None, int], dict[str, Any]]]] = \
        field(default_factory=dict)

    def __post_init__(self, driver: DriverLines, open_sxids: dict[tuple[str | None, int], dict[str, Any]]) -> None:
        self._state[None] = (driver, open_sxids)

    @property
    def drivers(self) -> list[DriverLines]:
        return [driver for driver, _ in self._state.values()]

    def enter(self, host: str, out: Collector) -> tuple[DriverLines, dict[tuple[str | None, int], dict[str, Any]]]:
        """The lines from here are `host`'s: its node, and its driver's and switches' state."""
        if self.first is None:
            self.first = host
            self._state[host] = self._state.pop(None)  # what came before any host is the first host's
        out.enter(host)
        self.at = host
        return self._state.setdefault(host, (DriverLines(out), {}))


class _Skipped:
    """The lines that hold no event: a count, the first and the last (a large log keeps memory bounded)."""

    def __init__(self) -> None:
        self.count, self.first, self.last = 0, 0, 0

    def add(self, number: int) -> None:
        self.count += 1
        if not self.first or number < self.first:
            self.first = number
        if number > self.last:
            self.last = number

    def extend(self, numbers: list[int]) -> None:
        for number in numbers:
            self.add(number)


def _xid(out: Collector, number: int, xid: re.Match[str], code: int, text: str, driver: DriverLines,
         nvlink: bool) -> dict[str, Any]:
    """An Xid line's event; an Xid 79 line joins its bus's off-the-bus message (one event, not two)."""
    bus = normalize_bus_id(xid["bus"])
    if code == OFF_BUS_CODE and (joined := driver.xid_joins(bus, out.timestamp, text)) is not None:
        return joined
    caused = _CAUSED.search(xid["rest"])
    if caused is None and ("previous xid" in xid["rest"].lower() or "caused by" in xid["rest"].lower()):
        out.warn(number, "`caused by previous Xid` without the Xid it names as written; read without it")
    link = _LINK.search(xid["rest"]) if nvlink else None
    if nvlink and link is None:
        _no_link_number(out, number, xid["rest"], f"Xid {code}")
    if link is not None and link["n"] == _NO_LINK:  # the error names no single link: read so, not a damaged index
        link = None
    stated = _XID_SEVERITY.match(xid["rest"])
    _check_bus(out, number, xid["bus"], bus, f"Xid {code}")
    if driver.uuids and bus and bus not in driver.uuids:  # the log names its GPUs: this bus is none of them
        out.once(f"unnamed {bus}", number, f"Xid {code} on {bus}, a bus none of the log's GPU identity lines names "
                                           "(a digit damaged?); its events carry no GPU UUID")
    event = out.add("events", number, pci_bus_id=bus, kind=EventKind.XID.value, code=code, text=text,
                    caused_by=out.checked("index", number, caused["n"], "code", "caused by Xid") if caused else None,
                    link=out.checked("index", number, link["n"], "link", f"Xid {code} link") if link else None,
                    severity=_severity(stated["sev"]) if stated else None,
                    subcode=stated["sub"] if stated and nvlink else None, **driver.identity(bus))
    if code == OFF_BUS_CODE:
        driver.xid_added(event)
    return event


def _sxid(out: Collector, number: int, sxid: re.Match[str], open_sxids: dict[tuple[str | None, int], dict[str, Any]],
          ) -> dict[str, Any]:
    """A first SXid line starts an event; its `Severity`/`Data` lines (same switch and code) join it."""
    bus, code, rest = normalize_bus_id(sxid["bus"]), int(sxid["code"]), sxid["rest"]  # the code is checked
    _check_bus(out, number, sxid["bus"], bus, f"SXid {code}")
    more = _SXID_MORE.match(rest)
    if rest.startswith("Severity") and (more is None or more["sev"] not in ("0", "1")):
        out.warn(number, f"SXid {code}: {rest[:40]!r} is no severity NVSwitch prints (0 non-fatal, 1 fatal); "
                         "read without one")
    event = open_sxids.get((bus, code)) if more else None
    if event is not None:
        event["text"] += "; " + rest
        if more and more["sev"] in ("0", "1") and event["severity"] is None:
            event["severity"] = _severity(more["sev"])
        return event
    head = _SXID_HEAD.match(rest)
    if head is None and more is None:
        out.warn(number, f"SXid {code}: {rest[:40]!r} is none of the driver's SXid lines (Fatal or Non-fatal first, "
                         "then Severity and Data); read without a severity")
    link = _LINK.search(rest) if head or not more else None
    if link is None and (head or not more):
        _no_link_number(out, number, rest, f"SXid {code}")
    if more:
        out.warn(number, f"SXid {code} on {bus}: its first line (severity and link) is not in the input, cut off "
                         "above; its following lines are read as one event")
    severity = _severity(head["sev"]) if head else (_severity(more["sev"]) if more and more["sev"] in ("0", "1")
                                                    else None)
    event = out.add("events", number, pci_bus_id=bus, kind=EventKind.SXID.value, code=code,
                    link=out.checked("index", number, link["n"], "link", f"SXid {code} port") if link else None,
                    text=f"{sxid['dev']}: {rest}", severity=severity, nvswitch=sxid["index"] or None)
    open_sxids[(bus, code)] = event
    return event


def _no_link_number(out: Collector, number: int, rest: str, what: str) -> None:
    """A message that names a link with no link number where one belongs (`Link!45`, `Link inf`), or a number
    after a word one letter from `Link` (`Lhnk 46`), is said."""
    found = _BAD_LINK.search(rest) or next(
        (m for m in _WORD_NUMBER.finditer(rest) if one_edit(m["word"].lower(), "link")), None)
    if found:
        out.warn(number, f"{what}: {found[0][:30]!r} names a link with no link number; read without a link")


def _check_bus(out: Collector, number: int, written: str, bus: str | None, what: str) -> None:
    """A message's device that is no PCI bus id is said: its event is kept without one."""
    if bus is None:
        out.warn(number, f"{what}: {written.removeprefix('PCI:')[:40]!r} is no PCI bus id; the event is kept "
                         "without one")


def _severity(stated: str) -> str:
    """`Fatal`, `Non-fatal`, `Nonfatal` or NVSwitch's severity number (1 fatal, 0 non-fatal) -> fatal / non-fatal."""
    word = stated.lower()
    return "fatal" if word in ("fatal", "1") else "non-fatal"


_OPENS = re.compile(r"NVRM: |nvidia-nvswitch\d*: SXid \(|" + _DEVICE + r"(?:AER: |PCIe Bus Error:)")
_BARE_OPENS = re.compile(r"NVRM: Xid \(PCI:|nvidia-nvswitch\d*: SXid \(PCI:")  # the driver's alone prints these


def _damaged_banner(out: Collector, number: int, text: str) -> None:
    """Says a line that holds no event when it is the driver's banner damaged: its version would be lost without a
    word."""
    if damaged_banner(text):
        out.warn(number, BANNER_DAMAGED)


def _maybe_event(text: str, last: dict[str, Any] | None) -> bool:
    """Whether a line may hold an event: most lines of a kernel log do not, and are passed over cheaply."""
    return "Xid" in text or "AER" in text or "NVRM" in text or "nvswitch" in text or _BOOT in text \
        or names_manager(text) or _maybe_aer_detail(text, last)


def _maybe_aer_detail(body: str, last: dict[str, Any] | None) -> bool:
    """A cheap test first: the AER detail pattern is costly to search on every line of a large log."""
    return "PCIe Bus Error" in body or (last is not None and last["kind"] == _AER_KIND)


READER = KernelLogReader()
