"""Series that began inside a sweep's window, found by one query, so that only their nodes pay for exact rates.

The sweep's rate queries divide a counter's `increase()` over the window by the window: cheap, and as exact as the
local engine for a series older than the window. One that began inside it (a node that joined, an exporter whose
series were re-created, a GPU reset) is rated at the share of its rate that its span is of the window. Finding each
series' first sample (`QueryBuilder.per_hour`) costs a rate query some 20 times the increase alone, so the sweep
asks once, on the presence counter only (every link and GPU reports it), which nodes have a series younger than
the span the rate queries look back over, and rates those nodes again in the exact form (`exact_queries`), a
batch of nodes per query. The search itself only asks whether a series has a sample before the span, never when
its first one was: a first-sample subquery over the whole fleet would cost it some 0.05 s a node.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..config.thresholds import Thresholds
from ..enums import LinkType
from .client import Answer
from .promql import LOOKBACK, PRESENCE_COLUMN, QueryBuilder, SweepQuery, quoted, rule_queries

LINK_TYPE_LABEL = "fabricbot_link_type"  # keeps a GPU's PCIe series apart from its NVLink total (same labels)


def young_span_hours(thresholds: Thresholds, window_hours: float) -> float:
    """How far back a rate query looks: the window, or m windows for a rule persisting over the last m."""
    windows = [int(p[1]) for r in thresholds.rules if (p := getattr(r, "persist", None))]
    return window_hours * max([1, *windows])


def young_query(builder: QueryBuilder, window_hours: float, span_hours: float) -> str | None:
    """Per node with a presence series that began within the last `span_hours`, the shortest lookback (seconds)
    it began within: the window, or else the span. No row for a node whose series all began before. None when no
    presence counter is mapped.

    A series that began inside a lookback has a sample in it and none in the `LOOKBACK` before its start: two plain
    range selections, where finding its first sample would take a subquery at a fine step (some 20 times the cost).
    An old series with a scrape gap longer than `LOOKBACK` at the start looks young too, and is only rated again
    exactly; one whose only sample is the last is young as well (no rate: a single sample has no increase).
    `unless` matches on every label, so a series re-created with new labels (a restarted exporter's pod) is young
    even where its link had an older series.
    """
    found = []
    for lookback in sorted({round(window_hours * 3600), round(span_hours * 3600)}):
        def began(selector: str, seconds: int = lookback) -> str:
            return (f"(last_over_time({selector}[{seconds}s]) unless "
                    f"last_over_time({selector}[{LOOKBACK}] offset {seconds}s))")
        parts = [f'label_replace({vector}, "{LINK_TYPE_LABEL}", "{link_type.value}", "", "")'
                 for link_type in LinkType
                 if (vector := builder.column_vector(PRESENCE_COLUMN, link_type, began)) is not None]
        if not parts:
            return None
        found.append(f"count by ({builder.by('node')}) ({' or '.join(parts)}) * 0 + {lookback}")
    return " or ".join(found)  # `or`: a node young within the window keeps that row, not the span's


def young_nodes(answer: Answer, node_label: str) -> dict[str, float]:
    """The young-series search's answer: each node and the lookback, in hours, its youngest series began within."""
    return {str(row["metric"].get(node_label) or "unknown"): float(row["value"][1]) / 3600 for row in answer.rows}


def node_batches(young: dict[str, float], window_hours: float, size: int) -> Iterator[tuple[list[str], bool]]:
    """The young nodes in batches of at most `size`, each with whether only the persistent rules need them again
    (their young series began before the window, inside the span a persistent rule looks back over)."""
    for persist_only in (False, True):
        nodes = sorted(n for n, hours in young.items()
                       if (round(hours * 3600) > round(window_hours * 3600)) == persist_only)
        for i in range(0, len(nodes), size):
            yield nodes[i:i + size], persist_only


def exact_queries(thresholds: Thresholds, builder: QueryBuilder, window_hours: float, nodes: list[str],
                  persist_only: bool) -> list[SweepQuery]:
    """The rate queries restricted to `nodes` (a matcher on the node label), each series rated over its span."""
    config = builder.config
    names = "|".join(quoted(re.escape(n)) for n in nodes)
    matchers = ", ".join(m for m in (config.matchers.strip(), f'{config.labels.node}=~"{names}"') if m)
    narrowed = QueryBuilder(config.model_copy(update={"matchers": matchers}), builder.dmap, builder.max_links)
    queries = rule_queries(thresholds, narrowed, window_hours, exact=True)
    return [q for q in queries if q.persist] if persist_only else queries
