"""What a read produced, in a few numbers: rows per table, nodes, NVLinks seen per GPU."""

from __future__ import annotations

from typing import Any, cast

from ..tables import nodes_named
from .base import IngestResult


def links_per_gpu(result: IngestResult) -> dict[str, dict[str, int]]:
    """{node: {gpu: distinct NVLink indices with a per-link reading}}; GPU-total rows are not links."""
    frame = result["link_samples"]
    rows = frame[(frame["link_type"].astype("string") == "nvlink") & frame["link"].notna() & frame["gpu"].notna()]
    out: dict[str, dict[str, int]] = {}
    counts = rows.groupby([rows["node_id"].astype("string"), rows["gpu"]], observed=True)["link"].nunique()
    for key, n in counts.items():
        node, gpu = cast(tuple[Any, Any], key)
        out.setdefault(str(node), {})[str(int(gpu))] = int(n)
    return out


def nodes(result: IngestResult) -> list[str]:
    return nodes_named(result.tables)


def summarize(result: IngestResult) -> dict[str, Any]:
    return {"rows": result.rows, "nodes": nodes(result), "links_per_gpu": links_per_gpu(result),
            "warnings": [w.as_dict() for w in result.warnings]}
