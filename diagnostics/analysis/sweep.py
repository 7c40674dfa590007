"""A fleet sweep over tables or the local store: the engine on every node, reported as the Prometheus sweep reports
(`SweepResult`: the offending links, the offending nodes' diagnoses, whether the view is complete, timings)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta

import pandas as pd

from ..config.thresholds import Thresholds
from ..offenders import SweepResult, offenders_of
from .fleet import FleetAnalysis, History, analyze_fleet

CORRELATION_SPAN = timedelta(days=1)  # the step-time history a job's slowdown is judged on


def result_of(analysis: FleetAnalysis, *, window_hours: float, read_s: float = 0.0) -> SweepResult:
    """The engine's fleet analysis as a sweep result: every offending link, and its node's diagnosis."""
    at = analysis.end or datetime.now().astimezone()
    result = SweepResult(at=at, window_hours=window_hours, source="store")
    for node, diagnosis in sorted(analysis.diagnoses.items()):
        found = offenders_of(diagnosis)
        result.offenders.extend(found)
        if found:
            result.diagnoses[node] = diagnosis
            result.confirmed[node] = found
    result.timings.fetch_s = read_s
    result.timings.analyze_s = analysis.timings.get("total_s", 0.0)
    return result


def sweep_tables(tables: Mapping[str, pd.DataFrame], *, thresholds: Thresholds, at: datetime | None = None,
                 window_hours: float = 1.0, platforms: Mapping[str, str] | None = None,
                 history: History | None = None, read_s: float = 0.0) -> SweepResult:
    """Every node the tables hold, swept by the engine."""
    analysis = analyze_fleet(tables, window=timedelta(hours=window_hours), end=at, thresholds=thresholds,
                             platforms=platforms, history=history)
    return result_of(analysis, window_hours=window_hours, read_s=read_s)
