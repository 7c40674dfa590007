"""A local mirror of the PromQL push-down: Prometheus' `increase()`, the span a series covers, and the generated
queries' rules, on link_samples.

The oracle the generated queries are tested against: mirroring the server's extrapolation (rather than a plain
last-minus-first) lets the two agree link for link at any instant, even for a rate close to its threshold. The
product never uses it: what a sweep reads back goes through the analysis engine.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import cast

import numpy as np
import pandas as pd

from diagnostics.analysis.rules import crossings
from diagnostics.config.thresholds import Thresholds
from diagnostics.enums import LinkType, Severity
from diagnostics.ingest.dcgm_map import load_map
from diagnostics.metrics import GAUGES, SUMS
from diagnostics.offenders import Offender
from diagnostics.prometheus.config import Limits
from diagnostics.prometheus.gauges import gauge_values, is_gauge_rule, last_readings
from diagnostics.prometheus.promql import (
    BELOW_EXPECTED_RULE,
    GPU_MISSING_RULE,
    MISSING_RULE,
    PRESENCE_COLUMN,
    loose_counts,
    not_pushable,
    platform_counts,
    platform_model,
    smaller_boards,
    start_step,
)
from diagnostics.values import limits

KEYS = ["node_id", "link_type", "gpu", "nvswitch", "link"]
LOOKBACK = timedelta(minutes=5)


def extrapolated_increase(t: np.ndarray, v: np.ndarray, start: float, end: float) -> float | None:
    """Prometheus 2.x `increase()` over one series' samples at seconds `t` inside [start, end]; None if < 2."""
    if len(t) < 2:
        return None
    drops = v[1:] < v[:-1]
    out = _extrapolate(np.array([t[0]]), np.array([t[-1]]), np.array([v[0]]), np.array([v[-1]]),
                       np.array([float(v[:-1][drops].sum())]), np.array([len(t)]), start, end)
    return float(out[0])


def _extrapolate(t0: np.ndarray, t1: np.ndarray, v0: np.ndarray, v1: np.ndarray, resets: np.ndarray,
                 n: np.ndarray, start: float, end: float) -> np.ndarray:
    """promql/functions.go extrapolatedRate (isCounter, not a rate), over arrays of series."""
    result = v1 - v0 + resets  # a counter reset loses the value before it: add it back
    sampled = t1 - t0
    with np.errstate(divide="ignore", invalid="ignore"):
        average = sampled / (n - 1)
        to_zero = np.where((result > 0) & (v0 >= 0), sampled * (v0 / result), np.inf)
        to_start = np.minimum(t0 - start, to_zero)
        to_end = end - t1
        threshold = average * 1.1
        interval = (sampled + np.where(to_start < threshold, to_start, average / 2)
                    + np.where(to_end < threshold, to_end, average / 2))
        return np.where(n >= 2, result * (interval / sampled), np.nan)


def persist_ends(at: datetime, window_hours: float, m: int) -> list[float]:
    """The instants a `[m windows : window]` subquery evaluates at: multiples of the window, newest first."""
    step_ms = round(window_hours * 3600 * 1000)
    last = (round(at.timestamp() * 1000) // step_ms) * step_ms
    return [(last - j * step_ms) / 1000 for j in range(m)]


def first_seen(t: np.ndarray, end: float, window_s: float, step: int) -> float | None:
    """A series' first sample time (seconds, sorted `t`) as `min_over_time(timestamp(s)[window + step : step])` sees
    it at `end`: the steps are multiples of `step` (Prometheus 2.x aligns a subquery's), each seeing the newest
    sample within the lookback, so a series older than the window gives a sample at or before the window's start."""
    step_ms = step * 1000
    first = -(-(round(end * 1000) - round((window_s + step) * 1000)) // step_ms) * step_ms / 1000
    last = (round(end * 1000) // step_ms) * step_ms / 1000
    near = t[(t >= first - LOOKBACK.total_seconds()) & (t <= first)]
    later = t[(t > first) & (t <= last)]
    return float(near[-1]) if len(near) else float(later[0]) if len(later) else None


def window_rate(t: np.ndarray, v: np.ndarray, start: float, end: float, step: int) -> float | None:
    """`QueryBuilder.per_hour` on one series (seconds `t`, sorted): `increase()` over the window divided by the
    time from its first sample to `end`, at most the window; None without a rate (one sample, too short a span)."""
    inside = (t >= start) & (t <= end)
    increase = extrapolated_increase(t[inside], v[inside], start, end)
    since = first_seen(t, end, end - start, step)
    if increase is None or since is None:
        return None
    samples = int(inside.sum())
    span = min((end - since) * (2 * samples - 1) / (2 * samples - 2), end - start)
    return None if span < limits().rate_min_interval_s else increase / span * 3600


def window_rates(samples: pd.DataFrame, column: str, start: float, end: float, step: int) -> pd.Series:
    """`window_rate` of `column` for every link series in `samples`, indexed by KEYS."""
    rows = samples[samples[column].notna()
                   & (samples["timestamp"] >= pd.Timestamp(start - (end - start), unit="s", tz="UTC"))
                   & (samples["timestamp"] <= pd.Timestamp(end, unit="s", tz="UTC"))].sort_values([*KEYS, "timestamp"])
    if rows.empty:
        return pd.Series(dtype=float)
    keys = [rows[k].astype("object").where(rows[k].notna(), None) for k in KEYS]
    t = (rows["timestamp"].astype("int64") / 1e9).to_numpy()
    v = rows[column].astype(float).to_numpy()
    groups = pd.Series(np.arange(len(rows)), index=rows.index).groupby(keys, dropna=False, sort=False)
    rates = {key: window_rate(t[at.to_numpy()], v[at.to_numpy()], start, end, step) for key, at in groups}
    return pd.Series({k: r for k, r in rates.items() if r is not None}, dtype=float)


def _rates(samples: pd.DataFrame, counters: list[str], start: float, end: float, hours: float) -> pd.DataFrame:
    """Per link, each counter's rate per hour over [start, end] as the push-down computes it (`crc` sums its
    columns' rates)."""
    step = start_step(hours, Limits())
    rates: dict[str, pd.Series] = {}
    for counter in counters:
        parts = [window_rates(samples, c, start, end, step) for c in SUMS.get(counter, (counter,))
                 if c in samples]
        parts = [p for p in parts if len(p)]
        if parts:
            rates[counter] = pd.concat(parts, axis=1).sum(axis=1, min_count=1)
    return pd.DataFrame(rates)


def failing_links(samples: pd.DataFrame, thresholds: Thresholds, at: datetime, window_hours: float,
                  gpus: pd.DataFrame | None = None, exclude_models: str = "(?i).*PCIe.*") -> list[Offender]:
    """Every pushed-down rule a link breaks at `at` over the window before it, and the links that are missing.

    A gauge rule judges each link's last reading in the window, as `last_over_time` does (see `gauges`).
    """
    pushable = thresholds.model_copy(update={"rules": [r for r in thresholds.rules if not_pushable(r) is None]})
    start, end = (at - timedelta(hours=window_hours)).timestamp(), at.timestamp()
    gpu_missing = missing_gpus(samples, at, gpus, exclude_models)  # a GPU total says the GPU reports too
    if "gpu_total" in samples:  # a GPU total is judged only for counters DCGM names no link of (NVLink5's)
        total = samples["gpu_total"].fillna(False).astype(bool)
        named = sorted({f.column for _, f in load_map().patterns if f.link_type is LinkType.NVLINK} & set(samples))
        samples = samples.copy()
        samples.loc[total, named] = np.nan
    counters = list(dict.fromkeys(r.counter for r in pushable.rules if not is_gauge_rule(r)))
    inside = samples[(samples["timestamp"] >= pd.Timestamp(start, unit="s", tz="UTC"))
                     & (samples["timestamp"] <= pd.Timestamp(at))]
    gauges = list(dict.fromkeys(c for r in pushable.rules if is_gauge_rule(r)
                                for c in GAUGES[r.counter].columns))
    parts = [_rates(samples, counters, start, end, window_hours),
             gauge_values(last_readings(inside, KEYS, gauges), pushable)]
    parts = [p for p in parts if len(p) and len(p.columns)]
    table = pd.concat(parts, axis=1) if parts else pd.DataFrame()
    over = _windows_over(samples, pushable, at, window_hours)
    out: list[Offender] = []
    for key, row in table.iterrows():
        node, link_type, gpu, nvswitch, link = (_clean(k) for k in cast(tuple[object, ...], key))
        found = {str(c): float(v) for c, v in row.items() if pd.notna(v)}
        for crossing in crossings(str(link_type), found, pushable, over.get(_key(key))):
            rule = pushable.rule(crossing.rule)
            persist = rule.persist is not None
            out.append(Offender(
                node_id=str(node), link_type=LinkType(str(link_type)), gpu=_int(gpu),
                nvswitch=None if nvswitch is None else str(nvswitch), link=_int(link), rule=crossing.rule,
                severity=crossing.severity, rate_per_hour=None if persist else crossing.rate_per_hour,
                above=crossing.above, unit=rule.unit))
    out.extend(missing_links(inside, at, gpus, exclude_models))
    return [*out, *gpu_missing]


def _windows_over(samples: pd.DataFrame, thresholds: Thresholds, at: datetime,
                  window_hours: float) -> dict[tuple[object, ...], dict[str, int]]:
    """Per link, for each `persist` rule, how many of its last m (server-aligned) windows exceeded."""
    over: dict[tuple[object, ...], dict[str, int]] = {}
    for rule in thresholds.rules:
        if rule.persist is None:
            continue
        for end in persist_ends(at, window_hours, int(rule.persist[1])):
            table = _rates(samples, [rule.counter], end - window_hours * 3600, end, window_hours)
            if rule.counter not in table:
                continue
            for key, rate in table[rule.counter].items():
                if pd.notna(rate) and rate > rule.above:
                    counts = over.setdefault(_key(key), {})
                    counts[rule.name] = counts.get(rule.name, 0) + 1
    return over


def _key(key: object) -> tuple[object, ...]:
    """A link key with every missing part as None (NaN != NaN would split one link into many)."""
    return tuple(_clean(k) for k in cast(tuple[object, ...], key))


def _clean(value: object) -> object:
    return None if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)) else value


def _int(value: object) -> int | None:
    return None if value is None else int(float(str(value)))


def missing_links(inside: pd.DataFrame, at: datetime, gpus: pd.DataFrame | None,
                  exclude_models: str) -> list[Offender]:
    """Links seen in the window but silent for the last 5 minutes; GPUs with fewer links than their platform."""
    links = inside[(inside["link_type"].astype("string") == LinkType.NVLINK.value)
                   & inside["link"].notna() & inside[PRESENCE_COLUMN].notna()]
    recent = links["timestamp"] >= pd.Timestamp(at) - LOOKBACK  # Prometheus 2.x: closed
    seen = {(str(n), int(g), int(lk)) for n, g, lk in links[["node_id", "gpu", "link"]].itertuples(index=False)}
    now = {(str(n), int(g), int(lk))
           for n, g, lk in links.loc[recent, ["node_id", "gpu", "link"]].itertuples(index=False)}
    out = [Offender(node_id=n, link_type=LinkType.NVLINK, gpu=g, link=lk, rule=MISSING_RULE,
                    severity=Severity.DOWN, detail="series stopped inside the window")
           for n, g, lk in sorted(seen - now)]
    if gpus is None or gpus.empty:
        return out
    expected = platform_counts("nvlinks_per_gpu")
    counts: dict[tuple[str, int], int] = {}
    for n, g, _ in now:
        counts[(n, g)] = counts.get((n, g), 0) + 1
    excluded = re.compile(exclude_models)
    for row in gpus.itertuples(index=False):
        node, gpu, model = str(row.node_id), int(str(row.gpu)), str(row.model or "")
        name = platform_model(model, expected)
        want = None if name is None else expected[name]
        have = counts.get((node, gpu))
        if want is None or excluded.fullmatch(model) or have is None or have >= want:
            continue  # a GPU with no link series at all is reported by the vanished-link rule instead
        out.append(Offender(node_id=node, link_type=LinkType.NVLINK, gpu=gpu, rule=BELOW_EXPECTED_RULE,
                            severity=Severity.DOWN, rate_per_hour=float(have), above=float(want),
                            detail=f"{have} of {want} links reporting"))
    return out


def missing_gpus(samples: pd.DataFrame, at: datetime, gpus: pd.DataFrame | None,
                 exclude_models: str) -> list[Offender]:
    """Nodes with fewer GPUs reporting at `at` than their platform has, as `promql.gpu_missing_queries` counts them.

    A GPU reports when a presence-counter row (PCIe or NVLink, GPU totals included) lies within the lookback; its
    model comes from the `gpus` table, as the server reads it from the series' model label.
    """
    if gpus is None or gpus.empty:
        return []
    rows = samples[samples["link_type"].astype("string").isin([LinkType.PCIE.value, LinkType.NVLINK.value])
                   & samples["gpu"].notna() & samples[PRESENCE_COLUMN].notna()
                   & (samples["timestamp"] >= pd.Timestamp(at) - LOOKBACK) & (samples["timestamp"] <= pd.Timestamp(at))]
    reporting = {(str(n), int(g)) for n, g in rows[["node_id", "gpu"]].itertuples(index=False)}
    expected = platform_counts("gpu_count")
    excluded = re.compile(exclude_models)
    counts: dict[tuple[str, str], int] = {}
    for row in gpus.itertuples(index=False):
        node, gpu, model = str(row.node_id), int(str(row.gpu)), str(row.model or "")
        name = platform_model(model, expected)
        if name is not None and not excluded.fullmatch(model) and (node, gpu) in reporting:
            counts[(node, name)] = counts.get((node, name), 0) + 1
    loose = loose_counts()  # PCIe cards, as many as a server was fitted with: never held to a count
    return [Offender(node_id=node, link_type=LinkType.PCIE, rule=GPU_MISSING_RULE, severity=Severity.DOWN,
                     rate_per_hour=float(have), above=float(expected[name]), unit="GPUs",
                     detail=f"{have} of {expected[name]} GPUs report")
            for (node, name), have in sorted(counts.items())
            if have < expected[name] and name not in loose and have not in smaller_boards(name)]
