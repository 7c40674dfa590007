"""What the correlation picture shows, computed by the engine for one node's view: the job's step time and the
links' error rates per time bucket over the job's history (its baseline, the slowdown and the window), with the
threshold of the rule each link's rate is judged by.

The links shown are those whose errors explain the slowdown (on whichever of the job's nodes they are); when none
does, the node's worst links, so that a slowdown from outside the fabric shows its links flat.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import timedelta

import numpy as np
import pandas as pd

from ..config.thresholds import Thresholds
from ..enums import severity_rank
from ..format import Unit
from ..metrics import SUMS
from ..model import Diagnosis, Finding, LinkSeries, StepEvidence
from ..times import utc_datetime
from .correlate import JobExplanation, LinkScore
from .jobs import LINK_KINDS, History, LinkChoice, link_history, segment_index
from .rates import NS_PER_HOUR, bucketed_increase

BUCKET = timedelta(minutes=5)  # the correlation's own bucket
MAX_BUCKETS = 288  # a longer history gets wider buckets (a day at 5 minutes)
WORST = 3  # links shown at most: those that explain the slowdown, else the worst
SHOWN_COUNTERS = ("replay", "crc", "recovery")  # what a link's rate is shown as when no rule judged it


def step_evidence(diagnosis: Diagnosis, job: JobExplanation, steps: pd.DataFrame,
                  found: Mapping[str, list[Finding]], links: pd.DataFrame, t: np.ndarray, *, end_ns: int,
                  thresholds: Thresholds, history: History | None) -> StepEvidence | None:
    """The job's step time and the chosen links' rates from the job's first step (or the window's start, if
    earlier) to the window's end. `steps` are the job's own, as `job_steps` cleans them."""
    if steps.empty or diagnosis.job_id != job.job_id:
        return None
    step_t = steps["timestamp"].to_numpy("datetime64[ns]").view(np.int64)
    start_ns = min(int(step_t[0]), end_ns - int(diagnosis.window_hours * NS_PER_HOUR))
    minutes = max(BUCKET.total_seconds() / 60, math.ceil((end_ns - start_ns) / 60e9 / MAX_BUCKETS))
    width = int(minutes * 60e9)
    start_ns = start_ns // width * width
    n = max(1, -(-(end_ns - start_ns) // width))
    where = (step_t - start_ns - 1) // width  # bucket i holds (start + i*width, start + (i+1)*width]
    keep = (where >= 0) & (where < n)
    values = steps["step_time_ms"].to_numpy(np.float64)
    means = pd.Series(values[keep]).groupby(where[keep]).mean().reindex(range(n))
    chosen, explained = _chosen(diagnosis, job, found)
    series: list[LinkSeries] = []
    if chosen:
        nodes = sorted({node for node, _, _ in chosen})
        p = link_history(nodes, start_ns - width, end_ns, links, t, history,
                         LinkChoice.of([(node, f.ref) for node, f, _ in chosen]))
        index = segment_index(p)
        start = utc_datetime(start_ns)
        for node, f, scored in chosen:
            seg = index.get((node, f.ref.slug))
            if seg is None:
                continue
            counter, above, rule = _judged(f, thresholds)
            counts = sum(bucketed_increase(p, c, bucket=timedelta(minutes=minutes), start=start, buckets=n)[seg]
                         for c in SUMS.get(counter, (counter,)))
            series.append(LinkSeries(
                node_id=node, ref=f.ref, counter=counter, rate_per_hour=np.round(
                    np.asarray(counts, dtype=np.float64) * 60 / minutes, 3).tolist(),
                above=above, rule=rule, severity=f.severity, explains_slowdown=explained,
                score=scored.score if scored is not None else f.correlation_score,
                onset=scored.onset if scored is not None else f.onset))
    return StepEvidence(job_id=job.job_id, start=utc_datetime(start_ns), bucket_minutes=minutes,
                        step_time_ms=[None if pd.isna(v) else round(float(v), 3) for v in means.tolist()],
                        links=series, explained=explained and bool(series))


Shown = tuple[str, Finding, LinkScore | None]


def _chosen(diagnosis: Diagnosis, job: JobExplanation,
            found: Mapping[str, list[Finding]]) -> tuple[list[Shown], bool]:
    """(node, finding, its score or None) of the links to show, and whether they explain the slowdown."""
    out: list[Shown] = []
    for score in job.links:
        if not score.explains_slowdown:
            continue
        mine = diagnosis.findings if score.node_id == diagnosis.node_id else found.get(score.node_id, [])
        f = next((f for f in mine if f.ref.slug == score.ref.slug), None)
        if f is not None:
            out.append((score.node_id, f, score))
    if out:
        return out[:WORST], True
    links = [f for f in diagnosis.findings if f.ref.kind in LINK_KINDS]
    links.sort(key=lambda f: (-severity_rank(f.severity), -(f.worst_ratio or 0.0), -_errors(f), f.ref.slug))
    return [(diagnosis.node_id, f, None) for f in links[:WORST]], False


def _errors(f: Finding) -> float:
    return sum(f.rates_per_hour.get(c, 0.0) for c in ("replay", "crc_flit", "crc_data", "recovery"))


def _judged(f: Finding, thresholds: Thresholds) -> tuple[str, float | None, str | None]:
    """The counter a link's rate is shown as, the threshold on it and the rule's name: the worst rule it crossed,
    else its busiest error counter against the lowest rule on that counter."""
    rated = [c for c in f.crossed if c.rate_per_hour is not None and c.above and c.unit == Unit.PER_HOUR
             and c.counter in (*SHOWN_COUNTERS, *SUMS["crc"])]
    if rated:
        top = max(rated, key=lambda c: (severity_rank(c.severity), (c.rate_per_hour or 0.0) / (c.above or 1.0)))
        return top.counter, top.above, top.rule
    def rate(counter: str) -> float:
        return sum(f.rates_per_hour.get(c, 0.0) for c in SUMS.get(counter, (counter,)))
    counter = max(SHOWN_COUNTERS, key=lambda c: (rate(c), c == "replay"))
    rules = [r for r in thresholds.rules if r.counter == counter and r.applies_to(f.link_type.value)
             and r.unit == Unit.PER_HOUR and not r.codes]
    low = min(rules, key=lambda r: r.above, default=None)
    return counter, low.above if low else None, low.name if low else None
