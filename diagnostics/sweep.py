"""A fleet sweep: rates, rules and localization for every node at once, vectorized across the fleet.

Only rows the windows need are touched (the last window, the persistence windows and one reading before them);
only links that cross a rule become findings; only nodes with failing links are localized.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd

from .localize import localize_all
from .model import Finding, Localization
from .rates import ns, prepare_rows, utc_ns
from .schema import Severity
from .table_rules import candidates, finding_of, link_metrics
from .thresholds import Thresholds, load_thresholds
from .topology import platform_graph


@dataclass
class FleetSweep:
    links: int
    rows_used: int
    findings: dict[str, list[Finding]] = field(default_factory=dict)
    localizations: dict[str, list[Localization]] = field(default_factory=dict)

    def failing_nodes(self) -> list[str]:
        return sorted(n for n, fs in self.findings.items()
                      if any(f.severity in (Severity.FAILING, Severity.DOWN) for f in fs))


def history_needed(window: timedelta, thresholds: Thresholds) -> timedelta:
    """How far back the rules look: the longest persistence span, plus one window for the starting reading."""
    windows = max([r.persist[1] for r in thresholds.rules if r.persist] + [1])
    return window * (windows + 1)


def sweep(link_samples: pd.DataFrame, *, window: timedelta = timedelta(hours=1), end: datetime | None = None,
          thresholds: Thresholds | None = None, platforms: Mapping[str, str] | None = None) -> FleetSweep:
    """Every node's failing links and suspected parts for the window ending at `end` (default: newest sample)."""
    thresholds = thresholds or load_thresholds()
    t = ns(link_samples["timestamp"])
    end_ns = utc_ns(end) if end is not None else int(t.max())
    recent = t > end_ns - int(history_needed(window, thresholds).total_seconds() * 1e9)
    p = prepare_rows(link_samples, t, None if recent.all() else np.flatnonzero(recent))
    metrics = link_metrics(p, window=window, end_ns=end_ns, thresholds=thresholds)
    flagged = metrics[candidates(metrics, thresholds)]
    result = FleetSweep(links=p.nseg, rows_used=len(p.t))
    graphs: dict[str, Any] = {}
    rows: list[dict[str, Any]] = flagged.to_dict("records")  # type: ignore[assignment]
    for row in rows:
        node = str(row["node_id"])
        result.findings.setdefault(node, []).append(finding_of(row, thresholds))
    for node in result.failing_nodes():
        platform = (platforms or {}).get(node)
        if platform and platform not in graphs:
            graphs[platform] = platform_graph(platform)
        graph = graphs.get(platform) if platform else None
        result.localizations[node] = localize_all(result.findings[node], graph)
    return result

