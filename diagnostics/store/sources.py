"""Reading input files for an ingest: folders expanded, each file read by its reader or as a node inventory.

Shared by `fabricbot ingest` (with or without a store) and by the history analysis of files, so both take the
same inputs: files and folders (recursively), skipping hidden files and the answers `eval` scores against (a
synthetic fleet's `ground_truth.json`, a folder of real outputs' `expected.toml`).
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from .. import format as fmt
from ..errors import FabricbotError, InputError
from ..ingest.base import LOG_DATES, IngestResult, IngestWarning, Source
from ..ingest.detect import choose, read_with, readers
from ..ingest.snapshot import CUT_OFF, CUT_SHORT, LISTED
from ..ingest.summary import nodes as summary_nodes
from ..ingest.summary import summarize
from ..progress import Progress, advance
from .inventory import NODE_COLUMNS, inventory_gpus, read_node_file

At = datetime | Literal["mtime"] | None
SKIP_NAMES = frozenset({"ground_truth.json", "expected.toml"})  # the answers eval scores against, not telemetry


@dataclass
class FileOutcome:
    name: str
    sha256: str | None  # what the ingest is known by: the bytes, with the node and time the command gave them
    status: str  # ingested | duplicate | read | error
    format: str | None = None
    rows: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    result: IngestResult | None = field(default=None, repr=False)  # telemetry the file held
    content: str | None = None  # the bytes' own SHA-256
    nodes: pd.DataFrame | None = field(default=None, repr=False)  # node records of an inventory file


@dataclass
class IngestReport:
    """What an ingest read: per-file outcomes, the combined tables, the node records and every warning."""

    files: list[FileOutcome]
    result: IngestResult
    node_warnings: list[IngestWarning] = field(default_factory=list)

    @classmethod
    def of(cls, files: list[FileOutcome]) -> IngestReport:
        results = [f.result for f in files if f.result is not None]
        return cls(files, results[0] if len(results) == 1 else IngestResult.combine(results))

    @property
    def nodes(self) -> pd.DataFrame:
        """Every node record the inventory files gave (node_id, platform, node_serial, rack_location)."""
        frames = [f.nodes for f in self.files if f.nodes is not None and len(f.nodes)]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(NODE_COLUMNS))

    @property
    def warnings(self) -> list[IngestWarning]:
        errors = [IngestWarning(f.name, None, f.error) for f in self.files if f.error]
        return [*errors, *self.node_warnings, *self.result.warnings]

    @property
    def read_anything(self) -> bool:
        return any(f.status in ("ingested", "read", "duplicate") for f in self.files)

    def as_dict(self) -> dict[str, Any]:
        """The summary of what was kept (a refused file's rows and nodes were read, not stored: not counted), each
        file's outcome, and every warning."""
        kept = [f.result for f in self.files if f.result is not None and f.status != "error"]
        refused = any(f.result is not None and f.status == "error" for f in self.files)
        out = summarize(IngestResult.combine(kept) if refused else self.result)
        out["warnings"] = [w.as_dict() for w in self.warnings]
        out["files"] = [{"file": f.name, "status": f.status, "format": f.format, "rows": f.rows, "error": f.error}
                        for f in self.files]
        out["refused"] = [f.name for f in self.files if f.status == "error"]
        nodes = self.nodes
        platforms = nodes["platform"] if "platform" in nodes.columns else [None] * len(nodes)
        out["platforms"] = {str(n): str(p) for n, p in zip(nodes["node_id"], platforms, strict=True)
                            if isinstance(p, str)}
        return out


def expand(paths: Iterable[str | Path | Source]) -> list[str | Path | Source]:
    """Files as given; folders replaced by the files under them (sorted, recursively), hidden ones and
    `ground_truth.json` and `expected.toml` left out. A path that does not exist stays, so its reader reports it."""
    out: list[str | Path | Source] = []
    for item in paths:
        if isinstance(item, Source) or not Path(item).is_dir():
            out.append(item)
            continue
        root = Path(item)
        for path in sorted(root.rglob("*")):
            parts = path.relative_to(root).parts
            if path.is_file() and not any(p.startswith(".") for p in parts) and path.name not in SKIP_NAMES:
                out.append(path)
    return out


def file_hash(source: Source, *, node_id: str | None = None, when: datetime | None = None) -> tuple[str, str]:
    """The bytes' SHA-256, and what the ingest is known by: the bytes with the node and time the command gives the
    rows that state none. The same `nvidia-smi nvlink -e` output of a healthy node read again later (`--at` a later
    time, as the warning about readings without a time advises) is another reading, not the first one again."""
    digest = hashlib.sha256()
    if source.text is not None:
        digest.update(source.text.encode("utf-8"))
    else:
        assert source.path is not None
        with source.path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    content = digest.hexdigest()
    given = [f"{name}={value}" for name, value in (("node", node_id), ("at", when.isoformat() if when else None))
             if value is not None]
    return content, hashlib.sha256("\0".join([content, *given]).encode()).hexdigest() if given else content


def _when(src: Source, at: At) -> datetime | None:
    """The time `--at` gives the rows of `src` that state none (`mtime`: the file's modification time)."""
    if at == "mtime":
        return datetime.fromtimestamp(src.path.stat().st_mtime, tz=UTC) if src.path is not None else None
    return at if isinstance(at, datetime) else None


def _fill_time(result: IngestResult, at: datetime | None) -> None:
    if at is None:
        return
    for name in ("link_samples", "step_samples", "events"):
        frame = result.tables[name]
        if captured := result.captured.get(name):  # a capture banner's time: the command's wins over it
            frame.loc[frame.index[captured], "timestamp"] = pd.NaT
        if len(frame) and frame["timestamp"].isna().any():
            frame["timestamp"] = frame["timestamp"].fillna(pd.Timestamp(at).tz_convert(UTC))


def _read_one(src: Source, fmt: str | None, node_id: str | None, when: datetime | None,
              xid_last: dict[tuple[Any, ...], float], asked: str | None = None, until: datetime | None = None
              ) -> tuple[str, IngestResult | None, pd.DataFrame | None]:
    """(format, telemetry, node records) of one source; an inventory file gives node records and its GPUs' serials
    and UUIDs only. `asked`: the node `analyze` asks about, which a reader whose input names no host and whose --node
    names its rack (NMX-T) reads as it would the --node of `ingest`. `until`: the time the input was taken by (`when`
    where given), which places a log's yearless dates (`read_sources`)."""
    if fmt is None or fmt == "inventory":
        nodes = read_node_file(src, node_id=node_id)
        if nodes is not None:
            assert src.path is not None  # an inventory is a file
            gpus = inventory_gpus(src.path, node_id)
            return "inventory", IngestResult.of(gpus=gpus) if len(gpus) else None, nodes
        if fmt == "inventory":
            raise InputError("not a node inventory (nodes.csv, or an inventory CSV, TOML or JSON)", source=src.name)
    reader = choose(src, fmt)
    options: dict[str, Any] = {"at": when, "xid_last": xid_last, "until": when or until}
    accepted = inspect.signature(reader.read).parameters
    if node_id is None and getattr(reader, "rack_node", False):  # its --node names the rack, never a host label's
        node_id = asked
    result = read_with(reader, src, node_id=node_id, **{k: v for k, v in options.items() if k in accepted})
    _fill_time(result, when)
    return reader.name, result, result.nodes


def read_sources(sources: Iterable[str | Path | Source], *, fmt: str | None = None, node_id: str | None = None,
                 at: At = None, seen: set[str] | None = None, asked: str | None = None,
                 xid_last: dict[tuple[Any, ...], float] | None = None,
                 progress: Progress | None = None, until: datetime | None = None,
                 refuse_unread: bool = False) -> list[FileOutcome]:
    """Read each source (folders expanded) with its reader; a source whose key (`file_hash`) is in `seen`, or whose
    bytes are when the command gives them no node or time, is a duplicate.

    Readers that keep state between files get it: `xid_last` (the dcgm Xid gauge's last value per GPU), so that
    scrapes given one file each, in time order, show a change of the last Xid as an event. `progress` is advanced
    by one per file read.

    `until`: the time the inputs were taken by at the latest where `at` gives none (the end `analyze FILE` asks
    about): a log's yearless syslog dates lie in the latest year that keeps them no later, as under ingest's `--at`,
    so that the file and the store it was ingested into date them alike.

    `refuse_unread` (an ingest): a file that gives nothing to keep and holds lines of its format its reader could not
    read (an excerpt without the lines that name its device) is refused with the reader's first warnings, as
    `analyze FILE` refuses it, rather than kept as nothing; a file of lines that are none of its format's (a clean
    kernel log) is still read as holding nothing.
    """
    if fmt is not None and fmt != "inventory" and fmt not in readers():  # said once, before any file is read
        names = ", ".join(sorted([*readers(), "inventory"]))
        raise InputError(f"unknown format {fmt!r}; formats: {names}", field="--format")
    xid_last = {} if xid_last is None else xid_last
    outcomes: list[FileOutcome] = []
    for item in expand(sources):
        outcomes.append(_read_item(item, fmt, node_id, at, seen, xid_last, asked, until, refuse_unread))
        advance(progress)
    return outcomes


def _refusal(exc: FabricbotError) -> str:
    """Why a file was refused, with the line, field and value the error names (the file is named beside it)."""
    if isinstance(exc, InputError):
        return str(InputError(exc.reason, line=exc.line, field=exc.field, value=exc.value))
    return str(exc)


def _read_item(item: str | Path | Source, fmt: str | None, node_id: str | None, at: At, seen: set[str] | None,
               xid_last: dict[tuple[Any, ...], float], asked: str | None = None,
               until: datetime | None = None, refuse_unread: bool = False) -> FileOutcome:
    src = item if isinstance(item, Source) else Source.from_path(item)
    try:
        when = _when(src, at)
        content, sha = file_hash(src, node_id=node_id, when=when)
        # given no node or time, the bytes stored before under any are what is stored again
        if seen is not None and (sha in seen or (content in seen and node_id is None and when is None)):
            return FileOutcome(src.name, sha, "duplicate", content=content)
        name, result, nodes = _read_one(src, fmt, node_id, when, xid_last, asked, until)
    except FileNotFoundError:
        return FileOutcome(src.name, None, "error", error="file not found")
    except IsADirectoryError:
        return FileOutcome(src.name, None, "error", error="a folder that cannot be listed")
    except FabricbotError as exc:
        return FileOutcome(src.name, None, "error", error=_refusal(exc))
    if refuse_unread and result is not None and result.empty and not (nodes is not None and len(nodes)) \
            and any(w.unread for w in result.warnings):  # nothing to keep, and lines of its format not read
        said = sorted(result.warnings, key=lambda w: not w.unread)[:3]  # the lines not read first, then the others
        return FileOutcome(src.name, None, "error", error="no telemetry read: " + "; ".join(
            str(InputError(w.message, line=w.line)) for w in said))
    if seen is not None:
        seen.update((sha, content))
    if result is not None:
        placed_by_input(src.name, result)
    rows = result.rows if result is not None else {"nodes": len(nodes) if nodes is not None else 0}
    cut = cut_nodes(result)
    mark = CUT_OFF if result is not None and any(w.cut for w in result.warnings) else CUT_SHORT
    return FileOutcome(src.name, sha, "read", name, rows, result=result,
                       nodes=cut_short(nodes, cut, mark) if cut else nodes, content=content)


def link_nodes(result: IngestResult) -> list[str]:
    """The nodes whose link readings the input holds."""
    links = result["link_samples"]
    return sorted({str(n) for n in links["node_id"].dropna().unique()}) if "node_id" in links.columns else []


def cut_nodes(result: IngestResult | None) -> list[str | None]:
    """The nodes whose link readings come from an input that stops short or covers some GPUs only (a reader said
    so), none otherwise; None for readings the input names no node of (a paste: the node asked about, once known)."""
    if result is None or not result.stops_short:
        return []
    links = result["link_samples"]
    unnamed = "node_id" not in links.columns or bool(links["node_id"].isna().any())
    return [*link_nodes(result), *([None] if unnamed and len(links) else [])]


def cut_short(records: pd.DataFrame | None, nodes: list[str | None], mark: str = CUT_SHORT) -> pd.DataFrame:
    """The node records, with these nodes' readings marked as from an input cut short (`mark`: CUT_OFF where it is
    cut inside its text; a snapshot's mark kept); a record of no node (None) stands for the node a paste's readings
    are taken to be of."""
    records = pd.DataFrame({"node_id": pd.Series(dtype="string")}) if records is None else records.copy()
    if "reading" not in records.columns:
        records["reading"] = pd.Series([None] * len(records), dtype="object")
    ids = records["node_id"].astype("string")
    known = {None if pd.isna(n) else str(n) for n in ids}
    records = pd.concat([records, pd.DataFrame({"node_id": pd.Series([n for n in nodes if n not in known],
                                                                      dtype="string")})], ignore_index=True)
    ids = records["node_id"].astype("string")
    named = ids.isin([n for n in nodes if n is not None]).to_numpy(bool, na_value=False)
    unnamed = ids.isna().to_numpy() if None in nodes else np.zeros(len(records), dtype=bool)
    mine = (named | unnamed) & (records["reading"] != LISTED).to_numpy()
    records.loc[mine, "reading"] = mark
    return records


def placed_on_a_node(outcome: FileOutcome) -> str | None:
    """Rows the input gives no node (a pasted `nvidia-smi -q` names none) take the one node the rest of it names, as
    does its reading's mark (a paste cut short, `cut_short`); with none or several, nothing is stored and the reason
    says to pass --node (a store keys everything by node)."""
    result = outcome.result
    assert result is not None
    named = set(summary_nodes(result))
    key = {name: "node_ids" if name == "step_samples" else "node_id" for name in result.tables}  # a job's hosts
    unplaced = [name for name, frame in result.tables.items()
                if len(frame) and key[name] in frame.columns and frame[key[name]].isna().any()]
    if not unplaced:
        return None
    if len(named) == 1:
        node = next(iter(named))
        for name in unplaced:
            frame = result.tables[name]
            filled = frame[key[name]].astype("string").fillna(node)
            result.tables[name] = frame.assign(**{key[name]: filled if name == "step_samples" else
                                                  filled.astype("category")})
        if outcome.nodes is not None:
            outcome.nodes = outcome.nodes.assign(node_id=outcome.nodes["node_id"].astype("string").fillna(node))
        return None
    which = "names no node" if not named else f"names several nodes ({', '.join(sorted(named)[:4])})"
    return (f"{', '.join(unplaced)} rows without a node and the input {which}: pass --node NODE to say which "
            "node it was taken on (nothing of it was stored)")


# What to do about readings kept without a time: said at ingest and by every analysis of the store.
UNTIMED_ADVICE = ("no window can place them; ingest the file again with --at TIME or --at mtime (a reading piped "
                  "in: --at now as it is taken)")


def placed_by_input(name: str, result: IngestResult) -> None:
    """An input's events with no time (`dmesg`'s seconds since boot pasted after a dated `nvidia-smi` output) taken
    as printed at the newest time the same input states, as `analyze FILE` takes them, and said; where it states
    none they are kept without one, which no window places (`untimed_warning`)."""
    events = result["events"]
    if "timestamp" not in events.columns or not len(events):
        return
    missing = events["timestamp"].isna().to_numpy(bool)
    if not missing.any():
        return
    stated = [frame["timestamp"].max() for frame in (result["link_samples"], events)
              if "timestamp" in frame.columns and frame["timestamp"].notna().any()]
    if not stated:
        return
    newest = max(pd.Timestamp(t) for t in stated)
    result.tables["events"] = events.assign(timestamp=events["timestamp"].where(~missing, newest))
    one = int(missing.sum()) == 1
    result.warnings.append(IngestWarning(name, None, f"{fmt.count(int(missing.sum()), 'event')} "
                                         f"{'states' if one else 'state'} no time: taken as printed at the input's "
                                         f"newest time, {fmt.when(newest)}, as `analyze FILE` takes "
                                         f"{'it' if one else 'them'} (another: `fabricbot ingest --at TIME`, or "
                                         f"{LOG_DATES})"))


def untimed_warning(outcome: FileOutcome) -> IngestWarning | None:
    """Said at ingest, not first at the analysis: a paste that states no time (a reading, or a log printed without
    dates such as `dmesg`'s seconds since boot) is kept, but no window places it."""
    if outcome.status != "ingested" or outcome.result is None:
        return None
    counts = {what: int(frame["timestamp"].isna().sum()) if "timestamp" in frame.columns else 0
              for what, frame in (("link reading", outcome.result["link_samples"]),
                                  ("event", outcome.result["events"]))}
    held = [fmt.count(n, what) for what, n in counts.items() if n]
    if not held:
        return None
    one = sum(counts.values()) == 1
    return IngestWarning(outcome.name, None, f"{' and '.join(held)} {'states' if one else 'state'} no time: the "
                         f"store keeps {'it' if one else 'them'}, but `analyze --store` and `sweep` will not judge "
                         f"{'it' if one else 'them'}; {UNTIMED_ADVICE}")


def ahead_warning(outcome: FileOutcome, *, now: datetime, tolerance: timedelta) -> IngestWarning | None:
    """Said at ingest: link readings dated after the wall clock (beyond `tolerance`) come from a clock ahead, or a
    zone read as UTC; kept, but a fleet's window does not end at them (`service.fleet_end`), so they are not judged
    with the fleet's."""
    if outcome.status != "ingested" or outcome.result is None:
        return None
    said, newest = [], None
    for table, noun in (("link_samples", "link reading"), ("events", "event")):
        frame = outcome.result.tables.get(table)
        if frame is None or "timestamp" not in frame.columns or not len(frame):
            continue
        times = pd.to_datetime(frame["timestamp"], utc=True).dropna()
        late = times[times > pd.Timestamp(now + tolerance)]
        if len(late):
            said.append(fmt.count(len(late), noun))
            newest = late.max() if newest is None else max(newest, late.max())
    if newest is None:
        return None
    ahead = (newest - pd.Timestamp(now)).total_seconds() / 3600
    by = fmt.hours(round(ahead, 1)) if ahead < 48 else fmt.count(round(ahead / 24), "day")
    return IngestWarning(outcome.name, None, f"{' and '.join(said)} dated after this machine's clock, the newest "
                         f"{by} ahead ({fmt.when(newest)}): the node's clock runs ahead, its "
                         "zone was read wrong, or --at is in the future; stored, but not judged with the fleet's "
                         "readings (a sweep's window ends where the fleet's readings are)")
