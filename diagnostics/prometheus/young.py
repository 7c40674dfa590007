"""Series that began inside a sweep's window, found by one query, so that only their nodes pay for exact rates.

The sweep's rate queries divide a counter's `increase()` over the window by the window: cheap, and as exact as the
local engine for a series older than the window. One that began inside it (a node that joined, an exporter whose
series were re-created, a GPU reset) is rated at the share of its rate that its span is of the window. Finding each
series' first sample (`QueryBuilder.per_hour`) costs a rate query some 20 times the increase alone, so the sweep
asks once, on the presence counter only (every link and GPU reports it), which nodes have a series younger than
the span the rate queries look back over, and rates those nodes again in the exact form (`exact_queries`), a
batch of nodes per query.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime

from ..config.thresholds import Thresholds
from ..enums import LinkType
from .client import Answer
from .promql import PRESENCE_COLUMN, QueryBuilder, SweepQuery, _quote, rule_queries

# the search's step: Prometheus' default lookback (promql.LOOKBACK), so that every step sees the newest sample of a
# series scraped more often than that, and a series older than the span has one at or before the span's start
SEARCH_STEP_S = 300
LINK_TYPE_LABEL = "fabricbot_link_type"  # keeps a GPU's PCIe series apart from its NVLink total (same labels)


def young_span_hours(thresholds: Thresholds, window_hours: float) -> float:
    """How far back a rate query looks: the window, or m windows for a rule persisting over the last m."""
    windows = [int(p[1]) for r in thresholds.rules if (p := getattr(r, "persist", None))]
    return window_hours * max([1, *windows])


def young_query(builder: QueryBuilder, span_hours: float) -> str | None:
    """Per node, the latest first sample of its presence series that began within the last `span_hours`; no row for
    a node whose series all began before. None when no presence counter is mapped.

    A series' first sample is the oldest that a subquery at `SEARCH_STEP_S` sees (at most a step after the true
    one: only the exact pass needs that precisely); a series younger than the subquery's last step is seen at the
    evaluation itself.
    """
    span, step = round(span_hours * 3600), SEARCH_STEP_S
    group = ", ".join(builder.group)
    parts = []
    for link_type in LinkType:
        first = builder.column_vector(
            PRESENCE_COLUMN, link_type, lambda s: f"min_over_time(timestamp({s})[{span + step}s:{step}s])")
        now = builder.column_vector(PRESENCE_COLUMN, link_type, lambda s: f"timestamp({s})")
        if first is not None and now is not None:
            parts.append(f'label_replace(({first} or on ({group}) {now}), "{LINK_TYPE_LABEL}", '
                         f'"{link_type.value}", "", "")')
    if not parts:
        return None
    return f"max by ({builder.by('node')}) (({' or '.join(parts)}) > time() - {span})"


def young_nodes(answer: Answer, node_label: str) -> dict[str, datetime]:
    """The young-series search's answer: each node and its latest series' first sample."""
    return {str(row["metric"].get(node_label) or "unknown"):
            datetime.fromtimestamp(float(row["value"][1]), UTC) for row in answer.rows}


def node_batches(young: dict[str, datetime], at: datetime, window_hours: float,
                 size: int) -> Iterator[tuple[list[str], bool]]:
    """The young nodes in batches of at most `size`, each with whether only the persistent rules need them again
    (their young series began before the window, inside the span a persistent rule looks back over)."""
    start = at.timestamp() - window_hours * 3600
    for persist_only in (False, True):
        nodes = sorted(n for n, t in young.items() if (t.timestamp() <= start) == persist_only)
        for i in range(0, len(nodes), size):
            yield nodes[i:i + size], persist_only


def exact_queries(thresholds: Thresholds, builder: QueryBuilder, window_hours: float, nodes: list[str],
                  persist_only: bool) -> list[SweepQuery]:
    """The rate queries restricted to `nodes` (a matcher on the node label), each series rated over its span."""
    config = builder.config
    names = "|".join(_quote(re.escape(n)) for n in nodes)
    matchers = ", ".join(m for m in (config.matchers.strip(), f'{config.labels.node}=~"{names}"') if m)
    narrowed = QueryBuilder(config.model_copy(update={"matchers": matchers}), builder.dmap, builder.max_links)
    queries = rule_queries(thresholds, narrowed, window_hours, exact=True)
    return [q for q in queries if q.persist] if persist_only else queries
