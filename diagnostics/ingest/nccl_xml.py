"""The NCCL topology XML (`NCCL_TOPO_DUMP_FILE`): GPUs, their NVLinks to NVSwitch chips or peer GPUs, the PCIe tree.

Read as a stream (xml.etree's pull parser) so a cut-off dump yields every element completed before the cut plus a
warning naming the line. `<nvlink target=BUSID count=N tclass=0x068000>`: tclass 0x0680xx is a bridge, i.e. an
NVSwitch; a target that is another GPU's bus id is a direct link.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from .. import values
from ..components import switch_name
from .base import IngestResult, IngestWarning, Source
from .textlines import one_edit

READER_NAME = "nccl-xml"
NVSWITCH_CLASS = "0x0680"
# The elements NCCL's loader takes inside each element (src/graph/xml.cc, ncclTopoXmlLoad*): any other it ignores
# ("Ignoring element"), and so does this reader, saying so.
CHILDREN = {None: {"system"}, "system": {"cpu"}, "cpu": {"pci", "nic"}, "pci": {"pci", "gpu", "nic", "pcilink"},
            "gpu": {"nvlink", "c2c"}, "nic": {"net"}}

# The attributes this reader takes on each element
ATTRIBUTES = {"gpu": ("dev", "rank", "sm"), "net": ("dev", "name"), "nvlink": ("target", "count", "tclass"),
              "pci": ("busid", "device"), "cpu": ("numaid",)}


@dataclass
class _Device:
    kind: str  # gpu | nic
    name: str
    bus_path: tuple[str, ...]  # PCI bus ids from the CPU down to the device's own
    numa: str | None
    line: int


@dataclass
class _State:
    where: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    stack: list[ET.Element] = field(default_factory=list)
    devices: list[_Device] = field(default_factory=list)
    links: list[tuple[int, str, int, str, int]] = field(default_factory=list)  # gpu, target, count, tclass, line
    bus_of_gpu: dict[str, int] = field(default_factory=dict)
    warnings: list[IngestWarning] = field(default_factory=list)
    seen: dict[tuple[str, ...], int] = field(default_factory=dict)  # a device or a link -> the line it is on
    ignored: int | None = None  # the depth of an element NCCL would not read, while inside it

    def again(self, key: tuple[str, ...], what: str, line: int) -> bool:
        """True (and said) when `key` was read before: a repeated element is read once."""
        first = self.seen.setdefault(key, line)
        if first != line:
            self.warnings.append(IngestWarning(self.where, line, f"{what} again (first at line {first}); "
                                                                 "this one is not read"))
        return first != line

    def path(self) -> tuple[str, ...]:
        return tuple(e.get("busid", "").lower() for e in self.stack if e.tag == "pci")

    def numa(self) -> str | None:
        return next((e.get("numaid") for e in reversed(self.stack) if e.tag == "cpu"), None)

    def start(self, elem: ET.Element, line: int) -> None:
        src = f"{self.where}:{line}"
        path = self.path()
        within = self.stack[-1].tag if self.stack else None
        if self.ignored is None and within in CHILDREN and elem.tag not in CHILDREN[within]:
            self.warnings.append(IngestWarning(self.where, line, f"<{elem.tag[:40]}> inside <{within or 'the file'}>"
                                                                 " is no element NCCL reads there; not read"))
            self.ignored = len(self.stack)
        if self.ignored is not None:  # NCCL skips such an element with all it holds
            self.stack.append(elem)
            return
        self.names(elem, line)
        if elem.tag == "gpu" and not self.again(("gpu", elem.get("dev", elem.get("rank", "?"))), "<gpu dev=...>",
                                                    line):
            dev = elem.get("dev", elem.get("rank", "?"))
            name = f"GPU{dev}"
            parent = self.stack[-1] if self.stack and self.stack[-1].tag == "pci" else None
            device = parent.get("device") if parent is not None else None
            bus = path[-1] if path else None
            if bus:
                self.bus_of_gpu[bus] = int(dev) if dev.isdigit() else -1
            detail = " ".join(f"{k}={v}" for k, v in (("device", device), ("sm", elem.get("sm"))) if v)
            self.rows.append({"a": name, "b": bus, "relation": "gpu", "detail": detail or None, "source": src})
            self.devices.append(_Device("gpu", name, path, self.numa(), line))
        elif elem.tag == "net" and not self.again(("net", elem.get("dev", "?")), "<net dev=...>", line):
            dev = elem.get("dev", "?")
            self.rows.append({"a": f"NIC{dev}", "b": elem.get("name"), "relation": "nic", "source": src})
            self.devices.append(_Device("nic", f"NIC{dev}", path, self.numa(), line))
        elif elem.tag == "nvlink":
            gpu = next((e for e in reversed(self.stack) if e.tag == "gpu"), None)
            count = self.checked(elem.get("count", ""), line, "nvlink count")  # NCCL requires it (no default)
            target = (str(gpu.get("dev")), elem.get("target", "").lower()) if gpu is not None else ()
            if gpu is not None and count is not None and not self.again(("nvlink", *target), "this <nvlink>", line):
                dev = gpu.get("dev", "-1")
                self.links.append((int(dev) if dev.lstrip("-").isdigit() else -1,
                                   elem.get("target", "").lower(), count, elem.get("tclass", ""), line))
        elif elem.tag == "pci":
            self.again(("pci", elem.get("busid", "").lower()), f"<pci busid={elem.get('busid', '')!r}>", line)
        self.stack.append(elem)

    def names(self, elem: ET.Element, line: int) -> None:
        """An attribute one letter from one this reader takes (a flipped byte in its name) is said and read as it."""
        known = ATTRIBUTES.get(elem.tag, ())
        for key in [k for k in elem.attrib if k not in known]:
            near = next((k for k in known if one_edit(key, k) and k not in elem.attrib), None)
            if near is not None:
                self.warnings.append(IngestWarning(self.where, line, f"<{elem.tag}> attribute {key[:40]!r} is one "
                                                                     f"letter from {near!r} (a damaged name?); read "
                                                                     f"as {near!r}"))
                elem.attrib[near] = elem.attrib.pop(key)

    def checked(self, raw: str, line: int, what: str) -> int | None:
        """A link count as the XML states it, or None with a warning naming the line and the value."""
        try:
            return values.index(raw, "link")
        except values.Refused as why:
            self.warnings.append(IngestWarning(self.where, line, f"{what} = {values.describe(raw)}: {why}; "
                                                                 "not read"))
            return None

    def end(self, elem: ET.Element, line: int) -> None:
        """An element closed; text between its elements is no part of a topology (a damaged tag reads as text)."""
        stray = [t.strip() for t in (elem.text, *(child.tail for child in elem)) if t and t.strip()]
        if stray:
            self.warnings.append(IngestWarning(self.where, line, f"text {stray[0][:40]!r} inside <{elem.tag}> is no "
                                                                 "element (a damaged tag?); not read"))
        if self.stack:
            self.stack.pop()
        if self.ignored is not None and len(self.stack) <= self.ignored:
            self.ignored = None

    def finish(self) -> None:
        for kind, tag in (("gpu", "<gpu dev=...>"), ("net", "<net dev=...>")):
            numbers = sorted(int(k[1]) for k in self.seen if k[0] == kind and k[1].isdigit())
            if not numbers:
                continue
            if numbers[-1] >= 1024:  # no node has that many: the number is damaged
                self.warnings.append(IngestWarning(self.where, None, f"{tag} number {numbers[-1]}: no node has "
                                                                     "that many"))
                continue
            gaps = sorted(set(range(numbers[-1] + 1)) - set(numbers))
            if gaps:
                self.warnings.append(IngestWarning(self.where, None, f"{tag} numbers {numbers[0]}-{numbers[-1]} "
                                                                     f"skip {', '.join(map(str, gaps[:8]))}: those "
                                                                     "elements are not in the input"))
        for index, target, count, tclass, line in self.links:
            peer = self.bus_of_gpu.get(target)
            if peer is not None:
                b = f"GPU{peer}"
            elif tclass.lower().startswith(NVSWITCH_CLASS):
                b = switch_name(target)
            else:
                b = target or "unknown"
            self.rows.append({"a": f"GPU{index}", "b": b, "relation": "nvlink", "nvlinks": count,
                              "detail": f"tclass={tclass}" if tclass else None, "source": f"{self.where}:{line}"})
        for dev in self.devices:
            if dev.numa is not None and dev.kind == "gpu":
                self.rows.append({"a": dev.name, "relation": "numa_affinity", "detail": dev.numa,
                                  "source": f"{self.where}:{dev.line}"})
        gpus = [d for d in self.devices if d.kind == "gpu"]
        for gpu in gpus:
            for nic in (d for d in self.devices if d.kind == "nic"):
                self.rows.append({"a": gpu.name, "b": nic.name, "relation": _path_kind(gpu, nic),
                                  "source": f"{self.where}:{gpu.line}"})


def _path_kind(a: _Device, b: _Device) -> str:
    """The `topo -m` path kind between two devices, from their places in the PCI tree."""
    if a.numa != b.numa:
        return "SYS"
    shared = 0
    for x, y in zip(a.bus_path[:-1], b.bus_path[:-1], strict=False):
        if x != y:
            break
        shared += 1
    if not shared:
        return "NODE"
    return "PIX" if shared == len(a.bus_path) - 1 == len(b.bus_path) - 1 else "PXB"


class NcclXmlReader:
    name = READER_NAME

    def sniff(self, head: str) -> float:
        if re.search(r"<system\s+version=", head) and re.search(r"<(gpu|cpu|pci)\b", head):
            return 0.95
        return 0.5 if re.search(r"<gpu\s+dev=", head) else 0.0

    def read(self, source: Source, *, node_id: str | None = None) -> IngestResult:
        state = _State(source.name)
        warnings = state.warnings
        parser: Any = ET.XMLPullParser(events=("start", "end"))
        started = False
        last = 0
        for number, line, _ in source.numbered():  # XML shows its own end: a cut last line leaves an element open
            last = number
            if not started:
                if not line.lstrip().startswith("<"):
                    continue  # comment or source lines before the XML
                started = True
            try:
                parser.feed(line + "\n")
                for event, elem in parser.read_events():
                    if not isinstance(elem, ET.Element):
                        continue
                    if event == "start":
                        state.start(elem, number)
                    else:
                        state.end(elem, number)
            except ET.ParseError as exc:
                warnings.append(IngestWarning(source.name, number, f"not well-formed XML here ({exc}); "
                                                                   "read what came before"))
                break
        else:
            if state.stack:
                warnings.append(IngestWarning(source.name, last, f"the XML is cut off inside <{state.stack[-1].tag}>; "
                                                                 "read what came before"))
        tail = source.tail  # reading stopped at bad XML before the cut last line: still said
        if tail is not None and not any(w.line == tail.number for w in warnings):
            warnings.append(tail.warning(source.name, "its element"))
        state.finish()
        if not any(r["relation"] == "gpu" for r in state.rows):
            warnings.append(IngestWarning(source.name, None, "no <gpu> element in the NCCL topology"))
        frame = pd.DataFrame(state.rows, columns=["a", "b", "relation", "nvlinks", "detail", "source"])
        frame["node_id"] = node_id
        return IngestResult.of(warnings, topology=frame)


READER = NcclXmlReader()
