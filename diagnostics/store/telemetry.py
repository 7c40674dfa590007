"""The local telemetry store: samples in Parquet by node and day, a SQLite database beside them.

Layout under `root`:
- `link_samples/node=<node>/day=<YYYY-MM-DD>/<file-hash>.parquet` (day `none` for rows without a time);
- `step_samples/job=<job>/day=<YYYY-MM-DD>/<file-hash>.parquet`;
- `fabricbot.db` (sqlite-utils): `ingests` (the manifest: one row per input file by SHA-256, so ingesting the
  same bytes twice adds nothing), `nodes`, `gpus`, `events`, `topology`. Tickets and the audit trail live in the
  same database (`db`).
Each ingested file writes its own Parquet file per partition, named by the input's hash, so a partition is a
folder of immutable files and a query reads only the nodes and days it asks for.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote, unquote

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import sqlite_utils
from sqlite_utils.db import Table

from ..errors import FabricbotError, InputError
from ..ingest.base import IngestResult, IngestWarning, Source
from ..ingest.detect import choose
from ..ingest.summary import nodes as summary_nodes
from ..ingest.summary import summarize
from ..tables import EVENTS, GPUS, LINK_SAMPLES, STEP_SAMPLES, TOPOLOGY

DB_NAME = "fabricbot.db"
At = datetime | Literal["mtime"] | None


@dataclass
class FileOutcome:
    name: str
    sha256: str | None
    status: str  # ingested | duplicate | read | error
    format: str | None = None
    rows: dict[str, int] = field(default_factory=dict)
    error: str | None = None


@dataclass
class IngestReport:
    """What an ingest read: per-file outcomes, the combined tables and every warning."""

    files: list[FileOutcome]
    result: IngestResult

    @property
    def warnings(self) -> list[IngestWarning]:
        errors = [IngestWarning(f.name, None, f.error) for f in self.files if f.error]
        return [*errors, *self.result.warnings]

    @property
    def read_anything(self) -> bool:
        return any(f.status in ("ingested", "read", "duplicate") for f in self.files)

    def as_dict(self) -> dict[str, Any]:
        out = summarize(self.result)
        out["warnings"] = [w.as_dict() for w in self.warnings]
        out["files"] = [{"file": f.name, "status": f.status, "format": f.format, "rows": f.rows} for f in self.files]
        return out


def _hash(source: Source) -> str:
    digest = hashlib.sha256()
    if source.text is not None:
        digest.update(source.text.encode("utf-8"))
    else:
        assert source.path is not None
        with source.path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _fill_time(result: IngestResult, at: datetime | None) -> None:
    if at is None:
        return
    for name in ("link_samples", "step_samples", "events"):
        frame = result.tables[name]
        if len(frame) and frame["timestamp"].isna().any():
            frame["timestamp"] = frame["timestamp"].fillna(pd.Timestamp(at).tz_convert(UTC))


def read_sources(sources: Iterable[str | Path | Source], *, fmt: str | None = None, node_id: str | None = None,
                 at: At = None, seen: set[str] | None = None,
                 xid_last: dict[tuple[Any, ...], float] | None = None) -> tuple[list[FileOutcome], list[IngestResult]]:
    """Read each source with its reader; a source whose hash is in `seen` is skipped as a duplicate.

    Readers that keep state between files get it: `xid_last` (the dcgm Xid gauge's last value per GPU), so that
    scrapes given one file each, in time order, show a change of the last Xid as an event.
    """
    xid_last = {} if xid_last is None else xid_last
    outcomes: list[FileOutcome] = []
    results: list[IngestResult] = []
    for item in sources:
        src = item if isinstance(item, Source) else Source.from_path(item)
        try:
            sha = _hash(src)
            if seen is not None and sha in seen:
                outcomes.append(FileOutcome(src.name, sha, "duplicate"))
                continue
            reader = choose(src, fmt)
            when = (datetime.fromtimestamp(src.path.stat().st_mtime, tz=UTC) if at == "mtime" and src.path
                    else at if isinstance(at, datetime) else None)
            options: dict[str, Any] = {"at": when, "xid_last": xid_last}
            accepted = inspect.signature(reader.read).parameters
            result = reader.read(src, node_id=node_id, **{k: v for k, v in options.items() if k in accepted})
            _fill_time(result, when)
        except FileNotFoundError:
            outcomes.append(FileOutcome(src.name, None, "error", error="file not found"))
            continue
        except FabricbotError as exc:
            outcomes.append(FileOutcome(src.name, None, "error", error=getattr(exc, "reason", str(exc))))
            continue
        if seen is not None:
            seen.add(sha)
        outcomes.append(FileOutcome(src.name, sha, "read", reader.name, result.rows))
        results.append(result)
    return outcomes, results


def _part(value: object) -> str:
    return quote(str(value), safe="") or "_"


def _day(ts: pd.Series) -> pd.Series:
    """The UTC day of each time as YYYY-MM-DD, `none` for NaT (formatted once per distinct day)."""
    days = ts.dt.floor("D")
    names = {d: ("none" if pd.isna(d) else d.strftime("%Y-%m-%d")) for d in days.unique()}
    return days.map(names).astype("string").fillna("none")


class TelemetryStore:
    """Samples in Parquet by node and day; manifest, nodes, GPUs, events and topology in SQLite."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._db = sqlite_utils.Database(self.root / DB_NAME)
        self._table("ingests").create(
            {"sha256": str, "file": str, "format": str, "ingested_at": str, "rows": str}, pk="sha256",
            if_not_exists=True)
        self._table("nodes").create({"node_id": str, "first_seen": str, "last_seen": str}, pk="node_id",
                                 if_not_exists=True)

    def _table(self, name: str) -> Table:
        return self._db.table(name)

    @property
    def db(self) -> sqlite_utils.Database:
        return self._db

    # ---- writing ----
    def ingest(self, sources: Iterable[str | Path | Source], *, fmt: str | None = None,
               node_id: str | None = None, at: At = None) -> IngestReport:
        seen = {str(r["sha256"]) for r in self._table("ingests").rows}
        xid_last = self._xid_state()
        outcomes, results = read_sources(sources, fmt=fmt, node_id=node_id, at=at, seen=seen, xid_last=xid_last)
        done = iter(results)
        for outcome in outcomes:
            if outcome.status != "read":
                continue
            result = next(done)
            assert outcome.sha256 is not None
            self._write(result, outcome.sha256)
            outcome.status = "ingested"
            self._table("ingests").insert({"sha256": outcome.sha256, "file": outcome.name, "format": outcome.format,
                                        "ingested_at": datetime.now(UTC).isoformat(),
                                        "rows": pd.Series(outcome.rows).to_json()}, replace=True)
        self._table("xid_last").upsert_all(
            [{"kind": k[0], "node_id": k[1], "gpu": -1 if k[2] is None else k[2], "code": -1 if k[3] is None else k[3],
              "value": v} for k, v in xid_last.items()],
            pk=("kind", "node_id", "gpu", "code"))
        return IngestReport(outcomes, results[0] if len(results) == 1 else IngestResult.combine(results))

    def _xid_state(self) -> dict[tuple[Any, ...], float]:
        """The dcgm Xid series' last values from earlier ingests, so a change in the next scrape is an event."""
        table = self._table("xid_last")
        if not table.exists():
            return {}
        def unset(v: int) -> int | None:  # NULL is never equal to NULL in a key, so -1 stands for "none"
            return None if v == -1 else v

        return {(r["kind"], r["node_id"], unset(r["gpu"]), unset(r["code"])): float(r["value"]) for r in table.rows}

    def _write(self, result: IngestResult, sha: str) -> None:
        with self._db.conn:
            self._write_parquet(result["link_samples"], "link_samples", "node_id", "node", sha)
            self._write_parquet(result["step_samples"], "step_samples", "job_id", "job", sha)
            self._write_rows("events", result["events"])
            self._write_rows("topology", result["topology"])
            gpus = result["gpus"]
            if len(gpus):
                self._table("gpus").upsert_all(_records(gpus), pk=("node_id", "gpu"), alter=True)
            self._note_nodes(result)

    def _write_parquet(self, frame: pd.DataFrame, table: str, key: str, label: str, sha: str) -> None:
        if not len(frame):
            return
        keys = frame[key].astype("string").fillna("unknown")
        for (value, day), part in frame.groupby([keys, _day(frame["timestamp"])], sort=False, observed=True):
            folder = self.root / table / f"{label}={_part(value)}" / f"day={day}"
            folder.mkdir(parents=True, exist_ok=True)
            pq.write_table(pa.Table.from_pandas(part.reset_index(drop=True), preserve_index=False),
                           folder / f"{sha[:20]}.parquet")

    def _write_rows(self, table: str, frame: pd.DataFrame) -> None:
        if len(frame):
            self._table(table).insert_all(_records(frame), alter=True)

    def _note_nodes(self, result: IngestResult) -> None:
        now = datetime.now(UTC).isoformat()
        for name in summary_nodes(result):
            first = now
            if self._table("nodes").count_where("node_id = ?", [name]):
                first = self._table("nodes").get(name)["first_seen"]
            self._table("nodes").upsert({"node_id": name, "first_seen": first, "last_seen": now}, pk="node_id")

    # ---- reading ----
    def nodes(self) -> list[str]:
        return sorted(str(r["node_id"]) for r in self._table("nodes").rows)

    def jobs(self) -> list[str]:
        folder = self.root / "step_samples"
        return sorted(unquote(p.name.removeprefix("job=")) for p in folder.glob("job=*")) if folder.is_dir() else []

    def link_samples(self, node_id: str | None = None, start: datetime | None = None,
                     end: datetime | None = None) -> pd.DataFrame:
        files = self._files("link_samples", "node", node_id, start, end)
        frame = LINK_SAMPLES.conform(_concat(files)) if files else LINK_SAMPLES.empty()
        if start is not None:
            frame = frame[frame["timestamp"] >= pd.Timestamp(start)]
        if end is not None:
            frame = frame[frame["timestamp"] < pd.Timestamp(end)]
        # link by link, each link's readings in time order: the layout the rates read without reordering, and
        # each node's rows together, so a fleet sweep can take the nodes a few at a time
        return frame.sort_values(["node_id", "gpu", "link_type", "link", "lane", "timestamp"], kind="stable",
                                 na_position="first").reset_index(drop=True)

    def step_samples(self, job_id: str | None = None, node_id: str | None = None) -> pd.DataFrame:
        files = self._files("step_samples", "job", job_id, None, None)
        frame = STEP_SAMPLES.conform(_concat(files)) if files else STEP_SAMPLES.empty()
        if node_id is not None:
            frame = frame[frame["node_ids"].fillna("").str.split(",").map(lambda ids: node_id in ids)]
        return frame.sort_values(["job_id", "timestamp"], kind="stable").reset_index(drop=True)

    def events(self, node_id: str | None = None) -> pd.DataFrame:
        return self._sql_table(EVENTS.name, node_id, EVENTS.conform)

    def topology(self, node_id: str | None = None) -> pd.DataFrame:
        return self._sql_table(TOPOLOGY.name, node_id, TOPOLOGY.conform)

    def gpus(self, node_id: str | None = None) -> pd.DataFrame:
        return self._sql_table(GPUS.name, node_id, GPUS.conform)

    def _sql_table(self, table: str, node_id: str | None, conform: Any) -> pd.DataFrame:
        if not self._table(table).exists():
            return conform(pd.DataFrame())
        where, args = ("node_id = ?", [node_id]) if node_id is not None else (None, [])
        rows = list(self._table(table).rows_where(where, args))
        return conform(pd.DataFrame(rows))

    def _files(self, table: str, label: str, key: str | None, start: datetime | None,
               end: datetime | None) -> list[Path]:
        base = self.root / table
        if not base.is_dir():
            return []
        parts = [base / f"{label}={_part(key)}"] if key is not None else sorted(base.glob(f"{label}=*"))
        lo = start.astimezone(UTC).date() if start else date.min
        hi = end.astimezone(UTC).date() if end else date.max
        files: list[Path] = []
        for part in parts:
            for day_dir in sorted(part.glob("day=*")):
                day = day_dir.name.removeprefix("day=")
                if day == "none":
                    if start is None and end is None:
                        files.extend(sorted(day_dir.glob("*.parquet")))
                    continue
                if lo <= date.fromisoformat(day) <= hi:
                    files.extend(sorted(day_dir.glob("*.parquet")))
        return files


def _concat(files: list[Path]) -> pd.DataFrame:
    frames = [pq.read_table(f).to_pandas() for f in files]
    for frame in frames:  # categories differ between files: compare as plain values
        for col in frame.columns:
            if isinstance(frame[col].dtype, pd.CategoricalDtype):
                frame[col] = frame[col].astype("string")
    return pd.concat(frames, ignore_index=True)


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    out = frame.copy()
    if "timestamp" in out:
        out["timestamp"] = out["timestamp"].map(lambda t: None if pd.isna(t) else t.isoformat())
    rows = out.astype(object).where(out.notna(), None).to_dict("records")
    return [{str(k): v for k, v in row.items()} for row in rows]


def open_store(root: Path | str) -> TelemetryStore:
    """A store at `root`; an InputError, not a traceback, when the folder cannot be used."""
    try:
        return TelemetryStore(root)
    except OSError as exc:
        raise InputError(f"cannot use the store folder: {exc.strerror}", source=str(root)) from None
