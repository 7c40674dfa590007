"""Readings of one node's links that state one time, ingested separately (two captures of one instant, or one
stored twice with a change between): the store gives them in the order they were ingested, so the analysis keeps
the last ingested of each link as it keeps the last pasted of a file's, and says so as a file's reading says it."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import pandas as pd

from .. import format as fmt
from ..ingest.nvlink_rows import counter_change
from ..metrics import COUNTERS

KEYS = ("gpu", "link_type", "nvswitch", "link", "lane")
CHANGES_SAID = 6


def same_time_notes(links: pd.DataFrame, nodes: Collection[str]) -> dict[str, str]:
    """Per node of `nodes` (those whose parts overlap in time), what is said of its readings that share one time
    and differ: how many, when, and how the counters changed in the order ingested."""
    counters = [c for c in COUNTERS if c in links.columns]
    if not nodes or not len(links) or not counters:
        return {}
    keys = ["node_id", *(k for k in KEYS if k in links.columns), "timestamp"]
    read = links.loc[links["node_id"].isin(list(nodes)).to_numpy(bool), [*keys, *counters]]
    read = read[read[counters].notna().any(axis=1).to_numpy()]
    read = read[read.duplicated(keys, keep=False).to_numpy()]
    read = read.drop_duplicates(keep="last")  # one reading stored twice alike changes nothing: said of none
    read = read[read.duplicated(keys, keep=False).to_numpy()]
    if not len(read):
        return {}
    notes: dict[str, str] = {}
    for node, rows in read.groupby(read["node_id"].astype("string"), sort=True):
        changed: list[str] = []
        count, stamps = 0, set[pd.Timestamp]()
        for _, group in rows.groupby(keys[1:], sort=True, dropna=False, observed=True):
            first, last = (_plain(r) for r in group.iloc[[0, -1]].to_dict("records"))
            said = [counter_change(first, last, c, None) for c in counters
                    if pd.notna(first[c]) and pd.notna(last[c]) and first[c] != last[c]]
            if said:
                changed += said
                count, stamps = max(count, len(group)), stamps | {group["timestamp"].iloc[0]}
        if not changed:
            continue
        when = ", ".join(fmt.when(t) for t in sorted(stamps))
        shown = [*changed[:CHANGES_SAID], *([f"and {len(changed) - CHANGES_SAID} more"]
                                            if len(changed) > CHANGES_SAID else [])]
        notes[str(node)] = (f"{count} readings of the same links, ingested separately, share one time ({when}): with "
                            "no time between them they give no rate, so only the last ingested of each link is judged, "
                            "as a total since the counters were reset, and the earlier totals are not judged. In the "
                            f"order ingested: {'; '.join(shown)}")
    return notes


def _plain(row: dict[Any, Any]) -> dict[str, Any]:
    return {str(k): None if v is pd.NA or (not isinstance(v, str) and pd.isna(v)) else v for k, v in row.items()}
