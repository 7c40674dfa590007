"""Early warning: a link whose rate climbs toward a failing threshold, seen days before it gets there.

Each watched rule's counter is summed per link into buckets over the lookback; a least-squares line through the
bucket rates (through log10 of a bit-error ratio, which moves by orders of magnitude) that climbs, fits well and
meets the threshold within the horizon is a `Watch` with the projected time. The rules already judge a link over
its threshold; a watch is only ever about one that is not there yet.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from .. import format as fmt
from ..components import ComponentRef
from ..config.thresholds import Rule, Thresholds, load_thresholds
from ..config.watch import WatchPolicy, load_watch
from ..format import Unit
from ..metrics import SUMS, label
from ..times import utc_datetime, utc_ns
from .prepared import Prepared, prepare
from .rates import NS_PER_HOUR


class Watch(BaseModel):
    """A link trending toward a failing threshold: where it is, where the line says it will cross, how sure."""

    model_config = ConfigDict(frozen=True)

    node_id: str
    ref: ComponentRef
    rule: str
    counter: str
    unit: Unit
    now: float = Field(description="The line's value at the end of the lookback (a rate per hour or a level).")
    above: float
    hours_left: float = Field(description="Hours until the line reaches the threshold.")
    projected_at: datetime
    fit: float = Field(description="r-squared of the line.")
    buckets: int

    @property
    def component(self) -> str:
        return self.ref.name

    @property
    def summary(self) -> str:
        return (f"{self.ref.name}: {label(self.counter)} {fmt.value(self.now, self.unit)} and climbing; projected over "
                f"{fmt.value(self.above, self.unit)} ({self.rule}) in {fmt.hours(self.hours_left)}, about "
                f"{fmt.when(self.projected_at)} (fit {self.fit:.2f} over {self.buckets} buckets)")


def _series(p: Prepared, counter: str) -> tuple[np.ndarray, bool] | None:
    """Per row, the counter's increase (a counter) or its reading (a level); None when the table lacks it."""
    parts = SUMS.get(counter, (counter,))
    present = [c for c in parts if c in p.counters]
    if present:
        return sum((p.delta(c)[0] for c in present), np.zeros(len(p.t))), False
    if counter in p.source.columns and p.source[counter].notna().any():
        return p.values(counter), True
    return None


def _lines(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row of `y` (buckets in columns, `w` marking those with a value): the least-squares line's intercept at
    x=0, its slope, and r-squared. One pass over the arrays for every link at once."""
    y = np.where(w, y, 0.0)
    n = w.sum(axis=1).astype(np.float64)
    sx, sy = (w * x).sum(axis=1), y.sum(axis=1)
    sxx, sxy, syy = (w * x * x).sum(axis=1), (y * x).sum(axis=1), (y * y).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        vx, vy, cov = n * sxx - sx * sx, n * syy - sy * sy, n * sxy - sx * sy
        slope = np.where(vx > 0, cov / vx, 0.0)
        intercept = np.where(n > 0, (sy - slope * sx) / n, 0.0)
        r2 = np.where((vx > 0) & (vy > 0), cov * cov / (vx * vy), 0.0)
    return intercept, slope, r2


def _watches_for(p: Prepared, rule: Rule, policy: WatchPolicy,
                 end_ns: int) -> tuple[list[Watch], np.ndarray, np.ndarray]:
    """The rule's watches, per link whether it held enough buckets for a line at all, and whether its line is
    already over the rule's limit (no climb to watch: it fails now)."""
    series = _series(p, rule.counter)
    if series is None or rule.above <= 0:
        return [], np.zeros(p.nseg, dtype=np.bool_), np.zeros(p.nseg, dtype=np.bool_)
    values, level = series
    bucket_ns = int(policy.bucket_hours * NS_PER_HOUR)
    nb = max(1, int(np.ceil(policy.lookback.total_seconds() * 1e9 / bucket_ns)))
    inside = (p.t > end_ns - nb * bucket_ns) & (p.t <= end_ns) & np.isfinite(values)
    bucket = np.minimum((end_ns - p.t[inside]) // bucket_ns, nb - 1)  # 0 is the newest
    cell = p.seg[inside] * nb + bucket
    size = p.nseg * nb
    sums = np.bincount(cell, weights=values[inside], minlength=size).reshape(p.nseg, nb)
    counts = np.bincount(cell, minlength=size).reshape(p.nseg, nb)
    heads = p.heads()
    types: list[str] = heads["link_type"].astype(str).tolist() if "link_type" in heads else ["any"] * p.nseg
    applies = np.fromiter((rule.applies_to(t) for t in types), dtype=np.bool_, count=p.nseg)
    if level:
        seen = counts > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            y = np.log10(np.maximum(np.where(seen, sums / np.maximum(counts, 1), 1e-30), 1e-30))
        target = float(np.log10(rule.above))
    else:
        seen = counts > 1  # a rate needs two readings in its bucket
        y = sums / policy.bucket_hours
        target = rule.above
    x = -(np.arange(nb) + 0.5) * policy.bucket_hours  # hours before the end, bucket centres
    intercept, slope, r2 = _lines(x, y, seen)
    now = 10 ** intercept if level else intercept
    with np.errstate(divide="ignore", invalid="ignore"):
        left = np.where(slope > 0, (target - intercept) / slope, np.inf)
    lined = applies & (seen.sum(axis=1) >= policy.min_buckets)
    over = lined & (intercept >= target)
    hit = lined & (slope > 0) & (r2 >= policy.min_fit) & (intercept < target) & (left <= policy.horizon_hours)
    if not level:
        hit &= now >= policy.min_share * rule.above
    out: list[Watch] = []
    links = np.flatnonzero(hit)
    peers = (p.take(["peer"], p.segment_starts[links])["peer"].tolist() if "peer" in p.source.columns
             else [None] * len(links))
    for link, peer in zip(links, peers, strict=True):
        head = heads.iloc[int(link)]
        ref = ComponentRef.of_link(str(head.get("link_type")), _int(head.get("gpu")), _int(head.get("link")),
                                   None if peer is None or pd.isna(peer) else str(peer))
        hours_left = float(left[link])
        out.append(Watch(node_id=str(head.get("node_id")), ref=ref, rule=rule.name, counter=rule.counter,
                         unit=rule.unit, now=float(now[link]), above=rule.above, hours_left=hours_left,
                         projected_at=utc_datetime(end_ns + int(hours_left * NS_PER_HOUR)), fit=float(r2[link]),
                         buckets=int(seen[link].sum())))
    return out, lined, over


def _int(value: object) -> int | None:
    return None if value is None or pd.isna(value) else int(value)  # type: ignore[call-overload]


def watch_list(tables: Mapping[str, pd.DataFrame], *, end: datetime | None = None,
               policy: WatchPolicy | None = None, thresholds: Thresholds | None = None,
               judged: set[str] | None = None, over: set[str] | None = None) -> list[Watch]:
    """Every link trending toward a watched failing rule, soonest first (one watch per link: its soonest rule).
    `judged` is given each node with a link that held enough readings for a line: of the others, an empty list
    says nothing (too little history to see a climb, not a fleet that is not climbing). `over` is given each node
    with a link whose line is already over a watched rule: no climb, a failure now."""
    policy = policy or load_watch()
    thresholds = thresholds or load_thresholds()
    samples = tables.get("link_samples")
    if samples is None or samples.empty:
        return []
    p = prepare(samples)
    if len(p.t) == 0:
        return []
    end_ns = utc_ns(end) if end is not None else int(p.t.max())
    rules = {r.name: r for r in thresholds.rules}
    found: dict[tuple[str, str], Watch] = {}
    lined = np.zeros(p.nseg, dtype=np.bool_)
    above = np.zeros(p.nseg, dtype=np.bool_)
    for name in policy.rules:
        rule = rules.get(name)
        if rule is None:
            continue
        watches, enough, failing = _watches_for(p, rule, policy, end_ns)
        lined |= enough
        above |= failing
        for watch in watches:
            key = (watch.node_id, watch.ref.slug)
            if key not in found or watch.hours_left < found[key].hours_left:
                found[key] = watch
    if judged is not None and lined.any():
        judged.update(str(n) for n in p.heads()["node_id"][lined].unique())
    if over is not None and above.any():
        over.update(str(n) for n in p.heads()["node_id"][above].unique())
    return sorted(found.values(), key=lambda w: (w.hours_left, w.node_id, w.ref.slug))


