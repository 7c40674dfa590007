"""One node's Diagnosis: the fleet engine run on that node's rows and those of the nodes sharing its job.

There is no separate per-node analysis: the same code judges one node and a thousand, so they cannot disagree.
Healthy links keep a finding of their own here (`full`), for the summary and the picture.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta

import pandas as pd

from ..config.thresholds import Thresholds
from ..errors import InputError
from ..model import Diagnosis
from ..tables import job_nodes
from ..topology import NodeGraph
from .correlate import JobExplanation
from .fleet import analyze_fleet
from .jobs import History
from .steps import job_steps, jobs_on


def node_tables(tables: Mapping[str, pd.DataFrame], node_id: str,
                job_id: str | None = None) -> tuple[dict[str, pd.DataFrame], str | None]:
    """The rows one node's analysis reads: its own, and its job's other nodes' (a peer's link may explain it)."""
    steps = tables.get("step_samples")
    if job_id is not None and job_steps(steps, job_id).empty:
        known = ", ".join(jobs_on(steps, node_id)[:10]) or "none"
        raise InputError(f"no step samples for job {job_id!r} (jobs on {node_id}: {known})", field="--job",
                         value=job_id)
    job = job_id or next(iter(jobs_on(steps, node_id)), None)
    nodes = {node_id}
    if job is not None and steps is not None:
        nodes |= set(job_nodes(job_steps(steps, job)))
    out = dict(tables)
    for name in ("link_samples", "events"):
        frame = tables.get(name)
        if frame is not None and len(frame) and "node_id" in frame.columns:
            mine = frame["node_id"].isin(sorted(nodes)).to_numpy(bool, na_value=False)
            out[name] = frame if mine.all() else frame[mine]
    return out, job


def analyze_tables(tables: Mapping[str, pd.DataFrame], *, node_id: str, window: timedelta = timedelta(hours=1),
                   end: datetime | None = None, thresholds: Thresholds | None = None, graph: NodeGraph | None = None,
                   platform: str | None = None, job_id: str | None = None,
                   platforms: Mapping[str, str] | None = None, history: History | None = None,
                   cut: bool = False) -> Diagnosis:
    """Rates, rules, missing links, events, correlation with the node's job and localization, for one node.

    `platforms` names the other nodes' platforms (the job's peers); `graph` a graph of this node's (observed ports).
    `cut`: the node's readings come from an input that stops short or covers some GPUs only, so a link or GPU they
    do not reach is not missing.
    """
    rows, job = node_tables(tables, node_id, job_id)
    known = {**(platforms or {}), **({node_id: platform} if platform else {})}
    result = analyze_fleet(rows, window=window, end=end, thresholds=thresholds, platforms=known,
                           graphs={node_id: graph} if graph is not None else None, nodes=[node_id], full=True,
                           jobs={node_id: job} if job else None, history=history,
                           cut=[node_id] if cut else ())
    return result.diagnoses[node_id]


def explain_job(tables: Mapping[str, pd.DataFrame], *, job_id: str, window: timedelta = timedelta(hours=1),
                end: datetime | None = None, thresholds: Thresholds | None = None,
                platforms: Mapping[str, str] | None = None) -> JobExplanation:
    """A job's slowdown and which of its nodes' flagged links explain it: the engine run on the job's nodes."""
    steps = tables.get("step_samples")
    rows = job_steps(steps, job_id) if steps is not None else pd.DataFrame()
    nodes = job_nodes(rows) if len(rows) else []
    if not nodes:
        return JobExplanation(job_id=job_id, nodes=[], verdict=f"no step-time samples for job {job_id}")
    result = analyze_fleet(tables, window=window, end=end, thresholds=thresholds, platforms=platforms, nodes=nodes,
                           jobs=dict.fromkeys(nodes, job_id))
    return result.jobs[job_id]
