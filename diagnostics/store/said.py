"""What reading a file said (its reader's warnings), kept at ingest for each node the file's readings are of, so an
analysis of the store says them as an analysis of the same file does: the readers run once, at ingest, and a
warning not kept then (several readings with no time between them, a series sampled twice at one time) would be
lost to every later answer."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import numpy as np
import pandas as pd
import sqlite_utils

from ..ingest.base import IngestResult
from ..times import ns

TABLE = "ingest_warnings"
NO_TIME = np.iinfo(np.int64).min


def _spans(result: IngestResult) -> dict[str, tuple[int | None, int | None]]:
    """Each node the result's rows name, with the times its dated rows span (None, None: no row of it has a time:
    a topology, an inventory's GPUs, readings kept without --at)."""
    spans: dict[str, tuple[int | None, int | None]] = {}
    for name, frame in result.tables.items():
        column = "node_ids" if name == "step_samples" else "node_id"
        if not len(frame) or column not in frame.columns:
            continue
        times = ns(frame["timestamp"]) if "timestamp" in frame.columns else np.full(len(frame), NO_TIME)
        rows = pd.DataFrame({"node": frame[column].astype("string").to_numpy(), "t": times})
        if column == "node_ids":  # a job's hosts, comma-separated
            rows = rows.assign(node=rows["node"].str.split(",")).explode("node")
            rows["node"] = rows["node"].astype("string").str.strip()
        rows = rows[rows["node"].notna().to_numpy(bool) & (rows["node"] != "").to_numpy(bool, na_value=False)]
        for node, t in rows.groupby("node", sort=True)["t"]:
            dated = t.to_numpy(np.int64)
            dated = dated[dated != NO_TIME]
            lo, hi = spans.get(str(node), (None, None))
            if len(dated):
                lo = int(dated.min()) if lo is None else min(lo, int(dated.min()))
                hi = int(dated.max()) if hi is None else max(hi, int(dated.max()))
            spans[str(node)] = (lo, hi)
    return spans


def keep(db: sqlite_utils.Database, sha256: str, result: IngestResult) -> None:
    """The file's reader warnings, one row per node its readings name and warning (in the caller's transaction)."""
    if not result.warnings:
        return
    rows: list[dict[str, Any]] = [{"sha256": sha256, "node_id": node, "first_ns": lo, "last_ns": hi, "seq": i,
                                   "said": str(w)}
                                  for node, (lo, hi) in _spans(result).items() for i, w in enumerate(result.warnings)]
    if rows:
        db.table(TABLE).insert_all(rows, pk=("sha256", "node_id", "seq"), replace=True, alter=True)


def keep_refused(db: sqlite_utils.Database, refused: list[str], stored: list[IngestResult]) -> None:
    """What an ingest said of the files it refused (`refused`, each 'file: why'), kept for every node the files it
    stored with them name, over their readings' span: analyzing those files says a refused one on each of their
    nodes' answers (it may have held that node's readings), so the store's answers over them say it too."""
    if not refused:  # most ingests: no file's rows to group
        return
    spans: dict[str, tuple[int | None, int | None]] = {}
    for result in stored:
        for node, (lo, hi) in _spans(result).items():
            was_lo, was_hi = spans.get(node, (lo, hi))
            spans[node] = (min((t for t in (lo, was_lo) if t is not None), default=None),
                           max((t for t in (hi, was_hi) if t is not None), default=None))
    rows: list[dict[str, Any]] = [{"sha256": f"refused:{said}", "node_id": node, "first_ns": lo, "last_ns": hi,
                                   "seq": 0, "said": said} for node, (lo, hi) in spans.items() for said in refused]
    if rows:
        db.table(TABLE).insert_all(rows, pk=("sha256", "node_id", "seq"), replace=True, alter=True)


def clear_refused(db: sqlite_utils.Database, stored: Collection[str]) -> None:
    """A file stored under the name of one an earlier ingest refused (the file mended and ingested again): that
    refusal is no longer said on any node's answers (in the caller's transaction)."""
    if not stored or TABLE not in db.table_names():
        return
    for name in sorted(set(stored)):
        head = f"refused:{name}: "
        db.execute(f"DELETE FROM [{TABLE}] WHERE substr(sha256, 1, ?) = ?", [len(head), head])


def said_of(db: sqlite_utils.Database, nodes: Collection[str] | None, start_ns: int | None,
            end_ns: int | None) -> dict[str, list[str]]:
    """Per node, what reading its files said when they were ingested, in the order they were: the files whose
    readings of it fall in (start, end], and those whose rows of it carry no time (every window is theirs)."""
    if TABLE not in db.table_names():
        return {}
    where: list[str] = []
    args: list[str | int] = []
    if nodes is not None:
        names = sorted({str(n) for n in nodes})
        if not names:
            return {}
        where.append(f"node_id in ({', '.join('?' * len(names))})")
        args.extend(names)
    if start_ns is not None and end_ns is not None:
        where.append("(first_ns is null or (last_ns > ? and first_ns <= ?))")
        args.extend([start_ns, end_ns])
    out: dict[str, list[str]] = {}
    for row in db.table(TABLE).rows_where(" and ".join(where) or None, args, order_by="rowid"):
        said = out.setdefault(str(row["node_id"]), [])
        if row["said"] not in said:
            said.append(str(row["said"]))
    return out
