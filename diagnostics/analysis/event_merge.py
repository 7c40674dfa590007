"""One Xid reported by two sources counts once: the kernel log's line and DCGM's count of it, two logs' copies of
one line, or the kernel's and Fabric Manager's line of one SXid (in one journal too). A DCGM counter's first reading
stands for every Xid since the exporter started, so a kernel line of the same Xid before it, however long before, is
one of those, not another."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..enums import EventKind
from ..ingest.fm_lines import MESSAGE as FM_MESSAGE
from ..times import ns

MERGE_NS = 600 * 10**9  # one event seen by two sources (kernel log and DCGM) within this long is one event
_NAT = np.iinfo(np.int64).min


def merge_sources(events: pd.DataFrame) -> pd.DataFrame:
    """One row per event: an Xid the kernel log and DCGM both report (within ten minutes) counts once, the copy that
    says more (its stated severity and subcode) kept. Lines of other GPUs (another bus where no index names them),
    that state another severity or subcode, or SXids of other ports are other events, whatever files they come
    from. A counter's increase takes as many lines of its Xid near it as it counted as the Xids it counted, and a
    first reading (`since_start`) those up to its time: the lines are kept, the increase left out, and what it
    counted beyond them said by the nearest line (an increase of two beside one line: that line, counting two), or
    by a first reading itself, whose other Xids may be any time before it."""
    if len(events) < 2 or "source" not in events.columns:
        return events
    t = ns(events["timestamp"])
    where = events["source"].astype("string").fillna("").str.rsplit(":", n=1).str[0].to_numpy(object)
    if "text" in events.columns:  # Fabric Manager reports apart from the kernel, though the journal holds both
        manager = events["text"].astype("string").str.startswith(FM_MESSAGE).to_numpy(bool, na_value=False)
        where = np.where(manager, where + " (Fabric Manager)", where)
    gpu = events["gpu"].astype("Float64")
    bus = events["pci_bus_id"].astype("string").str.lower() if "pci_bus_id" in events.columns \
        else pd.Series(pd.NA, index=events.index, dtype="string")
    kind = events["kind"].astype("string").fillna("")
    # an SXid's port is part of it (the kernel's and Fabric Manager's lines both name it; a burst names several);
    # an Xid's link is not: DCGM's count of an Xid names none
    port = events["link"].astype("Float64").where(kind == EventKind.SXID.value) if "link" in events.columns \
        else pd.Series(pd.NA, index=events.index, dtype="Float64")
    key = pd.DataFrame({"node": events["node_id"].astype("string").fillna(""), "gpu": gpu.fillna(-1),
                        "bus": bus.where(gpu.isna(), "").fillna(""),  # a line naming its GPU by bus alone
                        "kind": kind, "code": events["code"].astype("Float64").fillna(-1),
                        "port": port.fillna(-1)}).groupby(
        ["node", "gpu", "bus", "kind", "code", "port"], sort=False).ngroup().to_numpy()
    said = {c: (events[c].astype("string").str.lower().fillna("").to_numpy(object) if c in events.columns
                else np.full(len(events), "", dtype=object)) for c in ("severity", "subcode")}
    stated = (said["severity"] != "") | (said["subcode"] != "")
    counted = events["count"].astype("Int64").to_numpy(np.int64, na_value=-1) if "count" in events.columns \
        else np.full(len(events), -1, dtype=np.int64)
    reading = (counted > 0) & (t != _NAT)  # a dated increase: it takes the lines near it below
    first = (events["since_start"].astype("boolean").to_numpy(bool, na_value=False) if "since_start" in events.columns
             else np.zeros(len(events), dtype=bool)) & reading
    count = counted.copy()
    keep = np.ones(len(events), dtype=bool)

    def close(rows: list[int]) -> None:
        if len(rows) > 1:  # the copy that says most is kept: the first that states its severity or subcode
            best = next((r for r in rows if stated[r]), rows[0])
            keep[[r for r in rows if r != best]] = False
            count[best] = counted[rows].max()  # copies of one increase: the source that counted most

    order = np.lexsort((t, key))
    # copies of one line, and of one increase (a first reading covers what came before it: taken below)
    for copies in (order[~reading[order]], order[reading[order] & ~first[order]]):
        cluster: list[int] = []  # the rows taken as one event so far: one per source, close in time, agreeing
        for i in copies.tolist():
            last = cluster[-1] if cluster else None
            joins = last is not None and key[i] == key[last] and t[i] - t[last] <= MERGE_NS \
                and where[i] not in {where[r] for r in cluster} \
                and all(v[i] == "" or all(v[r] in ("", v[i]) for r in cluster) for v in said.values())
            if not joins:
                close(cluster)
                cluster = []
            cluster.append(i)
        close(cluster)
    if reading.any():
        lines = keep & (counted < 0) & (t != _NAT)  # a log line is one event (no count)
        left, nearest = _covered(reading & keep, first, lines, key, t, where, count)
        took = nearest >= 0
        keep &= ~took | (first & (left > 0))  # a first reading stands for the rest, else the nearest line does
        count[took & first] = left[took & first]
        rest = took & ~first & (left > 0)
        count[nearest[rest]] = 1 + left[rest]
    if (count != counted).any():
        events = events.assign(count=pd.arrays.IntegerArray(np.maximum(count, 0), count < 0))
    return events if keep.all() else events[keep]


def _covered(readings: np.ndarray, first: np.ndarray, lines: np.ndarray, key: np.ndarray, t: np.ndarray,
             where: np.ndarray, counted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """What each reading counted beyond the lines it takes, and the nearest of them (-1: none; both -1 for other
    rows). A reading takes lines of its Xid (its key) from other sources, the nearest first, no more than it
    counted, each line taken once: an increase those within ten minutes of it, read first; a first reading those
    up to its time (ten minutes after it, as two sources' clocks may differ). The lines are sorted by key and time
    once, each reading searching its own few."""
    left = np.where(readings, counted, -1)
    nearest = np.full(len(t), -1, dtype=np.int64)
    taken = np.zeros(len(t), dtype=bool)
    pool = np.flatnonzero(lines)
    pool = pool[np.lexsort((t[pool], key[pool]))]
    pool_key, pool_t = key[pool], t[pool]
    starts, ends = np.searchsorted(pool_key, key, "left"), np.searchsorted(pool_key, key, "right")
    for group in (readings & ~first & (ends > starts), readings & first & (ends > starts)):
        for i in np.flatnonzero(group)[np.argsort(t[group], kind="stable")].tolist():
            lo, hi = int(starts[i]), int(ends[i])
            since = lo if first[i] else lo + int(np.searchsorted(pool_t[lo:hi], t[i] - MERGE_NS, "left"))
            mine = pool[since:lo + int(np.searchsorted(pool_t[lo:hi], t[i] + MERGE_NS, "right"))]
            mine = mine[~taken[mine] & (where[mine] != where[i])]
            if not len(mine):
                continue
            chosen = mine[np.argsort(np.abs(t[mine] - t[i]), kind="stable")][:counted[i]]
            taken[chosen] = True
            left[i], nearest[i] = counted[i] - len(chosen), chosen[0]
    return left, nearest
