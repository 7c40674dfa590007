"""The PCI and Fabric sections of `nvidia-smi -q`: one PCIe link row per GPU and one fabric-state event.

`Replays Since Reset` is the GPU's PCIe replay counter, a lifetime total (no rate from one reading).
`Replay Number Rollovers` counts link retrains, so it has its own column and is never added to the replays.
Generation and width are read current vs max; the generation drops at idle to save power, so only a narrower
width marks the link degraded here. GPU indexes are given only for a whole `-q` output (it lists every GPU in
index order after `Attached GPUs`); a pasted section keeps its bus id instead. The Fabric section (`-d FABRIC`,
or the section grepped out) becomes one fabric_state event whose text keeps every value it states: State,
Status, CliqueId, ClusterUUID and the Health lines (Summary, Bandwidth, Route Recovery ...); N/A is left out.
Each GPU's `GPU UUID` and `Serial Number` (the board serial a technician reads on the part) go to its gpus row:
a part's history follows them from node to node.
"""

from __future__ import annotations

import re
from typing import Any

from ..enums import LinkState, LinkType
from ..values import gauge, number
from .base import IngestResult, Source
from .textlines import SATURATED_16BIT, Collector, Line, classify, normalize_bus_id, skip_shell

_KEY = re.compile(r"^(?P<indent>\s*)(?P<key>\S.*?)\s+:\s?(?P<value>.*?)\s*$")
_GPU = re.compile(r"^GPU (?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$")
_GPU_ANY = re.compile(r"^GPU (\S+:\S+)$")  # a GPU header whose bus id is damaged
_SECTION = re.compile(r"^[A-Za-z][\w ()/.-]*$")  # `GPU Link Info`, `PCIe Generation`, `Bridge Chip`
_WIDTH = re.compile(r"^(\d+)x$")
_FABRIC_SECTION = re.compile(r"^\s*Fabric\s*$", re.MULTILINE)
_FABRIC_STATE = re.compile(r"^\s*State\s+:\s*\S", re.MULTILINE)
_PCI_KEYS = ("Bus Id", "Replays Since Reset", "Replay Number Rollovers", "Tx Throughput", "Rx Throughput")
_THROUGHPUT = {"Tx Throughput": "tx_bytes_per_s", "Rx Throughput": "rx_bytes_per_s"}
_UNITS = {"B/s": 1.0, "KB/s": 1e3, "MB/s": 1e6, "GB/s": 1e9}
_NO_SERIAL = ("N/A", "[N/A]", "Not Supported", "[Not Supported]")  # a board that reports no serial
_LOG_HEADER = ("CUDA Version", "HIC Info")  # keys of the log's own header, before the first GPU


class SmiQueryReader:
    name = "smi_query"

    def sniff(self, head: str) -> float:
        if "Replays Since Reset" in head or "Replay Number Rollovers" in head:
            return 0.9
        if "NVSMI LOG" in head or ("GPU Link Info" in head and "PCIe Generation" in head):
            return 0.8
        if _FABRIC_SECTION.search(head) and _FABRIC_STATE.search(head):
            return 0.8
        return 0.0

    def read(self, source: Source, *, node_id: str | None = None) -> IngestResult:
        out = Collector(source, "nvidia-smi -q", node_id)
        gpus: list[_Gpu] = []
        attached = False
        driver: str | None = None
        stack: list[tuple[int, str]] = []
        last: Line | None = None
        for line in classify(source, out):
            if line.kind == "text" and line.text.strip().startswith("Timestamp"):
                _, colon, stated = line.text.partition(":")
                if colon:  # a line cut before its colon states no time
                    out.take_time(Line(line.number, stated, "text"))
                continue
            if skip_shell(line, out) or "NVSMI LOG" in line.text:
                continue
            last = line
            if (header := _GPU.match(line.text.strip())) or (broken := _GPU_ANY.match(line.text.strip())):
                bus = normalize_bus_id(header["bus"]) if header else None
                if header is None and broken is not None:  # the next GPU's section: not the GPU's before it
                    out.warn(line.number, f"GPU {broken[1][:40]!r}: not a PCI bus id; this GPU's readings are kept "
                                          "without one")
                gpus.append(_Gpu(line.number, bus, len(gpus) if attached else None))
                stack.clear()
                continue
            kv = _KEY.match(line.text)
            indent = len(line.text) - len(line.text.lstrip())
            while stack and stack[-1][0] >= indent:
                stack.pop()
            if not kv:
                if _SECTION.match(line.text.strip()):
                    stack.append((indent, line.text.strip()))
                else:
                    out.unread(line)
                continue
            key, value = kv["key"], kv["value"]
            if key == "Attached GPUs":
                attached = True
                continue
            if key == "Driver Version":
                driver = value or None
                continue
            if not gpus:
                if indent == 0 and key in _LOG_HEADER:
                    continue  # the log's own header; a pasted section without it starts a GPU of its own
                gpus.append(_Gpu(line.number, None, None))
            gpus[-1].take([name for _, name in stack], key, value, line, out)
        for gpu in gpus:
            gpu.emit(out, last, driver)
        return out.result()


class _Gpu:
    """What one GPU's section says about its PCIe link and its fabric."""

    def __init__(self, number: int, bus_id: str | None, index: int | None) -> None:
        self.number = number
        self.index = index
        self.row: dict[str, Any] = {"pci_bus_id": bus_id}
        self.fabric: dict[str, str] = {}
        self.fabric_line: int | None = None
        self.uuid: str | None = None
        self.serial: str | None = None
        self.model: str | None = None
        self.in_pci = False

    def take(self, path: list[str], key: str, value: str, line: Line, out: Collector) -> None:
        section = path[-1] if path else ""
        if key == "GPU UUID":
            self.uuid = value or None
        elif key == "Serial Number" and not path:
            self.serial = value if value and value not in _NO_SERIAL else None
        elif key == "Product Name" and not path:
            self.model = value or None
        elif "Fabric" in path:
            if value and value != "N/A":
                self.fabric[key if section == "Fabric" else f"{section} {key}"] = value
                self.fabric_line = self.fabric_line or line.number
        elif section == "PCIe Generation" and key in ("Max", "Current"):
            self.in_pci = True
            self._set("max_gen" if key == "Max" else "gen",
                      out.checked("level", line.number, value, "pcie_gen", f"PCIe generation {key}"))
        elif section == "Link Width" and key in ("Max", "Current"):
            width = _WIDTH.match(value)
            lanes = out.checked("level", line.number, width[1] if width else value, "pcie_width", f"Link Width {key}")
            self._set("max_width" if key == "Max" else "width", lanes)
        elif key in _PCI_KEYS:
            self.in_pci = True
            self._pci(key, value, line, out)

    def _pci(self, key: str, value: str, line: Line, out: Collector) -> None:
        if not value:
            out.warn(line.number, f"{key} has no value; the output is cut off here")
        elif key == "Bus Id":
            self.row["pci_bus_id"] = normalize_bus_id(value) or self.row["pci_bus_id"]
        elif key in _THROUGHPUT:
            amount_text, _, unit = value.partition(" ")
            if unit in _UNITS:
                scale = _UNITS[unit]
                amount = out.value(line.number, amount_text, lambda r: gauge(number(r) * scale, "bytes_per_s"), key)
                if amount is not None:
                    self.row[_THROUGHPUT[key]] = amount
        else:
            replays = key == "Replays Since Reset"
            column = "replay" if replays else "replay_rollovers"
            count = out.checked("counter", line.number, value, "pcie_replay" if replays else "pcie_rollover", key)
            if count is None:
                return
            self.row[column] = count
            self.row["source_line"] = self.row.get("source_line", line.number)
            if count == SATURATED_16BIT:
                self.row["saturated"] = True

    def _set(self, column: str, value: int | None) -> None:
        if value is not None:
            self.row[column] = value

    def emit(self, out: Collector, last: Line | None, driver: str | None) -> None:
        number = self.row.pop("source_line", self.number)
        if self.uuid or self.model or self.index is not None:
            out.add("gpus", self.number, gpu=self.index, uuid=self.uuid, serial=self.serial,
                    pci_bus_id=self.row["pci_bus_id"], model=self.model, driver_version=driver)
        if self.in_pci:
            if "replay" not in self.row and last is not None:
                out.warn(last.number, "the PCI section ends before `Replays Since Reset`; the output looks cut off")
            state = LinkState.UP
            if "width" in self.row and "max_width" in self.row and self.row["width"] < self.row["max_width"]:
                state = LinkState.DEGRADED
            out.add("link_samples", number, gpu=self.index, gpu_uuid=self.uuid, link_type=LinkType.PCIE.value,
                    peer="unknown", link_state=state.value, saturated=self.row.pop("saturated", False), **self.row)
        if self.fabric and self.fabric_line is not None:
            text = "; ".join(f"{k}: {v}" for k, v in self.fabric.items())
            out.add("events", self.fabric_line, gpu=self.index, pci_bus_id=self.row["pci_bus_id"],
                    kind="fabric_state", text=text)


READER = SmiQueryReader()
