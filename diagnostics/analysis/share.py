"""A GPU's NVLinks under one load carry about the same traffic (a collective is spread over all of a GPU's links);
one carrying far less than its siblings while they are busy runs narrower (lanes down), which congestion never
does: congestion fills every link. Read from per-link throughput (dcgm-exporter's per-link NVLink bytes, or its
link-entity series), and said beside a flagged link's evidence; the share and the load are settings (assumed)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import format as fmt
from ..config.thresholds import Thresholds
from ..enums import LinkType


def traffic_notes(metrics: pd.DataFrame, thresholds: Thresholds) -> dict[tuple[str, int, int], str]:
    """(node, GPU, link) -> what the link's traffic says against its GPU's other NVLinks, where they are busy."""
    if not len(metrics) or not {"tx_bytes_per_s", "rx_bytes_per_s"} & set(metrics.columns):
        return {}
    nan = pd.Series(np.nan, index=metrics.index)
    traffic = np.fmax(pd.to_numeric(metrics.get("tx_bytes_per_s", nan), errors="coerce").to_numpy(float),
                      pd.to_numeric(metrics.get("rx_bytes_per_s", nan), errors="coerce").to_numpy(float))
    mine = (metrics["link_type"] == LinkType.NVLINK.value).to_numpy(bool, na_value=False) \
        & metrics["link"].notna().to_numpy() & metrics["gpu"].notna().to_numpy() & np.isfinite(traffic)
    if "lane" in metrics.columns:
        mine &= metrics["lane"].isna().to_numpy()
    if mine.sum() < 2:
        return {}
    rows = pd.DataFrame({"node": metrics["node_id"].astype("string").to_numpy()[mine],
                         "gpu": metrics["gpu"].to_numpy()[mine].astype(int),
                         "link": metrics["link"].to_numpy()[mine].astype(int), "traffic": traffic[mine]})
    rows["median"] = rows.groupby(["node", "gpu"])["traffic"].transform("median")
    rows["links"] = rows.groupby(["node", "gpu"])["traffic"].transform("size")
    busy, floor = thresholds.setting("nvlink_busy_bytes_per_s"), thresholds.setting("lane_group_share")
    low = rows[(rows["links"] >= 3) & (rows["median"] >= busy) & (rows["traffic"] < floor * rows["median"])]
    out: dict[tuple[str, int, int], str] = {}
    for node, gpu, link, own, median in zip(low["node"].tolist(), low["gpu"].tolist(), low["link"].tolist(),
                                            low["traffic"].tolist(), low["median"].tolist(), strict=True):
        out[(str(node), int(gpu), int(link))] = (
            f"carries {own / median:.0%} of the median traffic of GPU {gpu}'s NVLinks ({fmt.number(own / 1e9)} of "
            f"{fmt.number(median / 1e9)} GB/s) under the same load: a narrower link (lanes down), not congestion")
    return out
