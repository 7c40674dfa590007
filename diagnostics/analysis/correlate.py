"""Step time against link errors: is the job slower, since when, and which link (if any) explains it.

The slowdown onset is a least-squares change point on the step-time series; each link is scored by how well its
error series tracks the step time (Spearman rank correlation, searching lags where errors lead) and how close its
own error onset lies to the slowdown onset.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field

from .. import format as fmt
from ..components import ComponentRef
from ..config.thresholds import Thresholds
from ..tables import job_nodes
from ..times import clockless, ns, utc_datetime, utc_ns
from .prepared import Prepared, run_rows
from .stats import MIN_SEGMENT, bucket_means_each, change_point, spearman_lags
from .steps import job_steps

ERROR_COUNTERS = ("replay", "crc_flit", "crc_data", "recovery", "replay_rollovers", "effective_errors",
                  "recovery_failed")
# A link that counts no errors but reads a bit-error ratio (an NVLink5 switch port, as NMX-T reads it) is scored on
# that ratio: its level per bucket rises with the errors the link's receiver sees.
ERROR_RATIOS = ("effective_ber",)
MAX_LAG_BUCKETS = 3
SPARSE_COUNTS = 3  # a sparse link's counts are summed over enough buckets to expect about this many
MAX_SUM_BUCKETS = 12  # ... but over an hour at most (5-minute buckets)
ONSET_RISE = 2.0  # a link's errors start where they run at least this many times their rate before
TIE_SCORE = 0.05  # links whose scores lie this close explain a slowdown together


class LinkScore(BaseModel):
    node_id: str
    ref: ComponentRef
    score: float = Field(ge=0.0, le=1.0)
    rank_correlation: float
    lag_minutes: float
    onset: datetime | None = None
    explains_slowdown: bool
    evidence: list[str] = Field(default_factory=list)


class UnscoredLink(BaseModel):
    """A slowed job's link the correlation could not score, its node's stored readings being unreadable (a damaged
    part): whether it tracks the slowdown is unknown, not no. `ref` None: the node's links, none of them read."""

    node_id: str
    ref: ComponentRef | None = None
    why: str


class JobExplanation(BaseModel):
    """A job's slowdown and the links scored against it, best first, and the flagged links it could not score."""

    job_id: str
    nodes: list[str]
    baseline_step_time_ms: float | None = None
    step_time_ms: float | None = None
    degradation_pct: float | None = None
    slowdown: bool = False
    onset: datetime | None = None
    links: list[LinkScore] = Field(default_factory=list)
    unscored: list[UnscoredLink] = Field(default_factory=list)
    verdict: str
    warnings: list[str] = Field(default_factory=list)
    stopped: datetime | None = Field(
        default=None, description="The last step of a job that logs no step any more (it is not running).")

    @property
    def running(self) -> bool:
        return self.stopped is None

    def for_link(self, node_id: str, ref: ComponentRef) -> LinkScore | None:
        for score in self.links:
            if score.node_id == node_id and score.ref.slug == ref.slug:
                return score
        return None

    def unscored_on(self, node_id: str) -> dict[str, str]:
        """The node's links this job could not score (component slug -> why)."""
        return {u.ref.slug: u.why for u in self.unscored if u.node_id == node_id and u.ref is not None}


def job_slowdown(steps: pd.DataFrame, job_id: str, *, thresholds: Thresholds, baseline_ms: float | None = None,
                 onset: datetime | None = None, cleaned: bool = False,
                 nodes: list[str] | None = None) -> JobExplanation:
    """A job's slowdown from its step times alone: against the baseline its input states (`baseline_ms`, or its rows
    marked `baseline`), or the median before the change point.

    Step samples are few, so this reads the job's whole history; only a slowed job needs its links scored.
    `cleaned`: `steps` are the job's own, as `job_steps` gives them (and `nodes` the nodes they name).
    """
    steps = steps if cleaned else job_steps(steps, job_id)
    if steps.empty:
        return JobExplanation(job_id=job_id, nodes=[], verdict=f"no step-time samples for job {job_id}")
    nodes = list(nodes) if nodes is not None else job_nodes(steps)
    values = steps["step_time_ms"].to_numpy(np.float64)
    times = steps["timestamp"]
    min_pct = thresholds.setting("slowdown_min_pct")
    stated = _stated_baseline(steps)
    split = None
    if stated is not None and stated.any() and not stated.all():
        base = baseline_ms or float(np.median(values[stated]))
        current = float(np.median(values[~stated]))
        start = times[~stated].iloc[0]
    else:
        if onset is not None:
            split = int(np.searchsorted(times.to_numpy("datetime64[ns]").view(np.int64), utc_ns(onset)))
        elif len(values) >= 2 * MIN_SEGMENT:
            cp = change_point(values)
            if cp is not None and np.median(values[cp:]) > np.median(values[:cp]) * (1 + min_pct / 100):
                split = cp
        if split is not None and 0 < split < len(values):
            base = baseline_ms or float(np.median(values[:split]))
            current = float(np.median(values[split:]))
            start = times.iloc[split]
        else:
            # too few steps for a change point, or no change: the recent steps against the whole history
            base = baseline_ms or float(np.median(values))
            current = float(np.median(values[-max(3, len(values) // 10):]))
            start = None
    degradation = round((current - base) / base * 100.0, 1)
    slow = degradation >= min_pct
    explanation = JobExplanation(job_id=job_id, nodes=nodes, baseline_step_time_ms=round(base, 3),
                                 step_time_ms=round(current, 3), degradation_pct=degradation, slowdown=slow,
                                 onset=start.to_pydatetime() if slow and start is not None else None,
                                 verdict="")
    explanation.verdict = verdict(explanation)
    return explanation


def _stated_baseline(steps: pd.DataFrame) -> np.ndarray | None:
    """Which rows the input states as the job's baseline, or None when it states none."""
    if "baseline" not in steps.columns:
        return None
    marked = steps["baseline"].astype("boolean").fillna(False).to_numpy(bool)
    return marked if marked.any() else None


BUCKET = timedelta(minutes=5)  # a job's step time and its links' errors are compared per bucket of this


@dataclass(frozen=True)
class StepBuckets:
    """A job's step time per bucket: the first bucket's start, and the mean step time in each."""

    t0: pd.Timestamp
    means: np.ndarray


def step_buckets(jobs: list[pd.DataFrame], bucket: timedelta = BUCKET) -> list[StepBuckets]:
    """Each job's (its steps as `job_steps` cleans them, at least one) step time per bucket, from a bucket before its
    first step to its last: one grouped mean for every job scored."""
    width = int(bucket.total_seconds() * 1e9)
    t0s = [steps["timestamp"].iloc[0].floor(bucket) - bucket for steps in jobs]
    series = [(ns(steps["timestamp"]), steps["step_time_ms"].to_numpy(np.float64, na_value=np.nan), utc_ns(t0),
               int((steps["timestamp"].iloc[-1] - t0) / bucket) + 1) for steps, t0 in zip(jobs, t0s, strict=True)]
    means = bucket_means_each(series, width=width)
    return [StepBuckets(t0, m) for t0, m in zip(t0s, means, strict=True)]


def score_links(job: JobExplanation, steps: pd.DataFrame, p: Prepared, segments: np.ndarray,
                refs: list[tuple[str, ComponentRef]], thresholds: Thresholds,
                bucket: timedelta = BUCKET, cleaned: bool = False,
                unscored: list[UnscoredLink] | None = None, buckets: StepBuckets | None = None) -> JobExplanation:
    """`job` with the given links scored against its step time, best first, and its verdict (which names the
    `unscored` links as not scored, never as not tracking it).

    `segments` are the links' indices in the prepared history `p`; `refs` their node and identity, in the same order.
    `buckets`: the job's step time per bucket as `step_buckets` gives it (default: worked out here).
    """
    rows = steps if cleaned else job_steps(steps, job.job_id)
    scores: list[LinkScore] = []
    if len(segments) and not rows.empty:
        given = buckets if buckets is not None else step_buckets([rows], bucket)[0]
        scores = _runner_ups(_score(p, segments, refs, given, job, thresholds, bucket))
    out = job.model_copy(update={"links": sorted(scores, key=lambda s: s.score, reverse=True),
                                 "unscored": list(unscored or [])})
    out.verdict = verdict(out)
    return out


def _runner_ups(scores: list[LinkScore]) -> list[LinkScore]:
    """A ring is paced by its slowest hop: the best-tracking link explains a job's slowdown, and another only when it
    tracks as well (within TIE_SCORE); the rest are failing links the job does not wait on."""
    best = max((s.score for s in scores if s.explains_slowdown), default=None)
    if best is None:
        return scores
    out = []
    for s in scores:
        if s.explains_slowdown and s.score < best - TIE_SCORE:
            s = s.model_copy(update={"explains_slowdown": False,
                                     "evidence": [*s.evidence, f"another link tracks the slowdown better "
                                                               f"(score {best:.2f} against {s.score:.2f})"]})
        out.append(s)
    return out


def _signals(p: Prepared, segments: np.ndarray, t0: pd.Timestamp, n: int, bucket: timedelta) -> np.ndarray:
    """Per chosen link, errors per bucket plus a large step while the link is down or has lost lanes."""
    errors = np.zeros((len(segments), n))
    idx, owner, _ = run_rows(p.segment_starts[segments], _segment_ends(p)[segments])
    if len(idx) == 0:
        return errors
    width = int(bucket.total_seconds() * 1e9)
    b = (p.t[idx] - utc_ns(t0) - 1) // width
    ok = (b >= 0) & (b < n)
    for c in ERROR_COUNTERS:
        if c not in p.counters:
            continue
        d, _ = p.delta(c)
        d = d[idx]
        hit = ok & (d != 0)
        np.add.at(errors, (owner[hit], b[hit]), d[hit])
    _ratios(p, idx, owner, b, ok, errors)
    flagged = p.cached("impaired", lambda: _impaired(p))[idx] & ok
    if flagged.any():
        flags = np.zeros(errors.shape)
        flags[owner[flagged], b[flagged]] = 1.0
        errors = errors + flags * 1e9
    return errors


def _impaired(p: Prepared) -> np.ndarray:
    """Per row of the history, whether its link is down or has lost lanes: read once for every job scored on it,
    not once per job."""
    bad = np.zeros(len(p.t), dtype=bool)
    at = p.positions(np.arange(len(p.t)))
    source = p.source
    if "link_state" in source.columns:
        state = source["link_state"].array.take(at)
        bad |= pd.Series(state, dtype="string").isin(["down", "inactive"]).to_numpy(bool, na_value=False)
    if {"width", "max_width"} <= set(source.columns):
        width_now = source["width"].array.take(at).to_numpy(np.float64, na_value=np.nan)
        width_max = source["max_width"].array.take(at).to_numpy(np.float64, na_value=np.nan)
        bad |= np.nan_to_num(width_now < width_max, nan=0).astype(bool)
    return bad


def _ratios(p: Prepared, idx: np.ndarray, owner: np.ndarray, b: np.ndarray, ok: np.ndarray,
            errors: np.ndarray) -> None:
    """For the links that count no errors, their bit-error ratio's highest reading per bucket (in place)."""
    quiet = np.asarray((errors == 0).all(axis=1), dtype=bool)
    for c in ERROR_RATIOS:
        if not quiet.any() or c not in p.source.columns:
            continue
        v = p.values(c)[idx]
        hit = ok & quiet[owner] & np.isfinite(v) & (v > 0)
        if hit.any():
            np.maximum.at(errors, (owner[hit], b[hit]), v[hit])
            quiet &= np.asarray((errors == 0).all(axis=1), dtype=bool)


def _segment_ends(p: Prepared) -> np.ndarray:
    return np.append(p.segment_starts[1:], len(p.t))


def _onset(series: np.ndarray) -> np.ndarray:
    """The bucket the link's errors start in (as a one-element array; empty when it has none): where a single shift
    in mean best splits the series, when the errors after it run at ONSET_RISE times those before (a background of
    a few errors an hour does not start it), else the first bucket with a quarter of its high errors."""
    positive = series[series > 0]
    if not len(positive):
        return np.array([], int)
    cp = change_point(series)
    if cp is not None:
        before, after = float(series[:cp].mean()), float(series[cp:].mean())
        if after > 0 and after >= ONSET_RISE * before:
            return np.array([cp])
    return np.flatnonzero(series > 0.25 * np.quantile(positive, 0.9))[:1]


def _sparse(series: np.ndarray, first: int) -> tuple[int, float]:
    """For a link whose errors come a few an hour (failed recoveries, a Blackwell link's effective errors): how many
    buckets to sum before ranking (so one count every few buckets reads as a rate, not as noise) and how many
    buckets its true onset may precede its first count by (the mean gap between counts). A dense series gets 1, 0."""
    after = series[first:]
    rate = float(after.mean()) if len(after) else 0.0  # counts per bucket once the errors started
    if rate <= 0 or rate >= 1:
        return 1, 0.0
    return int(min(MAX_SUM_BUCKETS, np.ceil(SPARSE_COUNTS / rate))), min(1.0 / rate, float(MAX_SUM_BUCKETS))


def _score(p: Prepared, segments: np.ndarray, refs: list[tuple[str, ComponentRef]], steps: StepBuckets,
           job: JobExplanation, thresholds: Thresholds, bucket: timedelta) -> list[LinkScore]:
    t0, step_series = steps.t0, steps.means
    n = len(step_series)
    errors = _signals(p, segments, t0, n, bucket)
    tol = thresholds.setting("onset_tolerance_min")
    min_score = thresholds.setting("explains_min_score")
    lags = min(MAX_LAG_BUCKETS, max(n - 4, 0))
    firsts, slack = [], np.zeros(len(errors))
    ranked = errors.copy()
    for j, series in enumerate(errors):
        first = _onset(series)
        firsts.append(first)
        if len(first):
            width, slack[j] = _sparse(series, int(first[0]))
            if width > 1:  # a trailing sum: a few counts an hour rank as the rate they are
                ranked[j] = np.convolve(series, np.ones(width))[:n]
    rhos = spearman_lags(ranked, step_series, lags)
    out: list[LinkScore] = []
    for j, (node, ref) in enumerate(refs):
        lag = int(np.argmax(rhos[j]))
        rho = float(rhos[j, lag])
        first = firsts[j]
        onset = t0 + bucket * (int(first[0]) + 1) if len(first) else None
        align = 0.0
        evidence: list[str] = []
        if onset is not None and job.onset is not None:
            gap_min = abs((pd.Timestamp(job.onset) - onset).total_seconds()) / 60
            early = (onset - pd.Timestamp(job.onset)).total_seconds() / 60  # the slowdown began before the count
            unseen = slack[j] * bucket.total_seconds() / 60  # sparse counts: the onset may precede the first one
            near = max(0.0, gap_min - unseen) if early > 0 else gap_min
            align = float(np.exp(-near / tol))
            between = f"; about {unseen:.0f} min between counts" if unseen else ""
            if clockless(onset):  # a snapshot's times tell the gap, not the hour
                side = "with" if round(gap_min) == 0 else "before" if early < 0 else "after"
                apart = "" if side == "with" else f"{gap_min:.0f} min "
                evidence.append(f"errors start {apart}{side} the slowdown{between}")
            else:
                evidence.append(f"errors start {fmt.when(onset)}, slowdown {fmt.when(job.onset)} "
                                f"({gap_min:.0f} min apart{between})")
        elif onset is not None and first[0] == 0:
            evidence.append("errors already present when the job's history begins")
        score = round(float(np.clip(0.5 * max(rho, 0.0) + 0.5 * align, 0.0, 1.0)), 3)
        evidence.append(f"rank correlation with step time {rho:+.2f} at lag {lag * bucket.total_seconds() / 60:g} min")
        out.append(LinkScore(
            node_id=node, ref=ref, score=score, rank_correlation=round(rho, 3),
            lag_minutes=lag * bucket.total_seconds() / 60, onset=onset.to_pydatetime() if onset else None,
            explains_slowdown=bool(job.slowdown and score >= min_score), evidence=evidence,
        ))
    return out


def stopped(rows: pd.DataFrame, job: JobExplanation, *, end_ns: int, window: timedelta,
            thresholds: Thresholds) -> JobExplanation:
    """`job` marked stopped when its newest step (of `rows`, its steps as `job_steps` cleans them) lies further back
    than `stale_after_intervals` of its own step intervals (a whole window for a job with one step): as a link's
    series has stopped, so has a job that logs no step; it is neither slowed nor at its baseline."""
    if len(rows) == 0:
        return job
    t = rows["timestamp"].to_numpy("datetime64[ns]").view(np.int64)
    quiet = float(np.median(np.diff(t))) * thresholds.setting("stale_after_intervals") if len(t) > 1 \
        else window.total_seconds() * 1e9
    if end_ns - int(t[-1]) <= quiet:
        return job
    out = job.model_copy(update={"stopped": utc_datetime(int(t[-1])), "slowdown": False,
                                 "onset": None})
    out.verdict = verdict(out)
    return out


def verdict(job: JobExplanation, name: Callable[[LinkScore], str] | None = None) -> str:
    """The job's verdict in plain words; `name` says a link as the answer names it (a rack's host's link as its rack
    does), by default its host and its host's name for it."""
    if job.stopped is not None:
        return f"job {job.job_id} has logged no step since {fmt.when(job.stopped)}: it is not running"
    pct = f"{job.degradation_pct:+.1f}%" if job.degradation_pct is not None else "n/a"
    explaining = [s for s in job.links if s.explains_slowdown]
    if job.slowdown and explaining:
        top = explaining[0]
        since = f" since {fmt.when(job.onset)}" if job.onset and not clockless(job.onset) else ""
        said = name(top) if name is not None else f"{top.node_id} {top.ref.name}"
        return (f"{said} explains job {job.job_id}'s slowdown ({pct}{since}; "
                f"score {top.score:.2f})")
    if job.slowdown and job.unscored:
        return (f"job {job.job_id} is {pct} slower" + ("; no scored link's errors track it" if job.links else "")
                + f"; {unscored_words(job.unscored)}")
    if job.slowdown:
        return f"job {job.job_id} is {pct} slower and no link's errors track it: not the fabric"
    if job.links:
        return f"job {job.job_id} is not slower ({pct}); erroring links do not slow it"
    return f"job {job.job_id} runs at its baseline ({pct})"


def unscored_words(unscored: list[UnscoredLink]) -> str:
    """The nodes whose links were not scored against a job, and why, each once: unknown, never cleared."""
    why = {u.node_id: u.why for u in unscored}
    return "; ".join(f"the links of {node} were not scored against it, its stored readings could not be read "
                     f"({reason}): whether they slow it is unknown" for node, reason in why.items())
