"""PromQL generated from the thresholds file and the dcgm metric table, so no threshold or metric name is written twice.

Each detection rule becomes one query per link type it applies to: the per-hour increase of its counter, per node,
GPU, NVSwitch and link, compared with the rule's `above` (the nodes with a series that began inside the window are
rated again over the span each series covers: see `young`); a rule on a gauge (PCIe lanes or generations lost, a
bit-error ratio) compares the link's last reading in the window instead (see `gauges`). Missing series become three
more queries: links whose series vanished inside the window, GPUs reporting fewer links than their platform has,
and nodes with fewer GPUs reporting than their platform has (a GPU that fell off the bus hours before the sweep has
no series left for the other two to see). Xid rules (a `codes` list) become two queries each, over the Xid counter
and the last-Xid gauge (see `xid_queries`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from ..config.catalogs import load_xid_catalog
from ..config.platforms import all_platforms, model_boards
from ..config.thresholds import BELOW_EXPECTED_RULE, GPU_MISSING_RULE, MISSING_RULE, OFF_BUS_RULE, Rule, Thresholds
from ..enums import LinkType, Severity
from ..format import Unit
from ..ingest.dcgm_map import DcgmMap, Field
from ..metrics import BUSY_SETTING, GAUGES, SUMS
from ..values import limits
from .config import Limits, PrometheusConfig
from .gauges import is_gauge_rule, literal

PRESENCE_COLUMN = "replay"  # the NVLink counter whose series say that a link is reporting
LOOKBACK = "5m"  # Prometheus' default staleness: a series without a sample this long is gone
XID_COUNTER = "xid"  # the thresholds counter of the rules that list Xid codes

Wrap = Callable[[str], str]


@dataclass(frozen=True)
class SweepQuery:
    """One generated query and what an answer row means."""

    rule: str
    link_type: LinkType
    severity: Severity
    promql: str
    above: float | None = None  # per hour; None for the missing-series queries
    expected: dict[str, int] | None = None  # model -> links per GPU, or GPUs per node (GPU_MISSING_RULE)
    persist: bool = False  # the value is a count of windows, not a rate
    xid: str | None = None  # "counter": a row per GPU and code, value = Xids; "gauge": value = the last Xid
    unit: Unit = Unit.PER_HOUR  # of the value: a rate, or a gauge rule's unit (lanes, generations, ratio)
    per_link: bool = False  # the limit is each link's own (from its generation and width): `above` is None


def duration(hours: float) -> str:
    """A PromQL duration for `hours`, in whole seconds."""
    return f"{round(hours * 3600)}s"


def start_step(window_hours: float, bounds: Limits) -> int:
    """The resolution, in whole seconds, at which a series' first sample in the window is looked for: the node
    read's finest step, coarser only where the window would take more points per series than a read may."""
    return max(math.ceil(bounds.min_step_seconds), math.ceil(window_hours * 3600 / bounds.max_points_per_series))


def _names(dmap: DcgmMap, column: str, link_type: LinkType,
           counter: bool) -> tuple[list[str], list[re.Pattern[str]]]:
    exact = [n for n, f in dmap.exact.items() if _is(f, column, link_type, counter)]
    per_link = [p for p, f in dmap.patterns if _is(f, column, link_type, counter)]
    return exact, per_link


def _is(field: Field, column: str, link_type: LinkType, counter: bool) -> bool:
    return field.column == column and field.link_type is link_type and field.counter is counter


class QueryBuilder:
    """Knows the server's labels and the metric spellings; writes selectors and per-link vectors."""

    def __init__(self, config: PrometheusConfig, dmap: DcgmMap, max_links: int | None = None) -> None:
        self.config = config
        self.dmap = dmap
        labels = config.labels
        self.group = [labels.node, labels.gpu, labels.nvswitch, labels.link]
        self.max_links = max_links or max(
            [int(p.get("nvlinks_per_gpu", 0)) for p in all_platforms().values()] + [18])

    def by(self, *roles: str) -> str:
        labels = self.config.labels
        return ", ".join(getattr(labels, r) for r in roles)

    def per_hour(self, window_hours: float) -> Wrap:
        """Wraps a counter selector in its rate per hour over the span each of its series covers in the window: the
        young-series pass's form (`young`), some 20 times the cost of the increase alone.

        Prometheus' `increase()` extrapolates a series' increase toward the window's edges only where its first or
        last sample lies within about one sampling interval of them; a series that began inside the window (a node
        that joined, a restarted exporter, a GPU reset that re-created it) is extended by half an interval at most.
        Divided by the whole window it shows the fraction of its rate that the window it covers is. The local
        engine (analysis.rates) divides the increase by the time from the first reading it uses to the last. So the
        increase is divided by the time from the series' first sample in the window (its first `timestamp()` seen
        by a subquery at `start_step`, exact where the scrape interval is no finer) to the evaluation time, up to
        the window: a series older than the window has a sample at or before its start and is divided by the whole
        window, as before; one that began inside it is divided by that time and the half sampling interval
        `increase()` extended it by, so that its rate is the local engine's. (`rate()` is the same extrapolated
        increase over the whole range.) A series with one sample has no increase and so no rate, and one whose
        span is under the shortest a rate is taken over (limits.toml [rate]) has none either, as locally.
        """
        window_s = round(window_hours * 3600)
        step = start_step(window_hours, self.config.limits)
        shortest = limits().rate_min_interval_s

        def wrap(selector: str) -> str:
            first = f"min_over_time(timestamp({selector})[{window_s + step}s:{step}s])"
            samples = f"count_over_time({selector}[{duration(window_hours)}])"
            # the half sampling interval increase() extends a young series by, the interval taken as the series'
            # time over its samples' gaps: the increase over that span is then the readings' own, as locally
            covered = f"(time() - {first}) * (2 * {samples} - 1) / (2 * {samples} - 2)"
            span = f"(clamp_max({covered}, {window_s}) >= {shortest:g})"
            return f"(increase({selector}[{duration(window_hours)}]) / {span} * 3600)"
        return wrap

    def selector(self, names: str, *extra: str) -> str:
        """`{__name__=~"A|B", ...}`: every spelling of one counter, with the site's extra matchers."""
        matchers = [f'__name__=~"{names}"', *(m for m in (self.config.matchers.strip(), *extra) if m)]
        return "{" + ", ".join(matchers) + "}"

    def names(self, column: str, *link_types: LinkType) -> str:
        """A name regex of every metric feeding `column` (a counter) for those link types, per-link names included."""
        exact = [n for t in link_types for n in _names(self.dmap, column, t, True)[0]]
        per_link = [p.pattern.replace(r"\d{1,2}", "[0-9]{1,2}").replace("\\", "")
                    for t in link_types for p in _names(self.dmap, column, t, True)[1]]
        return _spellings(sorted(set(exact + per_link)))

    def column_vector(self, column: str, link_type: LinkType, wrap: Wrap, *extra: str,
                      counter: bool = True, gpu_totals: bool = True) -> str | None:
        """One series per link carrying `column` (a counter, or a gauge with `counter=False`), each selector
        wrapped (e.g. in `increase(...[1h])`).

        An NVLink counter without a link label is a GPU's total over its links. Where the GPU has series of the
        counter per link, its total is left out (it would count each error twice); where it has none (a pre-Blackwell
        exporter given only the `..._TOTAL` fields), the total is the GPU's one series, with an empty link label, as
        the local analysis judges it. `gpu_totals=False` keeps the per-link series alone (counting a GPU's links).
        """
        exact, per_link = _names(self.dmap, column, link_type, counter)
        link = self.config.labels.link
        parts: list[str] = []
        # a counter DCGM gives only as a GPU's total (NVLink5's DCGM_FI_DEV_NVLINK_COUNT_*) has no per-link name:
        # every series of it is taken as it is
        split = bool(exact and per_link) and link_type is LinkType.NVLINK
        if exact:
            parts.append(wrap(self.selector(_spellings(exact), *((f'{link}!=""',) if split else ()), *extra)))
        if per_link:
            for index in range(self.max_links):
                names = _spellings([_expand(p, index) for p in per_link])
                parts.append(f'label_replace({wrap(self.selector(names, *extra))}, "{link}", "{index}", "", "")')
        if not parts:
            return None
        by = ", ".join(self.group)
        vector = f"max by ({by}) ({' or '.join(parts)})"
        if not split or not gpu_totals:
            return vector
        totals = wrap(self.selector(_spellings(exact), f'{link}=""', *extra))
        # `or on (node, gpu)`: a GPU's total only where none of its links has a series in the vector
        return f"({vector} or on ({self.by('node', 'gpu')}) max by ({by}) ({totals}))"

    def counter_vector(self, counter: str, link_type: LinkType, wrap: Wrap) -> str | None:
        """The rule's counter per link: several columns are summed (`crc` = crc_flit + crc_data)."""
        columns = SUMS.get(counter, (counter,))
        vectors = [(c, v) for c in columns if (v := self.column_vector(c, link_type, wrap)) is not None]
        if len(vectors) <= 1:
            return vectors[0][1] if vectors else None
        tagged = [f'label_replace({v}, "fabricbot_column", "{c}", "", "")' for c, v in vectors]
        return f"sum by ({', '.join(self.group)}) ({' or '.join(tagged)})"


def quoted(text: str) -> str:
    """Text (a label value, a regular expression) inside a PromQL double-quoted string."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _spellings(names: list[str]) -> str:
    """A name regex; OpenMetrics adds `_total` to a counter's samples, so both spellings match."""
    return "|".join(f"{n}(_total)?" for n in names)


def _expand(pattern: re.Pattern[str], index: int) -> str:
    return pattern.pattern.replace(r"(\d{1,2})", str(index)).replace("\\", "")


def not_pushable(rule: Rule) -> str | None:
    """Why a rule cannot be a PromQL rate or gauge comparison, or None when it can."""
    if rule.codes:
        return "an event rule (Xid/SXid codes)"
    if rule.unit is Unit.PER_HOUR or is_gauge_rule(rule):
        return None
    if rule.unit == "events":
        return "an event rule read from logs; no dcgm-exporter series is mapped for it"
    if rule.unit is Unit.TOTAL:
        return "a lifetime total judged with the node's platform (before Blackwell or not), read back only with " \
               "the nodes other rules find"
    return f"measured in {rule.unit}, which no query is generated for"


def rule_queries(thresholds: Thresholds, builder: QueryBuilder, window_hours: float,
                 recorded: Mapping[tuple[str, LinkType], str] | None = None, *,
                 exact: bool = False) -> list[SweepQuery]:
    """One query per (rule, link type): links whose per-hour increase is above the rule's threshold.

    `recorded` names, per (counter, link type), a series the server's recording rules keep with that rate (see
    `rules`): the query then compares it instead of computing the increase of every spelling of the counter.
    `exact` rates each series over the span it covers instead (`QueryBuilder.per_hour`), recorded rates unread:
    the form the sweep takes again for the nodes with a series younger than the window.
    A rule with `persist = [k, m]` counts, with a subquery, the windows that exceeded among the last m; the
    server aligns those windows to multiples of the window length (local.persist_ends mirrors it).
    """
    rng = duration(window_hours)
    out: list[SweepQuery] = []
    for rule in thresholds.rules:
        if not_pushable(rule) or is_gauge_rule(rule):
            continue
        for link_type in LinkType:
            if not rule.applies_to(link_type.value):
                continue
            name = None if exact else (recorded or {}).get((rule.counter, link_type))
            wrap = builder.per_hour(window_hours) if exact else (lambda s: f"increase({s}[{rng}])")
            vector = builder.counter_vector(rule.counter, link_type, wrap)
            compare = comparison(rule, builder, link_type, rng)
            if vector is None or compare is None:
                continue
            per_hour = f"({vector})" if exact else f"({vector}) / {window_hours:g}"
            promql = f"{name} {compare}" if name else f"{per_hour} {compare}"
            persist = getattr(rule, "persist", None)
            if persist:
                k, m = int(persist[0]), int(persist[1])
                # m evaluation points: the multiples of the window in (at - m windows, at]
                span = f"{round(window_hours * m * 3600 * 1000) - 1}ms"
                promql = f"count_over_time(({promql})[{span}:{rng}]) >= {k}"
            per_link = bool(rule.per_lane_by_gen)
            out.append(SweepQuery(rule.name, link_type, rule.severity, promql,
                                  above=None if per_link else rule.above, persist=bool(persist), per_link=per_link))
    return out


def comparison(rule: Rule, builder: QueryBuilder, link_type: LinkType, rng: str) -> str | None:
    """The right side of a rate rule's query: `> 1000`, `>= 360000` (an inclusive rule), or a comparison with each
    link's own limit; None when the series a per-link limit needs are not mapped."""
    op = ">=" if rule.inclusive else ">"
    if not rule.per_lane_by_gen:
        return f"{op} {rule.above:g}"
    limit = per_link_limit(rule, builder, link_type, rng)
    return None if limit is None else f"{op} on ({', '.join(builder.group)}) {limit}"


def per_link_limit(rule: Rule, builder: QueryBuilder, link_type: LinkType, rng: str) -> str | None:
    """A rule's limit per link from its last generation and width reading: 60 x ceil(rate per lane x width) per
    hour (DCGM's GetExpectedPcieReplayRate); None when the generation or width series is not mapped."""
    def last(column: str) -> str | None:
        return builder.column_vector(column, link_type, lambda s: f"last_over_time({s}[{rng}])", counter=False)

    gen, width = last("gen"), last("width")
    if gen is None or width is None or not rule.per_lane_by_gen:
        return None
    rates = rule.per_lane_by_gen
    terms = [f"{literal(r)} * ({gen} == bool {i + 1})" for i, r in enumerate(rates[:-1])]
    terms.append(f"{literal(rates[-1])} * ({gen} >= bool {len(rates)})")  # a newer generation takes the last
    return f"60 * ceil({width} * ({' + '.join(terms)}))"


def unpushed_rules(thresholds: Thresholds, builder: QueryBuilder) -> list[str]:
    """Rules the sweep cannot evaluate on the server, each with the reason."""
    out = []
    for rule in thresholds.rules:
        reason = not_pushable(rule)
        if reason and _xid_pushable(rule, builder):
            continue
        if reason is None and not any(rule.applies_to(t.value) and _vector(rule, builder, t, thresholds) is not None
                                      for t in LinkType):
            reason = f"no dcgm-exporter metric carries {rule.counter!r}"
        if reason:
            out.append(f"{rule.name}: {reason}")
    return out


def _vector(rule: Rule, builder: QueryBuilder, link_type: LinkType, thresholds: Thresholds) -> str | None:
    if is_gauge_rule(rule):
        return gauge_promql(rule, builder, link_type, 1.0, thresholds)
    return builder.counter_vector(rule.counter, link_type, lambda s: s)


def gauge_promql(rule: Rule, builder: QueryBuilder, link_type: LinkType, window_hours: float,
                 thresholds: Thresholds) -> str | None:
    """Links whose gauge metric at the instant is above the rule's limit; None when a series it needs is unmapped.

    The metric is each link's last reading in the window (`maximum - reading` for a loss). One that counts only
    under load (generation lost) keeps the links whose last traffic reading, either direction, is at least the busy
    setting; a link without a traffic series is never under load, as locally.
    """
    metric = GAUGES[rule.counter]
    rng = duration(window_hours)

    def last(column: str) -> str | None:
        return builder.column_vector(column, link_type, lambda s: f"last_over_time({s}[{rng}])", counter=False)

    value = last(metric.column) if metric.column is not None else None
    if value is not None and metric.maximum is not None:
        top = last(metric.maximum)
        value = None if top is None else f"({top} - {value})"
    if value is None:
        return None
    promql = f"{value} > {literal(rule.above)}"
    if not metric.busy:
        return promql
    busy = [v for c in metric.busy if (v := last(c)) is not None]
    if not busy:
        return None
    limit = literal(thresholds.setting(BUSY_SETTING))
    return f"({promql}) and on ({', '.join(builder.group)}) ({' or '.join(f'{b} >= {limit}' for b in busy)})"


def gauge_queries(thresholds: Thresholds, builder: QueryBuilder, window_hours: float) -> list[SweepQuery]:
    """One query per (gauge rule, link type) that the dcgm table has the series for."""
    out: list[SweepQuery] = []
    for rule in thresholds.rules:
        if not is_gauge_rule(rule):
            continue
        for link_type in LinkType:
            promql = gauge_promql(rule, builder, link_type, window_hours, thresholds) \
                if rule.applies_to(link_type.value) else None
            if promql is not None:
                out.append(SweepQuery(rule.name, link_type, rule.severity, promql, above=rule.above,
                                      unit=rule.unit))
    return out


def _xid_pushable(rule: Rule, builder: QueryBuilder) -> bool:
    return (rule.counter == XID_COUNTER and bool(rule.codes)
            and bool(builder.dmap.xid_counter or builder.dmap.xid_gauge))


def pushed_codes(rule: Rule) -> list[int]:
    """The rule's Xid codes a series can carry: with no subcode or stated severity on a series, a rule that counts
    decoded severities counts the codes whose own decode gives one of them (Xid 147 and 148 are IGNORE)."""
    catalog = load_xid_catalog()
    return sorted({int(c) for c in rule.codes
                   if rule.decoded is None or catalog.entry(int(c)).decoded()[0] in rule.decoded})


def xid_queries(thresholds: Thresholds, builder: QueryBuilder, window_hours: float,
                span_hours: float | None = None) -> list[SweepQuery]:
    """GPUs with an Xid of a rule's codes inside the window: one row per GPU and code.

    The counter counts per `xid` label: the Xids it counted over the window (`_xid_count`), or the value of a
    series that first appeared inside it (the exporter creates the series at the first Xid, and the local reader
    counts that first reading too); a row's value is events, in the rule's unit, as the store's. The gauge holds
    the last Xid forever: a change inside the window whose value now is one of the codes. `above` is compared
    with the Xids per GPU over the rule's codes (the counter) or the gauge's changes. The off-bus rule also
    counts over `span_hours` (the span the rules read) on the GPUs not reporting now (`_off_bus_span`).
    """
    labels = builder.config.labels
    rng = duration(window_hours)
    gpu = builder.by("node", "gpu")
    out: list[SweepQuery] = []
    for rule in thresholds.rules:
        if not _xid_pushable(rule, builder):
            continue
        codes = pushed_codes(rule)
        if not codes:
            continue
        link_type = LinkType.PCIE if rule.name == OFF_BUS_RULE else LinkType.NVLINK  # as the local analysis
        span = duration(span_hours) if span_hours and span_hours > window_hours and rule.name == OFF_BUS_RULE \
            else None
        if builder.dmap.xid_counter:
            sel = builder.selector(_spellings(sorted(builder.dmap.xid_counter)),
                                   f'{labels.xid}=~"{"|".join(map(str, codes))}"')
            per_code = f"{gpu}, {labels.xid}"
            xids = _xid_count(sel, rng, per_code)
            if span:
                xids = _either(builder, per_code, xids, _off_bus_span(builder, _xid_count(sel, span, per_code)))
            promql = f"{xids} and on ({gpu}) (sum by ({gpu}) ({xids}) > {rule.above:g})"
            out.append(SweepQuery(rule.name, link_type, rule.severity, promql, above=rule.above, xid="counter",
                                  unit=rule.unit))
        if builder.dmap.xid_gauge:
            sel = builder.selector(_spellings(sorted(builder.dmap.xid_gauge)))
            ranges = [rng, *((span,) if span else ())]
            promql = " or ".join(_gauge_changes(builder, sel, r, codes, rule.above, silent=r != rng) for r in ranges)
            out.append(SweepQuery(rule.name, link_type, rule.severity, promql, above=rule.above, xid="gauge",
                                  unit=rule.unit))
    return out


def _gauge_changes(builder: QueryBuilder, sel: str, rng: str, codes: list[int], above: float, *,
                   silent: bool) -> str:
    """The GPUs whose last-Xid gauge changed over `rng` and reads one of the codes now (`silent`: on the GPUs
    not reporting now alone): the code in the `xid` label, the value the changes (each one event, as the dcgm
    reader reads them)."""
    gpu = builder.by("node", "gpu")
    last = f"max by ({gpu}) (last_over_time({sel}[{rng}]))"
    changed = f"max by ({gpu}) (changes({sel}[{rng}])) > {above:g}"
    changed = _off_bus_span(builder, changed) if silent else changed
    xid = builder.config.labels.xid
    return " or ".join(f'label_replace(({changed}) and on ({gpu}) ({last} == {c}), "{xid}", "{c}", "", "")'
                       for c in codes)


def _either(builder: QueryBuilder, per_code: str, first: str, second: str) -> str:
    """Per code, the larger of two counts: both count the Xids up to now, from different times."""
    term = builder.config.labels.xid + "_fabricbot_term"
    return (f'max by ({per_code}) (label_replace({first}, "{term}", "window", "", "") '
            f'or label_replace({second}, "{term}", "span", "", ""))')


def _off_bus_span(builder: QueryBuilder, counted: str) -> str:
    """`counted` on the GPUs not reporting now, of nodes that do: the store keeps an Xid 79 from before the window
    while its GPU stays silent, over the span it reads. One instant read of the presence series (a sample each)."""
    cfg = builder.config
    node, gpu = builder.by("node"), builder.by("node", "gpu")
    names = builder.names(PRESENCE_COLUMN, LinkType.PCIE, LinkType.NVLINK)
    if not names:
        return counted
    reporting = builder.selector(names, f'{cfg.labels.gpu}!=""')
    now = f"group by ({gpu}) ({reporting})"
    return f"(({counted}) unless on ({gpu}) {now}) and on ({node}) group by ({node}) ({now})"


def _xid_count(sel: str, rng: str, per_code: str) -> str:
    """The Xids each counter series counted over `rng`, as the store counts them (every increase between
    readings, the first reading before the window included): the last value less the value the window began at,
    not `increase`'s extrapolation to the window's ends (1.0085 Xids for one); over a reset (the exporter
    restarted) `increase` rounded to whole events; a series begun inside the window counts its value."""
    before = f"last_over_time({sel}[{LOOKBACK}] offset {rng})"
    steady = f"(last_over_time({sel}[{rng}]) - {before}) and on ({per_code}) (resets({sel}[{rng}]) == 0)"
    counted = f"({steady} or round(increase({sel}[{rng}])))"
    new = f"(last_over_time({sel}[{rng}]) > 0 unless on ({per_code}) {before})"
    return f"max by ({per_code}) (({counted} > 0) or {new})"


def platform_counts(key: str) -> dict[str, int]:
    """Per platform GPU model, the platform's `key` (`nvlinks_per_gpu`, `gpu_count`), where it is positive."""
    found: dict[str, int] = {}
    for platform in sorted(all_platforms().values(), key=lambda p: str(p["name"])):
        value, model = int(platform.get(key, 0)), str(platform.get("gpu_model", ""))
        if value > 0 and model and model not in found:
            found[model] = value
    return found


def smaller_boards(model: str) -> list[int]:
    """The GPU counts below its platform's of the boards a GPU model is also built into (`model_boards`: the H100 SXM5
    on 4-GPU boards too): the server knows only the model label, so a node reporting GPUs 0-3 of it is not short."""
    platform = next((p for p in sorted(all_platforms().values(), key=lambda p: str(p["name"]))
                     if str(p.get("gpu_model", "")) == model), None)
    if platform is None:
        return []
    return sorted(n for n in model_boards(str(platform["name"])) if n < int(platform.get("gpu_count", 0)))


def loose_counts() -> set[str]:
    """The GPU models whose platform's count is what such a server may hold, not the board's own (PCIe cards:
    `gpu_count_fixed = false`): a GPU never read there is not one gone."""
    return {str(p.get("gpu_model", "")) for p in all_platforms().values() if not p.get("gpu_count_fixed", True)}


def platform_model(model: str, models: Iterable[str]) -> str | None:
    """The platform model a GPU's model label names: the most specific one it contains (`H100 NVL`, not `H100`)."""
    return max((m for m in models if m in model), key=len, default=None)


def _model_matchers(label: str, model: str, models: Iterable[str], excluded: str) -> tuple[str, ...]:
    """Matchers for the series whose model label `platform_model` maps to `model`, less the excluded models."""
    wider = sorted(m for m in models if model in m and m != model)
    skip = (f'{label}!~".*({"|".join(quoted(re.escape(m)) for m in wider)}).*"',) if wider else ()
    return f'{label}=~".*{quoted(re.escape(model))}.*"', *skip, f'{label}!~"{excluded}"'


def missing_queries(builder: QueryBuilder, window_hours: float) -> list[SweepQuery]:
    """Links that stopped reporting inside the window, GPUs reporting fewer links than their platform, and nodes
    with fewer GPUs reporting than their platform has."""
    cfg = builder.config
    node_gpu_link = builder.by("node", "gpu", "link")
    node_gpu = builder.by("node", "gpu")
    model = cfg.labels.model
    # the links a GPU reports: its total over them is no link
    seen = builder.column_vector(PRESENCE_COLUMN, LinkType.NVLINK,
                                 lambda s: f"last_over_time({s}[{duration(window_hours)}])", gpu_totals=False)
    now = builder.column_vector(PRESENCE_COLUMN, LinkType.NVLINK, lambda s: s, gpu_totals=False)
    if seen is None or now is None:
        return gpu_missing_queries(builder)
    vanished = f"group by ({node_gpu_link}) ({seen}) unless group by ({node_gpu_link}) ({now})"
    out = [SweepQuery(MISSING_RULE, LinkType.NVLINK, Severity.DOWN, vanished)]
    expected = platform_counts("nvlinks_per_gpu")
    clauses: list[str] = []
    for gpu_model, links in expected.items():
        match = _model_matchers(model, gpu_model, expected, cfg.exclude_models)
        present = builder.column_vector(PRESENCE_COLUMN, LinkType.NVLINK, lambda s: s, *match, gpu_totals=False)
        if present is None:
            continue
        with_model = f"{node_gpu}, {model}"
        clauses.append(f"(count by ({with_model}) (group by ({node_gpu_link}, {model}) "
                       f"(label_replace({present}, \"{model}\", \"{quoted(gpu_model)}\", \"\", \"\"))) < {links})")
    if clauses:
        out.append(SweepQuery(BELOW_EXPECTED_RULE, LinkType.NVLINK, Severity.DOWN, " or ".join(clauses),
                              expected=expected, unit=Unit.LINKS))
    return [*out, *gpu_missing_queries(builder)]


def gpu_missing_queries(builder: QueryBuilder) -> list[SweepQuery]:
    """Nodes where fewer GPUs report now than their platform's `gpu_count`: one row per node, value = GPUs reporting.

    A GPU reports when any series of the presence counter (its PCIe replay counter, which dcgm-exporter's default
    counters file exports for every GPU, or an NVLink one) has a sample within the staleness lookback. A GPU off
    the bus loses them all, however long ago, which the per-link queries (windowed, or counting a GPU's links)
    cannot see. A node with no GPU reporting at all has no row: that is a silent node, not a missing GPU.
    """
    cfg = builder.config
    node, node_gpu, model = builder.by("node"), builder.by("node", "gpu"), cfg.labels.model
    names = builder.names(PRESENCE_COLUMN, LinkType.PCIE, LinkType.NVLINK)
    expected = platform_counts("gpu_count")
    loose = loose_counts()
    clauses = []
    for gpu_model, gpus in expected.items():
        if re.fullmatch(cfg.exclude_models, gpu_model) or gpu_model in loose:
            continue  # PCIe cards (excluded, or as many as a server was fitted with): never held to a count
        sel = builder.selector(names, f'{cfg.labels.gpu}!=""', *_model_matchers(model, gpu_model, expected,
                                                                                   cfg.exclude_models))
        whole = "".join(f" != {n}" for n in smaller_boards(gpu_model))  # a whole smaller board of the model
        clauses.append(f'(count by ({node}, {model}) (label_replace(group by ({node_gpu}) ({sel}), '
                       f'"{model}", "{quoted(gpu_model)}", "", "")) < {gpus}{whole})')
    if not clauses:
        return []
    return [SweepQuery(GPU_MISSING_RULE, LinkType.PCIE, Severity.DOWN, " or ".join(clauses), expected=expected,
                       unit=Unit.GPUS)]
