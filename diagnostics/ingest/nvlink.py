"""`nvidia-smi nvlink` outputs: -e (error counters), -ec (per-lane CRC), -s (speed or `<inactive>`), -R (remote end).

A GPU whose links are all down gets one line instead of its links (`NVML: Unable to retrieve NVLink information
as all links are inActive`): each of its NVLinks is read as inactive, as many as the other GPUs of the paste list,
else as many as its model has (the platform files' `nvlinks_per_gpu`).

nvidia-smi names a GPU it cannot reach instead of listing it (`Unable to determine the device handle for GPU
0000:4E:00.0: GPU is lost`): NVML's "GPU is lost" is a GPU fallen off the bus or otherwise inaccessible
(nvmlReturn_t NVML_ERROR_GPU_IS_LOST), read as an Xid 79 on that bus as the kernel's off-the-bus message is; another
reason is said. An output that lists some GPUs only, and names none it could not reach, was narrowed (`-i 0`) or
excerpted: the GPUs it leaves out are not judged missing (`IngestResult.partial`; the analysis says why). A
driver that never enumerated a GPU numbers the rest from 0, so all GPUs but one, from GPU 0, are still judged.

A GPU header cut off (the input ends inside it, or it lacks the `(UUID: ...)` the headers above close) still counts
its GPU, but names no model unless its UUID clause opens after it: `Tesla V1` of `Tesla V100` would name a board.

Several of them pasted together are merged into one row per GPU, link, lane and reading (`nvlink_rows`, which
also reads the short form of `-e` with its `Links 0-2, 4-5: ...` lines). A single `-e` reading is a
lifetime total since the counters were last reset: the rows carry no time unless the input states one (a
`date` line), and a rate needs a second reading. `-R` rows go to the topology table with relation "remote":
the far end's PCI bus id (or an NVSwitch, whose bus id the driver reports as FFFFFFFF) and its link/port.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from ..config.datafiles import DATA_DIR, read_toml
from ..config.platforms import platform_data, platform_for_model
from ..enums import LinkState
from ..errors import ConfigError
from .base import IngestResult, IngestWarning, Source
from .kernel_gpu import NO_HANDLE, is_lost, unreached_bus
from .kernel_gpu import unreachable as unreached
from .nvlink_rows import LinkRows
from .textlines import Collector, Line, classify, normalize_bus_id, skip_shell
from .wrapping import split_lines

COUNTERS_FILE = DATA_DIR / "nvlink_counters.toml"

_GPU = re.compile(r"^\s*GPU (?P<gpu>\d+): (?P<name>.+?)(?: \(UUID: (?P<uuid>[^)]*)\))?\s*$")
_LINK = re.compile(r"^\s*Link (?P<link>\d+): (?P<rest>.*?)\s*$")
# `Links 0-17: No errors`, `Links 0-2, 4-5: Replay/Recovery/CRC Errors: 0`: several links stated at once
_LINKS = re.compile(r"^\s*Links (?P<links>\d+(?:\s*-\s*\d+)?(?:\s*,\s*\d+(?:\s*-\s*\d+)?)*):\s*(?P<rest>\S.*?)\s*$",
                    re.IGNORECASE)
_NO_ERRORS = re.compile(r"^No errors$", re.IGNORECASE)
_SPEED = re.compile(r"^(?P<speed>\d+(?:\.\d+)?) GB/s$")
_LANE = re.compile(r"^Lane (?P<lane>\d+):?\s*(?P<rest>.*)$")
# `nvidia-smi nvlink -c`: what each link supports (`Link 0, P2P is supported: true`), no counter and no state
_CAPABILITY = re.compile(r"^\s*Link \d+, [^:]*\bsupported: (?:true|false)\s*$", re.IGNORECASE)
# `nvidia-smi nvlink -gt d` / `-gt r`: each link's data or raw throughput (`Link 0: Data Tx: 1390774681 KiB`), no
# counter of errors and no state
_THROUGHPUT = re.compile(r"^\s*Link \d+: (?:Data|Raw) [TR]x: \d+ KiB\s*$", re.IGNORECASE)
_REMOTE = re.compile(r"^Remote Device (?P<dev>\S+?):? Link (?P<port>\d+)$")
_COUNTER = re.compile(r"^(?P<label>[A-Za-z][A-Za-z0-9 /()-]*?):\s*(?P<value>\S*)$")
_BARE_VALUE = re.compile(r"^[-+]?(?:\d[\d,]*\.?\d*|\.\d+|nan|inf\w*)(?:e[-+]?\d+)?$", re.IGNORECASE)
_UUID = re.compile(r"^(?:GPU|MIG)-(?:GPU-)?[0-9a-f]{8}-[0-9a-f]{4}-", re.IGNORECASE)
_FULL_UUID = re.compile(r"^(?:GPU|MIG)-(?:GPU-)?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
                        r"(?:/\d+/\d+)?$", re.IGNORECASE)
_GPU_LIKE = re.compile(r"^\s*GPU \S+: ")  # the start of a GPU header
_CUT_GPU = re.compile(r"^\s*GPU (?P<gpu>\d+):\s*$")  # a header cut right after its index: `GPU 2: ` of `GPU 2: T`
_OPEN_UUID = re.compile(r"^(?P<model>.+?)\s+\([^)]*$")  # a model, whole, then a `(UUID: ...` that never closes
_SWITCH_SENTINEL = re.compile(r"^f{4,8}:ff:ff", re.IGNORECASE)
# NVML's spelling is `inActive`; health checks match it in lower case, and pastes drop the space after `NVML:`
_ALL_INACTIVE = re.compile(r"^\s*NVML:\s*Unable to retrieve NVLink information as all links are inactive\.?\s*$",
                           re.IGNORECASE)


@cache
def counter_labels(path: Path = COUNTERS_FILE) -> tuple[dict[str, str], tuple[str, ...]]:
    """Label -> column map and the classic -e counter set, from the editable data file."""
    try:
        data = read_toml(path, "nvlink counter label file")
        labels = {" ".join(k.lower().split()): str(v) for k, v in data["labels"].items()}
        complete = tuple(data["complete_set"]["columns"])
    except (KeyError, TypeError) as exc:
        raise ConfigError(f"{path.name}: cannot read the nvlink counter labels: {exc}") from None
    return labels, complete


class NvlinkReader:
    name = "nvlink"
    reads_hosts = True  # through textlines.classify: a parallel shell's output each host's (`fanout`)

    def sniff(self, head: str) -> float:
        links = gpus = whole = 0
        for text in split_lines(head)[:400]:
            if (header := _GPU.match(text)) and "UUID" in text:
                gpus += 1
                whole += header["uuid"] is not None  # its `(UUID: ...)` closed: not a line cut inside
            elif ((m := _LINK.match(text)) and _known_rest(m["rest"])) or _ALL_INACTIVE.match(text) \
                    or ((m := _LINKS.match(text)) and (_NO_ERRORS.match(m["rest"]) or _known_rest(m["rest"]))):
                links += 1
        if not links:
            return 0.2 if whole else 0.0  # whole GPU headers alone: an output cut before its links (said by `read`)
        return 0.9 if gpus else 0.6

    def opens(self, text: str) -> bool:
        """A GPU header whose `(UUID: ...)` closes (`GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)`): the readers of
        the other tools' outputs take no such line, so it starts this output inside a paste even right after another
        output's last line (see `paste`)."""
        header = _GPU.match(text)
        return header is not None and header["uuid"] is not None

    def read(self, source: Source, *, node_id: str | None = None) -> IngestResult:
        complete = counter_labels()[1]
        out = Collector(source, "nvidia-smi nvlink", node_id)
        rows = LinkRows(out, complete)
        unknown_labels: set[str] = set()
        remotes: dict[tuple[str | None, int, int], str] = {}  # (node, GPU, link) -> the far end `-R` names
        seen_gpus: set[tuple[str | None, int, str | None]] = set()  # (node, GPU, UUID)
        # (node, GPU index, time) -> the UUID its first header states, and where: a file of several nodes' captures
        # holds one GPU 0 per node; a reading of another time may find another card there (replaced: the engine says it)
        uuids: dict[tuple[str | None, int, Any], tuple[str | None, int]] = {}
        gpus_of: dict[str, tuple[int, int]] = {}  # UUID -> the GPU index its first header states, and where
        block: dict[tuple[Any, ...], int] = {}  # what this GPU header's lines have stated -> the line
        all_down: list[AllDown] = []
        gpu: int | None = None
        uuid: str | None = None
        model = ""
        board_model = ""  # the last model a GPU header states whole
        models: dict[str | None, dict[str, list[tuple[int, int]]]] = {}  # node -> model -> (GPU, line) of its headers
        uuid_form = False  # a GPU header above closes its `(UUID: ...)`: one that does not is cut off
        unreachable = False  # a GPU nvidia-smi names as one it could not reach
        lost_rows: list[dict[str, Any]] = []  # its off-the-bus events, at the index its place in the output gives
        unsaid: list[tuple[int, re.Match[str], dict[str, Any]]] = []  # one it could not reach for another reason
        last_gpu: int | None = None  # the index of the last GPU header
        first_header: Line | None = None
        alone: str | None = None  # an output no link reading is in: "capabilities" (`nvlink -c`), "throughput" (-gt)
        for line in classify(source, out, _shows_end):
            if skip_shell(line, out):
                continue
            if lost := NO_HANDLE.match(line.text):
                unreachable = True
                guess = 0 if last_gpu is None else last_gpu + 1
                if not is_lost(lost):  # said once its index is placed, as a lost GPU's is
                    unsaid.append((line.number, lost, {"node_id": out.node_id, "pci_bus_id": unreached_bus(lost),
                                                       "gpu": guess}))
                elif row := unreached(out, line.number, lost, guess):
                    lost_rows.append(row)
                rows.close()
                gpu = None
                continue
            if header := _header(line, uuid_form):
                first_header = first_header or line
                gpu, uuid = out.checked("index", line.number, header.gpu, "gpu", "GPU index"), _uuid(header.uuid)
                rows.start(line.number)
                if gpu is None:  # refused: its lines belong to no GPU and are reported as not read
                    continue
                last_gpu = gpu
                named = _model(out, line, header, gpu, uuid_form)
                model = named or ""
                board_model = named or board_model
                if named:
                    models.setdefault(out.node_id, {}).setdefault(named, []).append((gpu, line.number))
                uuid_form = uuid_form or header.uuid is not None
                if named == header.name:  # a header cut off is said by `_model`
                    _check_uuid(out, line, header, uuid, uuids.setdefault((out.node_id, gpu, out.timestamp),
                                                                          (uuid, line.number)))
                if uuid is not None and (other := gpus_of.setdefault(uuid, (gpu, line.number)))[0] != gpu:
                    out.warn(line.number, f"{uuid} is GPU {gpu} here and GPU {other[0]} at line {other[1]}: one of "
                                          "the two indexes is damaged")
                block.clear()
                if (out.node_id, gpu, uuid) not in seen_gpus:  # nothing new:
                    cut_again = named != header.name and any(n == out.node_id and g == gpu for n, g, _ in seen_gpus)
                    seen_gpus.add((out.node_id, gpu, uuid))
                    if not cut_again:
                        out.add("gpus", line.number, gpu=gpu, uuid=uuid, model=named)
                continue
            if _GPU_LIKE.match(line.text):  # a header whose index is damaged: its lines are no GPU's
                out.warn(line.number, f"{line.text.strip()[:40]!r} is no GPU header as nvidia-smi prints one; the "
                                      "lines under it are not read")
                rows.close()
                gpu = None
                continue
            if gpu is None:
                out.unread(line)
                continue
            if _ALL_INACTIVE.match(line.text):
                all_down.append(AllDown(line, gpu, uuid, model, out.timestamp, out.node_id))
                continue
            if several := _LINKS.match(line.text):
                if (listed := _summary(out, line, gpu, several, unknown_labels)) is None:
                    continue
                links, columns, value = listed
                if any(_again(out, block, (link, None, column), line, gpu) for link in links for column in columns):
                    gpu = None
                    continue
                rows.summary(line, gpu, uuid, links, columns, value)
                continue
            if _THROUGHPUT.match(line.text):
                alone = alone or "throughput"
                out.unread(line)
                continue
            match = _LINK.match(line.text)
            if not match:
                alone = alone or ("capabilities" if _CAPABILITY.match(line.text) else None)
                out.unread(line)
                continue
            found, rest = out.checked("index", line.number, match["link"], "link", f"GPU {gpu} link"), match["rest"]
            if found is None:
                continue
            link = found
            if remote := _REMOTE.match(rest):
                if _again(out, block, (link, None, "remote"), line, gpu):
                    gpu = None
                    continue
                remotes[(out.node_id, gpu, link)] = _remote(out, line, gpu, link, remote)
                continue
            lane: int | None = None
            if lane_match := _LANE.match(rest):
                lane = out.checked("index", line.number, lane_match["lane"], "lane", f"GPU {gpu} link {link} lane")
                rest = lane_match["rest"]
                if lane is None:
                    continue
                if _BARE_VALUE.match(rest):  # `Link 0: Lane 3: 12`
                    rest = f"CRC Errors: {rest}"
            stated = _COUNTER.match(rest)
            if _again(out, block, (link, lane, _named(stated["label"]) if stated else "speed"), line, gpu):
                gpu = None
                continue
            if rest == "<inactive>":
                rows.row(line, (gpu, uuid, link, lane), ("link_state",))["link_state"] = LinkState.INACTIVE.value
            elif speed := _SPEED.match(rest):
                gbps = out.checked("gauge", line.number, speed["speed"], "speed_gbps", f"GPU {gpu} link {link} speed")
                if gbps is None:
                    continue
                row = rows.row(line, (gpu, uuid, link, lane), ("speed_gbps", "link_state"))
                row["speed_gbps"] = gbps
                row.setdefault("link_state", LinkState.UP.value)
            elif counter := _COUNTER.match(rest):
                column = _column(out, line.number, counter["label"], unknown_labels)
                if column is None:
                    continue
                if not counter["value"]:
                    out.warn(line.number, f"GPU {gpu} link {link}: {counter['label']} has no value; "
                                          "the output is cut off here")
                    rows.unread((gpu, uuid, link, lane), column)
                    continue
                value = out.checked("counter", line.number, counter["value"], "nvlink", f"GPU {gpu} link {link} "
                                    f"{counter['label']}")
                if value is None:  # N/A (the driver does not report this counter), or refused and said
                    rows.unread((gpu, uuid, link, lane), column)
                    continue
                rows.count(line, (gpu, uuid, link, lane), column, value)
            else:
                out.unread(line)
        _all_inactive(out, rows, all_down)
        _models_mixed(out, models)
        _place_lost([*lost_rows, *(place for _, _, place in unsaid)], seen_gpus)
        for number, lost, place in unsaid:
            unreached(out, number, lost, place["gpu"])
        rows.finish()
        if first_header is not None and not out.rows.get("link_samples") and not out.rows.get("events") \
                and not all_down and not remotes and not unreachable:
            _headers_alone(out, first_header, len(seen_gpus), alone)
            return out.result()
        if rows.rows and not unreachable:
            _narrowed(out, sorted({g for _, g, _ in seen_gpus}), board_model)
        for row in out.rows.get("link_samples", []):  # -R pasted with -e/-s: each link row names its far end
            row["peer"] = remotes.get((row["node_id"], row["gpu"], row["link"]), row["peer"])
        return out.result()


def _models_mixed(out: Collector, models: dict[str | None, dict[str, list[tuple[int, int]]]]) -> None:
    """GPUs of different models in one node's output: two machines' outputs pasted as one (`cat a.txt b.txt`) read
    as one node, its links judged against one board. Said where the second model starts."""
    for held in models.values():
        if len(held) < 2:
            continue
        said = "; ".join(f"{'GPUs' if len(at) > 1 else 'GPU'} {', '.join(str(g) for g in sorted({g for g, _ in at}))} "
                         f"{name}" for name, at in held.items())
        second = list(held.values())[1][0][1]
        out.warn(second, f"GPUs of {len(held)} models in one node's output ({said}): outputs of {len(held)} machines, "
                         "read as one node's? Each machine's readings are its own node's: read each output as a file "
                         "of its own with its --node, or paste each after a prompt naming its host "
                         "(`user@node01:~$ nvidia-smi nvlink -s`)")


def _headers_alone(out: Collector, first: Line, gpus: int, alone: str | None) -> None:
    """An output of GPU headers and no link reading under any: nothing is read (its GPUs are not kept either: the
    input is not what it was meant to be), and the warning says what it is: `nvlink -c` (what each link supports) or
    `nvlink -gt d`/`-gt r` (each link's throughput) whole, not a cut output."""
    out.rows.pop("gpus", None)
    count = f"{gpus} GPU header lines" if gpus > 1 else "a GPU header line"
    out.flush()  # said first: the lines around the header that no reader takes are said after it
    what = {
        "capabilities": "and its links' capabilities alone: `nvidia-smi nvlink -c` output, which says what each link "
                        "supports and holds no error counter or link state",
        "throughput": "and its links' throughput alone: `nvidia-smi nvlink -gt d` (or -gt r) output, whose data (or "
                      "raw) Tx and Rx counters in KiB hold no error counter or link state",
    }.get(alone or "", "and no link lines: an nvidia-smi nvlink output cut before its links (or `nvidia-smi -L`, "
                       "which lists GPUs and no links)")
    said = (f"the input holds {count} ({first.text.strip()[:60]!r}) {what}; nothing is read: paste "
            "`nvidia-smi nvlink -e` (or -s, -R) whole")
    out.warnings.insert(0, IngestWarning(out.source.name, first.number, said, cut=alone is None))


def _narrowed(out: Collector, listed: list[int], model: str) -> None:
    """An output of some GPUs only (see the module's docstring) marks the result partial: the analysis says so."""
    platform = platform_for_model(model)
    count = int(platform_data(platform)["gpu_count"]) if platform else None
    prefix = listed == list(range(len(listed)))
    out.partial = not (prefix and (len(listed) >= count - 1 if count else len(listed) > 1))


def _shows_end(text: str) -> bool:
    """A link's state line ends in what only a whole line ends in (`<inactive>`'s `>`, a speed's `GB/s`), as NVML's
    line for a GPU whose links are all inactive ends in its last word: read as it stands when it is the last line
    of a file saved without a final newline (an editor's default, `$(...)`, `echo -n`), where a cut would be read
    only up to its last space. A counter's value last may be cut (45 of 45120) and stays unread."""
    link = _LINK.match(text)
    return bool(link and (link["rest"] == "<inactive>" or _SPEED.match(link["rest"]))) or \
        bool(_ALL_INACTIVE.match(text))


def _known_rest(rest: str) -> bool:
    return bool(
        rest == "<inactive>" or _SPEED.match(rest) or _REMOTE.match(rest) or _LANE.match(rest)
        or (_COUNTER.match(rest) and "error" in rest.lower())
    )


def _column(out: Collector, number: int, label: str, unknown: set[str]) -> str | None:
    """The column a counter's label fills; None for a label the counters file does not name (said once)."""
    key = " ".join(label.lower().split())
    column = counter_labels()[0].get(key)
    if column is None and key not in unknown:
        unknown.add(key)
        out.warn(number, f"counter {label!r} is not in {COUNTERS_FILE.name}; its values are not read")
    return column


def _named(label: str) -> str:
    """What a counter line states, as a GPU header's block keeps it: its column, else its label."""
    key = " ".join(label.lower().split())
    return counter_labels()[0].get(key, key)


def _summary(out: Collector, line: Line, gpu: int, several: re.Match[str],
             unknown: set[str]) -> tuple[list[int], tuple[str, ...], float] | None:
    """A `Links` line (see nvlink_rows): the links it names, the counters it names and the value each holds; None
    where it cannot be read (said)."""
    what = f"GPU {gpu} links {several['links']}"
    stated = _COUNTER.match(several["rest"])
    if _NO_ERRORS.match(several["rest"]):
        columns, value = counter_labels()[1], 0.0
    elif stated is None:
        out.unread(line)
        return None
    elif not stated["value"]:
        out.warn(line.number, f"{what}: {stated['label']} has no value; the output is cut off here")
        return None
    else:
        found = [_column(out, line.number, name, unknown) for name in _joined(stated["label"])]
        columns = tuple(dict.fromkeys(c for c in found if c is not None))
        value = out.checked("counter", line.number, stated["value"], "nvlink", f"{what} {stated['label']}")
    links = _link_list(out, line.number, what, several["links"])
    return (links, columns, value) if columns and value is not None and links is not None else None


def _joined(label: str) -> list[str]:
    """`Replay/Recovery/CRC Errors` -> `Replay Errors`, `Recovery Errors`, `CRC Errors`: a name the counters file
    does not know as it stands takes the last name's last word."""
    names = [" ".join(name.split()) for name in label.split("/")]
    tail = names[-1].rsplit(" ", 1)[-1]
    known = counter_labels()[0]
    return [name if name.lower() in known or name.lower().endswith(tail.lower()) else f"{name} {tail}"
            for name in names]


def _link_list(out: Collector, number: int, what: str, text: str) -> list[int] | None:
    """`0-2, 4-5` -> [0, 1, 2, 4, 5]; None (said) where a number is no link index or a range runs backwards."""
    links: list[int] = []
    for part in text.split(","):
        ends = [out.checked("index", number, end, "link", what) for end in part.split("-")]
        if None in ends:
            return None
        if ends[-1] < ends[0]:
            out.warn(number, f"{what}: the range {part.strip()} runs backwards; not read")
            return None
        links.extend(range(ends[0], ends[-1] + 1))
    return links


class _Header(NamedTuple):
    gpu: str  # the index as written
    name: str  # the model, and a UUID clause that is not as nvidia-smi prints it
    uuid: str | None  # the `(UUID: ...)` clause's content, where it closes


def _header(line: Line, uuid_form: bool) -> _Header | None:
    """A GPU header; a line cut off (see `_model`) is one from its index on."""
    if header := _GPU.match(line.text):
        return _Header(header["gpu"], header["name"].strip(), header["uuid"])
    cut = _CUT_GPU.match(line.text) if line.cut or uuid_form else None
    return _Header(cut["gpu"], "", None) if cut else None


def _model(out: Collector, line: Line, header: _Header, gpu: int, uuid_form: bool) -> str | None:
    """The GPU's model as its header states it. A header cut off (the input ends inside it, or its `(UUID: ...)`
    never closes, or it ends in no `)` where the headers above close theirs) keeps only a model its clause's `(`
    follows: a cut one (`Tesla V1` of `Tesla V100`) would name a board it is not. Said, as a cut line is."""
    name = header.name
    opened = _OPEN_UUID.match(name)
    if header.uuid is not None or not (opened or line.cut or (uuid_form and not name.endswith(")"))):
        return name  # whole: a clause not as nvidia-smi prints it that closes is damage (`_check_uuid`)
    if line.cut and out.warnings and out.warnings[-1].line == line.number and out.warnings[-1].cut:
        out.warnings.pop()  # the input's own cut warning, said here with what it leaves unread
    why = ("the input ends inside this line, with no newline after it" if line.cut else
           "its (UUID: ...) never closes" if opened else "it has no (UUID: ...) where the GPU headers above close one")
    shown = line.text.strip()[:60]
    if opened:
        out.warn(line.number, f"GPU {gpu}'s header ({shown!r}) is cut off inside its UUID: {why}; read with its "
                              f"model, {opened['model']!r}, and no UUID", cut=True)
        return opened["model"]
    out.warn(line.number, f"GPU {gpu}'s header ({shown!r}) is cut off: {why}; its model may be cut too and is not "
                          f"read (GPU {gpu} is counted)", cut=True)
    return None


def _uuid(raw: str | None) -> str | None:
    """A UUID as the driver writes it; None for an author's elision (`...`, `GPU-xxx`)."""
    return raw.strip() if raw and _UUID.match(raw.strip()) else None


def _check_uuid(out: Collector, line: Line, header: _Header, uuid: str | None,
                first: tuple[str | None, int]) -> None:
    """A GPU header's UUID clause that is not as the driver writes it (and not an author's elision), or another
    UUID than the same GPU's header above, is said: its rows would carry no UUID, or the wrong one."""
    raw = header.uuid
    # an author's shortening (`GPU-xxx`, `GPU-0`, `...`) is no damage: a damaged UUID keeps its dashes
    elided = raw is not None and (raw.count("-") < 3 or any(mark in raw for mark in ("xxx", "...", "…")))
    if raw is None and re.search(r"\(\s*\w{4}:|\w{4}:\s*\w{3}-|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-",
                                 header.name):  # a damaged `(UUID: `, or a UUID's digits in a model name
        out.warn(line.number, f"{header.name[-60:]!r}: a UUID clause not as nvidia-smi prints it (UUID: ...); "
                              "read without a UUID")
    elif raw is not None and not elided and (uuid is None or not _FULL_UUID.match(uuid)):
        out.warn(line.number, f"{raw[:50]!r} is no GPU UUID as the driver writes it; read without one")
    elif uuid is not None and first[0] is not None and uuid != first[0]:
        out.warn(line.number, f"GPU {header.gpu} is {uuid} here and {first[0]} at line {first[1]}: one of the "
                              "two is damaged")


def _again(out: Collector, block: dict[tuple[Any, ...], int], what: tuple[Any, ...], line: Line, gpu: int) -> bool:
    """A link stated twice under one GPU header holds the next GPU's lines: that header line is missing (said; the
    lines up to the next header are not read)."""
    first = block.setdefault(what, line.number)
    if first != line.number:
        out.warn(line.number, f"GPU {gpu} link {what[0]} stated again under one GPU header (first at line {first}): "
                              "a GPU header line is missing above; the lines to the next header are not read")
    return first != line.number


def _remote(out: Collector, line: Line, gpu: int, link: int, remote: re.Match[str]) -> str:
    raw = remote["dev"]
    if _SWITCH_SENTINEL.match(raw):
        far, detail = "NVSwitch", "an NVSwitch port; the driver reports no bus id for switches (FFFFFFFF)"
    else:
        far, detail = normalize_bus_id(raw) or raw, "the remote device's PCI bus id"
    out.add("topology", line.number, a=f"GPU{gpu}", b=far, relation="remote", link=link,
            remote_port=out.checked("index", line.number, remote["port"], "link", f"GPU {gpu} link {link} remote port"),
            detail=detail)
    return far if far == "NVSwitch" else f"PCI {far}"


class AllDown(NamedTuple):
    """A GPU NVML reports as all links inactive: its line, and what the lines above it stated."""

    line: Line
    gpu: int
    uuid: str | None
    model: str
    at: Any  # the time stated above it
    node: str | None


def _place_lost(lost: list[dict[str, Any]], listed: set[tuple[str | None, int, str | None]]) -> None:
    """The lost GPUs' indexes where their place in the output gave one a GPU of the node lists, or two places two:
    `nvidia-smi ... &> file` writes the stderr line first, above every GPU. NVML numbers GPUs in bus order and
    nvidia-smi lists the others under their own, so the indexes the node's listing skips are the lost GPUs', in their
    buses' order; where the skipped indexes do not match them one to one (a driver that never enumerated a GPU numbers
    the rest from 0), the GPU is known by its bus alone, never by another GPU's index."""
    for node in {row["node_id"] for row in lost}:
        held = {gpu for n, gpu, _ in listed if n == node}
        mine = [row for row in lost if row["node_id"] == node]
        guesses: dict[str, set[int]] = {}
        for row in mine:
            guesses.setdefault(row["pci_bus_id"], set()).add(row["gpu"])
        clash = sorted(bus for bus, said in guesses.items() if len(said) > 1 or said & held)
        if not clash:
            continue
        placed = {gpu for bus, said in guesses.items() if bus not in clash for gpu in said}
        skipped = sorted(set(range(max(held, default=-1) + 1)) - held - placed)
        index = dict(zip(clash, skipped, strict=True)) if len(skipped) == len(clash) else {}
        for row in mine:
            if row["pci_bus_id"] in clash:
                row["gpu"] = index.get(row["pci_bus_id"])


def _all_inactive(out: Collector, rows: LinkRows, all_down: list[AllDown]) -> None:
    """Each NVLink of a GPU NVML reports as all inactive, one row each, at the time stated above NVML's line; how
    many: see the module's docstring."""
    listed: dict[int, set[int]] = {}
    for g, link, _ in rows.rows:
        listed.setdefault(g, set()).add(link)
    seen = max((max(links) + 1 for links in listed.values()), default=0)
    now = out.node_id
    for line, gpu, uuid, model, stated, node in all_down:
        out.timestamp, out.node_id = stated, node
        platform = platform_for_model(model)
        count = seen or (int(platform_data(platform)["nvlinks_per_gpu"]) if platform else 0)
        if not count:
            out.warn(line.number, f"GPU {gpu}: NVML reports all its NVLinks inactive, but how many links a "
                                  f"{model or 'GPU of this paste'!r} has is not known (no other GPU lists its "
                                  "links, no platform file names the model): not read as links")
            continue
        for link in range(count):
            rows.row(line, (gpu, uuid, link, None), ("link_state",))["link_state"] = LinkState.INACTIVE.value
    out.node_id = now


READER = NvlinkReader()
