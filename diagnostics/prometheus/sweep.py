"""The fleet sweep pushed down into PromQL: the server finds the offending links, we read back only their nodes.

Any query that fails or answers with warnings marks the result incomplete, with the reason; an empty offender list
is only "healthy" when every query answered in full. The queries run in a bounded pool (`limits.concurrency`):
the first one alone, so that a server that is down is met by one request and its retries, not by a burst (when
it gets no answer at all, the rest are not sent, said once); the rest together. Answers are taken in query
order, so the result does not depend on which came first.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any, TypeGuard

import pandas as pd

from .. import format as fmt
from ..analysis import analyze_fleet, history_needed, places
from ..config.platforms import platform_for_model
from ..config.thresholds import OFF_BUS_RULE, Thresholds
from ..enums import LinkType
from ..format import Unit
from ..ingest.base import IngestResult
from ..ingest.dcgm_map import DcgmMap, load_map
from ..model import Diagnosis
from ..names import fleet_name_notes
from ..offenders import (
    Offender,
    SweepResult,
    far_ends_folded,
    gone_gpus_folded,
    named_as_read_back,
    offenders_of,
    worst_first,
)
from .client import Answer, LabelValues, PrometheusClient, PrometheusError, PrometheusUnavailable
from .config import load_config
from .presence import (
    asked_by_name,
    check_node_label,
    known_nodes,
    presence_queries,
    quiet_in_window,
    reporting,
    reporting_now,
    say_silent,
    settled,
)
from .promql import (
    BELOW_EXPECTED_RULE,
    GPU_MISSING_RULE,
    MISSING_RULE,
    QueryBuilder,
    SweepQuery,
    gauge_queries,
    missing_queries,
    rule_queries,
    unpushed_rules,
    xid_queries,
)
from .rules import recorded_pattern, recordings
from .source import read_node, step_time_unread
from .young import exact_queries, node_batches, young_nodes, young_query, young_span_hours


def fleet_queries(client: PrometheusClient, thresholds: Thresholds, window_hours: float,
                  dmap: DcgmMap | None = None,
                  recorded: Mapping[tuple[str, LinkType], str] | None = None) -> list[SweepQuery]:
    """Every query a sweep evaluates, generated from the thresholds and the dcgm table (`recorded`: the rates the
    server's recording rules keep, read instead of computed)."""
    builder = QueryBuilder(client.config, dmap or load_map())
    span = history_needed(timedelta(hours=window_hours), thresholds).total_seconds() / 3600
    return [*rule_queries(thresholds, builder, window_hours, recorded),
            *gauge_queries(thresholds, builder, window_hours),
            *xid_queries(thresholds, builder, window_hours, span), *missing_queries(builder, window_hours)]


def _int(value: Any) -> int | None:
    return None if value in (None, "") else int(value)


def _offender(client: PrometheusClient, query: SweepQuery, row: dict[str, Any]) -> Offender:
    labels, value = row["metric"], float(row["value"][1])
    names = client.config.labels
    node = labels.get(names.node) or "unknown"
    common: dict[str, Any] = {"node_id": node, "link_type": query.link_type, "gpu": _int(labels.get(names.gpu)),
                              "nvswitch": labels.get(names.nvswitch) or None, "rule": query.rule,
                              "severity": query.severity}
    # the off-bus rule's queries also read the span before the window on a GPU silent now (`xid_queries`)
    silent = ", or since its GPU fell silent" if query.rule == OFF_BUS_RULE else ""
    if query.xid == "counter":
        return Offender(**common, xid=_int(labels.get(names.xid)), rate_per_hour=value, above=query.above,
                        unit=query.unit, detail=f"{fmt.count(value, 'Xid')} in the window{silent}")
    if query.xid == "gauge":
        code = _int(labels.get(names.xid))
        # one change is one event into the code it reads now; of several, some may have been into other codes
        return Offender(**common, xid=code, above=query.above, rate_per_hour=1.0 if value == 1 else None,
                        unit=query.unit, detail=f"last Xid changed to {code} inside the window"
                        + ("" if value == 1 else f" ({value:g} changes)") + silent)
    if query.rule == BELOW_EXPECTED_RULE:
        model = labels.get(names.model, "")
        want = next((n for m, n in (query.expected or {}).items() if m in model), None)
        return Offender(**common, rate_per_hour=value, above=want, unit=query.unit,
                        detail=f"{value:g} links reporting" + (f" of {want}" if want else ""))
    if query.rule == GPU_MISSING_RULE:
        want = (query.expected or {}).get(labels.get(names.model, ""))
        return Offender(**common, rate_per_hour=value, above=want, unit=query.unit,
                        detail=f"{value:g} of {want} GPUs report" if want else f"{value:g} GPUs report")
    link = _int(labels.get(names.link))
    if query.link_type is LinkType.PCIE:
        link = None
    if query.persist:
        return Offender(**common, link=link, above=query.above, detail=f"above in {value:g} windows")
    if query.per_link:
        return Offender(**common, link=link, rate_per_hour=value,
                        detail="above the link's own limit: 60 x ceil(replays a minute per lane at its generation x "
                               "its width) an hour")
    if query.unit is not Unit.PER_HOUR:
        return Offender(**common, link=link, rate_per_hour=value, above=query.above, unit=query.unit,
                        detail="the last reading in the window")
    return Offender(**common, link=link, rate_per_hour=None if query.above is None else value, above=query.above,
                    detail="series stopped inside the window" if query.above is None else "")


def recorded_rates(client: PrometheusClient, thresholds: Thresholds, at: datetime, window_hours: float,
                   dmap: DcgmMap) -> dict[tuple[str, LinkType], str] | PrometheusUnavailable:
    """The per-link rates `fabricbot rules` records that the server holds at `at` (one cheap query, the sweep's
    first); none when the server has no such rules or refuses the question (the sweep then computes every rate
    itself), the error when the server does not answer at all."""
    try:
        answer = client.instant(f'group by (__name__) ({{__name__=~"{recorded_pattern(window_hours)}"}})', at)
    except PrometheusUnavailable as exc:
        return exc
    except PrometheusError:
        return {}
    held = {str(row["metric"].get("__name__", "")) for row in answer.rows}
    wanted = recordings(thresholds, QueryBuilder(client.config, dmap), window_hours)
    return {(r.counter, r.link_type): r.name for r in wanted if r.name in held}


def find_offenders(client: PrometheusClient, thresholds: Thresholds, at: datetime, window_hours: float,
                   result: SweepResult, dmap: DcgmMap | None = None) -> None:
    """Evaluate every generated query at `at`, then rate the nodes with a series younger than the window again over
    the span each series covers (`young`); failures become reasons the view is incomplete."""
    dmap = dmap or load_map()
    recorded = recorded_rates(client, thresholds, at, window_hours, dmap)
    held = recorded if isinstance(recorded, dict) else {}
    result.recorded = sorted(held.values())
    queries = fleet_queries(client, thresholds, window_hours, dmap, held)
    builder = QueryBuilder(client.config, dmap)
    search = young_query(builder, window_hours, young_span_hours(thresholds, window_hours))
    span = history_needed(timedelta(hours=window_hours), thresholds)
    presence = presence_queries(builder, span.total_seconds() / 3600)
    before = quiet_in_window(builder, span.total_seconds() / 3600, window_hours)
    result.queries = len(queries) + (search is not None) + (presence is not None) + (before is not None)
    result.not_pushed_down = unpushed_rules(thresholds, builder)

    def evaluate(promql: str) -> Answer | PrometheusError:
        return _instant(client, promql, at)

    answers: list[Answer | PrometheusError] = [] if isinstance(recorded, dict) else [recorded]
    if not answers:
        answers = [evaluate(q.promql) for q in queries[:1]]
    searched: Answer | PrometheusError | None = None
    present: Answer | PrometheusError | None = None
    quiet: Answer | PrometheusError | None = None
    known: LabelValues | PrometheusError | None = None
    sent = queries
    if answers and isinstance(answers[0], PrometheusUnavailable):  # no point sending the rest to a dead server
        sent = queries[:1]
    else:
        with ThreadPoolExecutor(max_workers=client.config.limits.concurrency) as pool:
            found = None if search is None else pool.submit(evaluate, search)
            counted = None if presence is None else pool.submit(evaluate, presence.count)
            listed = None if presence is None else pool.submit(known_nodes, client, builder, at - span, at)
            stopped = None if before is None else pool.submit(evaluate, before)
            answers.extend(pool.map(evaluate, [q.promql for q in queries[1:]]))
            quiet = None if stopped is None else stopped.result()
            searched = None if found is None else found.result()
            present = None if counted is None else counted.result()
            known = None if listed is None else listed.result()
    if isinstance(known, LabelValues) and not known.values:
        check_node_label(client, builder, at - span, at)
    _collect(client, sent, answers, result)
    if len(sent) < len(queries):  # said once: each unsent query repeating the first one's error said nothing more
        result.incomplete_reasons.append(f"the other {fmt.count(result.queries - len(sent), 'query', 'queries')} "
                                         "not sent: the server did not answer the first")
        result.offenders = _ranked(result.offenders)
        return
    _say_stopped(builder, evaluate, result)
    if quiet is not None and _usable(quiet, "the nodes quiet since before the window", result):
        gone = reporting(quiet, client.config.labels.node) - {o.node_id for o in result.offenders}
        if gone:
            result.no_reading(sorted(gone), timedelta(hours=window_hours))
    if searched is not None:
        _rate_young(client, thresholds, at, window_hours, builder, searched, result)
    if presence is not None and present is not None:
        reported = None
        if _usable(present, "the count of the nodes reporting in the span", result):
            reported = settled(present, known)
            if reported is None:  # fewer (or more) report than the index knows, or it was not read: ask them by name

                def ask(promql: str, what: str) -> Answer | None:
                    result.queries += 1
                    answer = evaluate(promql)
                    return answer if _usable(answer, what, result) else None
                reported = asked_by_name(presence, known, {o.node_id for o in result.offenders}, ask,
                                         client.config.labels.node)
        say_silent(result, reported, known, span=span, around_hours=client.config.limits.known_nodes_hours,
                   usable=lambda a: _usable(a, "the list of the nodes the server knows", result))
    result.offenders = _ranked(result.offenders)


def _say_stopped(builder: QueryBuilder, evaluate: Callable[[str], Answer | PrometheusError],
                 result: SweepResult) -> None:
    """A node whose every series stopped inside the window stopped reporting, its view incomplete: not each of its
    links down (the local engine's stopped series are those of a node that kept reporting), nor healthy."""
    vanished = {o.node_id for o in result.offenders if o.rule == MISSING_RULE}
    promql = reporting_now(builder, vanished) if vanished else None
    if promql is None:
        return
    result.queries += 1
    answer = evaluate(promql)
    if not _usable(answer, "the nodes reporting now, of those with a link that stopped", result):
        return
    gone = vanished - reporting(answer, builder.config.labels.node)
    explained = _off_the_bus(result.offenders, gone)
    result.offenders = [o for o in result.offenders if not (o.node_id in gone and o.rule == MISSING_RULE)]
    result.stopped_reporting(sorted(gone - explained), timedelta(hours=result.window_hours))


def _off_the_bus(offenders: list[Offender], nodes: set[str]) -> set[str]:
    """Of `nodes` (every series stopped), those whose every GPU that stopped fell off the bus (an Xid 79 each):
    their silence is that fault, listed, as the store's sweep says it (`every_gpu_off_the_bus`)."""
    stopped: dict[str, set[int | None]] = {}
    fell: dict[str, set[int | None]] = {}
    for o in offenders:
        if o.node_id in nodes and o.rule in (MISSING_RULE, OFF_BUS_RULE):
            (stopped if o.rule == MISSING_RULE else fell).setdefault(o.node_id, set()).add(o.gpu)
    return {n for n in nodes if n in fell and stopped.get(n, set()) <= fell[n]}


def _order(o: Offender) -> tuple[str, str, int, str, int, str, int]:
    """The rows' order where nothing ranks them: by node, then link type, GPU, switch, link, rule and Xid."""
    return o.node_id, o.link_type.value, o.gpu or -1, o.nvswitch or "", o.link or -1, o.rule, o.xid or -1


def _ranked(rows: list[Offender], places: Mapping[str, int] | None = None) -> list[Offender]:
    """The rows by node, each node's most urgent first (`worst_first`; `places`: a read-back node's parts in its
    diagnosis's order), as the store's sweep lists them."""
    return sorted(worst_first(sorted(rows, key=_order), places), key=lambda o: o.node_id)


def _collect(client: PrometheusClient, queries: list[SweepQuery], answers: list[Answer | PrometheusError],
             result: SweepResult, note: str = "") -> list[SweepQuery]:
    """Each answer's offenders into the result, each failure or warning a reason it is incomplete; the queries
    that answered."""
    answered = []
    for query, answer in zip(queries, answers, strict=True):
        if _usable(answer, f"rule {query.rule} ({query.link_type.value}){note}", result):
            result.offenders.extend(_offender(client, query, row) for row in answer.rows)
            answered.append(query)
    return answered


def _usable(answer: Answer | PrometheusError, what: str, result: SweepResult, why: str = "") -> TypeGuard[Answer]:
    """Whether an answer can be read; a failure, or its partial data, said as a reason the view is incomplete."""
    if isinstance(answer, PrometheusError):
        result.complete = False
        result.incomplete_reasons.append(f"{what} not evaluated{why}: {answer}")
        return False
    for warning in answer.warnings:
        result.complete = False
        result.incomplete_reasons.append(f"{what}: partial data: {warning}")
    return True


def _rate_young(client: PrometheusClient, thresholds: Thresholds, at: datetime, window_hours: float,
                builder: QueryBuilder, searched: Answer | PrometheusError, result: SweepResult) -> None:
    """The rate queries again, in the exact form, for the nodes the young-series search names, a batch of nodes at
    a time: each answer replaces the first pass's offenders of its rule on its nodes. A query that fails leaves
    them (a lower bound: a series' increase over the whole window is at most its rate over its span)."""
    if not _usable(searched, "the search for series begun inside the window", result,
                   " (such a series is rated low)"):
        return
    limits = client.config.limits
    young = young_nodes(searched, client.config.labels.node)
    # those young within the window first: every rule, not the persistent ones alone, rates them low
    order = sorted(young, key=lambda n: (young[n], n))
    result.young = {n: young[n] for n in order[:limits.max_young_nodes]}
    left = order[limits.max_young_nodes:]
    inside = [n for n in left if young[n] <= window_hours]
    if inside:  # a fleet-wide exporter rollout re-creates every series: not every sweep after it pays for all of them
        result.complete = False
        result.incomplete_reasons.append(
            f"{fmt.count(len(inside), 'more node')} with series begun inside the window "
            f"{'is' if len(inside) == 1 else 'are'} rated over the whole window, low "
            f"(limits.max_young_nodes = {limits.max_young_nodes}): {', '.join(inside[:10])}"
            + (" ..." if len(inside) > 10 else ""))
    if len(left) > len(inside):  # a server holding less history than the persistent rules look back over
        result.warnings.append(
            f"{fmt.count(len(left) - len(inside), 'more node')} with series begun before the window, inside the "
            f"span the persistent rules read, {'keeps' if len(left) - len(inside) == 1 else 'keep'} the first "
            f"pass's rates for those rules (low in the window their series began in; limits.max_young_nodes = "
            f"{limits.max_young_nodes})")
    for nodes, persist_only in node_batches(result.young, window_hours, limits.young_nodes_per_query):
        queries = exact_queries(thresholds, builder, window_hours, nodes, persist_only)
        with ThreadPoolExecutor(max_workers=limits.concurrency) as pool:
            answers = list(pool.map(lambda q: _instant(client, q.promql, at), queries))
        result.queries += len(queries)
        first = result.offenders
        result.offenders = []
        rated = {(q.rule, q.link_type) for q in _collect(client, queries, answers, result,
                                                         f" on {fmt.count(len(nodes), 'node')} with young series")}
        result.offenders[:0] = [o for o in first if o.node_id not in nodes or (o.rule, o.link_type) not in rated]


def _instant(client: PrometheusClient, promql: str, at: datetime) -> Answer | PrometheusError:
    try:
        return client.instant(promql, at)
    except PrometheusError as exc:
        return exc


def sweep(client: PrometheusClient, thresholds: Thresholds, *, at: datetime | None = None,
          window_hours: float = 1.0, analyze: bool = True, step_s: float = 60.0,
          dmap: DcgmMap | None = None) -> SweepResult:
    """Find the offending links fleet-wide on the server, then analyze only the offending nodes locally."""
    at = at or datetime.now(UTC)
    if not math.isfinite(window_hours) or window_hours <= 0:
        raise PrometheusError(f"window must be a positive number of hours (got {window_hours!r})")
    if window_hours > client.config.limits.max_window_hours:
        raise PrometheusError(f"window of {window_hours:g} h is over the "
                              f"{client.config.limits.max_window_hours:g} h limit (limits.max_window_hours)")
    dmap = dmap or load_map()
    result = SweepResult(at=at, window_hours=window_hours)
    started = time.perf_counter()
    find_offenders(client, thresholds, at, window_hours, result, dmap)
    result.timings.sweep_s = time.perf_counter() - started
    if analyze:
        analyze_offenders(client, thresholds, result, step_s, dmap)
        result.warnings.extend(n for n in [step_time_unread(client.config)] if n)  # what the priorities weigh
    result.warnings.extend(fleet_name_notes(o.node_id for o in result.offenders))
    stats = client.stats
    result.requests, result.retries = stats.requests, stats.retries
    result.bytes_received, result.bytes_decoded = stats.bytes_received, stats.bytes_decoded
    return result


def platform_of(gpus: pd.DataFrame | None) -> str | None:
    """The platform whose GPU model the exporter's model label names (`NVIDIA H100 80GB HBM3` -> H100)."""
    if gpus is None or gpus.empty or "model" not in gpus:
        return None
    found = {platform_for_model(str(m)) for m in gpus["model"].dropna()} - {None}
    return found.pop() if len(found) == 1 else None


def analyze_offenders(client: PrometheusClient, thresholds: Thresholds, result: SweepResult, step_s: float,
                      dmap: DcgmMap) -> None:
    """Read each offending node's series over the span its rules need, and run the analysis engine on them."""
    limit = client.config.limits.max_nodes_analyzed
    nodes = result.nodes
    if len(nodes) > limit:
        result.warnings.append(f"{len(nodes)} offending nodes; analyzed the first {limit} "
                               "(limits.max_nodes_analyzed); the offender list itself is complete")
    window = timedelta(hours=result.window_hours)
    start = result.at - history_needed(window, thresholds)
    for node in nodes[:limit]:
        t0 = time.perf_counter()
        mine = [o for o in result.offenders if o.node_id == node]
        # the offending GPUs' series only; a switch-side offender (no GPU) or a GPU count needs the whole node
        gpus = None if any(o.gpu is None for o in mine) else sorted({o.gpu for o in mine if o.gpu is not None})
        try:
            tables = read_node(client, node, start, result.at, step_s, dmap, gpus)
        except PrometheusError as exc:
            result.complete = False
            result.incomplete_reasons.append(f"node {node} not read back: {exc}")
            continue
        finally:
            result.timings.fetch_s += time.perf_counter() - t0
        t1 = time.perf_counter()
        diagnosis = _diagnose(tables, node, window, result.at, thresholds, gpus=gpus)
        result.confirmed[node] = confirmed = offenders_of(diagnosis)
        # the rows as the store's sweep lists them: a GPU the read-back shows gone one row (the server's count names
        # none), a switch port it judges as a GPU link's far end that link's, each row named as it names the link
        folded = far_ends_folded(gone_gpus_folded(mine, confirmed), confirmed)
        ranked = _ranked(named_as_read_back(folded, confirmed), places(diagnosis, thresholds))
        result.offenders = sorted([*(o for o in result.offenders if o.node_id != node), *ranked],
                                  key=lambda o: o.node_id)
        result.diagnoses[node] = diagnosis
        result.warnings.extend(str(w) for w in tables.warnings)
        result.timings.analyze_s += time.perf_counter() - t1


def _diagnose(tables: IngestResult, node: str, window: timedelta, at: datetime, thresholds: Thresholds, *,
              gpus: list[int] | None = None) -> Diagnosis:
    """The engine on one node's read-back series, its platform from the exporter's model label; a read narrowed to
    some GPUs (`gpus`) holds only theirs, so only their absence would be a finding."""
    platform = platform_of(tables.tables.get("gpus"))
    analysis = analyze_fleet(tables.tables, window=window, end=at, thresholds=thresholds,
                             platforms={node: platform} if platform else None, nodes=[node], full=True,
                             expected_gpus={node: gpus} if gpus is not None else None)
    return analysis.diagnoses[node]


def sweep_url(thresholds: Thresholds, url: str | None = None, *, config_path: str | None = None,
              **options: Any) -> SweepResult:
    """A sweep for callers holding no client (the Slack bot's `/fabric fleet`): URL and secrets from settings."""
    with PrometheusClient(load_config(url, path=config_path)) as client:
        return sweep(client, thresholds, **options)


def analyze_node(client: PrometheusClient, node: str, thresholds: Thresholds, *, at: datetime | None = None,
                 window_hours: float = 1.0, step_s: float = 60.0) -> Diagnosis:
    """One node's series over the span its rules need, read from the server and diagnosed by the engine."""
    at = at or datetime.now(UTC)
    window = timedelta(hours=window_hours)
    tables = read_node(client, node, at - history_needed(window, thresholds), at, step_s)
    diagnosis = _diagnose(tables, node, window, at, thresholds)
    extra = [str(w) for w in tables.warnings] + [n for n in [step_time_unread(client.config)] if n]
    return diagnosis.model_copy(update={"warnings": [*diagnosis.warnings, *extra]}) if extra else diagnosis
