"""Step time against link errors: is the job slower, since when, and which link (if any) explains it.

The slowdown onset is a least-squares change point on the step-time series; each link is scored by how well its
error series tracks the step time (Spearman rank correlation, searching lags where errors lead) and how close its
own error onset lies to the slowdown onset.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field

from ..config.thresholds import Thresholds, load_thresholds
from .findings import component_of
from .rates import bucketed_increase, prepare, utc_ns

ERROR_COUNTERS = ("replay", "crc_flit", "crc_data", "recovery", "replay_rollovers", "effective_errors",
                  "recovery_failed")
MAX_LAG_BUCKETS = 3


class LinkScore(BaseModel):
    node_id: str
    component: str
    gpu: int | None = None
    link: int | None = None
    link_type: str
    score: float = Field(ge=0.0, le=1.0)
    rank_correlation: float
    lag_minutes: float
    onset: datetime | None = None
    explains_slowdown: bool
    evidence: list[str] = Field(default_factory=list)


class JobExplanation(BaseModel):
    """A job's slowdown and the links scored against it, best first."""

    job_id: str
    nodes: list[str]
    baseline_step_time_ms: float | None = None
    step_time_ms: float | None = None
    degradation_pct: float | None = None
    slowdown: bool = False
    onset: datetime | None = None
    links: list[LinkScore] = Field(default_factory=list)
    verdict: str
    warnings: list[str] = Field(default_factory=list)

    def for_link(self, node_id: str, gpu: int | None, link: int | None, link_type: str) -> LinkScore | None:
        for score in self.links:
            if (score.node_id, score.gpu, score.link, score.link_type) == (node_id, gpu, link, link_type):
                return score
        return None


def change_point(values: np.ndarray, min_size: int = 3) -> int | None:
    """Index where a single shift in mean best splits the series (least squares), or None if too short."""
    n = len(values)
    if n < 2 * min_size:
        return None
    c1, c2 = np.cumsum(values), np.cumsum(values ** 2)
    k = np.arange(min_size, n - min_size + 1)
    left = c2[k - 1] - c1[k - 1] ** 2 / k
    right = (c2[-1] - c2[k - 1]) - (c1[-1] - c1[k - 1]) ** 2 / (n - k)
    return int(k[np.argmin(left + right)])


def spearman_rows(series: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Spearman rank correlation of each row of `series` with `target` (0 where either is constant)."""
    if series.shape[1] < 4:
        return np.zeros(len(series))
    ra = pd.DataFrame(series).rank(axis=1).to_numpy(copy=True)
    rb = pd.Series(target).rank().to_numpy()
    ra -= ra.mean(axis=1, keepdims=True)
    rb = rb - rb.mean()
    denom = np.sqrt((ra ** 2).sum(axis=1) * (rb ** 2).sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (ra @ rb) / denom
    return np.nan_to_num(rho, nan=0.0)


def job_steps(step_samples: pd.DataFrame, job_id: str) -> pd.DataFrame:
    if step_samples is None or step_samples.empty:
        return pd.DataFrame(columns=["timestamp", "step_time_ms", "node_ids"])
    rows = step_samples[step_samples["job_id"].astype("string") == str(job_id)]
    rows = rows[pd.to_numeric(rows["step_time_ms"], errors="coerce") > 0]
    rows = rows.assign(timestamp=pd.to_datetime(rows["timestamp"], utc=True, format="mixed"))
    return rows.dropna(subset=["timestamp"]).sort_values("timestamp").drop_duplicates("timestamp", keep="last")


def jobs_on(step_samples: pd.DataFrame | None, node_id: str) -> list[str]:
    """Jobs whose step samples name this node, most recent first."""
    if step_samples is None or step_samples.empty:
        return []
    # each distinct node list is split once, not once per step sample
    codes, lists = pd.factorize(step_samples["node_ids"].astype("string").fillna(""))
    named = np.array([node_id in {n.strip() for n in str(names).split(",")} for names in lists], dtype=bool)
    hit = step_samples[named[codes]]
    if hit.empty:
        return []
    last = hit.groupby(hit["job_id"].astype("string"), observed=True)["timestamp"].max()
    return [str(j) for j in last.sort_values(ascending=False).index]


def job_nodes(steps: pd.DataFrame) -> list[str]:
    """Every node the step samples' comma-separated `node_ids` name."""
    names: set[str] = set()
    for value in steps["node_ids"].dropna().astype(str):
        names.update(n.strip() for n in value.split(",") if n.strip())
    return sorted(names)


def explain_job(tables: Mapping[str, pd.DataFrame], *, job_id: str, baseline_ms: float | None = None,
                onset: datetime | None = None, thresholds: Thresholds | None = None,
                bucket: timedelta = timedelta(minutes=5)) -> JobExplanation:
    """Slowdown of `job_id` (against `baseline_ms`, or the median before the change point) and each link's score."""
    thresholds = thresholds or load_thresholds()
    steps = job_steps(tables.get("step_samples", pd.DataFrame()), job_id)
    if steps.empty:
        return JobExplanation(job_id=job_id, nodes=[], verdict=f"no step-time samples for job {job_id}")
    nodes = job_nodes(steps)
    values = steps["step_time_ms"].to_numpy(np.float64)
    times = steps["timestamp"]
    min_pct = thresholds.setting("slowdown_min_pct")
    split = None
    if onset is not None:
        split = int(np.searchsorted(times.to_numpy("datetime64[ns]").view(np.int64), utc_ns(onset)))
    else:
        cp = change_point(values)
        if cp is not None and np.median(values[cp:]) > np.median(values[:cp]) * (1 + min_pct / 100):
            split = cp
    if split is not None and 0 < split < len(values):
        base = baseline_ms or float(np.median(values[:split]))
        current = float(np.median(values[split:]))
        start = times.iloc[split]
    else:
        split = None
        base = baseline_ms or float(np.median(values))
        current = float(np.median(values[-max(3, len(values) // 10):]))
        start = None
    degradation = round((current - base) / base * 100.0, 1)
    slow = degradation >= min_pct
    explanation = JobExplanation(job_id=job_id, nodes=nodes, baseline_step_time_ms=round(base, 3),
                                 step_time_ms=round(current, 3), degradation_pct=degradation, slowdown=slow,
                                 onset=start.to_pydatetime() if slow and start is not None else None,
                                 verdict="")
    links = tables.get("link_samples")
    scores: list[LinkScore] = []
    if links is None or links.empty or not links["node_id"].isin(nodes).any():
        explanation.warnings.append(f"no link telemetry for the nodes of job {job_id} ({', '.join(nodes)})")
    else:
        scores = _score_links(links, nodes, steps, explanation, thresholds, bucket)
    explanation.links = sorted(scores, key=lambda s: s.score, reverse=True)
    explanation.verdict = _verdict(explanation)
    return explanation


def _signals(links: pd.DataFrame, nodes: list[str], t0: pd.Timestamp, n: int,
             bucket: timedelta) -> tuple[pd.DataFrame, np.ndarray]:
    """Per link, errors per bucket plus a large step while the link is down or has lost lanes."""
    subset = links[links["node_id"].isin(nodes)]
    p = prepare(subset)
    errors = sum((bucketed_increase(p, c, bucket=bucket, start=t0, buckets=n) for c in ERROR_COUNTERS),
                 start=np.zeros((int(p.starts.sum()), n)))
    f = p.frame
    bad = np.zeros(len(f), dtype=bool)
    if "link_state" in f.columns:
        bad |= f["link_state"].astype("string").isin(["down", "inactive"]).fillna(False).to_numpy(bool)
    if {"width", "max_width"} <= set(f.columns):
        bad |= (f["width"].astype("Float64") < f["max_width"].astype("Float64")).fillna(False).to_numpy(bool)
    if bad.any():
        seg = np.cumsum(p.starts) - 1
        b = (p.t - utc_ns(t0) - 1) // int(bucket.total_seconds() * 1e9)
        ok = bad & (b >= 0) & (b < n)
        flags = np.zeros(errors.shape)
        flags[seg[ok], b[ok]] = 1.0
        errors = errors + flags * 1e9
    return f.iloc[p.segment_starts].reset_index(drop=True), errors


def _score_links(links: pd.DataFrame, nodes: list[str], steps: pd.DataFrame, job: JobExplanation,
                 thresholds: Thresholds, bucket: timedelta) -> list[LinkScore]:
    t0 = steps["timestamp"].iloc[0].floor(bucket) - bucket
    n = int((steps["timestamp"].iloc[-1] - t0) / bucket) + 1
    heads, errors = _signals(links, nodes, t0, n, bucket)
    step_b = steps.groupby((steps["timestamp"] - t0 - pd.Timedelta(1)) // bucket)["step_time_ms"].mean()
    step_series = step_b.reindex(range(n)).ffill().bfill().to_numpy(np.float64)
    tol = thresholds.setting("onset_tolerance_min")
    min_score = thresholds.setting("explains_min_score")
    scale = timedelta(hours=1) / bucket
    floor = min(r.above for r in thresholds.rules if r.counter in ("replay", "crc") and r.above > 0) / scale
    out: list[LinkScore] = []
    picked = np.flatnonzero(errors.max(axis=1) > floor)
    lags = min(MAX_LAG_BUCKETS, max(n - 4, 0))
    rhos = np.stack([spearman_rows(errors[picked, : n - k], step_series[k:]) for k in range(lags + 1)], axis=1) \
        if len(picked) else np.zeros((0, 1))
    for j, i in enumerate(picked):
        series = errors[i]
        lag = int(np.argmax(rhos[j]))
        rho = float(rhos[j, lag])
        first = np.flatnonzero(series > max(floor, 0.25 * np.quantile(series[series > 0], 0.9)))
        onset = t0 + bucket * (int(first[0]) + 1) if len(first) else None
        align = 0.0
        evidence: list[str] = []
        if onset is not None and job.onset is not None:
            gap_min = abs((pd.Timestamp(job.onset) - onset).total_seconds()) / 60
            align = float(np.exp(-gap_min / tol))
            evidence.append(f"errors start {onset:%Y-%m-%d %H:%M}, slowdown {pd.Timestamp(job.onset):%H:%M} "
                            f"({gap_min:.0f} min apart)")
        elif onset is not None and len(first) and first[0] == 0:
            evidence.append("errors already present when the job's history begins")
        score = round(float(np.clip(0.5 * max(rho, 0.0) + 0.5 * align, 0.0, 1.0)), 3)
        evidence.append(f"rank correlation with step time {rho:+.2f} at lag {lag * bucket.total_seconds() / 60:g} min")
        row = heads.iloc[int(i)]
        gpu = None if pd.isna(row.get("gpu")) else int(row["gpu"])
        link = None if pd.isna(row.get("link")) else int(row["link"])
        peer = str(row["peer"]) if "peer" in row and not pd.isna(row["peer"]) else "unknown"
        out.append(LinkScore(
            node_id=str(row["node_id"]), component=component_of(str(row["link_type"]), gpu, link, peer),
            gpu=gpu, link=link, link_type=str(row["link_type"]), score=score, rank_correlation=round(rho, 3),
            lag_minutes=lag * bucket.total_seconds() / 60, onset=onset.to_pydatetime() if onset else None,
            explains_slowdown=bool(job.slowdown and score >= min_score), evidence=evidence,
        ))
    return out


def _verdict(job: JobExplanation) -> str:
    pct = f"{job.degradation_pct:+.1f}%" if job.degradation_pct is not None else "n/a"
    explaining = [s for s in job.links if s.explains_slowdown]
    if job.slowdown and explaining:
        top = explaining[0]
        since = f" since {job.onset:%Y-%m-%d %H:%M} UTC" if job.onset else ""
        return (f"{top.node_id} {top.component} explains job {job.job_id}'s slowdown ({pct}{since}; "
                f"score {top.score:.2f})")
    if job.slowdown:
        return f"job {job.job_id} is {pct} slower and no link's errors track it: not the fabric"
    if job.links:
        return f"job {job.job_id} is not slower ({pct}); erroring links do not slow it"
    return f"job {job.job_id} runs at its baseline ({pct})"
