"""Readings dated out of time order: a host whose clock stepped back dates a later reading before earlier ones, and
sorted by its date it reads as a counter restart followed by the same errors counted again. A counter that drops is
a restart only where the readings around it cannot be put in order: the reading before the drop is one taken later
when the reading after it lies between its neighbours on every counter (nothing drops from the one before it to the
one after it, and each counter that drops held counts before, which a restart from zero would not keep)."""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
import pandas as pd

from .. import format as fmt
from ..metrics import COUNTERS
from ..times import ns
from .prepared import KEYS, floats_at, key_codes, link_keys
from .restarts import counter_drops, series_order
from .rows import per_link_rows


def stepped_back(links: pd.DataFrame, nodes: Collection[str], *,
                 rows: np.ndarray | None = None) -> tuple[np.ndarray | None, dict[str, list[str]]]:
    """Of `nodes` (those whose counters seem to restart), the rows of readings whose date is earlier than when they
    were taken (a mask over `links`; None when none), and per node what is said of them: their counts are left out
    of the rates, never counted twice. `rows`: the rows the rates read (`per_link_rows`; default: computed here)."""
    if not len(links) or "node_id" not in links.columns or not nodes:
        return None, {}
    counters = [c for c in COUNTERS if c in links.columns]
    column = links["node_id"]
    codes, names = (column.cat.codes.to_numpy(), column.cat.categories) \
        if isinstance(column.dtype, pd.CategoricalDtype) else pd.factorize(column.astype("string"))
    asked = np.isin(codes, np.flatnonzero([str(n) in set(nodes) for n in names]))
    rows = per_link_rows(links) if rows is None else rows
    if rows is not None:
        asked[np.setdiff1d(np.arange(len(links)), rows, assume_unique=True)] = False
    mine = np.flatnonzero(asked)
    if not len(mine):
        return None, {}
    t_all = ns(links["timestamp"])
    series = link_keys([key_codes(links[c], mine) if c in links.columns else None for c in KEYS])
    at = t_all[mine]
    order = series_order(series, at)
    if order is not None:
        mine, series, at = mine[order], series[order], at[order]
    values = {c: floats_at(links[c], mine) for c in counters}
    fell = np.unique(np.concatenate([counter_drops(series, v) for v in values.values()] or [np.zeros(0, np.int64)]))
    if not len(fell):
        return None, {}
    node = codes[mine]
    drop = np.zeros(len(links), dtype=bool)
    said: dict[str, list[str]] = {}
    by_node = np.argsort(node, kind="stable")  # each node's rows, found once, not by a pass over all per drop
    bounds = np.searchsorted(node[by_node], np.arange(len(names) + 1))
    for n, after in sorted({(int(node[r]), int(at[r])) for r in fell.tolist()}):
        rows = by_node[bounds[n]:bounds[n + 1]]
        times = np.unique(at[rows])
        p = int(np.searchsorted(times, after)) - 1  # the reading just before the drop
        if p < 1 or p + 1 >= len(times):
            continue
        near = [_reading(series[rows], {c: v[rows] for c, v in values.items()}, at[rows] == times[p + k])
                for k in (-1, 0, 1)]
        before, dated, later = (frame.reindex(near[0].index.union(near[1].index).union(near[2].index))
                                for frame in near)
        down = (dated > later).to_numpy()
        if not down.any() or (later < before).to_numpy().any() or (down & ~(before > 0).to_numpy()).any():
            continue
        drop |= (codes == n) & (t_all == times[p])
        said.setdefault(str(names[n]), []).append(
            f"the reading dated {fmt.when(_utc(times[p]))} holds counts above the one dated "
            f"{fmt.when(_utc(times[p + 1]))}: it was taken later than its date says (the host's clock stepped back), "
            "so it is left out of the rates rather than read as a counter restart")
    return (drop if drop.any() else None), said


def _reading(series: np.ndarray, values: dict[str, np.ndarray], at: np.ndarray) -> pd.DataFrame:
    """One node's reading at one time (its rows `at`): a row per link series, a column per counter."""
    frame = pd.DataFrame({c: v[at] for c, v in values.items()}, index=series[at])
    return frame[~frame.index.duplicated(keep="last")]


def _utc(when_ns: int) -> pd.Timestamp:
    return pd.Timestamp(when_ns, tz="UTC")
