"""What an ingested file leaves in the store beside its manifest row: its samples as Parquet parts, one folder per
key (node or job) and UTC day, each part catalogued; its events, topology, GPUs and nodes in the database; and the
dcgm Xid series' last values, carried from one ingest to the next so that a change is an event."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

import pandas as pd
import sqlite_utils

from ..ingest.base import IngestResult
from ..ingest.summary import nodes as summary_nodes
from ..tables import LINK_IDENTITY, LINK_SAMPLES, STEP_SAMPLES, TableSchema, as_text, job_nodes
from .busy import Bars
from .catalog import Catalog
from .parts import PART_TABLES, write_part
from .records import note_nodes, write_gpus, write_rows

LINK_ORDER = ("gpu", "link_type", "link", "lane")  # a link's rows together within a node's part
PARTED = {"link_samples": (LINK_SAMPLES, LINK_ORDER), "step_samples": (STEP_SAMPLES, ())}  # a part's rows' order


NO_JOB = ""  # the catalog key of step samples that name no job: no job id is empty, so none is taken for one


def _part(value: object) -> str:
    return quote(str(value), safe="") or "_"


KEY_BYTES = 240  # a key's folder name (`node=` and the key, quoted) within the 255 bytes a file system takes


def unkeyable(result: IngestResult) -> str | None:
    """Why the result's readings cannot be kept, or None: a node or job named too long for the folder a store keeps
    its readings in (a traceback from the file system before)."""
    for name, label in PART_TABLES.items():
        frame = result.tables.get(name)
        column = f"{label}_id"
        if frame is None or not len(frame) or column not in frame.columns:
            continue
        for key in as_text(frame[column]).dropna().unique():
            size = len(f"{label}={_part(key)}".encode())
            if size > KEY_BYTES:
                return (f"{label} {str(key)[:40]!r}... ({len(str(key)):,} characters) is too long a name: the store "
                        f"keeps each {label}'s readings in a folder named after it, here {size:,} bytes as a file "
                        f"name, where at most {KEY_BYTES} fit; give a shorter name"
                        + (" with --node" if label == "node" else ""))
    return None


def _day(ts: pd.Series) -> pd.Series:
    """The UTC day of each time as YYYY-MM-DD, `none` for NaT (formatted once per distinct day)."""
    days = ts.dt.floor("D")
    names = {d: ("none" if pd.isna(d) else d.strftime("%Y-%m-%d")) for d in days.unique()}
    return days.map(names).astype("string").fillna("none")


def xid_state(db: sqlite_utils.Database) -> dict[tuple[Any, ...], float]:
    """The dcgm Xid series' last values from earlier ingests, so a change in the next scrape is an event."""
    table = db.table("xid_last")
    if not table.exists():
        return {}
    def unset(v: int) -> int | None:  # NULL is never equal to NULL in a key, so -1 stands for "none"
        return None if v == -1 else v

    return {(r["kind"], r["node_id"], unset(r["gpu"]), unset(r["code"])): float(r["value"]) for r in table.rows}


def keep_xid_state(db: sqlite_utils.Database, xid_last: dict[tuple[Any, ...], float]) -> None:
    """The Xid series' last values after an ingest, for the next (in the caller's transaction)."""
    db.table("xid_last").upsert_all(
        [{"kind": k[0], "node_id": k[1], "gpu": -1 if k[2] is None else k[2],
          "code": -1 if k[3] is None else k[3], "value": v} for k, v in xid_last.items()],
        pk=("kind", "node_id", "gpu", "code"))


def write_result(db: sqlite_utils.Database, catalog: Catalog, root: Path, result: IngestResult, sha: str,
                 touched: dict[str, set[str]], ingest: int, busy: Bars | None = None) -> None:
    """One file's tables written (in the caller's transaction): its samples as parts under `root`, catalogued and
    their keys noted in `touched` (compacted after the ingest), its other rows in the database. `ingest`: the
    store's count of ingests with this one, which orders its benchmark runs after those stored before. `busy`: the
    limits that set a part's busy links apart (busy.py)."""
    _write_parts(catalog, root, result["link_samples"], LINK_SAMPLES, "node_id", sha, PARTED["link_samples"][1],
                 touched, busy)
    _write_parts(catalog, root, _runs_of(result["step_samples"], sha, ingest), STEP_SAMPLES, "job_id", sha,
                 PARTED["step_samples"][1], touched)
    write_rows(db, "events", result["events"])
    write_rows(db, "topology", result["topology"])
    write_gpus(db, result["gpus"])
    note_nodes(db, summary_nodes(result))


def _runs_of(steps: pd.DataFrame, sha: str, ingest: int) -> pd.DataFrame:
    """Step samples whose benchmark runs are this ingest's own: a run's file and line (every paste's is `<stdin>:N`)
    with the file's hash, so two ingests' runs are never one, and the ingest that took them in."""
    if "run" not in steps.columns or not steps["run"].notna().any():
        return steps
    named = steps["run"].notna()
    return steps.assign(run=steps["run"].astype("string") + f"@{sha[:16]}",  # no run (NA) stays none
                        ingested=pd.array([ingest if n else None for n in named], dtype="Int64"))


def _write_parts(catalog: Catalog, root: Path, frame: pd.DataFrame, schema: TableSchema, key: str, sha: str,
                 order: tuple[str, ...], touched: dict[str, set[str]], busy: Bars | None = None) -> None:
    """One table's rows as one immutable part per key and day, named by the input's hash."""
    if not len(frame):
        return
    table, label = schema.name, PART_TABLES[schema.name]
    frame = schema.conform(frame)
    keys = as_text(frame[key]).fillna(NO_JOB if key == "job_id" else "unknown")
    for (value, day), part in frame.groupby([keys, _day(frame["timestamp"])], sort=False, observed=True):
        folder = root / table / f"{label}={_part(value)}" / f"day={day}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{sha[:20]}.parquet"
        info = write_part(path, part.reset_index(drop=True), schema, order,
                          directory=LINK_IDENTITY if table == "link_samples" else (), busy=busy)
        catalog.add(table, str(value), str(day), path, info)
        touched.setdefault(table, set()).add(str(value))
        if table == "step_samples":
            catalog.add_job_nodes(str(value), job_nodes(part), info.t_min, info.t_max)
            if value == NO_JOB:  # benchmark runs: a node's are read without the others'
                catalog.add_part_nodes(path, job_nodes(part))
