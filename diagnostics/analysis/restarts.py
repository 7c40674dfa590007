"""When counters last restarted (a GPU reset, a driver reload, a reboot): what clears a fatal event from before the
window. A reading below the one before it on the same series is a restart."""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
import pandas as pd

from .prepared import KEYS, floats_at, key_codes, link_keys
from .rows import node_pieces, per_link_rows

PIECE_ROWS = 1_000_000  # a piece's arrays stay small enough to be reused, not mapped afresh, from piece to piece


def last_restarts(links: pd.DataFrame, t: np.ndarray, nodes: Collection[str], end_ns: int, *,
                  rows: np.ndarray | None = None, piece_rows: int = PIECE_ROWS) -> dict[str, dict[int | None, int]]:
    """When each GPU of these nodes last restarted its counters up to `end_ns` (a counter reading below the one
    before on the same link: a GPU reset, a driver reload, a reboot), and each node's (None): when all of its GPUs
    had (a reboot). One pass over the table for every node asked, a few nodes' rows at a time, over the rows the
    rates read (`per_link_rows`, given as `rows`; default: computed here): a link's lane rows, the far end of a
    PCIe link or a GPU total repeating its links are no series of the link's own counters."""
    if links.empty or not nodes:
        return {}
    rows = per_link_rows(links) if rows is None else rows
    read = None
    if rows is not None:
        read = np.zeros(len(links), dtype=bool)
        read[rows] = True
    asked = set(nodes)
    out: dict[str, dict[int | None, int]] = {}
    for lo, hi in node_pieces(links, piece_rows):
        piece = links if (lo, hi) == (0, len(links)) else links.iloc[lo:hi]
        out.update(_restarts(piece, t[lo:hi], asked, end_ns, None if read is None else read[lo:hi]))
    return out


def _restarts(links: pd.DataFrame, t: np.ndarray, asked: set[str], end_ns: int,
              read: np.ndarray | None) -> dict[str, dict[int | None, int]]:
    """`last_restarts` over rows holding whole nodes, of those `read` (all without it)."""
    column = links["node_id"]
    if isinstance(column.dtype, pd.CategoricalDtype):
        codes, names = column.cat.codes.to_numpy(), column.cat.categories
    else:
        codes, names = pd.factorize(column.astype("string"))
    wanted = np.flatnonzero([str(n) in asked for n in names])
    chosen = np.isin(codes, wanted) & (t <= end_ns)
    if read is not None:
        chosen &= read
    mine = np.flatnonzero(chosen)
    gpu = floats_at(links["gpu"], mine)
    mine, gpu = mine[~np.isnan(gpu)], gpu[~np.isnan(gpu)]
    if len(mine) == 0:
        return {}
    node = codes[mine].astype(np.int64)
    gpu_i = gpu.astype(np.int64)
    # one key per link, as the rates key them (a lane a reader counts on its own is a series of its own)
    series = link_keys([key_codes(links[c], mine) if c in links.columns else None for c in KEYS])
    at = t[mine]
    order = series_order(series, at)
    if order is not None:
        mine, node, gpu_i, series, at = mine[order], node[order], gpu_i[order], series[order], at[order]
    gpu = gpu_i
    drops = [counter_drops(series, floats_at(links[c], mine))
             for c in ("replay", "crc_flit", "crc_data", "recovery", "symbol_errors") if c in links.columns]
    at_drop = np.concatenate(drops) if drops else np.zeros(0, dtype=np.int64)
    if not len(at_drop):
        return {}
    width = int(gpu.max()) + 1
    pairs, which = np.unique(node[at_drop] * width + gpu[at_drop], return_inverse=True)
    latest = np.full(len(pairs), np.iinfo(np.int64).min)
    np.maximum.at(latest, which, at[at_drop])
    by_code: dict[int, dict[int | None, int]] = {}
    for pair, when in zip(pairs.tolist(), latest.tolist(), strict=True):
        by_code.setdefault(pair // width, {})[pair % width] = when
    heads = np.flatnonzero(np.r_[True, (node[1:] != node[:-1]) | (gpu[1:] != gpu[:-1])])  # sorted by node, GPU
    gpus: dict[int, set[int]] = {}
    for n, g in zip(node[heads].tolist(), gpu[heads].tolist(), strict=True):
        gpus.setdefault(int(n), set()).add(int(g))
    for n, restarted in by_code.items():
        if set(restarted) >= gpus[n]:
            restarted[None] = min(v for key, v in restarted.items() if key is not None)
    return {str(names[n]): restarted for n, restarted in by_code.items()}


def counter_drops(series: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The rows whose reading lies below the series' reading before it, its gaps (NaN) skipped: a reading against
    the one just before it, and only a reading after a gap against the last one before the gap (most rows are
    compared in place, not gathered first without their gaps)."""
    read = ~np.isnan(values)
    fell = np.flatnonzero(values[1:] < values[:-1]) + 1  # NaN on either side compares False
    before = fell - 1
    after_gap = np.flatnonzero(read[1:] & ~read[:-1]) + 1
    if len(after_gap):
        seen = np.flatnonzero(read)
        last = np.searchsorted(seen, after_gap) - 1  # the newest reading before the gap, if any
        after_gap, last = after_gap[last >= 0], seen[last[last >= 0]]
        lower = values[after_gap] < values[last]
        fell, before = np.concatenate([fell, after_gap[lower]]), np.concatenate([before, last[lower]])
    return fell[series[fell] == series[before]]


def series_order(series: np.ndarray, t: np.ndarray) -> np.ndarray | None:
    """The order of rows by series, then time; None when they already come so, series by series in time order (the
    store's tables), since the order of the runs does not matter to neighbours within a run."""
    if len(series) < 2:
        return None
    change = series[1:] != series[:-1]
    if (change | (t[1:] > t[:-1])).all():
        heads = np.concatenate(([0], np.flatnonzero(change) + 1))
        if len(np.unique(series[heads])) == len(heads):
            return None
    return np.lexsort((t, series))
