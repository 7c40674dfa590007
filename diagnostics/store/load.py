"""Tables for the history analysis: from files and folders of any ingestable format, or from the store."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from pathlib import Path

import pandas as pd

from ..analysis.fleet import history_needed
from ..config.thresholds import Thresholds, load_thresholds
from ..errors import InputError
from ..model import Diagnosis
from ..tables import TABLES
from .sources import read_sources
from .telemetry import StoreWindow, TelemetryStore, open_store

CORRELATION_SPAN = timedelta(days=1)  # how much step-time history a job's correlation wants


def load_inputs(paths: Iterable[str | Path], *, node_id: str | None = None) -> tuple[
        dict[str, pd.DataFrame], dict[str, str], list[str]]:
    """Every table the inputs (files, folders) hold, concatenated; the platforms their inventory files give
    (`nodes.csv` and the like); warnings."""
    missing = [str(p) for p in paths if not Path(p).exists()]
    if missing:
        raise InputError("file or folder not found", source=missing[0])
    outcomes = read_sources(paths, node_id=node_id)
    results = [o.result for o in outcomes if o.result is not None]
    warnings = [f"{o.name}: {o.error}" for o in outcomes if o.status == "error"]
    warnings += [str(w) for r in results for w in r.warnings]
    inventory = {str(n): str(p) for o in outcomes if o.nodes is not None
                 for n, p in zip(o.nodes["node_id"], o.nodes["platform"], strict=True) if isinstance(p, str)}
    tables: dict[str, pd.DataFrame] = {}
    for name, schema in TABLES.items():
        frames = [r[name] for r in results if name in r.tables and not r[name].empty]
        if frames:
            plain = [f.astype({c: "string" for c in f.columns if isinstance(f[c].dtype, pd.CategoricalDtype)})
                     for f in frames] if len(frames) > 1 else frames
            tables[name] = schema.conform(pd.concat(plain, ignore_index=True))
    if not tables:
        raise InputError("no telemetry read from the inputs" + (f": {'; '.join(warnings[:3])}" if warnings else ""),
                         source=", ".join(o.name for o in outcomes[:3]) or "inputs")
    return tables, inventory, warnings


def node_span(window: timedelta, thresholds: Thresholds | None = None,
              history: timedelta = CORRELATION_SPAN) -> timedelta:
    """How much history one node's diagnosis reads: what the rules need, and a day for the job correlation."""
    return max(history, window * 4, history_needed(window, thresholds or load_thresholds()))


def read_node(store: TelemetryStore, node_id: str, *, end: datetime | None, window: timedelta,
              thresholds: Thresholds | None = None, history: timedelta = CORRELATION_SPAN) -> StoreWindow:
    """The node's window (and that of the nodes sharing its jobs) from the store; an unknown node is an error."""
    known = store.nodes()
    if node_id not in known:
        listed = ", ".join(known[:10]) or "none"
        raise InputError(f"no node {node_id!r} in the store (nodes: {listed})", source=str(store.root))
    return store.read_window(end=end, span=node_span(window, thresholds, history), nodes=[node_id], peers=True)


def load_store(root: str | Path | TelemetryStore, node_id: str, *, end: datetime | None, window: timedelta,
               history: timedelta = CORRELATION_SPAN, thresholds: Thresholds | None = None) -> dict[str, pd.DataFrame]:
    """The node's samples (and those of the nodes sharing its jobs) over the span its analysis needs."""
    store = root if isinstance(root, TelemetryStore) else open_store(root)
    return read_node(store, node_id, end=end, window=window, thresholds=thresholds, history=history).tables


def stored_diagnosis(diagnosis: Diagnosis, got: StoreWindow, window: timedelta) -> Diagnosis:
    """A diagnosis from the store's window with what the window could not show said in its warnings: a node
    silent since before the window, and readings without a time (no window can place them)."""
    node = diagnosis.node_id
    notes = []
    newest = got.newest.get(node)
    if got.end is not None and newest is not None and newest <= got.end - window:
        notes.append(f"no link reading from {node} since {newest:%Y-%m-%d %H:%M} UTC: the window ends at the "
                     f"store's newest reading ({got.end:%Y-%m-%d %H:%M} UTC)")
    if got.undated.get(node):
        notes.append(f"{got.undated[node]} link readings of {node} in the store have no time (ingested without "
                     "--at): no window can place them; ingest the file again with --at TIME or --at mtime")
    if notes:
        diagnosis = diagnosis.model_copy(update={"warnings": [*diagnosis.warnings, *notes]})
    return diagnosis

