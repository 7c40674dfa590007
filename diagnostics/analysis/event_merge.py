"""One Xid reported by two sources counts once: the kernel log's line and DCGM's count of it, or two logs' copies
of one line. A DCGM counter's first reading stands for every Xid since the exporter started, so a kernel line of
the same Xid before it, however long before, is one of those, not another."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..times import ns

MERGE_NS = 600 * 10**9  # one event seen by two sources (kernel log and DCGM) within this long is one event
_NAT = np.iinfo(np.int64).min


def merge_sources(events: pd.DataFrame) -> pd.DataFrame:
    """One row per event: an Xid the kernel log and DCGM both report (within ten minutes) counts once, the copy that
    says more (its stated severity and subcode) kept. Lines of other GPUs (another bus where no index names them) or
    that state another severity or subcode are other events, whatever files they come from. A counter's first
    reading (`since_start`) takes the lines of its Xid up to its time as some of what it counted: it is left out
    when they are all it counted, else it stands for the rest."""
    if len(events) < 2 or "source" not in events.columns:
        return events
    t = ns(events["timestamp"])
    where = events["source"].astype("string").fillna("").str.rsplit(":", n=1).str[0].to_numpy(object)
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
    counted = events["count"].astype("Int64").to_numpy(np.int64, na_value=-1) if "count" in events.columns \
        else np.full(len(events), -1, dtype=np.int64)
    first = (events["since_start"].astype("boolean").to_numpy(bool, na_value=False) if "since_start" in events.columns
             else np.zeros(len(events), dtype=bool)) & (counted > 0) & (t != _NAT)
    keep = np.ones(len(events), dtype=bool)
    cluster: list[int] = []  # the rows taken as one event so far: one per source, close in time, agreeing

    def close(rows: list[int]) -> None:
        if len(rows) > 1:  # the copy that says most is kept: the first that states its severity or subcode
            best = next((r for r in rows if stated[r]), rows[0])
            keep[[r for r in rows if r != best]] = False

    for i in np.lexsort((t, key)).tolist():
        if first[i]:  # a first reading covers what came before it: taken below, once the copies are one
            continue
        last = cluster[-1] if cluster else None
        joins = last is not None and key[i] == key[last] and t[i] - t[last] <= MERGE_NS \
            and where[i] not in {where[r] for r in cluster} \
            and all(v[i] == "" or all(v[r] in ("", v[i]) for r in cluster) for v in said.values())
        if not joins:
            close(cluster)
            cluster = []
        cluster.append(i)
    close(cluster)
    if first.any():
        lines = keep & (counted < 0) & (t != _NAT) & ~first  # a log line is one event (no count)
        left = _covered(first, lines, key, t, where, counted)
        keep &= ~first | (left > 0)
        reduced = first & keep & (left != counted)
        if reduced.any():  # the reading stands for what the lines it covers do not
            count = events["count"].astype("Int64").array.copy()
            count[reduced] = left[reduced]
            events = events.assign(count=count)
    return events if keep.all() else events[keep]


def _covered(first: np.ndarray, lines: np.ndarray, key: np.ndarray, t: np.ndarray, where: np.ndarray,
             counted: np.ndarray) -> np.ndarray:
    """What each first reading counted beyond the lines it covers: those of its Xid (its key) from other sources
    up to its time (ten minutes after it, as two sources' clocks may differ), the latest first, each line taken
    by one reading at most. -1 for the other rows."""
    left = np.where(first, counted, -1)
    taken = np.zeros(len(t), dtype=bool)
    for i in np.flatnonzero(first)[np.argsort(t[first], kind="stable")].tolist():
        mine = np.flatnonzero(lines & ~taken & (key == key[i]) & (t <= t[i] + MERGE_NS) & (where != where[i]))
        if not len(mine):
            continue
        latest = mine[np.argsort(-t[mine], kind="stable")][:counted[i]]
        taken[latest] = True
        left[i] = counted[i] - len(latest)
    return left
