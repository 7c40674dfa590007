"""The PCI and Fabric sections of `nvidia-smi -q`: one PCIe link row per GPU and one fabric-state event.

`Replays Since Reset` is the GPU's PCIe replay counter, a lifetime total (no rate from one reading).
`Replay Number Rollovers` counts link retrains, so it has its own column and is never added to the replays.
Generation and width are read current vs max; the generation drops at idle to save power, so only a narrower
width marks the link degraded here. GPU indexes are given only for a whole `-q` output (it lists every GPU in
index order after `Attached GPUs`); a pasted section keeps its bus id instead. The Fabric section (`-d FABRIC`,
or the section grepped out) becomes one fabric_state event whose text keeps every value it states: State,
Status, CliqueId, ClusterUUID and the Health lines (Summary, Bandwidth, Route Recovery ...); N/A is left out.

What the output says of itself is checked: GPU sections are numbered by their bus id (a header repeated is one
GPU, said), their count against `Attached GPUs` (a mismatch gives no GPU an index), a section holding a key twice
has lost the next GPU's header (its lines are said and not read), the sections of one log hold the same keys, and a
key that is not words one space apart, a Timestamp or Bus Id that is none, and a throughput unit nvidia-smi does not
print are said. A GPU nvidia-smi could not reach is a line in its section's place (`Unable to determine the device
handle for GPU ...: GPU is lost`): an off-the-bus event on its bus (kernel_gpu.unreachable), its place kept.

Each GPU's `GPU UUID` and `Serial Number` (the board serial a technician reads on the part) go to its gpus row:
a part's history follows them from node to node.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from ..enums import LinkState, LinkType
from ..metrics import SATURATED_16BIT
from ..values import gauge, number
from .base import IngestResult, IngestWarning, Source
from .kernel_gpu import NO_HANDLE, unreachable
from .textlines import Collector, Line, classify, normalize_bus_id, one_edit, skip_shell

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
_LOG_HEADER = ("Timestamp", "Driver Version", "CUDA Version", "HIC Info", "Attached GPUs")  # the log's own header
_IDENTITY = ("Product Name", "GPU UUID", "Serial Number")  # a GPU section's keys outside its sections that are read
_PCI_SECTIONS = ("GPU Link Info", "PCIe Generation", "Link Width", "Bridge Chip")
# The keys read, by their path: every GPU section of one log holds each that any of them holds.
_READ = {("Product Name",), ("GPU UUID",), ("Fabric", "State"), *(("PCI", key) for key in _PCI_KEYS),
         *(("PCI", "GPU Link Info", part, key) for part in ("PCIe Generation", "Link Width")
           for key in ("Max", "Current"))}
_READ_NAMES = frozenset({*_LOG_HEADER, *_IDENTITY, *_PCI_KEYS, *_PCI_SECTIONS, "PCI", "Fabric", "Max", "Current",
                         "State"})  # the keys and sections read: one a letter from them was damaged
_SECTION_NAMES = frozenset({*_PCI_SECTIONS, "PCI", "Fabric"})
_LOST_COLON = re.compile(r"^(?P<key>\S.*?)\s{2,}\S")  # `Driver Version     g 550.54.15`: a key, spaces, a value
_STRAY = re.compile(r"^(?P<stray>\S) (?P<key>.+)$")  # `g Product Name`: a byte of the indentation flipped
# A key as nvidia-smi prints one: words one space apart (`GPU T.Limit Temp`, `SRAM Uncorrectable SEC-DED`).
_KEY_NAME = re.compile(r"^[A-Za-z0-9()/.+-]+(?: [A-Za-z0-9()/.+-]+)*$")
_DISPLAY = re.compile(r"(?:^|\s)(?:-d\s*|--display[=\s])([A-Za-z_,]+)")  # a command's `-d ECC`: what it shows
_NO_SERIAL = ("N/A", "[N/A]", "Not Supported", "[Not Supported]")  # a board that reports no serial
INFINITE_LINE = 1 << 62  # past any input's last line


class SmiQueryReader:
    name = "smi_query"
    reads_hosts = True  # through textlines.classify: a parallel shell's output each host's (`fanout`)

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
        # each node's outputs: a paste of sessions on several nodes holds one each, and a node read twice (`nvidia-smi
        # -q`, ten minutes, `nvidia-smi -q` again: the two readings a rate needs) two, one after the other
        logs = {out.node_id: [_Log(out)]}
        log = logs[out.node_id][-1]
        for line in classify(source, out, _shows_end):
            if line.kind == "text" and line.text.strip().startswith("Timestamp"):
                log.whole = True
                _, colon, stated = line.text.partition(":")
                if colon and not out.take_time(Line(line.number, stated, "text")):  # a line cut before its colon
                    out.warn(line.number, f"Timestamp {stated.strip()[:40]!r} is no time as nvidia-smi prints one; "
                                          "the readings have no time")
                continue
            if "NVSMI LOG" in line.text:
                log.banner()
                continue
            if skip_shell(line, out):  # a prompt may name another host: its display is that host's output's
                log = _log_of(logs, out)
                if line.kind == "command" and (shown := _DISPLAY.search(line.command or "")):
                    log.displays.append(shown[1])
                continue
            if log.read_again(line):
                log = log.next_reading(line)
                logs[out.node_id].append(log)
            log.take(line)
        now = out.node_id, out.timestamp
        times = {node: out.time_of(node) for node in logs}  # the time each node's `Timestamp` stated last
        for node, readings in logs.items():
            for each in readings:
                out.node_id, out.timestamp = node, each.time if each.until is not None else times[node]
                each.finish()
        out.node_id, out.timestamp = now
        bare = [(node, each) for node, readings in logs.items() for each in readings[-1:] if each.whole and each.gpus
                and not any(what[0] in ("PCI", "Fabric") for g in each.gpus.values() for what in g.seen)]
        for node, each in reversed(bare):  # each host's output, named where the paste holds several
            said = _cut_before_sections() if each.cut_short else _without_sections(each)
            out.warnings.insert(0, IngestWarning(source.name, None, f"{node}: {said}" if len(bare) > 1 else said))
        return out.result()


# the last word of a value nvidia-smi prints that only a whole value ends in: a unit, N/A, a state, a width's `x`
# (`No` is left out: a cut `None`)
_WHOLE_END = re.compile(r"(?:^|\s)(?:[KMGT]iB|[KMG]?B/s|[KMG]?Hz|W|C|%|V|mV|ms|us|N/A|\[N/A\]|None|Enabled|Disabled|"
                        r"Yes|Active|Supported|\d+x)$")


def _shows_end(text: str) -> bool:
    """A `Key : value` line whose value ends in what only a whole value ends in (`15922 MiB`, `N/A`, `16x`): read as
    it stands when it is the last line of a file saved without a final newline (gpud's test outputs end so), where
    a cut would be read only up to its last space. A bare number last may be cut (45 of 45120) and stays unread."""
    kv = _KEY.match(text)
    return bool(kv and _WHOLE_END.search(kv["value"]))


def _log_of(logs: dict[str | None, list[_Log]], out: Collector) -> _Log:
    """The output of the node the lines are now of (its latest reading); what came before any node was named is the
    first node's."""
    if out.node_id not in logs and list(logs) == [None]:
        logs[out.node_id] = logs.pop(None)
    return logs.setdefault(out.node_id, [_Log(out)])[-1]


def _cut_before_sections() -> str:
    """What a `-q` output cut off before any GPU's PCI or Fabric section is: no display left them out."""
    return ("this nvidia-smi -q output is cut off before any GPU's PCI or Fabric section, so nothing in it is read; "
            "paste `nvidia-smi -q` whole (PCIe replays, generation and width in its PCI section, the fabric state in "
            "its Fabric section)")


def _without_sections(log: _Log) -> str:
    """What a `-q` output whose GPU sections hold no PCI or Fabric section is, and what to run instead."""
    shown = sorted(set(log.displays))
    run = (f"`-d {','.join(shown)}`, the display it was run with," if shown
           else "the `-d` display it was run with (its sections: "
           + ", ".join(sorted({w[0] for g in log.gpus.values() for w in g.seen if len(w) == 1})[:4] or ["none"])
           + "),")
    return ("this nvidia-smi -q output holds no PCI or Fabric section and no NVLink counters: "
            f"{run} leaves them out, so nothing in it is read; run `nvidia-smi -q` with no -d (PCIe replays, "
            "generation and width in its PCI section, the fabric state in its Fabric section), or "
            "`nvidia-smi -q -d FABRIC` for the fabric state alone, and `nvidia-smi nvlink -e` for the NVLink error "
            "counters")


class _Log:
    """One `-q` output: GPU sections numbered by their bus id, checked against what the output says of itself."""

    def __init__(self, out: Collector) -> None:
        self.out = out
        self.gpus: dict[str, _Gpu] = {}  # bus id (or the header's line, for a damaged one) -> its section
        self.gpu: _Gpu | None = None
        self.attached: tuple[int, int] | None = None  # what `Attached GPUs` states, and its line
        self.whole = False  # the log's own header was seen: keys before the first GPU are its header's
        self.cut_short = False  # the input ends inside its last GPU's section (`finish`)
        self.logs = 0  # its `NVSMI LOG` banners: `-q -i N` outputs one after another print one each
        self.driver: str | None = None
        self.stack: list[tuple[int, str]] = []
        self.skipping: str | None = None  # why the lines up to the next GPU header are not read
        self.last: Line | None = None
        self.displays: list[str] = []  # the `-d` displays of the commands pasted with the output
        # a banner after GPU sections: the time and header before it, this reading's if the same GPUs follow
        self.before: tuple[pd.Timestamp | None, tuple[int, int] | None, str | None] | None = None
        self.time: pd.Timestamp | None = None  # once the next reading began (`until`, its first line): this one's
        self.until: int | None = None

    def banner(self) -> None:
        """An `NVSMI LOG` banner: the start of an output. One after GPU sections begins another output: of other
        GPUs (`-q -i N` run for each, one reading), or of the same GPUs again (`read_again`: a second reading)."""
        self.whole = True
        self.logs += 1
        if self.gpus:
            self.before = (self.out.timestamp, self.attached, self.driver)
            self.gpu, self.skipping = None, None
            self.stack.clear()

    def read_again(self, line: Line) -> bool:
        """Whether `line` is the header of a GPU this output holds, after a banner and a time later than its own:
        the output printed again, a second reading of the same GPUs (a time not stated or the same: one GPU's
        section twice, `header` says)."""
        if self.before is None or not (header := _GPU.match(line.text.strip())):
            return False
        then = self.before[0]
        return normalize_bus_id(header["bus"]) in self.gpus and then is not None and \
            self.out.timestamp is not None and self.out.timestamp != then

    def next_reading(self, line: Line) -> _Log:
        """This output ends before the banner before `line`, at the time it stated; the next reading starts."""
        assert self.before is not None
        nxt = _Log(self.out)
        nxt.whole, nxt.logs, nxt.attached, nxt.driver, nxt.displays = True, 1, self.attached, self.driver, self.displays
        self.time, self.attached, self.driver = self.before
        self.logs -= 1
        self.until = line.number
        return nxt

    def take(self, line: Line) -> None:
        self.last = line
        text = line.text.strip()
        if lost := NO_HANDLE.match(text):
            self.unreached(line, lost)
            return
        if header := _GPU.match(text):
            self.header(line, header["bus"], None)
            return
        if broken := _GPU_ANY.match(text):
            self.header(line, None, broken[1])
            return
        if self.skipping is not None:
            return
        kv = _KEY.match(line.text)
        # a tab as nvidia-smi's own indentation step (4), so a line indented with tabs and spaces nests as written
        indent = len(line.text[: len(line.text) - len(line.text.lstrip())].expandtabs(4))
        while self.stack and self.stack[-1][0] >= indent:
            self.stack.pop()
        if not kv:
            if (lost := _LOST_COLON.match(text)) and lost["key"] in _READ_NAMES - _SECTION_NAMES:
                self.out.warn(line.number, f"{lost['key']!r} with no ':' before its value (a damaged line?); not read")
                return
            if _SECTION.match(text):
                self.section(line, indent, text)
            else:
                self.out.unread(line)
            return
        key, value = kv["key"], kv["value"]
        if (stray := _STRAY.match(key)) and stray["key"] in _READ_NAMES:
            self.out.warn(line.number, f"{stray['key']!r} has a stray {stray['stray']!r} before it (a damaged "
                                       "indentation?); not read")
            return
        if not _KEY_NAME.match(key):
            self.out.warn(line.number, f"{key[:40]!r} is no key as nvidia-smi prints one (words one space apart); "
                                       "not read")
            return
        if key not in _READ_NAMES and (near := next((k for k in _READ_NAMES if one_edit(key, k)), None)):
            self.out.warn(line.number, f"{key[:40]!r} is one letter from {near!r}, a key the reader takes (a damaged "
                                       "key?); not read")
            return
        if self.gpu is None and indent == 0 and (self.whole or key in _LOG_HEADER or key == "Attached GPUs"):
            self.log_header(line, key, value)
            return
        if self.gpu is None:  # a pasted section without its GPU header is a GPU of its own
            self.gpu = self.gpus.setdefault(f"line {line.number}", _Gpu(line.number, None))
        path = [name for _, name in self.stack]
        if (path[:1] in (["PCI"], ["Fabric"]) or (not path and key in _IDENTITY)) and \
                (first := self.gpu.again((*path, key), line.number)) is not None:
            self.skip(line, f"a second {key!r}", first)
            return
        self.gpu.take(path, key, value, line, self.out)

    def log_header(self, line: Line, key: str, value: str) -> None:
        self.whole = True
        if key == "Attached GPUs":
            count = self.out.checked("index", line.number, value, "gpu", "Attached GPUs")
            self.attached = (count, line.number) if count is not None else None
        elif key == "Driver Version":
            self.driver = value or None
        elif key not in _LOG_HEADER:
            self.out.warn(line.number, f"{key[:40]!r} is no key of the log's header as nvidia-smi prints it; "
                                       "not read")

    def header(self, line: Line, bus_text: str | None, broken: str | None) -> None:
        bus = normalize_bus_id(bus_text) if bus_text else None
        if broken is not None:  # the next GPU's section: not the GPU's before it
            self.out.warn(line.number, f"GPU {broken[:40]!r}: not a PCI bus id; this GPU's readings are kept "
                                       "without one")
        key = bus or f"line {line.number}"
        self.stack.clear()
        self.skipping = None
        if key in self.gpus:
            first = self.gpus[key].number
            self.out.warn(line.number, f"GPU {bus}'s section again (its first is line {first}); the same GPU, "
                                       "this section is not read")
            self.gpu, self.skipping = None, "again"
            return
        self.gpu = self.gpus[key] = _Gpu(line.number, bus)

    def unreached(self, line: Line, lost: re.Match[str]) -> None:
        """nvidia-smi's line for a GPU it could not reach, printed where the GPU's section would be (the GPUs in
        index order): it holds that GPU's place, so the others keep their indexes and `Attached GPUs` its count."""
        bus = normalize_bus_id(lost["bus"]) or lost["bus"]
        self.stack.clear()
        self.gpu, self.skipping = None, None
        if bus in self.gpus:
            self.out.warn(line.number, f"nvidia-smi could not reach GPU {bus}, whose section is line "
                                       f"{self.gpus[bus].number}: the same GPU, this line is not read")
            return
        self.gpus[bus] = _Gpu(line.number, bus, lost=lost)

    def section(self, line: Line, indent: int, name: str) -> None:
        if name not in _READ_NAMES and (near := next((k for k in _READ_NAMES if one_edit(name, k)), None)):
            self.out.warn(line.number, f"section {name[:40]!r} is one letter from {near!r}, one the reader takes (a "
                                       "damaged name?); its lines are read as no section's")
        if self.gpu is not None and not self.stack and (first := self.gpu.again((name,), line.number)) is not None:
            if self.gpu.row["pci_bus_id"] is None and not self.whole:  # excerpts of several GPUs without headers
                self.gpu = self.gpus[f"line {line.number}"] = _Gpu(line.number, None)
                self.gpu.again((name,), line.number)
            else:
                self.skip(line, f"a second {name!r} section", first)
                return
        if name in _PCI_SECTIONS and self.stack and self.stack[0][1] == "Fabric":
            self.out.warn(line.number, f"{name!r} inside the Fabric section: the `PCI` line above it is missing; "
                                       "read as the PCI section's")
            self.stack[:] = [(self.stack[0][0], "PCI")]
        self.stack.append((indent, name))

    def skip(self, line: Line, what: str, first: int) -> None:
        """A GPU section holding something twice holds the next GPU's lines: its header line is missing."""
        bus = self.gpu.row["pci_bus_id"] if self.gpu is not None else None
        self.out.warn(line.number, f"{what} in {f'GPU {bus}' if bus else 'this GPU'}'s section (the first is line "
                                   f"{first}): a GPU header line is missing above; the lines from here to the next GPU "
                                   "header are not read")
        self.skipping = what

    def finish(self) -> None:
        gpus = list(self.gpus.values())
        if self.whole and len(gpus) > 1:  # the sections of one log hold the same keys: one missing was damaged
            held = {what for gpu in gpus for what in gpu.seen if what in _READ}
            for gpu in (g for g in gpus if g.lost is None):
                if missing := sorted(held - gpu.seen.keys()):
                    named = ", ".join(" / ".join(what) for what in missing)
                    self.out.warn(gpu.number, f"this GPU's section has no {named} where another GPU's has: the line "
                                              "is missing or damaged")
        indexed = self.whole and self.attached is not None
        last = max((g.number for g in gpus), default=None)
        cut = last is not None and (any(w.cut and last <= (w.line or 0) < (self.until or INFINITE_LINE)
                                        for w in self.out.warnings) or gpus[-1].stops_short)
        self.cut_short = cut
        if self.attached is not None and self.attached[0] != len(gpus):
            if cut and self.whole and len(gpus) < self.attached[0]:  # stops inside its last section: a whole -q
                self.out.warn(self.attached[1], f"Attached GPUs says {self.attached[0]} and the output, cut off, "
                                                f"holds {len(gpus)}: the GPUs after its last section are not read; "
                                                "those it holds keep their indexes (`nvidia-smi -q` lists the GPUs "
                                                "in index order)")
            elif len(gpus) < self.attached[0] and len(gpus) <= max(self.logs, 1):
                buses = ", ".join(str(g.row["pci_bus_id"]) for g in gpus)
                self.out.warn(self.attached[1], f"Attached GPUs says {self.attached[0]} and the output holds "
                                                f"{len(gpus)} GPU section{'s' if len(gpus) > 1 else ''} of its own: "
                                                "`nvidia-smi -q -i N` output, which prints no index, so its readings "
                                                f"keep the bus id ({buses}) and are placed on no GPU of the board; "
                                                "`nvidia-smi --query-gpu=index,pci.bus_id --format=csv` names the "
                                                "index, or paste `nvidia-smi -q` whole")
            elif self.logs > 1 and len(gpus) == self.logs * self.attached[0]:
                self.out.warn(self.attached[1], f"the input holds {self.logs} whole `nvidia-smi -q` outputs of "
                                                f"{self.attached[0]} GPUs each, on different bus ids: outputs of "
                                                f"{self.logs} machines, read as one node's? Each machine's readings "
                                                "are its own node's: read each output as a file of its own with its "
                                                "--node, or paste each after a prompt naming its host "
                                                "(`user@node01:~$ nvidia-smi -q`); here no GPU is given an index "
                                                "(each keeps its bus id)")
            else:
                self.out.warn(self.attached[1], f"Attached GPUs says {self.attached[0]} and the output holds "
                                                f"{len(gpus)} GPU sections: a section is missing or damaged, so no "
                                                "GPU is given an index (each keeps its bus id)")
            indexed = indexed and cut and len(gpus) < self.attached[0]
        for index, gpu in enumerate(_in_index_order(gpus)):
            gpu.emit(self.out, self.last, self.driver, index if indexed else None)


def _in_index_order(gpus: list[_Gpu]) -> list[_Gpu]:
    """The GPUs in the order of their indexes: as the output lists them (nvidia-smi goes through them in index order,
    which is PCI bus order), except a GPU it could not reach whose line stands out of that order (written to stderr,
    which a capture of both streams puts first): placed by its bus among the others, where they are in bus order."""
    buses = [g.row["pci_bus_id"] for g in gpus]
    if not any(g.lost is not None for g in gpus) or None in buses or buses == sorted(buses):
        return gpus
    others = [g.row["pci_bus_id"] for g in gpus if g.lost is None]
    return sorted(gpus, key=lambda g: g.row["pci_bus_id"]) if others == sorted(others) else gpus


class _Gpu:
    """What one GPU's section says about its PCIe link and its fabric."""

    def __init__(self, number: int, bus_id: str | None, *, lost: re.Match[str] | None = None) -> None:
        self.number = number
        self.lost = lost  # nvidia-smi's line for this GPU, which it could not reach: no section
        self.index: int | None = None
        self.row: dict[str, Any] = {"pci_bus_id": bus_id}
        self.seen: dict[tuple[str, ...], int] = {}  # what a section holds once -> its line
        self.fabric: dict[str, str] = {}
        self.fabric_line: int | None = None
        self.uuid: str | None = None
        self.serial: str | None = None
        self.model: str | None = None
        self.in_pci = False

    def again(self, what: tuple[str, ...], number: int) -> int | None:
        """The line of `what` (a key by its path, or a section) when this section held it before."""
        first = self.seen.setdefault(what, number)
        return first if first != number else None

    def take(self, path: list[str], key: str, value: str, line: Line, out: Collector) -> None:
        if "Fabric" in path and (key in _PCI_KEYS or any(p in _PCI_SECTIONS for p in path)):
            out.warn(line.number, f"{key!r} inside the Fabric section: the `PCI` line above it is missing; read "
                                  "as the PCI section's")
            path = ["PCI", *(p for p in path if p != "Fabric")]
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
            bus = normalize_bus_id(value)
            if bus is None or (self.row["pci_bus_id"] not in (None, bus)):
                out.warn(line.number, f"Bus Id {value[:40]!r} is no PCI bus id, or not the header's "
                                      f"({self.row['pci_bus_id']}); the header's is kept")
            self.row["pci_bus_id"] = self.row["pci_bus_id"] or bus
        elif key in _THROUGHPUT:
            amount_text, _, unit = value.partition(" ")
            if unit not in _UNITS:
                out.warn(line.number, f"{key} {value[:40]!r}: no unit nvidia-smi prints (B/s, KB/s, MB/s, GB/s); "
                                      "not read")
            else:
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

    @property
    def stops_short(self) -> bool:
        """Its PCI section ends before `Replays Since Reset`: the output is cut inside it."""
        return self.in_pci and "replay" not in self.row

    def emit(self, out: Collector, last: Line | None, driver: str | None, index: int | None) -> None:
        self.index = index
        if self.lost is not None:
            if index is not None:
                out.add("gpus", self.number, gpu=index, pci_bus_id=self.row["pci_bus_id"], driver_version=driver)
            unreachable(out, self.number, self.lost, index)
            return
        number = self.row.pop("source_line", self.number)
        if self.uuid or self.model or self.index is not None:
            out.add("gpus", self.number, gpu=self.index, uuid=self.uuid, serial=self.serial,
                    pci_bus_id=self.row["pci_bus_id"], model=self.model, driver_version=driver)
        if self.in_pci:
            if self.stops_short and last is not None:
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
