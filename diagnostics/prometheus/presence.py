"""Which nodes a sweep's span holds link samples of, and which nodes the server knows around it.

The generated queries answer with offenders only: a window that holds no node's samples (an instant before the
first scrape, an exporter gone fleet-wide) answers every one of them with nothing, which is not an all-clear. So
the sweep also counts the nodes with a sample of the presence counter in the span its rules read (one query, as
bounded as theirs, answered with one number), and asks the server's index for the nodes it knows a while around it
(`limits.known_nodes_hours`, the label values API: no samples read). Where as many nodes report as the index knows,
every one of them does (the index holds each series with a sample in the span); only otherwise are the reporting
nodes asked by name, so a healthy fleet's answer does not grow with it. A node known there and silent in the span
makes the view incomplete, as the store's sweep says of a node it holds with no reading in that span.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from .. import format as fmt
from ..enums import LinkType
from ..errors import ConfigError
from ..offenders import SweepResult
from .client import Answer, LabelValues, PrometheusClient, PrometheusError
from .config import redacted_url
from .promql import LOOKBACK, PRESENCE_COLUMN, QueryBuilder, duration, quoted


@dataclass(frozen=True)
class PresenceQueries:
    """The count of the named nodes with a presence sample in the span (one row), and those nodes by name (a row
    each, asked only where the count does not settle it); `every` asks nodes by name over every presence series,
    where `names` reads the PCIe ones alone (None: it reads every series already)."""

    count: str
    names: str
    every: Callable[[Collection[str] | None], str] | None = None


def presence_selector(builder: QueryBuilder, *extra: str) -> str | None:
    """Every series of the presence counter (each spelling, every link type), with the site's matchers."""
    names = builder.names(PRESENCE_COLUMN, *LinkType)
    return builder.selector(names, *extra) if names else None


def reporting_now(builder: QueryBuilder, nodes: Collection[str]) -> str | None:
    """Which of `nodes` report now (a presence sample within the server's lookback), by name: asked of the nodes
    with a link whose series stopped inside the window, as a node whose every series stopped (its exporter or the
    node gone away) leaves each of its links."""
    node = builder.by("node")
    picked = presence_selector(builder, f'{node}=~"{"|".join(quoted(re.escape(n)) for n in sorted(nodes))}"')
    return None if picked is None else f"group by ({node}) ({picked})"


def presence_queries(builder: QueryBuilder, span_hours: float) -> PresenceQueries | None:
    """The presence queries over the `span_hours` before the evaluation time; None when no presence counter is
    mapped. Only the node label is kept: the answer is a node's name, never its series.

    The count and the names read a GPU's PCIe series alone where they are mapped (8 a node, not its 152 with every
    NVLink's): a query reads every sample of its series over the span, so its cost follows their number (256 nodes:
    3.1 s with every link's, 0.18 s with the PCIe ones). A node counted there reports; one with no PCIe series (or
    silent) leaves the count short of the index's, and only the nodes the PCIe names leave out are then asked by
    name over every presence series (`every`)."""
    node = builder.by("node")
    every = presence_selector(builder)
    pcie = builder.names(PRESENCE_COLUMN, LinkType.PCIE)
    named = builder.selector(pcie, f'{node}!=""') if pcie else presence_selector(builder, f'{node}!=""')
    if named is None or every is None:
        return None
    span = duration(span_hours)

    def over_every_series(nodes: Collection[str] | None) -> str:
        """The nodes (all where None) reporting on any presence series, by name."""
        picked = every if nodes is None else presence_selector(
            builder, f'{node}=~"{"|".join(quoted(re.escape(n)) for n in sorted(nodes))}"')
        return f"group by ({node}) (last_over_time({picked}[{span}]))"

    return PresenceQueries(count=f"count(group by ({node}) (last_over_time({named}[{span}])))",
                           names=f"group by ({node}) (last_over_time({named if pcie else every}[{span}]))",
                           every=over_every_series if pcie else None)


def quiet_in_window(builder: QueryBuilder, span_hours: float, window_hours: float) -> str | None:
    """The nodes with a presence sample in the span the rules read and none in the window, by name: an exporter
    that stopped an hour or more ago. Each rule's query reads the window, so none of them says such a node (the
    store's sweep calls it not judged); None where the span is the window, or no presence counter is mapped. It
    reads the series the count reads (a GPU's PCIe ones, where mapped)."""
    node = builder.by("node")
    pcie = builder.names(PRESENCE_COLUMN, LinkType.PCIE)
    named = builder.selector(pcie, f'{node}!=""') if pcie else presence_selector(builder, f'{node}!=""')
    if named is None or span_hours <= window_hours:
        return None
    return (f"(group by ({node}) (last_over_time({named}[{duration(span_hours)}]))) unless on ({node}) "
            f"(group by ({node}) (last_over_time({named}[{duration(window_hours)}])))")


def known_nodes(client: PrometheusClient, builder: QueryBuilder, start: datetime,
                end: datetime) -> LabelValues | PrometheusError:
    """The nodes the server's index holds presence series of from `limits.known_nodes_hours` before `start` to as
    long after `end` (a node's series are known there even where it went quiet), or why it would not say."""
    selector = presence_selector(builder)
    if selector is None:
        return LabelValues([])
    around = timedelta(hours=client.config.limits.known_nodes_hours)
    try:
        return client.label_values(client.config.labels.node, selector, start - around, end + around)
    except PrometheusError as exc:
        return exc


def check_node_label(client: PrometheusClient, builder: QueryBuilder, start: datetime, end: datetime) -> None:
    """Refuse a read by a node label the series do not carry where they carry another (`node_label_used`)."""
    other = node_label_used(client, builder, start, end)
    if other is not None:
        raise ConfigError(f"no dcgm-exporter series at {redacted_url(client.config.url)} carries the node label "
                          f"'{client.config.labels.node}' (labels.node); they carry '{other}': set [labels] node = "
                          f'"{other}" in the file FABRICBOT_PROMETHEUS_CONFIG or --config names')


def node_label_used(client: PrometheusClient, builder: QueryBuilder, start: datetime, end: datetime) -> str | None:
    """Asked where the server knows no node by the configured node label: the first of dcgm-exporter's node labels
    (dcgm.toml's, then Prometheus's own `instance`) that its presence series do carry, or None. Swept by a label no
    series carries, every node would be one, `unknown`, its links all merged."""
    selector = presence_selector(builder)
    if selector is None:
        return None
    around = timedelta(hours=client.config.limits.known_nodes_hours)
    for label in (*builder.dmap.labels.get("node", ()), "instance"):
        if label == client.config.labels.node:
            continue
        try:
            if client.label_values(label, selector, start - around, end + around).values:
                return label
        except PrometheusError:
            return None
    return None


def reading_bounds(client: PrometheusClient, builder: QueryBuilder, node: str, start: datetime, end: datetime,
                   step_s: float) -> tuple[datetime | None, datetime | None]:
    """Where a node's link readings run between `start` and `end`, for a node whose read holds none: its oldest and
    newest presence samples there (None, None where there is none). One range query counts its series a step at a
    time (a step holds the samples of the lookback before it); the samples of the first and last steps holding any
    are then read as they are, for their own times (`timestamp()` cannot be taken over a node's series at once:
    its links' series differ by their names alone)."""
    selector = presence_selector(builder, f'{builder.by("node")}="{quoted(node)}"')
    if selector is None or end <= start:
        return None, None
    step = max(float(step_s), client.config.limits.min_step_seconds,
               (end - start).total_seconds() / client.config.limits.max_points_per_series)
    rows = client.query_range(f"count({selector})", start, end, step)
    points = [float(t) for row in rows for t, _ in row.get("values", [])]
    if not points:
        return None, None
    first, last = min(points), max(points)
    # the first step holding a sample has none a step before it: its oldest sample is within that step
    oldest = _times(client.query(f"{selector}[{duration(step / 3600)}]", first))
    newest = _times(client.query(f"{selector}[{LOOKBACK}]", last))  # the last step holds it in its lookback
    return (min(oldest) if oldest else None), (max(newest) if newest else None)


def _times(rows: list[dict[str, Any]]) -> list[datetime]:
    """The times of a range selector's raw samples."""
    return [datetime.fromtimestamp(float(t), UTC) for row in rows for t, _ in row.get("values", [])]


def counted(answer: Answer) -> int:
    """The count query's number (no row: no node reports)."""
    return sum(int(float(row["value"][1])) for row in answer.rows)


def settled(count: Answer, known: LabelValues | PrometheusError | None) -> set[str] | None:
    """The nodes reporting in the span where the count alone says it (as many as the index knows, at least one: the
    index holds every series with a sample in the span, so they are those); None where they must be asked by name."""
    number = counted(count)
    if isinstance(known, LabelValues) and number and number == len(known.values):
        return set(known.values)
    return None


def reporting(answer: Answer, node_label: str) -> set[str]:
    """The nodes the names query lists (a series without the node label reports as `unknown`)."""
    return {str(row["metric"].get(node_label) or "unknown") for row in answer.rows}


def asked_by_name(queries: PresenceQueries, known: LabelValues | PrometheusError | None, answered: set[str],
                  ask: Callable[[str, str], Answer | None], node_label: str) -> set[str] | None:
    """The nodes reporting in the span where their count did not settle it: the PCIe names first, then over every
    presence series only the nodes the index knows that those leave out (`answered`, the offenders' nodes, reported
    already), or every node where the index was not read and the PCIe names list none. The names over every series
    cost 3.2 s at 256 nodes; a silent node's or two, a node's series apiece. None: a question went unanswered (`ask`
    said why)."""
    first = ask(queries.names, "the nodes reporting in the span")
    if first is None:
        return None
    reported = reporting(first, node_label)
    if queries.every is None:
        return reported
    left: set[str] | None = None
    if isinstance(known, LabelValues):
        left = set(known.values) - reported - answered
        if not left:
            return reported
    elif reported:
        return reported
    more = ask(queries.every(left), "the nodes reporting in the span on any link")
    return None if more is None else reported | reporting(more, node_label)


def say_silent(result: SweepResult, reported: set[str] | None, known: LabelValues | PrometheusError | None, *,
               span: timedelta, around_hours: float, usable: Callable[[Answer | PrometheusError], bool]) -> None:
    """The view incomplete where the span holds no node's samples, or none of some nodes the server knows around it
    (those named, as `silent`); `reported` is the nodes reporting in the span (None: not answered, which `usable`
    said already)."""
    if reported is None:
        return
    reported = reported | {o.node_id for o in result.offenders}  # an offender's series answered in the window
    names: list[str] = []
    if isinstance(known, PrometheusError):
        result.warnings.append(f"the nodes the server knows around the window were not listed ({known}): a node "
                               "silent in the whole span is not named")
    elif known is not None:
        usable(Answer([], known.warnings))
        names = sorted(set(known.values) - reported)
    if reported and not names:
        return
    if names:
        result.no_reading(names, span, every=not reported)
        return
    result.complete = False  # no node reports, and none is known around the span (or the index was not read)
    span_said = f"{fmt.hours(span.total_seconds() / 3600)} before {fmt.when(result.at)}"
    result.incomplete_reasons.append(f"no node of the {result.source} has a link reading in the {span_said}"
                                     + ("" if known is None or isinstance(known, PrometheusError) else
                                        f", and its index knows none in the {fmt.hours(around_hours)} around it"))
