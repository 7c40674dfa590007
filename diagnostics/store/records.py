"""What an ingest writes to the store's database beside the Parquet parts: events and topology rows, the GPUs a file
names (what it says of a GPU replaces only that), the nodes it saw and an inventory's node records. Each function
runs in the caller's transaction."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import pandas as pd
import sqlite_utils

from ..ingest.base import IngestResult
from ..ingest.snapshot import CUT_OFF, CUT_SHORT
from .sources import link_nodes


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """A table's rows as the database keeps them: times as ISO text, missing values as NULL."""
    out = frame.copy()
    if "timestamp" in out:
        out["timestamp"] = out["timestamp"].map(lambda t: None if pd.isna(t) else t.isoformat())
    rows = out.astype(object).where(out.notna(), None).to_dict("records")
    return [{str(k): v for k, v in row.items()} for row in rows]


def write_rows(db: sqlite_utils.Database, table: str, frame: pd.DataFrame) -> None:
    """The rows, a column the table lacks added (a store written before it). A true-or-false column no row fills
    is left to rows that fill it: added empty it would be text, and a later `1` in it read back as `'1'`."""
    if len(frame):
        unfilled = [c for c in frame.columns if str(frame[c].dtype) == "boolean" and not frame[c].notna().any()]
        db.table(table).insert_all(records(frame.drop(columns=unfilled)), alter=True)
        db.table(table).create_index(["node_id"], if_not_exists=True)


def write_gpus(db: sqlite_utils.Database, frame: pd.DataFrame) -> None:
    """The GPUs a file names: what it says of a GPU replaces only that (an inventory's serial stays when a scrape
    that names none comes after); a GPU named by bus id alone is kept by its node and bus."""
    said: dict[tuple[str, ...], list[dict[str, Any]]] = {}  # rows by the columns they give
    for row in records(frame):
        given = {k: v for k, v in row.items() if v is not None or k in ("node_id", "gpu")}
        if given["gpu"] is None:
            _write_unindexed(db, given)
            continue
        said.setdefault(tuple(sorted(given)), []).append(given)
    for rows in said.values():
        db.table("gpus").upsert_all(rows, pk=("node_id", "gpu"), alter=True)


def _write_unindexed(db: sqlite_utils.Database, given: dict[str, Any]) -> None:
    """A GPU its input names by bus id alone (`nvidia-smi -q -i N` prints no index), kept by its node and bus
    as the file's own answer keeps it; what the file says replaces what an earlier one said of that bus."""
    bus = given.get("pci_bus_id")
    if bus is None:
        return  # neither index nor bus: nothing places it, nor finds it again
    table = db.table("gpus")
    if table.exists():
        table.add_missing_columns([given])
        old = list(db.query("select * from gpus where node_id = ? and gpu is null and pci_bus_id = ?",
                            [given["node_id"], bus]))
        if old:
            db.execute("delete from gpus where node_id = ? and gpu is null and pci_bus_id = ?",
                       [given["node_id"], bus])
            given = {**{k: v for k, v in old[0].items() if v is not None}, **given}
    table.insert(given, pk=("node_id", "gpu"), alter=True)


def read_whole(db: sqlite_utils.Database, result: IngestResult) -> None:
    """A whole input's nodes no longer have their newest readings from one cut short (`sources.cut_short`)."""
    names = link_nodes(result)
    if names and "reading" in db.table("nodes").columns_dict:
        marks = ", ".join("?" * len(names))
        db.execute(f"update nodes set reading = null where reading in (?, ?) and node_id in ({marks})",
                   [CUT_SHORT, CUT_OFF, *names])


def write_nodes(db: sqlite_utils.Database, frame: pd.DataFrame) -> None:
    """An inventory's node records: a platform, serial or rack it gives replaces the stored one. A scheduler
    state comes with its reason (none, if the file gives none) and since when: the file's time, else the first
    ingest that saw it; a new state reopens a hold someone ended (store/maintenance.py)."""
    note_nodes(db, frame["node_id"].astype(str).tolist())
    now = datetime.now(UTC).isoformat()
    for row in frame.to_dict("records"):
        given: dict[str, str | None] = {str(k): v for k, v in row.items()
                                        if k != "node_id" and isinstance(v, str) and v}
        if "state" in given:
            stored = db.table("nodes").get(str(row["node_id"]))
            same = (stored.get("state"), stored.get("state_reason")) == (given["state"], given.get("state_reason"))
            given.setdefault("state_reason", None)
            if not same:
                given.update(state_seen=now, hold_ended_at=None, hold_ended_by=None)
        if given:
            db.table("nodes").update(str(row["node_id"]), given, alter=True)


def note_nodes(db: sqlite_utils.Database, names: Iterable[str]) -> None:
    """The nodes a file's rows name: first seen now unless seen before, last seen now."""
    now = datetime.now(UTC).isoformat()
    nodes = db.table("nodes")
    for name in names:
        first = now
        if nodes.count_where("node_id = ?", [name]):
            first = nodes.get(name)["first_seen"]
        nodes.upsert({"node_id": name, "first_seen": first, "last_seen": now}, pk="node_id")
