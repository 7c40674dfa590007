"""One Xid reported by two sources counts once: the kernel log's line and DCGM's count of it, or two logs' copies
of one line."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..times import ns

MERGE_NS = 600 * 10**9  # one event seen by two sources (kernel log and DCGM) within this long is one event


def merge_sources(events: pd.DataFrame) -> pd.DataFrame:
    """One row per event: an Xid the kernel log and DCGM both report (within ten minutes) counts once, the copy that
    says more (its stated severity and subcode) kept. Lines of other GPUs (another bus where no index names them) or
    that state another severity or subcode are other events, whatever files they come from."""
    if len(events) < 2 or "source" not in events.columns:
        return events
    t = ns(events["timestamp"])
    origin = events["source"].astype("string").fillna("").str.rsplit(":", n=1).str[0]
    gpu = events["gpu"].astype("Float64")
    bus = events["pci_bus_id"].astype("string").str.lower() if "pci_bus_id" in events.columns \
        else pd.Series(pd.NA, index=events.index, dtype="string")
    key = pd.DataFrame({"node": events["node_id"].astype("string").fillna(""), "gpu": gpu.fillna(-1),
                        "bus": bus.where(gpu.isna(), "").fillna(""),  # a line naming its GPU by bus alone
                        "kind": events["kind"].astype("string").fillna(""),
                        "code": events["code"].astype("Float64").fillna(-1)}).groupby(
        ["node", "gpu", "bus", "kind", "code"], sort=False).ngroup().to_numpy()
    said = {c: (events[c].astype("string").str.lower().fillna("").to_numpy(object) if c in events.columns
                else np.full(len(events), "", dtype=object)) for c in ("severity", "subcode")}
    stated = (said["severity"] != "") | (said["subcode"] != "")
    order = np.lexsort((t, key))
    where = origin.to_numpy(object)
    keep = np.ones(len(events), dtype=bool)
    cluster: list[int] = []  # the rows taken as one event so far: one per source, close in time, agreeing

    def close(rows: list[int]) -> None:
        if len(rows) > 1:  # the copy that says most is kept: the first that states its severity or subcode
            best = next((r for r in rows if stated[r]), rows[0])
            keep[[r for r in rows if r != best]] = False

    for i in order.tolist():
        last = cluster[-1] if cluster else None
        joins = last is not None and key[i] == key[last] and t[i] - t[last] <= MERGE_NS \
            and where[i] not in {where[r] for r in cluster} \
            and all(v[i] == "" or all(v[r] in ("", v[i]) for r in cluster) for v in said.values())
        if not joins:
            close(cluster)
            cluster = []
        cluster.append(i)
    close(cluster)
    return events if keep.all() else events[keep]
