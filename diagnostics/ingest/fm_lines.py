"""Fabric Manager's messages, line by line, wherever they are read: in its own log (`fabric_manager`) or among the
kernel's in the system's journal (`kernel_log`), where `journalctl` without `-u` interleaves both. Its NVSwitch
errors become SXid events; its other error lines are said. The formats and their sources are in `fabric_manager`."""

from __future__ import annotations

import re
from functools import cache

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .. import format as fmt
from ..config.datafiles import DATA_DIR, read_toml
from ..enums import EventKind
from ..errors import ConfigError
from .textlines import Collector, normalize_bus_id, parse_time

# what names Fabric Manager's lines in the system's journal: the daemon's own, or (newer packages) the start script
# that runs it, `nvidia-fabricmanager-start.sh[pid]:`, whose lines carry the daemon's messages
MARKS = ("nv-fabricmanager[", "nvidia-fabricmanager-start.sh[")
_EVERY_MARK = "fabricmanager"  # in each of MARKS (tests/ingest check it)
MESSAGE = "detected NVSwitch"  # how its NVSwitch error reads: an SXid event's text starts so (`_nvswitch_error`)
FILE = re.compile(r"^\[(?P<ts>[A-Z][a-z]{2} \d{1,2} \d{4} \d{1,2}:\d{2}:\d{2})\]\s*\[(?P<level>[A-Z]+)\]\s*"
                  r"\[tid \d+\]\s*(?P<msg>.*)$")
JOURNAL = re.compile(r"^(?:(?P<host>[^\s\[\]:]+)\s+)?(?:nv-fabricmanager|nvidia-fabricmanager-start\.sh)\[\d+\]:\s*"
                     r"(?P<msg>.*)$")
_LEVEL = re.compile(r"^\[(?P<level>[A-Z]+)\]\s*(?:\[tid \d+\]\s*)?")  # where a journal line keeps them
ERROR = re.compile(r"detected\s+NVSwitch\s+(?P<sev>fatal|non-fatal)\s+error", re.IGNORECASE)
_FIELDS = re.compile(r"detected NVSwitch (?P<sev>fatal|non-fatal) error (?P<code>\S+) on fid (?P<fid>\S+) on NVSwitch "
                     r"pci bus id (?P<bus>\S+)(?P<rest>.*)$")
_PORT = re.compile(r"^ physical id \S+ port (?P<port>\S+?)\.?\s*$")
_FAILING = ("ERROR", "FATAL", "CRITICAL")
_ERROR_WORDS = re.compile(r"\b(?:error|failed|failure)\b", re.IGNORECASE)  # a journal line states no level
_SAID = 10  # unread error lines said one by one; the rest in one warning
MESSAGES_FILE = DATA_DIR / "fm_messages.toml"


class KnownMessage(BaseModel):
    """A Fabric Manager message whose cause is known (data/fm_messages.toml): said with its meaning and what to
    check, where it would otherwise be an error line this reader does not read."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    token: str = Field(min_length=1)  # the word the message holds (`NV_WARN_NOTHING_TO_DO`)
    meaning: str = Field(min_length=1)
    check: str = Field(min_length=1)
    source: str = Field(min_length=1)
    assumed: bool = False
    note: str = ""


@cache
def known_messages() -> tuple[KnownMessage, ...]:
    data = read_toml(MESSAGES_FILE, "Fabric Manager message file")
    try:
        return tuple(KnownMessage.model_validate(entry) for entry in data.get("message", []))
    except ValidationError as exc:
        raise ConfigError(f"{MESSAGES_FILE.name}: {exc.errors()[0]['msg']}") from None


def known(message: str) -> KnownMessage | None:
    """The known message a line holds, if any."""
    return next((entry for entry in known_messages() if entry.token in message), None)


def names_manager(text: str) -> bool:
    """Whether a journal line may be Fabric Manager's (`MARKS`): the word every mark holds looked for first, since a
    kernel log's every line is asked (a 200,000-line log: 0.19 s of 0.5 s under the profiler, before)."""
    return _EVERY_MARK in text and any(mark in text for mark in MARKS)


def file_form(out: Collector, number: int, text: str) -> tuple[str | None, str] | None:
    """A line of Fabric Manager's own file (`[Feb 27 2025 15:10:02] [ERROR] [tid 12727] ...`): its level and message,
    its time in `out`; None for another line."""
    found = FILE.match(text)
    if found is None:
        return None
    stamp = parse_time(found["ts"])
    if stamp is None:
        out.warn(number, f"the time {found['ts']!r} is no time (a digit changed?); the event has none")
    else:
        out.once("fm-zone", number, "Fabric Manager's log times state no zone; read as UTC")
    out.timestamp = stamp.tz_localize("UTC") if stamp is not None else None
    return found["level"], found["msg"]


def leveled(message: str) -> tuple[str | None, str]:
    """A journal message's level where it keeps one (`[ERROR] [tid N] ...`), and the message after it."""
    level = _LEVEL.match(message)
    return (level["level"], message[level.end():]) if level else (None, message)


class FabricManagerLines:
    """Fabric Manager's messages as they come, in its own log or among the kernel's in the system's journal (where
    `journalctl` without `-u` shows both): its NVSwitch errors as SXid events, its other error lines said."""

    def __init__(self, out: Collector) -> None:
        self.out = out
        self.unread_lines: list[int] = []

    def message(self, number: int, level: str | None, message: str) -> None:
        if ERROR.search(message):
            _nvswitch_error(self.out, number, message)
        elif (entry := known(message)) is not None:
            self.out.warn(number, f"Fabric Manager's {entry.token}: {entry.meaning}. Check {entry.check}")
        elif level in _FAILING or (level is None and _ERROR_WORDS.search(message)):
            self.unread(number, message)

    def unread(self, number: int, text: str) -> None:
        """An error line this reader does not read: said with its text (the first few), counted (the rest)."""
        self.unread_lines.append(number)
        if len(self.unread_lines) <= _SAID:
            self.out.warn(number, f"a Fabric Manager error this reader does not read: {text.strip()[:120]!r}")

    def done(self) -> None:
        if len(self.unread_lines) > _SAID:
            more = self.unread_lines[_SAID:]
            self.out.warn(more[0], f"{fmt.count(len(more), 'more error line')} of Fabric Manager not read (lines "
                                   f"{more[0]}..{more[-1]})")


def _nvswitch_error(out: Collector, number: int, message: str) -> None:
    """`detected NVSwitch [non-]fatal error N on fid F on NVSwitch pci bus id B physical id P port Q`: an SXid event."""
    found = _FIELDS.search(message)
    code = out.checked("index", number, found["code"], "code", "SXid") if found else None
    if found is None or code is None:
        out.warn(number, f"a Fabric Manager NVSwitch error that cannot be read (cut off, or a word damaged?): "
                         f"{message.strip()[:120]!r}; it is skipped", unread=True)
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
    start = ERROR.search(message)
    out.add("events", number, pci_bus_id=bus, kind=EventKind.SXID.value, code=code, link=port,
            text=message[start.start() if start else 0:].strip(), severity=found["sev"].lower(), nvswitch=bus)
