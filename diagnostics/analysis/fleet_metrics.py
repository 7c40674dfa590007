"""Every link's metrics across a fleet (metrics.py on each piece's prepared rows), the table swept in pieces of a few
nodes on threads, and what a fleet's analysis reads off them: the PCIe lanes in error at either end, each node's
readings."""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import numpy as np
import pandas as pd

from ..config.thresholds import Thresholds
from ..enums import LinkType
from ..metrics import COUNTERS
from .ends import EndView
from .metrics import link_metrics
from .prepared import prepare_rows
from .rows import node_pieces

PIECE_ROWS = 4_000_000


def fleet_metrics(links: pd.DataFrame, t: np.ndarray, keep: np.ndarray | None, *, since_ns: int, end_ns: int,
             window: timedelta, thresholds: Thresholds, piece_rows: int,
             workers: int) -> tuple[pd.DataFrame, int, int]:
    """Every link's metrics over the window from the rows `keep` (`per_link_rows`), the table swept in pieces of a
    few nodes, `workers` at a time (numpy works outside the GIL; a piece's arrays stay small enough to be reused
    rather than paged in afresh)."""
    recent = t > since_ns
    if keep is not None:
        mask = np.zeros(len(t), dtype=bool)
        mask[keep] = True
        recent &= mask

    def piece(bounds: tuple[int, int]) -> tuple[pd.DataFrame, int, int]:
        lo, hi = bounds
        part = links if (lo, hi) == (0, len(links)) else links.iloc[lo:hi]
        chosen = recent[lo:hi]
        p = prepare_rows(part, t[lo:hi], None if chosen.all() else np.flatnonzero(chosen))
        return link_metrics(p, window=window, end_ns=end_ns, thresholds=thresholds), p.nseg, len(p.t)

    bounds = node_pieces(links, piece_rows)
    if len(bounds) == 1 or workers < 2:
        done = list(map(piece, bounds))
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            done = list(pool.map(piece, bounds))
    frames = [m for m, _, _ in done if len(m)]
    metrics = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0] if frames else pd.DataFrame()
    return metrics, sum(n for _, n, _ in done), sum(r for _, _, r in done)


def end_levels(metrics: pd.DataFrame, ends: Mapping[tuple[str, int], Mapping[Any, EndView]]) -> pd.DataFrame:
    """Each GPU PCIe link's lanes in error, at whichever end a reader saw them: two levels their rules judge, the
    lanes a dated status names (an earlier reading read it clear) and those only an undated one names; and the
    errors an end's receiver counted per hour, the busier end's (the rates read the GPU's own end alone, so errors
    the port above it received were no finding)."""
    pcie = np.flatnonzero((metrics["link_type"] == LinkType.PCIE.value).to_numpy(bool, na_value=False)
                          & metrics["gpu"].notna().to_numpy())  # one row per GPU: a few of the node's rows
    rows = metrics.iloc[pcie]
    keys = [(str(n), int(g)) for n, g in zip(rows["node_id"], rows["gpu"], strict=True)]
    levels = {}
    for name, dated in (("lanes_in_error", True), ("lanes_in_error_undated", False)):
        counts = {key: max([len(v.lanes) for v in views.values() if v.dated is dated] or [0])
                  for key, views in ends.items()}
        level = np.full(len(metrics), np.nan)
        level[pcie] = [counts.get(key, np.nan) for key in keys]
        levels[name] = level
    received = {key: max([v.received_per_hour for v in views.values() if v.received_per_hour is not None],
                         default=np.nan) for key, views in ends.items()}
    level = np.full(len(metrics), np.nan)
    level[pcie] = [received.get(key, np.nan) for key in keys]
    levels["pcie_errors_received"] = level
    return metrics.assign(**levels)


def counted_nodes(metrics: pd.DataFrame) -> set[str]:
    """The nodes with an error counter read on some link (a total, zero included): a lone reading of them holds
    totals; one of `nvidia-smi nvlink -s` holds link states and speeds, no counter at all."""
    columns = [c for c in (f"{m}_total" for m in COUNTERS) if c in metrics.columns]
    if metrics.empty or not columns:
        return set()
    read = metrics[columns].notna().any(axis=1).to_numpy()
    return {str(n) for n in metrics["node_id"].astype("string")[read].unique()}


def read_once(metrics: pd.DataFrame) -> dict[str, int]:
    """Per node whose links were read more than once, how many of its links' error counters were read once in the
    window (a cut second reading, an output of some GPUs): totals, no rates, so those links are not judged."""
    columns = [c for c in (f"{m}_total" for m in COUNTERS) if c in metrics.columns]
    if metrics.empty or not columns:
        return {}
    node = metrics["node_id"].astype("string")
    once = (metrics["readings"] < 2).to_numpy() & metrics[columns].notna().any(axis=1).to_numpy()
    rated = node[(metrics["readings"] >= 2).to_numpy()].unique()
    counts = node[once & node.isin(rated).to_numpy(bool, na_value=False)].value_counts()
    return {str(k): int(v) for k, v in counts.items()}


def max_samples(metrics: pd.DataFrame) -> dict[str, int]:
    """Each node's most readings on one link in the window: one reading a link gives totals, not rates."""
    if metrics.empty:
        return {}
    most = metrics.groupby(metrics["node_id"].astype("string"), observed=True)["readings"].max()
    return {str(k): int(v) for k, v in most.items()}
