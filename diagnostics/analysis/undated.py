"""Readings and events without a time (a paste with no `date` line): taken as read at the window's end, or at the
newest time the input has, so that a lone reading still says a link is down."""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pandas as pd

from ..times import ns, utc_ns


def events_end(events: pd.DataFrame) -> int:
    if events.empty:
        return int(pd.Timestamp.now(tz="UTC").value)
    newest = pd.to_datetime(events["timestamp"], utc=True, format="mixed").max()
    return int(pd.Timestamp.now(tz="UTC").value if pd.isna(newest) else newest.value)


NO_TIME = np.iinfo(np.int64).min


def taken_at_end(events: pd.DataFrame, t: np.ndarray, links: pd.DataFrame,
           end: datetime | None) -> tuple[pd.DataFrame, np.ndarray, dict[str, tuple[int, int]]]:
    """Readings and events without a time (a paste with no `date` line) taken as read at the window's end (or the
    newest time the input has): a lone reading still says a link is down. -> events, times, per node how many
    readings and how many events."""
    undated: dict[str, tuple[int, int]] = {}
    missing = t == NO_TIME
    stated = [int(t[~missing].max())] if (~missing).any() else []
    ev_t = ns(events["timestamp"]) if len(events) else np.zeros(0, dtype=np.int64)
    ev_missing = ev_t == NO_TIME
    stated += [int(ev_t[~ev_missing].max())] if (~ev_missing).any() else []
    if not missing.any() and not ev_missing.any():
        return events, t, undated
    stamp = utc_ns(end) if end is not None else max(stated) if stated else int(pd.Timestamp.now(tz="UTC").value)
    if missing.any():
        t = np.where(missing, stamp, t)
        for node, count in links.loc[missing, "node_id"].astype("string").value_counts().items():
            undated[str(node)] = (int(count), 0)
    if ev_missing.any():
        events = events.assign(timestamp=events["timestamp"].where(~ev_missing, pd.Timestamp(stamp, tz="UTC")))
        for node, count in events.loc[ev_missing, "node_id"].astype("string").value_counts().items():
            undated[str(node)] = (undated.get(str(node), (0, 0))[0], int(count))
    return events, t, undated
