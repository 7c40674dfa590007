"""dcgm-exporter scrapes (Prometheus text exposition or OpenMetrics) -> link_samples, events, gpus.

No library parser: prometheus_client's text parser is pure Python at several microseconds a line and stops at
the first bad line, while a day of scrapes is a million lines and a bad line must become a warning naming it.
Lines are read in batches (pyarrow's CSV reader for large files) and split by pyarrow compute kernels
(`dcgm_lines`); each distinct series text, and each distinct label set, is parsed once in Python and cached
(`dcgm_series`), so repeated scrapes cost array operations only. Samples are kept as compact numpy arrays until one
pivot builds the rows (`dcgm_frame`). Metric and label names are mapped through `data/dcgm.toml` (see `dcgm_map`).

Meaning kept:
- Timestamps: an integer sample timestamp is milliseconds (Prometheus text); one with a fraction, or below 1e11,
  is seconds (OpenMetrics). A sample without a timestamp takes the time the caller gives (`at`: `--at TIME` or the
  file's mtime with `--at mtime`), else NaT: the reader never invents a scrape time.
- Per-link names (`_L3`, `_L3_TOTAL`) and link-entity series (an `nvlink` label) give one row per link; a name
  without a link and no `nvlink` label is a GPU total: link NA, `gpu_total` true. An `nvswitch` label makes the
  row switch-side: link_type nvswitch, link = port, gpu NA.
- DCGM's blank sentinels (9223372036854775794 and kin) are no value (NaN), counted in one warning per file.
- A counter at 65535 is kept and the row flagged `saturated` (a lower bound).
- Xids: every increase of `DCGM_EXP_XID_ERRORS_COUNT{xid}` is an event (count = the increase; the first reading
  counts since the exporter started); `DCGM_FI_DEV_XID_ERRORS` holds the last Xid forever, so only a change between
  readings is an event; a single nonzero reading is reported as a warning, not an event. A change in the scrape
  where the counter counts the same Xid is that Xid, counted there once.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

import numpy as np
import pandas as pd

from .. import format as fmt
from ..errors import InputError
from ..tables import EVENTS, TABLES
from ..values import Limits, limits
from .base import IngestResult, IngestWarning, Source
from .dcgm_checks import checks
from .dcgm_frame import UNNAMED, build_events, build_gpus, build_link_samples, empty, unnamed
from .dcgm_lines import NAT_MS, Batch, line_batches, split
from .dcgm_map import DcgmMap, load_map
from .dcgm_series import Described, Series, SeriesMeanings
from .exposition import SeriesError, parse_labels
from .stamps import UNIT_NAMES, Unit, epoch_note
from .textlines import normalize_bus_id

MAX_LINE_WARNINGS = 50  # per file; the rest are counted in one closing warning
BATCH_LINES = 100_000  # lines parsed together; bounds the memory a file of any size needs while it is read
# The limit each gauge column is held to (see `values`); generations and widths are whole numbers.
_GAUGE_KINDS = {"symbol_ber": "ber", "effective_ber": "ber", "tx_bytes_per_s": "bytes_per_s",
                "rx_bytes_per_s": "bytes_per_s", "gen": "pcie_gen", "max_gen": "pcie_gen", "width": "pcie_width",
                "max_width": "pcie_width"}
_WHOLE_GAUGES = frozenset({"gen", "max_gen", "width", "max_width"})
_SNIFF = re.compile(r"^(?:# (?:HELP|TYPE) )?DCGM_(?:FI|EXP)_\w+", re.MULTILINE)
_OPENS = re.compile(r"# (?:HELP|TYPE) DCGM_(?:FI|EXP)_\w+\s|DCGM_(?:FI|EXP)_\w+(?:\{[^{}]*\})?\s+\S")



def _unheld(value: np.ndarray, top: np.ndarray, whole: np.ndarray) -> np.ndarray:
    """Values no field of theirs can hold: NaN, infinite, negative, above its top, a fraction where it counts."""
    with np.errstate(invalid="ignore"):
        return ~np.isfinite(value) | (value < 0) | (value > top) | (whole & (value != np.floor(value)))


def _past(text: str, top: int | float) -> bool:
    """Whether a sample's text is above its field's top, compared exactly: past 2^53 a float rounds a count to its
    neighbours (2^63 reads as 2^63 - 1, the top of DCGM's int64)."""
    try:
        return Decimal(text) > Decimal(top)
    except InvalidOperation:
        return False


@dataclass
class _FileState:
    name: str
    number: int
    at_ms: int
    bad: int = 0
    sentinels: int = 0
    eof: int | None = None
    header: tuple[str, int] | None = None  # the last HELP/TYPE line: (metric, line)
    last_sample: int = 0
    units: set[Unit] = field(default_factory=set)  # the epoch units its timestamps were in


# A sample written into a comment (the line break before it lost): `metric{labels} value`
_JOINED = re.compile(r"[A-Za-z_:][\w:]*\{[^{}]*\}\s+\S")
# The metric types of the Prometheus text format and OpenMetrics
_TYPES = frozenset({"counter", "gauge", "histogram", "summary", "untyped", "unknown", "info", "stateset",
                    "gaugehistogram"})
_KIND = {"error": -1, "skip": 0, "link": 1, "xid": 2}


MIG_INSTANCE = "GPU_I_ID"  # dcgm-exporter's label of a MIG GPU instance (GPU_I_PROFILE names its profile)

@dataclass
class DcgmParser:
    """Accumulates samples from one or more sources (each a scrape or a run of timestamped scrapes)."""

    mapping: DcgmMap = field(default_factory=load_map)
    node_id: str | None = None
    parts: list[tuple[np.ndarray, ...]] = field(default_factory=list)  # (ts, entity, column, value, line, file)
    samples: int = 0
    entities: dict[tuple[Any, ...], int] = field(default_factory=dict)
    columns: dict[str, int] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    xids: list[tuple[Any, ...]] = field(default_factory=list)
    xid_last: dict[tuple[Any, ...], float] = field(default_factory=dict)  # carried between reads (see build_events)
    gpus: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    uuid_owner: dict[Any, tuple[str, int, str]] = field(default_factory=dict)  # a UUID -> the GPU it first named
    mig: set[tuple[str, int]] = field(default_factory=set)  # GPUs whose series name a MIG instance (GPU_I_ID)
    warnings: list[IngestWarning] = field(default_factory=list)
    families: dict[str, None] = field(default_factory=dict)  # the metrics its `# TYPE` lines name, in order
    sampled: dict[str, None] = field(default_factory=dict)  # the metrics its samples name, in order
    hosts: dict[str, None] = field(default_factory=dict)  # the hosts its labels name where `node_id` names the node
    headerless: bool = False  # a source read holds samples and no HELP or TYPE line (see `_excerpt`)
    _series: dict[str, Series] = field(default_factory=dict)
    _names: dict[int, str] = field(default_factory=dict)  # column id -> name
    _meanings: SeriesMeanings = field(init=False)

    def __post_init__(self) -> None:
        self._meanings = SeriesMeanings(self.mapping, self.node_id)

    def feed(self, source: Source, at: datetime | None = None) -> int:
        """Read one source, streamed in batches of lines; returns the number of samples it gave."""
        self.files.append(source.name)
        state = _FileState(source.name, len(self.files) - 1, NAT_MS if at is None else int(at.timestamp() * 1000))
        before = self.samples
        base = source.first_line - 1
        for lines in line_batches(source, BATCH_LINES):
            self._batch(split(lines, state.at_ms), base, state)
            base += len(lines)
        warn = self.warnings.append
        if source.tail is not None:
            warn(source.tail.warning(state.name, "the sample"))
        if state.bad > MAX_LINE_WARNINGS:
            warn(IngestWarning(state.name, None,
                               f"{fmt.count(state.bad - MAX_LINE_WARNINGS, 'more unreadable line')}"))
        if state.sentinels:
            warn(IngestWarning(state.name, None, f"{fmt.count(state.sentinels, 'sample')} held DCGM's blank "
                                                 "sentinel (field not supported): read as no value"))
        if state.units - {"s", "ms"}:  # the exposition format's milliseconds, or OpenMetrics' seconds, go unsaid
            warn(IngestWarning(state.name, None, epoch_note("timestamps", [u for u in UNIT_NAMES if u in state.units])))
        self.headerless |= self.samples > before and state.header is None
        if state.header is not None and state.header[1] > state.last_sample:
            warn(IngestWarning(state.name, state.header[1], f"metric {state.header[0]} announced but no samples "
                                                            "follow: the input is cut off here", cut=True))
        return self.samples - before

    def _batch(self, batch: Batch, base: int, state: _FileState) -> None:
        problems: list[tuple[int, str]] = []
        state.units |= batch.ts_units
        for pos, text in batch.comments:
            if _JOINED.search(text):
                problems.append((base + pos + 1, f"{text[:60]!r}: a sample inside a comment line (a lost line "
                                                 "break?); not read"))
            elif text.startswith("# TYPE ") and (len(text.split()) != 4 or text.split()[3] not in _TYPES):
                problems.append((base + pos + 1, f"{text[:60]!r} is no `# TYPE metric type` line as the "
                                                 "exposition format writes it; not read"))
            if text.startswith(("# HELP ", "# TYPE ")):
                state.header = ((text.split(None, 3)[2:3] or [""])[0], base + pos + 1)
                self.families.setdefault(state.header[0])
            elif text.strip() == "# EOF" and state.eof is None:
                state.eof = base + pos + 1
        problems += [(base + int(p) + 1, "expected 'metric{labels} value [timestamp]' (a cut-off line?)")
                     for p in batch.unmatched]
        kinds = np.empty(len(batch.series), dtype=np.int8)
        ents = np.zeros(len(batch.series), dtype=np.int32)
        cols = np.zeros(len(batch.series), dtype=np.int8)
        counters = np.zeros(len(batch.series), dtype=bool)
        tops = np.full(len(batch.series), np.inf)  # the largest value each series' field can hold
        exact: list[int | float] = [np.inf] * len(batch.series)  # the same, an int where a float cannot hold it
        wholes = np.zeros(len(batch.series), dtype=bool)  # counters, generations, widths, Xid codes
        described: list[Series] = []
        first_at = np.full(len(batch.series), -1, dtype=np.int64)  # each series' first sample in the batch
        codes, first = np.unique(batch.series_code, return_index=True)
        first_at[codes] = first
        bound = limits()
        for i, text in enumerate(batch.series):
            series = self._series.get(text)
            if series is None:
                self.sampled.setdefault(text.split("{", 1)[0].strip())
                number = base + int(batch.positions[first_at[i]]) + 1 if first_at[i] >= 0 else base + 1
                series = self._series[text] = self._attach(self._meanings.described(text), f"{state.name}:{number}")
            described.append(series)
            kinds[i] = _KIND[series[0]]
            if series[0] == "link":
                ents[i], cols[i], counters[i] = series[1], series[2], series[3]
            if series[0] in ("link", "xid"):
                exact[i], wholes[i] = self._bounds(series, bound)
                tops[i] = exact[i]
        code = batch.series_code
        kind, line = kinds[code], base + batch.positions.astype(np.int64) + 1
        if len(line):
            state.last_sample = max(state.last_sample, int(line.max()))
        after_eof = line > state.eof if state.eof is not None else np.zeros(len(line), dtype=bool)
        problems += [(int(n), "content after '# EOF' (OpenMetrics end marker)") for n in line[after_eof]]
        for row in np.flatnonzero((kind == _KIND["error"]) & ~after_eof):
            problems.append((int(line[row]), described[code[row]][1]))
        used = (kind >= _KIND["link"]) & ~after_eof
        bad = used & batch.bad_value
        problems += [(int(line[i]), f"{self._named(batch.series[code[i]])}: not a number: "
                                    f"{(batch.raw[i].as_py().split() or [''])[0][:40]!r}") for i in np.flatnonzero(bad)]
        value = batch.value
        sentinel = used & ~bad & np.isin(value, list(self.mapping.sentinels))
        for at in np.flatnonzero(sentinel & (value > 2.0**53)):  # a float there is many numbers: DCGM's own text only
            sentinel[at] = batch.raw[at].as_py().split(" ")[0] in self.mapping.sentinel_texts
        state.sentinels += int(sentinel.sum())
        good = used & ~bad & ~sentinel
        unheld = good & _unheld(value, tops[code], wholes[code])
        for at in np.flatnonzero(good & ~unheld & (value >= 2.0**53)):  # a float there is many numbers: the text's
            unheld[at] = _past(batch.raw[at].as_py().split(" ")[0], exact[code[at]])
        problems += [(int(line[i]), f"{self._named(batch.series[code[i]])}: {batch.raw[i].as_py().split(' ')[0]!r} "
                                    "is not a value this field can hold "
                                    f"({'a whole number ' if wholes[code[i]] else ''}from 0 to "
                                    f"{fmt.number(exact[code[i]])})")
                     for i in np.flatnonzero(unheld)]
        good &= ~unheld
        for row in np.flatnonzero(good & (kind == _KIND["xid"])):
            self.xids.append((int(batch.ts_ms[row]), *described[code[row]][1:], float(value[row]), state.number,
                              int(line[row])))
        keep = good & (kind == _KIND["link"])
        counter = counters[code]
        saturated = keep & counter & (value == self.mapping.saturation)
        sat_col = self._column("saturated")
        for mask, col, val in ((keep, cols[code], value), (saturated, None, None)):
            n = int(mask.sum())
            if not n:
                continue
            self.parts.append((batch.ts_ms[mask], ents[code][mask], col[mask] if col is not None else
                               np.full(n, sat_col, dtype=np.int8), val[mask] if val is not None else np.ones(n),
                               line[mask].astype(np.int32), np.full(n, state.number, dtype=np.int16)))
            self.samples += n if col is not None else 0
        for number, message in sorted(problems):
            state.bad += 1
            if state.bad <= MAX_LINE_WARNINGS:
                self.warnings.append(IngestWarning(state.name, number, message))

    def _bounds(self, series: Series, bound: Limits) -> tuple[int | float, bool]:
        """(largest value, whole numbers only) of a series' field: `bound`'s limits for its column (`values.limits`,
        asked once a batch), a counter's as an int (2^63 - 1 is no float: it rounds to 2^63)."""
        if series[0] == "xid":
            return (bound.counter_max("dcgm"), True) if series[1] == "counter" else (bound.index["code"], True)
        if series[3]:
            return bound.counter_max("dcgm"), True
        name = self._names.get(series[2]) or next(c for c, i in self.columns.items() if i == series[2])
        self._names[series[2]] = name
        kind = _GAUGE_KINDS.get(name)
        return (bound.gauge[kind] if kind else np.inf), name in _WHOLE_GAUGES

    def _named(self, text: str) -> str:
        """A series as a message names it: its metric and the labels that place it (`DcgmMap.placing`)."""
        name, brace, body = text.partition("{")
        try:
            return f"{name}{{{self.mapping.placing(parse_labels(body[:-1]))}}}" if brace else text[:80]
        except SeriesError:
            return text[:80]

    def _column(self, column: str) -> int:
        return self.columns.setdefault(column, len(self.columns))

    def _attach(self, described: Described, where: str) -> Series:
        """A description bound to this parser: its GPU noted, its entity and column numbered."""
        series, gpu_of = described
        if gpu_of is not None:
            self._note_gpu(*gpu_of, where)
        if series[0] != "link":
            return series
        entity, column, counter = series[1:]
        return ("link", self.entities.setdefault(entity, len(self.entities)), self._column(column), counter)

    def _note_gpu(self, node: str, gpu: int, labels: dict[str, str], where: str) -> None:
        if self.node_id is not None and (host := self.mapping.label(labels, "node")) is not None:
            self.hosts.setdefault(host)
        if MIG_INSTANCE in labels:  # dcgm-exporter writes a MIG GPU's device fields once per instance
            self.mig.add((node, gpu))
        if (uuid := self.mapping.label(labels, "uuid")) is not None:  # one GPU, one UUID: another index is damage
            owner = self.uuid_owner.setdefault(uuid, (node, gpu, where))
            if owner[:2] != (node, gpu) and (uuid, node, gpu) not in self.uuid_owner:
                self.uuid_owner[(uuid, node, gpu)] = owner  # said once
                file, _, number = where.rpartition(":")
                self.warnings.append(IngestWarning(file, int(number), f"{uuid} is {node} GPU {gpu} here and "
                                                                      f"{owner[0]} GPU {owner[1]} at {owner[2]}: "
                                                                      "a label damaged?"))
        info = self.gpus.setdefault((node, gpu), {"source": where})
        if info.get("_complete"):
            return
        info["_complete"] = True  # one look at the labels of each GPU's first series is enough
        for key in ("uuid", "pci_bus_id", "model", "driver_version", "pod", "namespace", "container"):
            if info.get(key) is None:
                info[key] = self.mapping.label(labels, key)
        if info.get("pci_bus_id"):  # one spelling across readers: dddd:bb:dd.f, lowercase
            info["pci_bus_id"] = normalize_bus_id(info["pci_bus_id"]) or info["pci_bus_id"]

    def result(self) -> IngestResult:
        if len(self.hosts) > 1:  # one node's name over several machines' series: the readings of one hide another's
            named = ", ".join(list(self.hosts)[:5]) + (" ..." if len(self.hosts) > 5 else "")
            raise InputError(f"the series name {len(self.hosts)} hosts ({named}) and --node names one node "
                             f"({self.node_id}): read as one, each machine's readings would hide another's; leave "
                             "--node out to keep each host's readings as its own node (`analyze FILE --node HOST` "
                             "answers one of them)", source=self.files[0] if self.files else None, field="--node")
        warnings = [*self.warnings, *checks(self.parts, self.entities, self.files, self.mig)]
        if self.node_id is None and any(e[0] == UNNAMED for e in self.entities):
            warnings.append(IngestWarning(self.files[0] if self.files else "<input>", None,
                                          "no Hostname label on some series: they are the node asked about, as an "
                                          "nvidia-smi paste's readings are (give --node NODE)"))
        events, xid_warnings = build_events(self.xids, self.files, self.xid_last)
        tables = {name: empty(name) for name in TABLES}
        tables["link_samples"] = build_link_samples(self)  # already in the schema's columns and dtypes
        tables["events"] = EVENTS.conform(events) if len(events) else tables["events"]
        tables["gpus"] = build_gpus(self.gpus)
        if self.node_id is None:  # a series no label names a host of names no node: the node the person asks about
            tables = {name: unnamed(frame) for name, frame in tables.items()}
        return IngestResult(tables, [*warnings, *xid_warnings],
                            partial=self.headerless and _excerpt(tables["link_samples"]))


def _excerpt(links: pd.DataFrame) -> bool:
    """Whether a scrape without the exporter's HELP and TYPE lines (which it writes before every metric) is an excerpt
    picked out by GPU (`grep 'gpu="3"'`): a node's series name one GPU, or fewer than half of those its highest
    index implies. A whole scrape with its comments stripped names every GPU but a lost one, which stays missing (the
    analysis says why the GPUs an excerpt leaves out are not judged missing)."""
    if not len(links) or "gpu" not in links.columns:
        return False
    for _, gpus in links.groupby(links["node_id"].astype("string").fillna(""), sort=False)["gpu"]:
        named = {int(g) for g in gpus.dropna().unique()}
        if named and (len(named) == 1 or len(named) < (max(named) + 1) / 2):
            return True
    return False


def mtime(source: Source) -> datetime | None:
    """The file's modification time, for a scrape saved without sample timestamps (`--at mtime`)."""
    if source.path is None:
        return None
    return datetime.fromtimestamp(os.stat(source.path).st_mtime, tz=UTC)


def read_scrapes(sources: Iterable[tuple[Source, datetime | None]], *, node_id: str | None = None,
                 xid_last: dict[tuple[Any, ...], float] | None = None) -> IngestResult:
    """Read several scrapes as one series, so that a change between files (an Xid gauge) is seen.

    `xid_last` carries the Xid series' last values from earlier reads and is updated in place.
    """
    parser = DcgmParser(node_id=node_id, xid_last={} if xid_last is None else xid_last)
    for source, at in sources:
        parser.feed(source, at)
    result = parser.result()
    if result.empty and parser.files:
        detail = "; ".join(str(w) for w in result.warnings[:3])
        if not detail and (parser.sampled or parser.families):  # every line read, none of a metric fabricbot reads
            names = list(parser.sampled or parser.families)  # the samples' own names: a HELP line may name another
            detail = (f"its metrics ({', '.join(names[:4])}{' ...' if len(names) > 4 else ''}) are none that "
                      "fabricbot reads: the NVLink, NVSwitch, PCIe and Xid fields diagnostics/data/dcgm.toml maps)")
        raise InputError("no dcgm-exporter samples could be read" + (f" ({detail})" if detail else ""),
                         source=", ".join(parser.files))
    return result


class DcgmReader:
    name = "dcgm"

    def sniff(self, head: str) -> float:
        hits = len(_SNIFF.findall(head))
        return 0.0 if not hits else (0.95 if hits >= 2 else 0.7)

    def opens(self, text: str) -> bool:
        """A dcgm-exporter family's `# HELP`/`# TYPE` line or one of its samples: no other tool prints one (see
        `paste`)."""
        return "DCGM_" in text and bool(_OPENS.match(text.strip()))

    def read(self, source: Source, *, node_id: str | None = None, at: datetime | None = None,
             xid_last: dict[tuple[Any, ...], float] | None = None) -> IngestResult:
        return read_scrapes([(source, at)], node_id=node_id, xid_last=xid_last)


READER = DcgmReader()
