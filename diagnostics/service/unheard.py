"""A node the source holds link readings of, none of them in the window asked: its answer says where its readings
run (a window ending before the first is not a node never measured), and is incomplete, as a sweep over that window
calls its view incomplete for the same node."""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np

from .. import format as fmt
from ..model import Diagnosis
from ..times import ns, utc_ns
from .source import Window

NO_TIME = np.iinfo(np.int64).min


def starts_after_end(node: str, got: Window) -> datetime | None:
    """The node's first link reading, when it comes after the window's end (none of its readings is before it)."""
    oldest = got.oldest.get(node)
    return oldest if oldest is not None and got.end is not None and oldest > got.end else None


def before_readings(diagnosis: Diagnosis, got: Window, *, why: str) -> Diagnosis:
    """A diagnosis of a window that ends before the node's first link reading: said as that, with where its readings
    run and a window that holds them as what to do, not as a node whose counters were never collected."""
    node = diagnosis.node_id
    first = starts_after_end(node, got)
    if first is None or got.end is None:
        return diagnosis
    note = (f"{node} has {_span(first, got.newest.get(node, first))}, none before the window's end at "
            f"{fmt.when(got.end)} ({why}): its fabric health then is unknown, not healthy")
    blind = f"no link telemetry for {node}:"
    kept = [w for w in diagnosis.warnings if not w.startswith(blind)]
    update: dict[str, object] = {"warnings": [note, *kept]}
    if not diagnosis.fault_detected and not diagnosis.findings:
        update["repair_action"] = (f"Ask for a window that holds its readings: an end at or after {fmt.when(first)} "
                                   "(`--end`), or none for its newest")
    return diagnosis.model_copy(update=update)


def unheard(node: str, got: Window, span: timedelta) -> str | None:
    """Why the node's answer is incomplete: the source holds its link readings, none in the `span` before the window's
    end (the span a sweep reads, whose view calls such a node silent); None when one is there, none is held, or they
    could not be read (said as that)."""
    newest = got.newest.get(node)
    if newest is None or got.end is None or node in got.unreadable:
        return None
    end_ns = utc_ns(got.end)
    start_ns = end_ns - int(span.total_seconds() * 1e9)
    links = got.tables.get("link_samples")
    if links is not None and len(links) and "node_id" in links.columns:
        mine = (links["node_id"].astype("string") == node).to_numpy(bool, na_value=False)
        t = ns(links["timestamp"][mine])
        if ((t == NO_TIME) | ((t > start_ns) & (t <= end_ns))).any():
            return None
    first = starts_after_end(node, got)
    where = f"its readings start at {fmt.when(first)}" if first is not None else \
        f"it has {_span(got.oldest.get(node, newest), newest)}"
    return f"{node} has no link reading in the {fmt.hours(span.total_seconds() / 3600)} before {fmt.when(got.end)}: " \
        + where


def _span(first: datetime, last: datetime) -> str:
    """Where a node's link readings run."""
    if first == last:
        return f"link readings at {fmt.when(first)} alone"
    return f"link readings from {fmt.when(first)} to {fmt.when(last)}"
