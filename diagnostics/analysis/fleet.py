"""A fleet sweep: rates, rules and localization for every node at once, vectorized across the fleet.

Only rows the windows need are touched (the last window, the persistence windows and one reading before them);
only links that cross a rule become findings; only nodes with failing links are localized.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import pairwise
from typing import Any

import numpy as np
import pandas as pd

from ..config.thresholds import Thresholds, load_thresholds
from ..enums import Severity
from ..model import Finding, Localization
from ..topology import platform_graph
from .findings import candidates, finding_of, link_metrics, records
from .localize import localize_all
from .rates import ns, prepare_rows, utc_ns


@dataclass
class FleetSweep:
    links: int
    rows_used: int
    findings: dict[str, list[Finding]] = field(default_factory=dict)
    localizations: dict[str, list[Localization]] = field(default_factory=dict)

    def failing_nodes(self) -> list[str]:
        return sorted(n for n, fs in self.findings.items()
                      if any(f.severity in (Severity.FAILING, Severity.DOWN) for f in fs))


PIECE_ROWS = 4_000_000


def history_needed(window: timedelta, thresholds: Thresholds) -> timedelta:
    """How far back the rules look: the longest persistence span, plus one window for the starting reading."""
    windows = max([r.persist[1] for r in thresholds.rules if r.persist] + [1])
    return window * (windows + 1)


def sweep(link_samples: pd.DataFrame, *, window: timedelta = timedelta(hours=1), end: datetime | None = None,
          thresholds: Thresholds | None = None, platforms: Mapping[str, str] | None = None,
          piece_rows: int = PIECE_ROWS, workers: int = 2) -> FleetSweep:
    """Every node's failing links and suspected parts for the window ending at `end` (default: newest sample).

    A table that holds each node's rows together (as the store hands it back) is swept in pieces
    of a few nodes, `workers` pieces at a time: one piece's arrays stay small enough to be reused rather than
    freshly paged in, numpy works on two pieces at once outside the GIL, and the result is that of the whole.
    """
    thresholds = thresholds or load_thresholds()
    t = ns(link_samples["timestamp"])
    end_ns = utc_ns(end) if end is not None else int(t.max())
    since_ns = end_ns - int(history_needed(window, thresholds).total_seconds() * 1e9)
    result = FleetSweep(links=0, rows_used=0)

    def piece(part: pd.DataFrame, times: np.ndarray) -> tuple[pd.DataFrame, int, int]:
        recent = times > since_ns
        p = prepare_rows(part, times, None if recent.all() else np.flatnonzero(recent))
        metrics = link_metrics(p, window=window, end_ns=end_ns, thresholds=thresholds)
        return metrics[candidates(metrics, thresholds)], p.nseg, len(p.t)

    bounds = node_pieces(link_samples, piece_rows)
    parts = [link_samples if len(bounds) == 1 else link_samples.iloc[lo:hi] for lo, hi in bounds]
    times = [t[lo:hi] for lo, hi in bounds]
    if len(parts) == 1 or workers < 2:
        done = list(map(piece, parts, times))
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:  # numpy runs outside the GIL
            done = list(pool.map(piece, parts, times))
    flagged = [f for f, _, _ in done]
    result.links = sum(n for _, n, _ in done)
    result.rows_used = sum(n for _, _, n in done)
    for row in records(pd.concat(flagged)):
        node = str(row["node_id"])
        result.findings.setdefault(node, []).append(finding_of(row, thresholds))
    graphs: dict[str, Any] = {}
    for node in result.failing_nodes():
        platform = (platforms or {}).get(node)
        if platform and platform not in graphs:
            graphs[platform] = platform_graph(platform)
        graph = graphs.get(platform) if platform else None
        result.localizations[node] = localize_all(result.findings[node], graph)
    return result


def node_pieces(frame: pd.DataFrame, rows: int) -> list[tuple[int, int]]:
    """Row ranges of about `rows` rows, cut only where the node changes; the whole table as one range unless each
    node's rows lie together (a link split across two pieces would lose its history)."""
    whole = [(0, len(frame))]
    if len(frame) <= rows or not isinstance(frame["node_id"].dtype, pd.CategoricalDtype):
        return whole
    codes = frame["node_id"].cat.codes.to_numpy()
    heads = np.flatnonzero(codes[1:] != codes[:-1]) + 1
    if len(heads) == 0 or len(np.unique(codes[np.concatenate(([0], heads))])) != len(heads) + 1:
        return whole  # some node comes back later in the table
    cuts = np.unique(heads[np.minimum(np.searchsorted(heads, np.arange(rows, len(frame), rows)), len(heads) - 1)])
    bounds = [0, *cuts.tolist(), len(frame)]
    return list(pairwise(bounds))
