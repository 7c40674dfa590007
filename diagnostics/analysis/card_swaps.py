"""A GPU replaced between readings: the index stays, the card (its UUID) is another, and its counters are its own
from zero. Rated across the swap, the new card's lifetime totals would read as errors of the old one's links within
the window; its links are rated from the first reading of the new card on."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import format as fmt
from ..times import ns
from .prepared import key_codes


def swapped_cards(links: pd.DataFrame) -> tuple[np.ndarray | None, dict[str, list[str]]]:
    """The rows read of a GPU's card before its newest one took its index (a mask over `links`; None when none), and
    per node what is said of each swap. Rows that name no UUID are kept: they say nothing of the card."""
    if not len(links) or "gpu_uuid" not in links.columns or "gpu" not in links.columns:
        return None, {}
    named = np.flatnonzero(links["gpu_uuid"].notna().to_numpy() & links["gpu"].notna().to_numpy())
    if not len(named):
        return None, {}
    node = key_codes(links["node_id"], named).astype(np.int64)
    gpu = key_codes(links["gpu"], named).astype(np.int64)
    card = key_codes(links["gpu_uuid"], named).astype(np.int64)
    owner = node * (int(gpu.max()) + 1) + gpu
    pairs = np.unique(np.stack([owner, card]), axis=1)
    owners, cards = np.unique(pairs[0], return_counts=True)
    if (cards < 2).all():
        return None, {}
    t = ns(links["timestamp"])
    drop = np.zeros(len(links), dtype=bool)
    said: dict[str, list[str]] = {}
    for o in owners[cards > 1].tolist():
        mine = named[owner == o]
        order = np.argsort(t[mine], kind="stable")
        mine = mine[order]
        uuids = links["gpu_uuid"].to_numpy(object)[mine]
        changed = np.flatnonzero(uuids[1:] != uuids[:-1]) + 1
        if not len(changed):
            continue
        start = t[mine[changed[-1]]]
        if start == t[mine[changed[-1] - 1]]:  # two cards at one time: one header is damaged, which is said there
            continue
        row = mine[0]
        same = (links["node_id"].to_numpy(object) == links["node_id"].iloc[row]) \
            & (links["gpu"].to_numpy(np.float64, na_value=np.nan) == float(links["gpu"].iloc[row]))
        drop |= same & (t < start)
        said.setdefault(str(links["node_id"].iloc[row]), []).append(
            f"GPU {int(links['gpu'].iloc[row])} is another card from {fmt.when(pd.Timestamp(start, tz='UTC'))} "
            f"(UUID {uuids[changed[-1] - 1]} -> {uuids[changed[-1]]}): its counters are rated from then")
    return (drop if drop.any() else None), said
