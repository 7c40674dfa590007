"""The driver's kernel lines about a GPU itself rather than an error code: who it is, and that it fell off the bus.

`NVRM: GPU at PCI:0000:48:00: GPU-5fc0bcec-...` ties a bus to the GPU's UUID, and the driver's next line,
`NVRM: GPU Board Serial Number: 1652223012345`, gives that GPU's board serial (NVIDIA's open kernel modules print
both once per GPU before its first Xid: `_krcLogUuidOnce` in kernel_rc.c; a board without one prints `[N/A]`,
read as none); every later event of that bus carries both. The driver's banner as it loads (`NVRM: loading NVIDIA
UNIX Open Kernel Module for x86_64  570.158.01 ...`) gives its version: each event of the host carries the newest
banner's before it, else that of a banner within a minute after it by the same clock (a driver reloaded right after
its GPU fell off prints it then), never one across a reboot (dmesg's clock starts again) or hours later.

The driver reports a GPU lost from the bus in several spellings, with or without an Xid 79 line beside them:

    NVRM: GPU 0000:29:00.0: GPU has fallen off the bus.
    NVRM: GPU 18:00.0: GPU has fallen off the bus.              (no PCI domain: domain 0)
    NVRM: The NVIDIA GPU 0000:b3:00.0
    NVRM: (PCI ID: 10de:26b5) installed in this system has
    NVRM: fallen off the bus and is not responding to commands.
    NVRM: GPU has fallen off the bus.                           (older drivers: names no GPU)

Each is Xid 79 (the Xid catalog's "GPU has fallen off the bus") on that bus, as GPU health monitors read them
(NVSentinel's syslog monitor, gpud's Xid matcher). A message and an Xid 79 line of the same bus close in time
are one event, never two.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..enums import EventKind
from .textlines import Collector, near, normalize_bus_id

OFF_BUS_CODE = 79
# nvidia-smi names a GPU it cannot reach instead of listing it, in every output (`nvlink`, `-q`)
NO_HANDLE = re.compile(r"^\s*Unable to determine the device handle for GPU\s*(?P<bus>[0-9a-fA-F]+:[0-9a-fA-F:.]+):\s*"
                       r"(?P<reason>.*?)\s*$", re.IGNORECASE)  # `nvidia-smi -L` prints `for gpu`
JOIN_NS = 600 * 10**9  # an off-the-bus message and an Xid 79 line of one bus this close are one event
BANNER_AFTER_NS = 60 * 10**9  # a driver banner this soon after an event (its reload) names the event's driver
MESSAGE_LINES = 4  # the multi-line message: its first line and at most three more

_UUID = r"GPU-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_IDENTITY = re.compile(r"NVRM: GPU at (?:PCI:)?(?P<bus>[0-9a-fA-F:.]+): (?P<uuid>\S+)")
_VALID_UUID = re.compile(_UUID + r"$")
_SERIAL = re.compile(r"NVRM: GPU Board Serial Number: (?P<serial>.*?)\s*$")
_VALID_SERIAL = re.compile(r"[0-9A-Za-z][0-9A-Za-z-]*$")  # `[N/A]`, `[not supported]`: no serial
_OFF_BUS = re.compile(r"NVRM: GPU (?P<bus>[0-9a-fA-F:.]+): GPU has fallen off the bus")
_OFF_BUS_BARE = re.compile(r"NVRM: GPU has fallen off the bus")
_THE_GPU = re.compile(r"NVRM: The NVIDIA GPU (?P<bus>[0-9a-fA-F:.]+)")
# the PCIe core after an uncorrectable error, of a device whose driver has no error handler (the nvidia driver):
# `nvidia 0000:03:00.0: AER: can't recover (no error_detected callback)`; recovery fails and the GPU stays lost until
# the machine restarts (Linux, drivers/pci/pcie/err.c, report_error_detected)
AER_LOST = re.compile(r"\bnvidia (?P<bus>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]):\s+AER: "
                      r"(?P<msg>can't recover\b.*?)\s*$")
# the driver's banner as it loads: `NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  570.158.01  Release
# Build ...` (the open modules), `NVRM: loading NVIDIA UNIX x86_64 Kernel Module  340.65  Tue Dec  2 ...` (the others)
_LOADING = re.compile(r"NVRM: loading NVIDIA UNIX (?:Open Kernel Module for \S+|\S+ Kernel Module)\s+"
                      r"(?P<version>\d+(?:\.\d+)+)\b")
_FALLEN = "fallen off the bus"
_BANNER = "NVRM: loading NVIDIA UNIX"
_BANNER_NEAR = near(_BANNER)  # the banner's words with a byte changed
BANNER_DAMAGED = ("this line looks like the driver's banner (`NVRM: loading NVIDIA UNIX ... Kernel Module  VERSION`) "
                  "but does not read as one (a byte changed?): the driver's version is not taken from it, so the "
                  "events it would date carry none")


def damaged_banner(text: str) -> bool:
    """Whether a line looks like the driver's banner but does not read as one: a flipped byte in its words, or in
    what stands before its version, would otherwise pass it over as an unrelated line."""
    return (_BANNER in text or bool(_BANNER_NEAR.search(text))) and not _LOADING.search(text)


@dataclass
class _Message:
    """The lines of a multi-line message read so far."""

    bus: str
    number: int
    timestamp: pd.Timestamp | None
    parts: list[str]
    lines: list[int]


@dataclass
class DriverLines:
    """What one log's identity and off-the-bus lines say, as they are read in order."""

    out: Collector
    uuids: dict[str, str] = field(default_factory=dict)  # bus -> GPU UUID
    serials: dict[str, str] = field(default_factory=dict)  # bus -> board serial
    named: str | None = None  # the bus the last identity line named: the serial line after it is that GPU's
    off_bus: dict[str, dict[str, Any]] = field(default_factory=dict)  # bus -> its newest Xid 79 event
    said: dict[int, str] = field(default_factory=dict)  # id(event) -> "xid", "message" or "both"
    message: _Message | None = None
    version: str | None = None  # the driver's, as its newest banner gave it when it loaded
    clock: tuple[int, int] | None = None  # the line being read: (0, its time) or (1, dmesg's ns since boot)
    unversioned: list[tuple[dict[str, Any], tuple[int, int]]] = field(default_factory=list)  # events before a banner

    def booted(self) -> None:
        """The host booted again: its driver is not known until its banner, nor are the events' before it."""
        self.version = None
        self.unversioned.clear()

    def logged(self, event: dict[str, Any], clock: tuple[int, int] | None) -> None:
        """An event read, and when its line was logged: one without a driver version may take the next banner's."""
        if event.get("driver_version") is None and clock is not None:
            self.unversioned.append((event, clock))

    def uuid(self, bus: str | None) -> str | None:
        return self.uuids.get(bus) if bus else None

    def serial(self, bus: str | None) -> str | None:
        return self.serials.get(bus) if bus else None

    def identity(self, bus: str | None) -> dict[str, str | None]:
        """The event columns naming the GPU on `bus` and its driver: its UUID and board serial, and the driver's
        version, where the log gave them."""
        return {"gpu_uuid": self.uuid(bus), "gpu_serial": self.serial(bus), "driver_version": self.version}

    def read(self, number: int, body: str, last: dict[str, Any] | None) -> tuple[bool, dict[str, Any] | None]:
        """(whether the line is one of these, the event it made or joined)."""
        if self.message is not None:  # the caller has checked that the line continues it (`continues`)
            self.message.parts.append(body[body.index("NVRM:"):].removeprefix("NVRM:").strip())
            self.message.lines.append(number)
            return True, self._finish() if _FALLEN in body else None
        if match := _LOADING.search(body):
            self.version = match["version"]
            for event, at in self.unversioned:  # a driver reloaded right after its GPU failed: the same driver
                if self.clock is not None and at[0] == self.clock[0] and 0 <= self.clock[1] - at[1] <= BANNER_AFTER_NS:
                    event["driver_version"] = self.version
            self.unversioned.clear()
            return True, None
        if match := _SERIAL.search(body):
            if self.named is not None and _VALID_SERIAL.match(match["serial"]):
                self.serials[self.named] = match["serial"]
            self.named = None
            return True, None
        if match := _IDENTITY.search(body):
            bus = normalize_bus_id(match["bus"])
            self.named = bus
            if bus and _VALID_UUID.match(match["uuid"]):
                self.uuids[bus] = match["uuid"]
            else:
                self.out.warn(number, f"a GPU identity line whose bus {match['bus']!r} or UUID {match['uuid']!r} "
                                      "cannot be read; later events of that GPU carry no UUID")
            return True, None
        if match := _OFF_BUS.search(body):
            bus = normalize_bus_id(match["bus"])
            if bus is None:
                self.out.warn(number, f"an off-the-bus message whose bus {match['bus']!r} is no PCI address; "
                                      "it is not read")
                return True, None
            return True, self.message_event(number, bus, body[match.start():], self.out.timestamp)
        if match := _THE_GPU.search(body):
            bus = normalize_bus_id(match["bus"])
            if bus is None:
                return False, None
            self.message = _Message(bus, number, self.out.timestamp, [body[match.start():]], [number])
            return True, self._finish() if _FALLEN in body else None
        if match := _OFF_BUS_BARE.search(body):
            return True, self._bare(number, body[match.start():].removeprefix("NVRM: "), last)
        if damaged_banner(body):
            self.out.warn(number, BANNER_DAMAGED)
            return True, None
        return False, None

    def continues(self, text: str) -> bool:
        """Whether a line may be the open multi-line message's next."""
        return (self.message is not None and len(self.message.lines) < MESSAGE_LINES and "NVRM:" in text
                and "Xid" not in text and not _THE_GPU.search(text) and not _OFF_BUS_BARE.search(text)
                and not _OFF_BUS.search(text) and not _IDENTITY.search(text) and not _SERIAL.search(text))

    def interrupted(self) -> list[int]:
        """The open message ended without saying the GPU fell off the bus (it said something else: a GPU not
        supported, say): the numbers of the lines it had taken, which hold no event."""
        taken = self.message.lines if self.message is not None else []
        self.message = None
        return taken

    def xid_joins(self, bus: str | None, timestamp: pd.Timestamp | None, text: str) -> dict[str, Any] | None:
        """An Xid 79 line: the off-the-bus message of its bus close in time, which it joins (adding no row)."""
        known = self.off_bus.get(bus) if bus else None
        if known is None or self.said.get(id(known)) != "message" or not _close(known, timestamp):
            return None
        known["text"] = f"{text}; {known['text']}"
        self.said[id(known)] = "both"
        return known

    def xid_added(self, event: dict[str, Any]) -> None:
        """An Xid 79 line's own event: an off-the-bus message of its bus after it joins it."""
        if event["pci_bus_id"]:
            self.off_bus[event["pci_bus_id"]] = event
            self.said[id(event)] = "xid"

    def message_event(self, number: int, bus: str, text: str, timestamp: pd.Timestamp | None) -> dict[str, Any]:
        """The off-the-bus message of `bus`: it joins that bus's Xid 79 line close in time, else is its own Xid 79."""
        text = " ".join(text.removeprefix("NVRM: ").split())
        known = self.off_bus.get(bus)
        if known is not None and self.said.get(id(known)) == "xid" and _close(known, timestamp):
            known["text"] = f"{known['text']}; {text}"
            self.said[id(known)] = "both"
            return known
        event = self.out.add("events", number, timestamp=timestamp, pci_bus_id=bus, kind=EventKind.XID.value,
                             code=OFF_BUS_CODE, text=text, **self.identity(bus))
        self.off_bus[bus] = event
        self.said[id(event)] = "message"
        return event

    def aer_lost(self, number: int, bus: str, said: str) -> dict[str, Any]:
        """The PCIe core could not recover the GPU from an uncorrectable error: read as the GPU off the bus (what
        the driver says of it next, Xid 79's repair), once however many lines of that bus say it."""
        known = self.off_bus.get(bus)
        if known is not None and _close(known, self.out.timestamp):
            return known
        return self.message_event(number, bus, f"AER: {said}: the kernel could not recover the GPU from an "
                                               "uncorrectable PCIe error (read as off the bus)", self.out.timestamp)

    def _finish(self) -> dict[str, Any]:
        assert self.message is not None
        message, self.message = self.message, None
        return self.message_event(message.number, message.bus, " ".join(message.parts), message.timestamp)

    def _bare(self, number: int, text: str, last: dict[str, Any] | None) -> dict[str, Any]:
        """`NVRM: GPU has fallen off the bus.` names no GPU: it joins the Xid 79 just before it, else it is an Xid 79
        on a GPU the line does not name (said)."""
        if last is not None and last["kind"] == EventKind.XID.value and last["code"] == OFF_BUS_CODE \
                and _close(last, self.out.timestamp):
            last["text"] = f"{last['text']}; {text}"
            return last
        self.out.warn(number, "an off-the-bus message that names no GPU (an older driver's form, with no Xid 79 "
                              "line before it): read as Xid 79 on a GPU of this node the log does not name")
        return self.out.add("events", number, kind=EventKind.XID.value, code=OFF_BUS_CODE, text=text)


def _close(event: dict[str, Any], timestamp: pd.Timestamp | None) -> bool:
    """Two lines of one bus close enough in time to be one event; lines without a time are (one log, one boot)."""
    known = event.get("timestamp")
    if known is None or timestamp is None or pd.isna(known) or pd.isna(timestamp):
        return True
    return abs((pd.Timestamp(known) - pd.Timestamp(timestamp)).value) <= JOIN_NS


def unreached_bus(lost: re.Match[str]) -> str:
    """The bus of a GPU nvidia-smi could not reach (`NO_HANDLE`'s match), as every table writes a bus."""
    return normalize_bus_id(lost["bus"]) or lost["bus"]


def is_lost(lost: re.Match[str]) -> bool:
    """Whether nvidia-smi could not reach the GPU because it is lost (NVML_ERROR_GPU_IS_LOST), not for another
    reason."""
    return "gpu is lost" in lost["reason"].lower()


def unreachable(out: Collector, number: int, lost: re.Match[str], gpu: int | None) -> dict[str, Any] | None:
    """A GPU nvidia-smi could not reach (`NO_HANDLE`'s line `number`): lost, an off-the-bus event on its bus (NVML's
    "GPU is lost", NVML_ERROR_GPU_IS_LOST: fallen off the bus or otherwise inaccessible, read as the kernel's message
    is), its row returned; for another reason, said."""
    bus = unreached_bus(lost)
    reason = lost["reason"].rstrip(".")
    if is_lost(lost):
        return out.add("events", number, kind=EventKind.XID.value, code=OFF_BUS_CODE, gpu=gpu, pci_bus_id=bus,
                       text=f"nvidia-smi: {' '.join(lost.string.split())}")
    which = f"GPU {gpu} at {bus}" if gpu is not None else f"the GPU at {bus}"
    out.warn(number, f"nvidia-smi could not reach {which} ({reason or 'no reason given'}): it may have fallen off "
                     "the bus; check the kernel log for Xid 79 and `nvidia-smi -q`")
    return None
