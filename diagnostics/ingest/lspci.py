"""PCIe seen from the host: `lspci -vvv` link capability vs status, and sysfs AER counter dumps.

The GPU's own replay counter sees one direction only; the host side adds the link as trained (LnkSta vs LnkCap)
for GPUs, NVSwitches, PCIe switch ports and NICs, and the AER counters (`aer_dev_correctable` and siblings,
pasted with `cat` or `grep -r .`), which are lifetime totals. A narrower width than the capability marks the
link degraded; a lower speed alone does not (links slow down at idle to save power).

The Secondary PCI Express capability's Lane Error Status is the one place a failing lane is observed:
`LaneErrStat: LaneErr at lane: 0 1 2 3` gives a row per lane named (lane, lane_error true) beside the device's
link row, whose lane_error says whether any lane erred (`LaneErrStat: 0`: false). A width below the capability
says how many lanes are lost, never which, so no lane is inferred from it.

Which end saw which error tells the direction (`data/ends.toml`): the AER correctable status (`CESta: RxErr+
BadTLP- BadDLLP+ Rollover- Timeout+`) of each port, a set bit read as at least one (a sysfs count, where pasted,
is the count). A bridge whose `Bus: ... secondary=` is a GPU's bus is the switch or root port above that GPU: its
rows are the GPU link's upstream end (end `upstream`, the GPU's bus id, the port's own in `peer`).

A file may hold several listings, each after the time it was taken (`date; lspci -vvv`, again later): each is a
reading of its own, so a lane status read clear and then set is seen as two readings (the status is sticky, RW1C,
PCIe r4.0 sec. 7.7.3.3: only a clear reading before a set one dates it).
"""

from __future__ import annotations

import re
from typing import Any

from .. import format as fmt
from ..enums import LinkEnd, LinkState, LinkType
from .base import IngestResult, Source
from .textlines import Collector, Line, classify, normalize_bus_id, one_edit, skip_shell

_DEVICE = re.compile(
    r"^(?P<bus>(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]) (?P<cls>[^:]+): (?P<desc>.*)$"
)
_BLOCK = re.compile(  # a device header with the first line of its block under it, as `lspci -v` prints it
    r"^(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7] (?P<cls>[^:\n]+): (?P<desc>[^\n]*)\n"
    r"[ \t]+(?:Subsystem|DeviceName|Physical Slot|Control|Flags|Capabilities):", re.M)
_BROKEN_DEVICE = re.compile(r"^[0-9a-fA-F]{2,8}:\S*\s")  # starts as a device line does, at column 0
_LNKCAP = re.compile(r"^\s*LnkCap:\s*Port #\d+, Speed (?P<speed>[\d.]+)GT/s, Width x(?P<width>\d+)")
_LNKSTA = re.compile(r"^\s*LnkSta:\s*Speed (?P<speed>[\d.]+)GT/s[^,]*, Width x(?P<width>\d+)")
_LANE_ERRORS = re.compile(r"^\s*LaneErrStat:\s*(?:LaneErr at lane:\s*(?P<lanes>\d+(?:\s+\d+)*)|(?P<none>0))\s*$")
_GEN_BY_SPEED = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}
_AER_PATH = re.compile(
    r"(?<![0-9a-fA-F])(?P<bus>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])/aer_(?P<file>dev_correctable|"
    r"dev_nonfatal|dev_fatal)(?![\w-])"
)
_BUS = re.compile(r"^\s*Bus: primary=[0-9a-fA-F]{2}, secondary=(?P<secondary>[0-9a-fA-F]{2}), subordinate=")
_CESTA = re.compile(r"^\s*CESta:\s*(?P<bits>.*)$")
# The fields a device's block holds once (one Express capability, one AER capability, one bridge bus line): a
# second one means the next device's header line is missing, and its lines would be taken as this device's.
_FIELD_NAMES = ("LnkCap", "LnkSta", "CESta", "LaneErrStat", "Bus")
_FIELD = re.compile(rf"^\s+(?P<name>{'|'.join(_FIELD_NAMES)}):")
_FIRST_WORD = re.compile(r"^\s+(?P<word>[^\s:]+)")
_KEYS_NEAR_FIELDS = frozenset({"LnkCap2", "LnkSta2", "UESta"})  # lspci's own (ls-caps.c), one letter from a field
_DENIED = "Capabilities: <access denied>"  # lspci -vvv run without root: no capability, no link, is printed
_CESTA_BITS = ("RxErr", "BadTLP", "BadDLLP", "Rollover", "Timeout")  # what lspci's CESta always lists
_BIT = re.compile(r"(?P<name>[A-Za-z]+)(?P<set>[+-])")
_AER_VALUE = re.compile(r"(?:^|:)(?P<name>[A-Za-z_]+)\s+(?P<value>\d+)\s*$")
# The lines each sysfs AER file prints (drivers/pci/pcie/aer.c: aer_correctable_error_string,
# aer_uncorrectable_error_string, then the file's TOTAL_ERR_* line, as aer_stats_dev_attr writes them).
_UNCORRECTABLE = ("Undefined", "DLP", "SDES", "TLP", "FCP", "CmpltTO", "CmpltAbrt", "UnxCmplt", "RxOF", "MalfTLP",
                  "ECRC", "UnsupReq", "ACSViol", "UncorrIntErr", "BlockedTLP", "AtomicOpBlocked", "TLPBlockedErr",
                  "PoisonTLPBlocked", "DMWrReqBlocked", "IDECheck", "MisIDETLP", "PCRC_CHECK", "TLPXlatBlocked")
AER_NAMES = {
    "dev_correctable": frozenset({"RxErr", "BadTLP", "BadDLLP", "Rollover", "Timeout", "NonFatalErr", "CorrIntErr",
                                  "HeaderOF", "TOTAL_ERR_COR"}),
    "dev_nonfatal": frozenset({*_UNCORRECTABLE, "TOTAL_ERR_NONFATAL"}),
    "dev_fatal": frozenset({*_UNCORRECTABLE, "TOTAL_ERR_FATAL"}),
}
AER_COLUMNS = {
    "TOTAL_ERR_COR": "aer_correctable",
    "TOTAL_ERR_NONFATAL": "aer_nonfatal",
    "TOTAL_ERR_FATAL": "aer_fatal",
    "BadTLP": "bad_tlp",
    "BadDLLP": "bad_dllp",
    "RxErr": "rx_err",
    "Timeout": "replay_timeout",
    "Rollover": "aer_rollover",
}


_CLASS_CODE = re.compile(r"\s*\[[0-9a-fA-F]{4}\]$")  # `lspci -nn`: `PCI bridge [0604]`


def device_kind(cls: str, desc: str) -> str | None:
    """gpu, nvswitch, pcie_switch, nic, or None for a device whose link fabricbot does not follow."""
    cls_l, nvidia = _CLASS_CODE.sub("", cls).lower(), "nvidia" in desc.lower()
    if "nvswitch" in desc.lower() or (nvidia and cls_l == "bridge"):
        return "nvswitch"
    if nvidia and ("3d controller" in cls_l or "vga compatible" in cls_l):
        return "gpu"
    if cls_l == "pci bridge":
        return "pcie_switch"
    if any(k in cls_l for k in ("ethernet controller", "infiniband controller", "network controller")):
        return "nic"
    return None


# The header words that decide whether a device's link is followed (pci.ids class names lspci prints; the vendor)
_CLASSES = ("PCI bridge", "Bridge", "3D controller", "VGA compatible controller", "Ethernet controller",
            "Infiniband controller", "Network controller")
_VENDOR_WORDS = ("NVIDIA", "NVSwitch")


def _near_kind(cls: str, desc: str) -> tuple[str, str, str] | None:
    """(the word written, the word it is one letter from, the kind that word makes) for the header of a device whose
    link is not followed, where one letter changed (a flipped byte) would make it followed."""
    name = _CLASS_CODE.sub("", cls)
    for known in _CLASSES:
        if one_edit(name, known) and (kind := device_kind(known, desc)):
            return name, known, kind
    for word in desc.split():
        for known in _VENDOR_WORDS:
            if one_edit(word, known) and (kind := device_kind(cls, desc.replace(word, known, 1))):
                return word, known, kind
    return None


class LspciReader:
    name = "lspci"
    reads_hosts = True  # through textlines.classify: a parallel shell's output each host's (`fanout`)

    def sniff(self, head: str) -> float:
        if "LnkSta:" in head or "aer_dev_" in head or "TOTAL_ERR_COR" in head:
            return 0.9
        # `lspci -v` or more of a device whose link is followed, cut (or run without root) before its link lines:
        # read, so that each such device is said to have none, not the whole paste refused as no format
        if any(device_kind(m["cls"], m["desc"]) for m in _BLOCK.finditer(head)):
            return 0.6
        return 0.0

    def read(self, source: Source, *, node_id: str | None = None) -> IngestResult:
        out = Collector(source, "lspci / AER", node_id)
        rows: dict[str, dict[str, Any]] = {}
        device: tuple[str, str | None, int] | None = None  # bus id, kind, header line
        aer = _AerFiles(out)
        cap: dict[str, int | None] = {}
        last: Line | None = None
        below: dict[tuple[str, int], str] = {}  # (domain, secondary bus) -> the bridge above that bus
        lanes: dict[str, list[dict[str, Any]]] = {}
        block: dict[str, int] = {}  # the once-only fields of this device's block -> their line
        headers: dict[str, int] = {}  # each device's bus id -> its header line
        for line in classify(source, out):
            if line.kind == "command":  # the AER file a command prints, if it names one
                path = _AER_PATH.search(line.command or "")
                bus = normalize_bus_id(path["bus"]) if path else None
                aer.command = (bus, path["file"]) if path and bus else None
            stamp, node = out.timestamp, out.node_id
            if skip_shell(line, out):
                # a stated time, or a prompt of another host: the listing after it is another reading
                if (out.timestamp is not stamp or out.node_id != node) and rows:
                    _check_status(out, device, cap, last, block)
                    _ends(out, rows, lanes, below, headers)
                    rows, lanes, below, headers, block = {}, {}, {}, {}, {}
                    device, cap, aer = None, {}, _AerFiles(out)
                continue
            if head := _DEVICE.match(line.text):
                _check_status(out, device, cap, last, block)
                bus = normalize_bus_id(head["bus"]) or head["bus"]
                kind = device_kind(head["cls"], head["desc"])
                if kind is None and (damaged := _near_kind(head["cls"], head["desc"])):
                    written, known, kind = damaged
                    out.warn(line.number, f"{written[:40]!r} in {bus}'s header is one letter from {known!r} (a "
                                          f"damaged line?); read as {known!r}")
                device, cap, aer.command = (bus, kind, line.number), {}, None
                headers.setdefault(bus, line.number)
                block = {}
            elif _BROKEN_DEVICE.match(line.text):  # a device line whose bus id is no bus id: its lines are no one's
                _check_status(out, device, cap, last, block)
                out.warn(line.number, f"{line.text.strip()[:40]!r}: not a device line as lspci prints one (its bus "
                                      "id is not DDDD:BB:DD.F); the lines under it are not read")
                device, cap, aer.command = None, {}, None
            elif device is not None and (field := _FIELD.match(line.text)) and field["name"] in block:
                out.warn(line.number, f"a second {field['name']} in {device[0]}'s block (the first at line "
                                      f"{block[field['name']]}): a device's header line is missing above; the lines "
                                      "from here to the next device are not read")
                _check_status(out, device, cap, last)
                device, cap = None, {}
            elif match := _LNKCAP.match(line.text):
                cap = {"speed": _gen(out, line.number, match["speed"], "LnkCap"),
                       "width": out.checked("level", line.number, match["width"], "pcie_width", "LnkCap width")}
            elif (match := _LNKSTA.match(line.text)) and device is not None:
                if not cap and device[1] is not None:  # lspci prints LnkCap first, in every Express capability
                    out.warn(line.number, f"{device[0]}: LnkSta without a LnkCap above it (a line lost?); its "
                                          "capability is not known, so a narrowed link cannot be told")
                width = out.checked("level", line.number, match["width"], "pcie_width", "LnkSta width")
                if device[1] is not None and width is not None:
                    _link_row(out, rows, device, cap, _gen(out, line.number, match["speed"], "LnkSta"), width)
                cap = {}
            elif (match := _LANE_ERRORS.match(line.text)) and device is not None:
                if device[1] is not None:
                    lanes[device[0]] = _lane_rows(out, rows, device, line.number, match["lanes"])
                elif match["lanes"]:
                    said = f"{fmt.noun(len(match['lanes'].split()), 'lane')} {match['lanes']}"
                    out.warn(line.number, f"{device[0]} reports {said} in error, but it is no "
                                          "NVIDIA GPU, NVSwitch, PCIe switch or NIC: its link is not followed")
            elif (match := _BUS.match(line.text)) and device is not None:
                below[(device[0].split(":")[0], int(match["secondary"], 16))] = device[0]
            elif (match := _CESTA.match(line.text)) and device is not None:
                if device[1] is not None:
                    _status_bits(out, rows, device, match["bits"], number=line.number)
            elif device is not None and (field := _FIELD.match(line.text)):
                out.warn(line.number, f"{line.text.strip()[:60]!r}: not a {field['name']} line as lspci prints one; "
                                      "not read")
            elif device is not None and (near := _near_field(line.text)):
                out.warn(line.number, f"{near[0][:40]!r} is one letter from {near[1]!r}, a field the reader takes (a "
                                      "damaged name?); not read")
            elif value := _AER_VALUE.search(line.text):
                file = aer.file_of(line, value["name"])
                bus = file[0] if file else None
                column = AER_COLUMNS.get(value["name"])
                if file is None:
                    pass
                elif bus is None:
                    out.once("aer-nobus", line.number, "AER counters without a device path; they are not read "
                                                       "(paste them with `grep -r . /sys/bus/pci/devices/*/aer_dev_*`)")
                elif column:
                    count = out.checked("counter", line.number, value["value"], "aer", value["name"])
                    if count is not None:
                        row = _row(out, rows, bus, line.number, None)
                        row[column] = count
                        row["aer_counted"] = True
            elif device is None or not line.text[:1].isspace():
                out.unread(line)
            if device is not None and (field := _FIELD.match(line.text)):
                block.setdefault(field["name"], line.number)
            elif device is not None and _DENIED in line.text:
                block.setdefault(_DENIED, line.number)
            last = line
        _check_status(out, device, cap, last, block, ends=True)
        _ends(out, rows, lanes, below, headers)
        return out.result()


def _ends(out: Collector, rows: dict[str, dict[str, Any]], lanes: dict[str, list[dict[str, Any]]],
          below: dict[tuple[str, int], str], headers: dict[str, int]) -> None:
    """One reading's ports joined to the GPUs below them (each `date`-stamped listing of a file is one reading)."""
    _across_domains(out, rows, below, headers)
    _upstream_ends(rows, lanes, below)


class _AerFiles:
    """Which device's which AER file each counter line is from, checked against what the file can print: a line
    naming another device than its command, a name the file does not print, or a name printed twice for one
    device's file (a command line lost between two files) is said and not read."""

    def __init__(self, out: Collector) -> None:
        self.out = out
        self.command: tuple[str, str] | None = None  # (bus id, file) the last command prints
        self.seen: dict[tuple[str | None, str | None, str], int] = {}  # (bus, file, name) -> its line

    def file_of(self, line: Line, name: str) -> tuple[str | None, str | None] | None:
        """(bus id or None, file or None) of a counter line; None when the line is not read (and said)."""
        path = _AER_PATH.search(line.text)
        if line.text.count("/aer_dev_") > 1:  # two lines joined (a lost line break): whose is the value?
            self.out.warn(line.number, f"{line.text.strip()[:60]!r}: two AER counter lines in one (a lost line "
                                       "break?); not read")
            return None
        if path is None and "/aer_dev_" in line.text:
            self.out.warn(line.number, f"{line.text.strip()[:60]!r}: no device bus id (DDDD:BB:DD.F) in its path; "
                                       "not read")
            return None
        bus = normalize_bus_id(path["bus"]) if path else (self.command[0] if self.command else None)
        file = path["file"] if path else (self.command[1] if self.command else None)
        if path and self.command and (bus, file) != self.command:
            self.out.warn(line.number, f"a line of {bus}'s aer_{file} where the command prints {self.command[0]}'s "
                                       f"aer_{self.command[1]}; not read")
            return None
        if file is not None and name not in AER_NAMES[file]:
            self.out.warn(line.number, f"{name[:40]!r} is no counter aer_{file} prints; not read")
            return None
        first = self.seen.setdefault((bus, file, name), line.number)
        if first != line.number:
            self.out.warn(line.number, f"{name} again for {bus or 'this device'}'s aer_{file or 'file'} (first at "
                                       f"line {first}): a command line may be missing above; not read")
            return None
        return bus, file


def _near_field(text: str) -> tuple[str, str] | None:
    """(the line's first word, the field it is one letter from) when it is none of lspci's own names."""
    match = _FIRST_WORD.match(text)
    word = match["word"] if match else None
    if word is None or word in _KEYS_NEAR_FIELDS or word in _FIELD_NAMES:
        return None
    near = next((f for f in _FIELD_NAMES if one_edit(word, f)), None)
    return (word, near) if near else None


def _gen(out: Collector, number: int, speed: str, what: str) -> int | None:
    """The PCIe generation of a lane rate in GT/s; None, with a warning, for a rate no generation has."""
    rate = out.checked("gauge", number, speed, "lane_rate_gts", f"{what} speed (GT/s)")
    if rate is None:
        return None
    if rate not in _GEN_BY_SPEED:
        out.warn(number, f"{what} speed {speed}GT/s is no PCIe generation's lane rate; its generation is not read")
    return _GEN_BY_SPEED.get(rate)


def _row(out: Collector, rows: dict[str, dict[str, Any]], bus: str, number: int, kind: str | None) -> dict[str, Any]:
    if bus not in rows:
        rows[bus] = out.add("link_samples", number, pci_bus_id=bus, link_type=LinkType.PCIE.value, peer="unknown",
                            device_kind=kind)
    if kind:
        rows[bus]["device_kind"] = kind
    return rows[bus]


def _link_row(out: Collector, rows: dict[str, dict[str, Any]], device: tuple[str, str | None, int],
              cap: dict[str, int | None], gen: int | None, width: int) -> None:
    row = _row(out, rows, device[0], device[2], device[1])
    row.update(gen=gen, width=width, max_gen=cap.get("speed"), max_width=cap.get("width"))
    max_width = cap.get("width")
    degraded = max_width is not None and width < max_width
    row["link_state"] = (LinkState.DEGRADED if degraded else LinkState.UP).value


def _lane_rows(out: Collector, rows: dict[str, dict[str, Any]], device: tuple[str, str | None, int], number: int,
               lanes: str | None) -> list[dict[str, Any]]:
    """The lanes the device's Lane Error Status names: one row each, and the device row's yes/no."""
    found = [out.checked("index", number, n, "lane", f"{device[0]} LaneErrStat lane") for n in (lanes or "").split()]
    named = [lane for lane in found if lane is not None]
    _row(out, rows, device[0], device[2], device[1])["lane_error"] = bool(named)
    return [out.add("link_samples", number, pci_bus_id=device[0], link_type=LinkType.PCIE.value, peer="unknown",
                    device_kind=device[1], lane=lane, lane_error=True) for lane in named]


def _status_bits(out: Collector, rows: dict[str, dict[str, Any]], device: tuple[str, str | None, int],
                 bits: str, number: int) -> None:
    """The AER correctable status bits of a port: a set bit is at least one error of that kind since they were
    cleared (a sysfs count of the same device, where pasted, is kept: it says how many)."""
    row = _row(out, rows, device[0], device[2], device[1])
    missing = [name for name in _CESTA_BITS if f"{name}+" not in bits and f"{name}-" not in bits]
    if missing:
        out.warn(number, f"{device[0]}'s CESta has no {', '.join(missing)} bit (lspci prints each); not read")
    for bit in _BIT.finditer(bits):
        column = AER_COLUMNS.get(bit["name"])
        if column and not row.get("aer_counted"):
            row[column] = 1.0 if bit["set"] == "+" else 0.0


def _upstream_ends(rows: dict[str, dict[str, Any]], lanes: dict[str, list[dict[str, Any]]],
                   below: dict[tuple[str, int], str]) -> None:
    """The port above each GPU (the bridge whose secondary bus is the GPU's bus) is the upstream end of the GPU's
    link: its rows take the GPU's bus id, end `upstream` and the port's own bus id as their peer."""
    for bus, row in list(rows.items()):
        domain, number = bus.split(":")[0], int(bus.split(":")[1], 16)
        port = below.get((domain, number))
        if row.get("device_kind") != "gpu" or port is None or port not in rows:
            continue
        for r in [rows[port], *lanes.get(port, [])]:
            r.update(pci_bus_id=bus, end=LinkEnd.UPSTREAM.value, peer=port)
    for row in rows.values():
        row.pop("aer_counted", None)


def _across_domains(out: Collector, rows: dict[str, dict[str, Any]], below: dict[tuple[str, int], str],
                    headers: dict[str, int]) -> None:
    """A GPU with no bridge above its bus in its own PCI domain, where a bridge of another domain leads to a bus of
    that number with no device listed on it: one of the two domains is damaged (a flipped byte), so the port is
    not the GPU's upstream end, said."""
    listed = {(bus.split(":")[0], int(bus.split(":")[1], 16)) for bus in headers if bus.count(":") == 2}
    for bus, row in rows.items():
        if row.get("device_kind") != "gpu" or bus not in headers:
            continue
        domain, number = bus.split(":")[0], int(bus.split(":")[1], 16)
        if (domain, number) in below:
            continue
        for (other, secondary), port in below.items():
            if secondary == number and other != domain and (other, secondary) not in listed:
                out.warn(headers[bus], f"{bus} is in PCI domain {domain}, and the bridge above bus {number:02x} is "
                                       f"{port} in domain {other}, which lists no device on it: one of the two bus "
                                       "ids is damaged; the port is not read as the GPU's upstream end")


def _check_status(out: Collector, device: tuple[str, str | None, int] | None, cap: dict[str, int | None],
                  last: Line | None, block: dict[str, int] | None = None, *, ends: bool = False) -> None:
    """A device block that shows LnkCap and ends without LnkSta was cut off; a followed device whose block (`block`:
    lines under its header, as `lspci -v` or more prints) ends with neither has no link to read: said with why (the
    output stops, lspci ran without root), naming the device."""
    if device is None or device[1] is None or last is None:
        return
    if cap:
        out.warn(last.number, f"{device[0]}: LnkCap without LnkSta; the output looks cut off here")
    elif block is not None and not block.keys() & {"LnkCap", "LnkSta"} and last.number > device[2]:
        why = ("lspci ran without root (`Capabilities: <access denied>`): `sudo lspci -vvv` prints them"
               if _DENIED in block else f"the output stops at line {last.number}" if ends
               else f"its block, lines {device[2]}-{last.number}, has neither")
        out.warn(last.number, f"no LnkCap/LnkSta for {device[0]} ({why}): its link is not read")


READER = LspciReader()
