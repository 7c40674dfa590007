"""Read one node's DCGM series from Prometheus into the normalized tables the file readers produce.

The answer is written back as timestamped exposition and read by the dcgm reader itself, so metric names, label
aliases, sentinels and saturation are handled by one table (`data/dcgm.toml`) and one reader, not twice.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pandas as pd

from ..ingest.base import IngestResult, IngestWarning, Source
from ..ingest.dcgm import read_scrapes
from ..ingest.dcgm_map import DcgmMap, load_map
from ..tables import STEP_SAMPLES
from .client import PrometheusClient, PrometheusError
from .config import ENV_FILE, PrometheusConfig, redacted_url
from .promql import LOOKBACK, quoted


class NoSeries(PrometheusError):
    """The server holds none of the node's DCGM series in the span read: a silent node, not a healthy one."""


def all_names(dmap: DcgmMap) -> str:
    """A regex of every metric name the dcgm table knows (both spellings of counters)."""
    names = [*dmap.exact, *(p.pattern.replace(r"\d{1,2}", "[0-9]{1,2}").replace("\\", "") for p, _ in
                            dmap.patterns), *dmap.xid_counter, *dmap.xid_gauge]
    return "|".join(f"{n}(_total)?" for n in sorted(set(names)))


def node_selector(client: PrometheusClient, node: str, dmap: DcgmMap, gpus: list[int] | None = None) -> str:
    cfg = client.config
    matchers = [f'__name__=~"{all_names(dmap)}"', f'{cfg.labels.node}="{quoted(node)}"']
    if gpus:
        matchers.append(f'{cfg.labels.gpu}=~"{"|".join(str(g) for g in sorted(set(gpus)))}"')
    if cfg.matchers.strip():
        matchers.append(cfg.matchers.strip())
    return "{" + ", ".join(matchers) + "}"


def _ended(client: PrometheusClient, series: list[dict[str, Any]], selector: str) -> list[dict[str, Any]]:
    """The series with those that stopped before the node's last step cut at their last sample: a range read
    repeats a series' last value for the server's lookback after it (where no staleness marker ends it, as in
    backfilled blocks), which put a GPU off the bus quiet minutes after its Xid 79, and so not lost by it, where the
    store says it quiet since its last sample. One instant read of the raw samples per time such series end at."""
    ends = [float(s["values"][-1][0]) if s.get("values") else None for s in series]
    newest = max((e for e in ends if e is not None), default=None)
    stopped = sorted({e for e in ends if e is not None and newest is not None and e < newest})
    if not stopped:
        return series
    last: dict[tuple[tuple[str, str], ...], float] = {}
    for at in stopped:
        for row in client.query(f"{selector}[{LOOKBACK}]", at):
            times = [float(t) for t, _ in row.get("values", [])]
            if times:
                last[tuple(sorted(row["metric"].items()))] = max(times)
    out = []
    for item, end in zip(series, ends, strict=True):
        cut = last.get(tuple(sorted(item["metric"].items()))) if end in stopped else None
        out.append(item if cut is None else {**item, "values": [v for v in item["values"] if float(v[0]) <= cut]})
    return out


def _exposition(series: list[dict[str, Any]]) -> Iterator[str]:
    for item in series:
        labels = dict(item["metric"])
        name = labels.pop("__name__", "")
        body = ",".join(f'{k}="{quoted(v)}"' for k, v in sorted(labels.items()))
        for ts, value in item.get("values", []):
            yield f"{name}{{{body}}} {value} {round(float(ts) * 1000)}"


def step_time_unread(config: PrometheusConfig) -> str | None:
    """Why no job's slowdown is weighed in this server's answers (None where a step-time metric is set): the local
    store reads the step samples ingested beside the links, a server only the gauge its settings name, so without
    one a node's priority is its links' alone and may rate lower than the store's answer for the same fleet."""
    if config.step_time_metric:
        return None
    return ("the jobs' step time was not read (no step-time metric is set for this server), so each priority is "
            "the links' alone, no job's slowdown weighed; set `[step_time] metric` in the Prometheus settings "
            f"(--config or ${ENV_FILE}) to the jobs' step-time gauge to weigh it")


def read_step_times(client: PrometheusClient, node: str, start: datetime, end: datetime,
                    step_s: float) -> tuple[pd.DataFrame, tuple[str, ...]]:
    """The configured step-time gauge (milliseconds) for the node's jobs, as step_samples rows; server warnings."""
    cfg = client.config
    matchers = [f'{cfg.labels.node}="{quoted(node)}"', *([cfg.matchers.strip()] if cfg.matchers.strip() else [])]
    answer = client.ranged(f"{cfg.step_time_metric}{{{', '.join(matchers)}}}", start, end, step_s)
    series = answer.rows
    rows = [{"timestamp": pd.Timestamp(float(ts), unit="s", tz="UTC"),
             "job_id": item["metric"].get(cfg.step_time_job_label, "unknown"), "node_ids": node,
             "step_time_ms": float(value), "source": f"{redacted_url(cfg.url)} {cfg.step_time_metric}"}
            for item in series for ts, value in item.get("values", [])]
    return (STEP_SAMPLES.conform(pd.DataFrame(rows)) if rows else STEP_SAMPLES.empty()), answer.warnings


def read_node(client: PrometheusClient, node: str, start: datetime, end: datetime, step_s: float = 60.0,
              dmap: DcgmMap | None = None, gpus: list[int] | None = None) -> IngestResult:
    """One node's link samples (and GPUs, Xid events) over [start, end] at `step_s` resolution.

    `gpus` narrows the read to those GPUs' series (the offending ones), for a smaller transfer.
    """
    dmap = dmap or load_map()
    selector = node_selector(client, node, dmap, gpus)
    answer = client.ranged(selector, start, end, step_s)
    series = _ended(client, answer.rows, selector)
    name = f"{redacted_url(client.config.url)} {client.config.labels.node}={node}"
    if not series:
        raise NoSeries(f"{name}: no DCGM series between {start:%Y-%m-%d %H:%M} and {end:%H:%M} UTC "
                              "(a silent node is not a healthy one)")
    text = "\n".join(_exposition(series)) + "\n"
    result = read_scrapes([(Source.from_text(text, name=name), None)], node_id=node)
    warnings = answer.warnings
    if client.config.step_time_metric:
        result.tables["step_samples"], more = read_step_times(client, node, start, end, step_s)
        warnings += more
    # this node's answers only: the client may be serving other queries at the same time
    result.warnings.extend(IngestWarning(name, None, f"server warning: {w}") for w in warnings)
    return result
