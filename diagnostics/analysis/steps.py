"""A job's step samples: one job's cleaned (a positive step time and a time, in time order, one per time), the jobs
that name a node, and a fleet's indexed once by job and by node."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..tables import naming


def job_steps(step_samples: pd.DataFrame | None, job_id: str) -> pd.DataFrame:
    """One job's step samples with a step time and a time, in time order, one per time (the last wins)."""
    if step_samples is None or step_samples.empty:
        return pd.DataFrame(columns=["timestamp", "step_time_ms", "node_ids"])
    rows = step_samples[(step_samples["job_id"].astype("string") == str(job_id)).to_numpy(bool, na_value=False)]
    return _clean(rows, ["timestamp"])


def jobs_on(step_samples: pd.DataFrame | None, node_id: str) -> list[str]:
    """Jobs whose step samples name this node, most recent first."""
    if step_samples is None or step_samples.empty:
        return []
    hit = step_samples[naming(step_samples["node_ids"], [node_id])]
    if hit.empty:
        return []
    last = hit.groupby(hit["job_id"].astype("string"), observed=True)["timestamp"].max()
    return [str(j) for j in last.sort_values(ascending=False).index]


class JobSteps:
    """Step samples indexed once for a fleet: each job's rows cleaned (`job_steps`) and its nodes, and each node's
    jobs, newest first (a fleet asks for a thousand nodes' jobs; scanning every step sample for each is what this
    saves)."""

    def __init__(self, step_samples: pd.DataFrame | None) -> None:
        self.by_job: dict[str, pd.DataFrame] = {}
        self.nodes: dict[str, list[str]] = {}
        self.by_node: dict[str, list[str]] = {}
        if step_samples is None or step_samples.empty:
            return
        rows = _clean(step_samples, ["job_id", "timestamp"])
        jobs = rows["job_id"].astype("string")
        for job, mine in rows.groupby(jobs, observed=True, sort=False):
            self.by_job[str(job)] = mine
        newest: dict[str, dict[str, pd.Timestamp]] = {}
        lists = rows.groupby([jobs, rows["node_ids"].astype("string").fillna("")], observed=True,
                             sort=False)["timestamp"].max()
        for (job, listed), last in zip(lists.index.tolist(), lists.tolist(), strict=True):
            named = {n.strip() for n in str(listed).split(",") if n.strip()}
            self.nodes[str(job)] = sorted(set(self.nodes.get(str(job), [])) | named)
            for node in named:
                mine_ = newest.setdefault(node, {})
                mine_[str(job)] = max(last, mine_.get(str(job), last))
        self.by_node = {n: [j for j, _ in sorted(js.items(), key=lambda kv: kv[1], reverse=True)]
                        for n, js in newest.items()}

    def of(self, job_id: str) -> pd.DataFrame:
        """The job's step samples, cleaned as `job_steps` cleans them."""
        rows = self.by_job.get(str(job_id))
        return rows if rows is not None else pd.DataFrame(columns=["timestamp", "step_time_ms", "node_ids", "job_id"])

    def jobs_on(self, node_id: str) -> list[str]:
        return list(self.by_node.get(node_id, []))


def _clean(rows: pd.DataFrame, order: list[str]) -> pd.DataFrame:
    """Step samples with a positive step time and a time, in `order`, one per (job, time): the last wins."""
    rows = rows[pd.to_numeric(rows["step_time_ms"], errors="coerce").to_numpy(np.float64, na_value=np.nan) > 0]
    if str(rows["timestamp"].dtype) != "datetime64[ns, UTC]":
        rows = rows.assign(timestamp=pd.to_datetime(rows["timestamp"], utc=True, format="mixed"))
    rows = rows.dropna(subset=["timestamp"]).sort_values(order, kind="stable")
    return rows.drop_duplicates(order, keep="last")


def steps_span(steps: pd.DataFrame, job_id: str, *, cleaned: bool = False) -> tuple[int, int] | None:
    """The first and last step time of a job (UTC ns): the link history its correlation reads."""
    rows = steps if cleaned else job_steps(steps, job_id)
    if rows.empty:
        return None
    t = rows["timestamp"].to_numpy("datetime64[ns]").view(np.int64)
    return int(t[0]), int(t[-1])
