"""Reading input files for an ingest, each by its reader: shared by `fabricbot ingest` with or without a store
and by the history analysis of files."""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from ..errors import FabricbotError
from ..ingest.base import IngestResult, IngestWarning, Source
from ..ingest.detect import choose
from ..ingest.summary import summarize

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
