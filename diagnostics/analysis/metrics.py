"""The thresholds file applied to counter histories: per-link metrics over a window, then findings.

Metrics are computed for every link at once on arrays (`link_metrics`); only links that could cross a rule are
turned into `Finding` objects by the shared `rules.crossings`, so a fleet sweep stays vectorized.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

import numpy as np
import pandas as pd

from ..config.thresholds import Thresholds
from ..enums import LinkState, LinkType, Severity
from ..model import Crossing, Finding
from .rates import Prepared, increase, window_sums
from .rules import crossings, state_crossing, summarize

STATE_COLUMNS = ("peer", "link_state", "width", "max_width", "gen", "max_gen", "speed_gbps",
                 "tx_bytes_per_s", "rx_bytes_per_s", "symbol_ber", "effective_ber", "saturated")
RATE_COUNTERS = ("replay", "crc_flit", "crc_data", "recovery", "replay_rollovers", "tx_discards",
                 "symbol_errors", "effective_errors", "recovery_successful", "recovery_failed")


def last_state(p: Prepared, end_ns: int) -> pd.DataFrame:
    """Each link's state columns (width, generation, state, traffic) at its last reading at or before the end."""
    idx = p.last_upto(end_ns)
    frame = p.take([col for col in STATE_COLUMNS if col in p.source.columns], np.maximum(idx, 0))
    return frame.where(pd.Series(idx >= 0), None) if (idx < 0).any() else frame


def link_metrics(p: Prepared, *, window: timedelta, end_ns: int, thresholds: Thresholds) -> pd.DataFrame:
    """Per link: rates per hour in the window ending at `end_ns`, state, derived metrics, persistence counts.

    A rule with `persist = [k, m]` gets `over_<rule>`: in how many of the last m windows the counter's increase
    per window-hour exceeded the rule's limit.
    """
    cur = increase(p, end_ns=end_ns, span=int(window.total_seconds() * 1e9))
    state = last_state(p, end_ns)

    def col(name: str) -> pd.Series | None:
        return cur[name] if name in cur.columns else state[name] if name in state.columns else None

    extra: dict[str, Any] = {"crc_per_hour": _sum(col("crc_flit_per_hour"), col("crc_data_per_hour"), len(cur)),
                             "crc_total": _sum(col("crc_flit_total"), col("crc_data_total"), len(cur))}
    if "width" in state.columns and "max_width" in state.columns:
        extra["width_lost"] = (_float(state["max_width"]) - _float(state["width"])).clip(min=0)
    if "gen" in state.columns and "max_gen" in state.columns:
        traffic = np.fmax(_float(col("tx_bytes_per_s")), _float(col("rx_bytes_per_s")))
        busy = np.nan_to_num(traffic) >= thresholds.setting("pcie_busy_bytes_per_s")
        lost = (_float(state["max_gen"]) - _float(state["gen"])).clip(min=0)
        extra["gen_lost_under_load"] = np.where(busy, lost, lost * 0)  # NaN (no PCIe reading) stays NaN
        extra["gen_lost_idle"] = np.where(~busy, lost, lost * 0)
    hours = window.total_seconds() / 3600
    for rule in thresholds.rules:
        if rule.persist is None:
            continue
        counters = ("crc_flit", "crc_data") if rule.counter == "crc" else (rule.counter,)
        sums = sum((window_sums(p, c, window=window, end_ns=end_ns, windows=rule.persist[1]) for c in counters),
                   start=np.zeros((p.nseg, rule.persist[1])))
        extra[f"over_{rule.name}"] = (sums / hours > rule.above).sum(axis=1)
    return pd.concat([cur, state, pd.DataFrame(extra, index=cur.index)], axis=1)  # one concat, not an insert each


WINDOW_TIMES = ("first", "last", "last_seen")  # when the window's readings were taken: no finding reads them


def records(frame: pd.DataFrame, *, skip: tuple[str, ...] = WINDOW_TIMES) -> list[dict[str, Any]]:
    """The rows as dicts (a missing value as None or NaN), like `to_dict("records")` at about half its cost:
    each column is converted once rather than each cell boxed on its own. Columns in `skip` are left out."""
    names = [str(c) for c in frame.columns if c not in skip]
    columns = [_plain(series) for name, series in frame.items() if name not in skip]
    return [dict(zip(names, values, strict=True)) for values in zip(*columns, strict=True)]


def _plain(series: pd.Series) -> list[Any]:
    if isinstance(series.dtype, np.dtype) and series.dtype.kind in "fiub":
        values: list[Any] = series.to_numpy().tolist()
    else:
        values = series.to_numpy(dtype=object, na_value=None).tolist()  # type: ignore[call-overload]
    return values


def _sum(a: pd.Series | None, b: pd.Series | None, size: int) -> np.ndarray:
    """Row sum of the columns present, NaN where none has a value (pandas' sum(axis=1, min_count=1))."""
    present = [s.to_numpy(np.float64, na_value=np.nan) for s in (a, b) if s is not None]
    if not present:
        return np.full(size, np.nan)
    total = np.nan_to_num(present[0], nan=0.0, posinf=np.inf, neginf=-np.inf)
    for values in present[1:]:
        total = total + np.nan_to_num(values, nan=0.0, posinf=np.inf, neginf=-np.inf)
    none = np.logical_and.reduce([np.isnan(v) for v in present])
    return np.where(none, np.nan, total)


def _float(series: pd.Series | None) -> np.ndarray:
    if series is None:
        return np.array(np.nan)
    return pd.to_numeric(series, errors="coerce").to_numpy(np.float64, na_value=np.nan)


def _rate_column(frame: pd.DataFrame, counter: str) -> pd.Series | None:
    if counter == "crc":
        return frame.filter(items=["crc_flit_per_hour", "crc_data_per_hour"]).sum(axis=1, min_count=1)
    col = f"{counter}_per_hour"
    return frame[col] if col in frame.columns else None


def _num(value: object) -> float | None:
    if type(value) is float:  # the common case, first: a plain float, NaN meaning no value
        return None if value != value else value
    if value is None or value is pd.NA:
        return None
    try:
        out = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if math.isnan(out) else out


def _int(value: object) -> int | None:
    num = _num(value)
    return None if num is None else int(num)


def metrics_of(row: Mapping[str, Any]) -> tuple[dict[str, float], dict[str, float]]:
    """A link row's rates per hour (and derived metrics) and its counts in the window, without NaN."""
    rates: dict[str, float] = {}
    counts: dict[str, float] = {}
    for c in (*RATE_COUNTERS, "crc"):
        rate = _num(row.get(f"{c}_per_hour"))
        if rate is not None:
            rates[c] = round(rate, 3)
        inc = _num(row.get(f"{c}_increase"))
        if inc is not None:
            counts[c] = inc
    if "crc" not in counts and ("crc_flit" in counts or "crc_data" in counts):
        counts["crc"] = counts.get("crc_flit", 0.0) + counts.get("crc_data", 0.0)
    for c in ("width_lost", "gen_lost_under_load", "effective_ber", "symbol_ber"):
        value = _num(row.get(c))
        if value is not None:
            rates[c] = value
    return rates, counts


def component_of(link_type: str, gpu: int | None, link: int | None, peer: str, lane: int | None = None) -> str:
    """`GPU 2 -> GPU 3 NVLink 1`, `GPU 2 NVLink 1 -> NVSwitch 1`, `GPU 4 PCIe`, `NVSwitch 1 port 17`."""
    if link_type == LinkType.PCIE:
        return f"GPU {gpu} PCIe"
    if link_type == LinkType.NVSWITCH or gpu is None:
        return f"{peer if peer.startswith('NVSwitch') else 'NVSwitch ?'} port {link}"
    if peer.startswith("GPU"):
        return f"{'GPU ' + str(gpu)} -> {peer} NVLink {link}"
    return f"GPU {gpu} NVLink {link} -> {peer}"


def finding_of(row: Mapping[str, Any], thresholds: Thresholds, *, stale: bool = False) -> Finding:
    """One link's finding: rates, the rules crossed, state, evidence (congestion, lone readings, resets)."""
    rates, counts = metrics_of(row)
    link_type = str(row["link_type"])
    windows_over = {r.name: int(row[f"over_{r.name}"]) for r in thresholds.rules
                    if r.persist is not None and f"over_{r.name}" in row}
    crossed = crossings(link_type, rates, thresholds, windows_over)
    state = LinkState(str(row["link_state"])) if _present(row.get("link_state")) else LinkState.UP
    evidence: list[str] = []
    if stale:
        state = LinkState.DOWN
        crossed.insert(0, Crossing(rule="link_down", counter="link_state", severity=Severity.DOWN,
                                   message="series stopped: a dead link's counters disappear"))
    else:
        down = state_crossing(state)
        if down is not None:
            crossed.insert(0, down)
    if int(row.get("samples", 0) or 0) < 2 and not rates.keys() & set(RATE_COUNTERS):
        totals = {c: _num(row.get(f"{c}_total")) for c in (*RATE_COUNTERS, "crc")}
        counts = {c: v for c, v in totals.items() if v is not None}
        evidence.append("one reading: lifetime totals only; a rate needs a second reading")
    if int(row.get("resets", 0) or 0):
        evidence.append(f"counter reset {int(row['resets'])}x in the window (reboot or driver reload), handled")
    if _num(row.get("gen_lost_idle")):
        evidence.append("PCIe generation below maximum at idle: power saving, not a fault")
    severity, ratio = summarize(crossed)
    gpu, link = _int(row.get("gpu")), _int(row.get("link"))
    peer = str(row["peer"]) if _present(row.get("peer")) else ("CPU root port" if link_type == "pcie" else "unknown")
    if severity is Severity.OK:
        evidence.extend(_congestion(row, thresholds))
    lost = _int(row.get("width_lost"))
    lanes: list[int] = []
    if lost and link_type == LinkType.PCIE:
        width, max_width = _int(row.get("width")) or 0, _int(row.get("max_width")) or 0
        lanes = list(range(width, max_width))
        evidence.append(f"running x{width} of x{max_width}: lanes {width}-{max_width - 1} lost")
    lane = _int(row.get("lane"))
    peer_gpu = int(peer.split()[1]) if peer.startswith("GPU ") and peer.split()[1].isdigit() else None
    fields: dict[str, Any] = dict(
        component=component_of(link_type, gpu, link, peer), link_type=LinkType(link_type),
        link_id=f"{link_type}-{link}" if link is not None else link_type, link=link, gpu=gpu, peer_gpu=peer_gpu,
        peer=peer, link_state=state, counts=counts, rates_per_hour=rates, crossed=crossed, severity=severity,
        worst_ratio=ratio, switch=peer if peer.startswith("NVSwitch") else None,
        lanes=lanes if lane is None else [lane], evidence=evidence,
    )
    if severity is not Severity.OK:
        return Finding(**fields)
    # a healthy link: nothing to validate; a copy of a constructed one with every field given is cheapest
    return _HEALTHY.model_copy(update=fields)


_HEALTHY = Finding.model_construct(component="", link_type=LinkType.NVLINK, link_id="", link=None, gpu=None,
                                   peer_gpu=None, peer="unknown", link_state=LinkState.UP, counts={},
                                   rates_per_hour={}, crossed=[], severity=Severity.OK, worst_ratio=None,
                                   switch=None, lanes=[], evidence=[])


def _present(value: object) -> bool:
    return value is not None and value is not pd.NA and not (isinstance(value, float) and np.isnan(value))


def _congestion(row: Mapping[str, Any], thresholds: Thresholds) -> list[str]:
    speed = _num(row.get("speed_gbps"))
    traffic = max(_num(row.get("tx_bytes_per_s")) or 0.0, _num(row.get("rx_bytes_per_s")) or 0.0)
    if not speed or not traffic:
        return []
    share = traffic / (speed * 1e9)  # speed_gbps is GB/s per direction, as nvidia-smi nvlink -s states it
    if share >= thresholds.setting("congestion_fraction"):
        return [f"traffic at {share:.0%} of the link's capacity with no errors: congestion, not a fault"]
    return []


def candidates(m: pd.DataFrame, thresholds: Thresholds) -> np.ndarray:
    """Links that could cross any rule or are not up: the only ones worth a full finding in a fleet sweep."""
    flag = np.zeros(len(m), dtype=bool)
    for rule in thresholds.rules:
        col = _rate_column(m, rule.counter) if rule.counter not in m.columns else m[rule.counter]
        if col is None:
            continue
        flag |= col.astype("Float64").fillna(0).to_numpy(np.float64) > rule.above
    if "link_state" in m.columns:
        flag |= m["link_state"].astype("string").fillna("up").isin(["down", "inactive", "degraded"]).to_numpy()
    return flag

