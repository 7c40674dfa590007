"""Which link samples the rates read: a GPU's total over its links only where nothing per link carries its counters,
no lane a reader observed failing (it is named on its link instead), no PCIe device that is no GPU."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..enums import LinkType
from ..tables import COUNTERS


def per_link_rows(links: pd.DataFrame) -> np.ndarray | None:
    """Rows the rates read, or None for all. Dropped: a GPU's total over its links where the GPU's per-link rows
    carry every counter it carries (it would count each error twice; kept where it holds a counter they lack, as
    Blackwell's NVLink5 totals do beside the per-link replays), a lane a reader observed failing (`observed_lanes`
    puts it on its link), and a PCIe device that is no GPU."""
    drop = np.zeros(len(links), dtype=bool)
    if "gpu_total" in links.columns:
        total = links["gpu_total"].to_numpy(bool, na_value=False)
        if total.any():
            drop |= _repeated_totals(links, total)
    if "lane_error" in links.columns and "lane" in links.columns:
        drop |= links["lane_error"].notna().to_numpy() & links["lane"].notna().to_numpy()
    pcie = (links["link_type"] == LinkType.PCIE.value).to_numpy(bool, na_value=False)
    drop |= pcie & links["gpu"].isna().to_numpy()
    return np.flatnonzero(~drop) if drop.any() else None


def _repeated_totals(links: pd.DataFrame, total: np.ndarray) -> np.ndarray:
    """The GPU totals whose every counter the same GPU's per-link rows also carry."""
    node = pd.factorize(links["node_id"])[0].astype(np.int64)
    gpu = links["gpu"].to_numpy(np.float64, na_value=-1).astype(np.int64) + 1
    kind = pd.factorize(links["link_type"])[0].astype(np.int64)
    key = (node << 24) | (gpu << 8) | (kind + 1)
    per_link = ~total & links["link"].notna().to_numpy()
    covered = np.isin(key, np.unique(key[per_link])) & total  # a total beside per-link rows of its GPU
    for column in (*COUNTERS, "symbol_ber", "effective_ber"):
        if not covered.any():
            break
        if column not in links.columns:
            continue
        has = links[column].notna().to_numpy()
        own = covered & has
        if own.any():  # a total holding this counter repeats the links only if they hold it too
            covered[own] = np.isin(key[own], np.unique(key[per_link & has]))
    return covered


def observed_lanes(links: pd.DataFrame) -> dict[tuple[str, int], list[int]]:
    """(node, GPU) -> the PCIe lanes a reader saw failing (lspci's LaneErrStat): a lane is named only when seen."""
    if "lane_error" not in links.columns or "lane" not in links.columns:
        return {}
    seen = links[links["lane_error"].fillna(False).to_numpy(bool) & links["lane"].notna().to_numpy()
                 & links["gpu"].notna().to_numpy()]
    out: dict[tuple[str, int], list[int]] = {}
    for node, gpu, lane in zip(seen["node_id"].astype(str), seen["gpu"].astype(int), seen["lane"].astype(int),
                               strict=True):
        out.setdefault((node, gpu), [])
        if lane not in out[(node, gpu)]:
            out[(node, gpu)].append(lane)
    return {k: sorted(v) for k, v in out.items()}
