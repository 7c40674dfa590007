"""`dcgmi nvlink` outputs, DCGM's command-line tool as health checks run it (Meta's gcm `check-dcgmi nvlink` runs
`-e -g N` per GPU and `-s`): `-e -g N`, one GPU's NVLink error counters, as its table or as `-j` JSON, and `-s`, the
link states of every GPU and NVSwitch.

The strings are DCGM's own (github.com/NVIDIA/DCGM): dcgmi/Nvlink.cpp (`DisplayNvLinkErrorCountsForGpu`,
`DisplayNvLinkLinkStatus`, the counter names of `NvlinkDetail::GetErrorCountType`), dcgmi/DcgmiOutput.cpp (the
table, and the JSON's "header" list and "body" -> section -> "children" -> counter -> "value") and
dcgmi/CommandOutputController.cpp (`HelperDisplayValue`: what a blank value prints, `Not Specified`, `Not Supported`,
`Insf. Permission`: the last is DCGM_*_NOT_PERMISSIONED of dcgmlib/dcgm_structs.h, a value the host engine's
credentials may not fetch, said once an input).

`-e`: under the `NVLINK Error Counts` and `GPU N` headers, a `Link N` row per link and a `-> name | value` row per
counter, mapped to columns through dcgmi_nvlink.toml, so a counter has one name whichever tool printed it. A
Blackwell GPU prints one `Error Detail` section of totals over all its links instead: one row with no link
(`gpu_total`). The counters are totals since the driver loaded: a reading has no time unless a `date` line states
one, as with `nvidia-smi nvlink -e`. Outputs of several GPUs pasted one after another are one reading of the node.

`-s`: under `gpuId N:`, one character a link, link 0 first: U up, D down, X disabled, _ not supported (skipped).
DCGM writes D where NVML reports the link not active, which `nvidia-smi nvlink -s` prints `<inactive>`: a down
link. It writes X instead for every such link while any GPU of the node is in MIG mode, since NVML reports a MIG
GPU's links down (dcgmlib/src/DcgmCacheManager.cpp, "Bug 200682374": a workaround so that health checks do not
fail), and its own health check skips X (modules/health/DcgmHealthWatch.cpp). So X is a link of a node in MIG
mode, not a fault DCGM saw: read with an unknown state (listed, not judged) and said, with how to tell a MIG GPU's
link from a down one.
Under `physicalId N:`, an NVSwitch's ports: U up and D down (NSCQ's error or unknown state) are read; X is a port
switched off, or one the switch does not have (DCGM marks every port disabled until the switch reports it:
modules/nvswitch/DcgmNvSwitchManagerBase.cpp), no fault: skipped as `_` is.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from .. import format as fmt
from ..config.datafiles import DATA_DIR, read_toml
from ..enums import LinkState, LinkType
from ..errors import ConfigError
from .base import IngestResult, Source
from .nvlink_rows import LinkRows
from .textlines import Collector, Line, classify, skip_shell
from .wrapping import split_lines

LABELS_FILE = DATA_DIR / "dcgmi_nvlink.toml"
COUNTS_TITLE = "NVLINK Error Counts"
STATUS_TITLE = "NvLink Link Status"
TOTALS = "Error Detail"  # a Blackwell GPU's one section: its totals over all links
RATIOS = frozenset({"symbol_ber", "effective_ber"})
# what `HelperDisplayValue` prints for a DCGM blank value: the tool has none here
BLANK = frozenset({"not specified", "not found", "not supported", "insf. permission", "unknown", "n/a"})
# DCGM_INT64_NOT_PERMISSIONED (dcgmlib/dcgm_structs.h): "fetching the value is not allowed with our current
# credentials"; `HelperDisplayValue` prints it `Insf. Permission`
NOT_PERMITTED = "insf. permission"
STATES = {"U": LinkState.UP, "D": LinkState.DOWN, "X": LinkState.UNKNOWN}

_BORDER = re.compile(r"^\s*\+[-=+]+\+\s*$")
_CELLS = re.compile(r"^\s*\|(?P<cells>.*)\|\s*$")
_GPU = re.compile(r"^GPU (?P<gpu>\S+)$")
_LINK = re.compile(r"^Link (?P<link>\S+)$")
_COUNTER = re.compile(r"^->\s*(?P<name>.+)$")
_ENTITY = re.compile(r"^\s*(?P<kind>gpuId|physicalId) (?P<id>\S+?):\s*$")
_QUIET = re.compile(r"^\s*(?:GPUs:|NvSwitches:|No GPUs found\.|No NvSwitches found\.|Link Entities: .*|"
                    r"Key: Up=U, Down=D, Disabled=X, Not Supported=_)\s*$")
_UNREAD = re.compile(r"^\s*Warning: Unable to retrieve nvlink (?P<name>.+?) count for link (?P<link>\d+) for gpuId "
                     r"(?P<gpu>\d+) - (?P<why>.*?)\s*$")
_FAILED = re.compile(r"^\s*(?:Error\b|GPU ID \S+ is not valid)")


@cache
def counter_names(path: Path = LABELS_FILE) -> tuple[dict[str, str], dict[str, str]]:
    """Name -> column, per link and per GPU total, from the editable data file."""
    try:
        data = read_toml(path, "dcgmi nvlink counter name file")
        return ({_key(k): str(v) for k, v in data["links"].items()},
                {_key(k): str(v) for k, v in data["gpu_totals"].items()})
    except (KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(f"{path.name}: cannot read the dcgmi nvlink counter names: {exc}") from None


def _key(name: str) -> str:
    return " ".join(name.lower().split())


class DcgmiNvlinkReader:
    name = "dcgmi_nvlink"
    reads_hosts = True  # through textlines.classify: a parallel shell's output each host's (`fanout`)

    def sniff(self, head: str) -> float:
        if f'"{COUNTS_TITLE}"' in head and '"body"' in head:
            return 0.95  # `-j`
        lines = split_lines(head)[:400]
        if any(_cell(text) in (COUNTS_TITLE, STATUS_TITLE) for text in lines):
            return 0.95
        entities = sum(bool(_ENTITY.match(text)) for text in lines)
        key = any(text.strip().startswith("Key: Up=U, Down=D, Disabled=X") for text in lines)
        counters = sum(_named(text) for text in lines)
        return 0.9 if key else 0.8 if entities and _state_line(lines) else 0.7 if counters >= 2 else 0.0

    def read(self, source: Source, *, node_id: str | None = None) -> IngestResult:
        out = Collector(source, "dcgmi nvlink", node_id)
        reading = _Reading(out, LinkRows(out, tuple(dict.fromkeys(counter_names()[0].values()))))
        _outputs(reading, list(classify(source, out, _shows_end)))  # a paste: small
        reading.finish()
        return out.result()


@dataclass
class _Reading:
    """What the lines read so far have opened: a GPU's counters (`-e`) or an entity's link states (`-s`)."""

    out: Collector
    rows: LinkRows
    gpu: int | None = None  # the GPU whose counters the lines are
    section: int | str | None = None  # the link (or TOTALS) the counter rows are under
    total: dict[str, object] | None = None  # this GPU's total row
    empty_link: Line | None = None  # a `Link N` row no counter followed yet
    entity: tuple[str, int, Line] | None = None  # (gpu or nvswitch, its id, its line) awaiting its states
    widths: list[tuple[Line, str, int]] = field(default_factory=list)  # each states line: what, how many
    counted: set[int] = field(default_factory=set)
    stated: set[int] = field(default_factory=set)  # GPUs `-s` lists
    unknown: set[str] = field(default_factory=set)
    missing: list[tuple[int, int, str]] = field(default_factory=list)  # counters DCGM said it could not read

    def line(self, line: Line) -> None:
        text = line.text
        if self.entity is not None:
            self._states(line)
            return
        if _BORDER.match(text) or _QUIET.match(text):
            return
        if entity := _ENTITY.match(text):
            kind = "gpu" if entity["kind"] == "gpuId" else "nvswitch"
            found = self.out.checked("index", line.number, entity["id"], "gpu", f"dcgmi {entity['kind']}")
            self.close()
            if found is not None:
                self.entity = (kind, found, line)
                self.rows.start(line.number)
            return
        if unread := _UNREAD.match(text):  # printed before its GPU's table: that table lacks the counter
            self.out.warn(line.number, f"DCGM could not read GPU {unread['gpu']} link {unread['link']}'s "
                                       f"{unread['name']} count ({unread['why']}): not read")
            if (column := counter_names()[0].get(_key(unread["name"]))) is not None:
                self.missing.append((int(unread["gpu"]), int(unread["link"]), column))
            return
        if _FAILED.match(text):
            self.out.warn(line.number, f"dcgmi failed here: {text.strip()[:120]!r}; what it was asked for is not read")
            return
        cells = _CELLS.match(text)
        parts = [c.strip() for c in cells["cells"].split("|")] if cells else []
        if len(parts) == 1:
            self._header(line, parts[0])
        elif len(parts) == 2 and self.gpu is not None:
            self.cells(line, *parts)
        else:
            self.out.unread(line)

    def _header(self, line: Line, text: str) -> None:
        if text in (COUNTS_TITLE, STATUS_TITLE):
            self.close()
            self.gpu = None
        elif gpu := _GPU.match(text):
            self.close()
            self.gpu = self.out.checked("index", line.number, gpu["gpu"], "gpu", "GPU index")
            self.rows.start(line.number)
            for at_gpu, link, column in self.missing:
                if at_gpu == self.gpu:
                    self.rows.unread((at_gpu, None, link, None), column)
            self.missing = [m for m in self.missing if m[0] != self.gpu]
        else:
            self.out.unread(line)

    def cells(self, line: Line, left: str, right: str) -> None:
        if link := _LINK.match(left):
            self._close_link()
            self.section = self.out.checked("index", line.number, link["link"], "link", f"GPU {self.gpu} link")
            self.empty_link = line if self.section is not None else None
        elif left == TOTALS:
            self._close_link()
            self.section = TOTALS
        elif (counter := _COUNTER.match(left)) and self.section is not None:
            self.counter(line, counter["name"], right)
        else:
            self.out.unread(line)

    def counter(self, line: Line, name: str, raw: str) -> None:
        """One counter of the section open (a link, or the GPU's totals), its value as printed."""
        assert self.gpu is not None and self.section is not None
        gpu, section = self.gpu, self.section
        totals = section == TOTALS
        column = counter_names()[1 if totals else 0].get(_key(name))
        self.counted.add(gpu)
        self.empty_link = None
        if column is None:
            if _key(name) not in self.unknown:
                self.unknown.add(_key(name))
                self.out.warn(line.number, f"counter {name!r} is not in {LABELS_FILE.name}; its values are not read")
            return
        where = (gpu, None, int(section) if not totals else 0, None)
        what = f"GPU {gpu} {'total' if totals else f'link {section}'} {name}"
        if not raw:
            self.out.warn(line.number, f"{what} has no value; the output is cut off here", cut=True)
        elif raw.lower() in BLANK:  # DCGM has no value for it
            if raw.lower() == NOT_PERMITTED:
                self.out.once(NOT_PERMITTED, line.number, f"{what} reads {raw!r}: DCGM's host engine was not "
                                                          "permitted to read the NVLink counters, so those that read "
                                                          "so have no value; run DCGM with the permissions to read "
                                                          "them")
        elif (value := self.out.checked("gauge", line.number, raw, "ber", what) if column in RATIOS
              else self.out.checked("counter", line.number, raw, "dcgm", what)) is not None:
            if totals:
                self._total(line)[column] = value
            else:
                self.rows.count(line, where, column, value)
            return
        if not totals:
            self.rows.unread(where, column)

    def _total(self, line: Line) -> dict[str, object]:
        if self.total is None:
            self.total = self.out.add("link_samples", line.number, gpu=self.gpu, link_type=LinkType.NVLINK.value,
                                      link=None, lane=None, peer="unknown", gpu_total=True, saturated=False)
        return self.total

    def _states(self, line: Line) -> None:
        """The line under `gpuId N:` or `physicalId N:`: one state a link."""
        assert self.entity is not None
        kind, ident, header = self.entity
        self.entity = None
        what = f"GPU {ident}" if kind == "gpu" else f"NVSwitch {ident}"
        tokens = line.text.split()
        if _ENTITY.match(line.text) or not _state_tokens(tokens):
            self.out.warn(header.number, f"{what}: no link states under its line; the output is cut off or damaged "
                                         "here", cut=True)
            self.line(line)
            return
        self.widths.append((line, what, len(tokens)))
        if kind == "gpu":
            self.stated.add(ident)
        for link, token in enumerate(tokens):
            if token == "_" or (kind == "nvswitch" and token == "X"):
                continue
            if token not in STATES:
                self.out.warn(line.number, f"{what} link {link}: {token[:20]!r} is no link state dcgmi prints (U, D, "
                                           "X or _); not read")
                continue
            state = STATES[token].value
            if kind == "nvswitch":
                self.out.add("link_samples", line.number, gpu=None, link_type=LinkType.NVSWITCH.value, link=link,
                             nvswitch=str(ident), peer="unknown", link_state=state)
                continue
            if token == "X":
                self.out.once("disabled", line.number, "dcgmi shows X (disabled) for a GPU link: DCGM writes X for "
                                                       "a link NVML reports down while a GPU of the node is in MIG "
                                                       "mode, and its health check skips it; not judged: where "
                                                       "`nvidia-smi -q` shows the GPU's MIG mode disabled, the link "
                                                       "is down")
            self.rows.row(line, (ident, None, link, None), ("link_state",))["link_state"] = state

    def _close_link(self) -> None:
        if self.empty_link is not None:
            self.out.warn(self.empty_link.number, f"GPU {self.gpu} link {self.section}: no counter under it; the "
                                                  "output is cut off here", cut=True)
        self.empty_link = None

    def close(self) -> None:
        """The GPU (or entity) whose lines were read ends."""
        self._close_link()
        if self.entity is not None:
            self.out.warn(self.entity[2].number, f"{self.entity[2].text.strip()[:40]!r}: no link states after it; "
                                                 "the output is cut off here", cut=True)
            self.entity = None
        self.section, self.total = None, None

    def finish(self) -> None:
        self.close()
        for kind in ("GPU", "NVSwitch"):
            lines = [(line, what, n) for line, what, n in self.widths if what.startswith(kind)]
            most = max((n for _, _, n in lines), default=0)
            for line, what, n in lines:
                if n < most:
                    self.out.warn(line.number, f"{what}: {fmt.count(n, 'link state')} where the others have {most}; "
                                               "the output looks cut off here", cut=True)
        self.rows.finish()
        gpus = sorted(self.counted | self.stated)
        # `-s` lists every GPU DCGM sees; `-e` one: only GPUs 0 to n-1 read are taken as the whole node
        self.out.partial = bool(gpus) and not self.stated and gpus != list(range(max(len(gpus), 2)))


def _outputs(reading: _Reading, lines: list[Line]) -> None:
    """The paste's lines: tables and states line by line, a `dcgmi nvlink -e -j` output (a line opening with `{`) as
    one JSON document, so a `date` line, a `-s` output or a table beside the documents is read as it is alone."""
    out = reading.out
    text = "\n".join(line.text for line in lines)
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line.text) + 1)

    def at(pos: int) -> Line:
        return lines[bisect_right(starts, pos) - 1]

    decoder = json.JSONDecoder()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.kind == "text" and line.text.lstrip().startswith("{"):
            start = starts[i] + line.text.index("{")
            while True:  # documents pasted with no newline between them (`}{`) follow on the same line
                try:
                    document, end = decoder.raw_decode(text, start)
                except ValueError as exc:
                    out.warn(at(start).number, f"a dcgmi nvlink -j output that does not parse ({str(exc)[:80]}): cut "
                                               "off or damaged; not read", cut=True)
                    return
                _json_document(reading, document, text, start, at)
                i = bisect_right(starts, end - 1)  # the line after the one the document ends on
                rest = text[end:starts[i] - 1] if i < len(lines) else text[end:]
                if not rest.lstrip().startswith("{"):
                    break
                start = end + len(rest) - len(rest.lstrip())
            continue
        if not skip_shell(line, out):
            reading.line(line)
        i += 1


_CLOSER = re.compile(r"^\s*(?:[}\]],?|\+[-+=]*\+)\s*$")  # a JSON bracket closing, a table's border


def _shows_end(text: str) -> bool:
    """A last line that is a JSON document's closing bracket or the table's border is whole as it stands (`$(...)`,
    `echo -n` and an editor's save drop the final newline): nothing of a value can follow it. Whether the document
    closed there is the JSON parser's to say."""
    return bool(_CLOSER.match(text))


def _json_document(reading: _Reading, document: object, text: str, start: int, at: Callable[[int], Line]) -> None:
    out = reading.out
    first = at(start)
    header = document.get("header") if isinstance(document, dict) else None
    gpu = next((m["gpu"] for h in header or [] if isinstance(h, str) and (m := _GPU.match(h.strip()))), None)
    body = document.get("body") if isinstance(document, dict) else None
    if not isinstance(header, list) or COUNTS_TITLE not in header or gpu is None or not isinstance(body, dict):
        out.warn(first.number, "a JSON document that is no dcgmi nvlink -e -j output (no NVLINK Error Counts and "
                               "GPU header, or no body); not read")
        return
    reading.close()
    reading.gpu = out.checked("index", first.number, gpu, "gpu", "GPU index")
    if reading.gpu is None:
        return
    reading.rows.start(first.number)
    for section, node in body.items():
        where = text.find(f'"{section}"', start)
        line = at(where if where >= 0 else start)
        reading.cells(line, section, "")
        children = node.get("children") if isinstance(node, dict) else None
        for name, leaf in (children or {}).items() if isinstance(children, dict) else ():
            found = text.find(f'"{name}"', where)
            value = leaf.get("value") if isinstance(leaf, dict) else None
            reading.cells(at(found if found >= 0 else where), f"-> {name}", str(value) if value is not None else "")
    reading.close()


def _cell(text: str) -> str | None:
    cells = _CELLS.match(text)
    return cells["cells"].strip() if cells and "|" not in cells["cells"] else None


def _named(text: str) -> bool:
    """Whether a line is a `-e` table's row of a counter dcgmi_nvlink.toml names (its headers cut away)."""
    cells = _CELLS.match(text)
    counter = _COUNTER.match(cells["cells"].split("|")[0].strip()) if cells else None
    return counter is not None and any(_key(counter["name"]) in names for names in counter_names())


def _state_tokens(tokens: list[str]) -> bool:
    """Whether a line's words are link states as `-s` prints them (most of them, so a damaged one is said)."""
    return bool(tokens) and sum(token in ("U", "D", "X", "_") for token in tokens) * 2 >= len(tokens)


def _state_line(lines: list[str]) -> bool:
    return any(_state_tokens(text.split()) for text in lines)


READER = DcgmiNvlinkReader()
