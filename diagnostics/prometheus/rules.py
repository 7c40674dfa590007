"""A Prometheus rules file written from the thresholds file: the same rules the sweep pushes down, kept on the server.

Recording rules hold each counter's per-link rate per hour over the window (one series per link, named by
`recording_name`), so an alert, a dashboard or a sweep reads a small precomputed vector instead of every spelling
of every counter. Alerting rules compare those rates (and the gauge, Xid and missing-series queries the sweep
generates) with each rule's threshold. A rule with `persist = [k, m]` alerts when its rate has stayed above for
k consecutive windows: `for:` is (k - 1) windows, a continuous stretch where the history analysis counts any k of
the last m (so the alert is the stricter of the two).

A recorded rate is the counter's `increase()` over the window divided by the window, cheap enough for a server to
evaluate every minute: a series that began inside the window is rated at the share of its rate that its span is of
the window, so an alert may miss it for up to a window. The sweep corrects it: it searches once for such series
and rates their nodes again over the span each series covers (`young`), never reading the recorded rate for them.

The file is YAML (Prometheus' rule-file format); each scalar is written as a JSON string, which is also a YAML
double-quoted scalar, so no PromQL character needs its own escaping.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..components import switch_name
from ..config.thresholds import BELOW_EXPECTED_RULE, GPU_MISSING_RULE, MISSING_RULE, Rule, Thresholds
from ..enums import LinkType
from ..ingest.dcgm_map import DcgmMap, load_map
from .config import ENV_FILE, PrometheusConfig, load_config
from .gauges import is_gauge_rule, literal
from .presence import presence_selector
from .promql import (
    QueryBuilder,
    SweepQuery,
    comparison,
    duration,
    gauge_queries,
    missing_queries,
    not_pushable,
    xid_queries,
)

RECORD_LEVEL = "fabricbot_link"  # level:metric:operation, as Prometheus' naming practice has it
DEFAULT_INTERVAL = "1m"
GROUP = "fabricbot"


def window_text(hours: float) -> str:
    """`1h`, `30m`, `5400s`: the window in a Prometheus duration, as short as it reads exactly."""
    seconds = round(hours * 3600)
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def recording_name(counter: str, link_type: LinkType, window_hours: float) -> str:
    """The recorded series of one counter's per-link rate per hour: `fabricbot_link:replay_nvlink:rate1h`."""
    return f"{RECORD_LEVEL}:{counter}_{link_type.value}:rate{window_text(window_hours)}"


def recorded_pattern(window_hours: float) -> str:
    """A name regex of every recorded rate at this window."""
    return f"{RECORD_LEVEL}:[a-z0-9_]+:rate{window_text(window_hours)}"


@dataclass(frozen=True)
class Recorded:
    """One recording rule: a counter's per-link rate for one link type."""

    name: str
    counter: str
    link_type: LinkType
    expr: str


def rate_rules(thresholds: Thresholds) -> list[Rule]:
    """The rules judged on a counter's rate per hour (the ones a recording rule serves)."""
    return [r for r in thresholds.rules if not not_pushable(r) and not is_gauge_rule(r)]


def recordings(thresholds: Thresholds, builder: QueryBuilder, window_hours: float) -> list[Recorded]:
    """One recording rule per (counter, link type) that some rate rule reads and some metric carries."""
    rng = duration(window_hours)
    out: dict[tuple[str, LinkType], Recorded] = {}
    for rule in rate_rules(thresholds):
        for link_type in LinkType:
            if (rule.counter, link_type) in out or not rule.applies_to(link_type.value):
                continue
            vector = builder.counter_vector(rule.counter, link_type, lambda s: f"increase({s}[{rng}])")
            if vector is not None:
                out[rule.counter, link_type] = Recorded(recording_name(rule.counter, link_type, window_hours),
                                                        rule.counter, link_type, f"({vector}) / {window_hours:g}")
    return list(out.values())


@dataclass(frozen=True)
class Alerting:
    name: str
    expr: str
    rule: str
    severity: str
    link_type: LinkType
    for_: str | None
    summary: str
    doc: str


def alert_name(rule: str, link_type: LinkType | None = None) -> str:
    words = re.split(r"[^A-Za-z0-9]+", rule) + ([link_type.value] if link_type else [])
    return "Fabricbot" + "".join(w[:1].upper() + w[1:] for w in words if w)


def _where(builder: QueryBuilder, link_type: LinkType) -> str:
    """The component in an alert's summary, from the series' labels (Go template)."""
    lab = builder.config.labels
    node = f"{{{{ $labels.{lab.node} }}}}"
    if link_type is LinkType.PCIE:
        return f"{node} GPU {{{{ $labels.{lab.gpu} }}}} PCIe"
    if link_type is LinkType.NVSWITCH:
        return f"{node} {switch_name(f'{{{{ $labels.{lab.nvswitch} }}}}')} port {{{{ $labels.{lab.link} }}}}"
    return f"{node} GPU {{{{ $labels.{lab.gpu} }}}} NVLink {{{{ $labels.{lab.link} }}}}"


def _other_summary(builder: QueryBuilder, query: SweepQuery) -> str:
    lab = builder.config.labels
    node, gpu = f"{{{{ $labels.{lab.node} }}}}", f"GPU {{{{ $labels.{lab.gpu} }}}}"
    value = "{{ $value }}"
    if query.xid:  # the code is the series' label (the gauge's query sets it); the value counts the Xids
        return f"{node} {gpu}: Xid {{{{ $labels.{lab.xid} }}}} ({query.rule}), {value} in the window"
    if query.rule == GPU_MISSING_RULE:
        return f"{node}: {value} GPUs report, fewer than its platform has"
    if query.rule == BELOW_EXPECTED_RULE:
        return f"{node} {gpu}: {value} NVLinks report, fewer than its platform has"
    if query.rule == MISSING_RULE:
        return f"{_where(builder, query.link_type)}: its series stopped inside the window"
    limit = literal(query.above or 0)
    return f"{_where(builder, query.link_type)}: {query.rule} at {value} {query.unit} (above {limit})"


def alertings(thresholds: Thresholds, builder: QueryBuilder, window_hours: float,
              recorded: list[Recorded]) -> list[Alerting]:
    """One alerting rule per (threshold, link type) the server can evaluate."""
    by_key = {(r.counter, r.link_type): r for r in recorded}
    out: list[Alerting] = []
    for rule in rate_rules(thresholds):
        types = [t for t in LinkType if (rule.counter, t) in by_key and rule.applies_to(t.value)]
        for link_type in types:
            rec = by_key[rule.counter, link_type]
            compare = comparison(rule, builder, link_type, duration(window_hours))
            if compare is None:
                continue
            limit = "its generation and width's" if rule.per_lane_by_gen else f"{rule.above:g}"
            wait = None
            if rule.persist:
                wait = window_text(window_hours * (int(rule.persist[0]) - 1)) if rule.persist[0] > 1 else None
            out.append(Alerting(alert_name(rule.name, link_type if len(types) > 1 else None),
                                f"{rec.name} {compare}", rule.name, rule.severity.value, link_type, wait,
                                f"{_where(builder, link_type)}: {rule.counter} at {{{{ $value | printf \"%.4g\" }}}}"
                                f" per hour (above {limit})", rule.doc))
    others: list[SweepQuery] = [*gauge_queries(thresholds, builder, window_hours),
                                *xid_queries(thresholds, builder, window_hours),
                                *missing_queries(builder, window_hours)]
    grouped: dict[tuple[str, LinkType], list[SweepQuery]] = {}
    for q in others:
        grouped.setdefault((q.rule, q.link_type), []).append(q)
    docs = {r.name: r.doc for r in thresholds.rules}
    for (name, link_type), queries in grouped.items():
        several = sum(1 for (n, _) in grouped if n == name) > 1
        expr = " or ".join(f"({q.promql})" for q in queries) if len(queries) > 1 else queries[0].promql
        every = presence_selector(builder)
        if name == MISSING_RULE and every is not None:  # a link stopped while its node kept reporting (the sweep's)
            node = builder.by("node")
            expr = f"({expr}) and on ({node}) group by ({node}) ({every})"
        out.append(Alerting(alert_name(name, link_type if several else None), expr, name,
                            queries[0].severity.value, link_type, None, _other_summary(builder, queries[0]),
                            docs.get(name, f"fabricbot's {name} check")))
    return out


def labels_only(path: str | Path | None = None) -> PrometheusConfig:
    """The label map and matchers (the bundled file, `path` or $FABRICBOT_PROMETHEUS_CONFIG's) without a server: a
    rules file names none."""
    return load_config("http://localhost:9090", path=path or os.environ.get(ENV_FILE), env={})


def _q(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def rules_yaml(thresholds: Thresholds, *, window_hours: float = 1.0, interval: str = DEFAULT_INTERVAL,
               config: PrometheusConfig | None = None, dmap: DcgmMap | None = None, alerts: bool = True) -> str:
    """The rules file's text: one group, the recording rules first and the alerting rules after them.

    One group because an alert reads a recorded rate: Prometheus runs a group's rules in order at one evaluation
    time, while separate groups run in no set order, so an alert in its own group could judge the rate recorded one
    interval earlier, or (when the interval passes the 5-minute lookback, as a slow unit test's does) nothing."""
    builder = QueryBuilder(config or labels_only(), dmap or load_map())
    recorded = recordings(thresholds, builder, window_hours)
    alerting = alertings(thresholds, builder, window_hours, recorded) if alerts else []
    lines = [f"# Written by `fabricbot rules` from {thresholds.source}; window {window_text(window_hours)}.",
             "# Recording rules: each counter's per-link rate per hour, read by `fabricbot sweep` when present.",
             "# A rate is the increase over the window per window-hour: a series younger than the window (a node",
             "# that joined, re-created series) is rated low here; the sweep rates those nodes again itself.",
             "# Alerting rules after them, in the same group: each judges the rate recorded at the same evaluation.",
             "groups:",
             f"  - name: {_q(GROUP)}", f"    interval: {_q(interval)}", "    rules:"]
    for rec in recorded:
        lines += [f"      - record: {_q(rec.name)}", f"        expr: {_q(rec.expr)}"]
    for alert in alerting:
        lines += [f"      - alert: {_q(alert.name)}", f"        expr: {_q(alert.expr)}"]
        if alert.for_:
            lines.append(f"        for: {_q(alert.for_)}")
        lines += ["        labels:", f"          severity: {_q(alert.severity)}",
                  f"          fabricbot_rule: {_q(alert.rule)}", f"          link_type: {_q(alert.link_type.value)}",
                  "        annotations:", f"          summary: {_q(alert.summary)}",
                  f"          description: {_q(alert.doc)}"]
    return "\n".join(lines) + "\n"
