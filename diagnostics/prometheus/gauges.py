"""Rules on gauges pushed down: a value at the instant (lanes lost, a bit-error ratio), not a rate per hour.

Each link's gauge is its last reading in the window, `last_over_time(...[window])` on the server, the last non-empty
reading at or before the end here (`last_readings`): the reading the local analysis judges too (each link's last at
or before the end), and the same whether the exporter was scraped every 15 s or every 5 minutes. A metric may be a
difference of two gauges (`max_width - width`); generation lost counts only while the link carries at least the
`pcie_busy_bytes_per_s` setting in either direction, since a lower generation at idle is power saving, not a fault.
The metric table (`diagnostics.metrics`) is the one place the server's and this module's local mirror take those
definitions from.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..config.thresholds import Rule, Thresholds
from ..metrics import BUSY_SETTING, GAUGES, Unit


def is_gauge_rule(rule: Rule) -> bool:
    """A rule judged on a gauge's value at the instant (its unit is not a rate)."""
    return rule.unit is not Unit.PER_HOUR and not rule.codes and rule.counter in GAUGES


def literal(value: float) -> str:
    """A PromQL number that reads back as exactly `value` (`:g` would round 1.2345678e-12)."""
    return repr(float(value))


def last_readings(inside: pd.DataFrame, keys: list[str], columns: list[str]) -> pd.DataFrame:
    """Per link, each column's last non-empty reading in `inside`: what `last_over_time` gives per series."""
    present = [c for c in columns if c in inside]
    if not present or inside.empty:
        return pd.DataFrame(columns=present)
    rows = inside.sort_values([*keys, "timestamp"], kind="stable")
    groups = [rows[k].astype("object").where(rows[k].notna(), None) for k in keys]
    values = pd.DataFrame({c: rows[c].astype("float64") for c in present}, index=rows.index)
    return values.groupby(groups, dropna=False, sort=False).last()


def gauge_values(last: pd.DataFrame, thresholds: Thresholds) -> pd.DataFrame:
    """Each gauge rule's metric per link from its last readings; NaN where a reading it needs is missing."""
    out: dict[str, pd.Series] = {}
    nan = pd.Series(np.nan, index=last.index)
    for rule in thresholds.rules:
        metric = GAUGES.get(rule.counter)
        if metric is None or not is_gauge_rule(rule) or rule.counter in out:
            continue
        value = last.get(metric.column, nan)
        if metric.maximum:
            value = last.get(metric.maximum, nan) - value
        if metric.busy:
            limit = thresholds.setting(BUSY_SETTING)
            busy = np.logical_or.reduce([last.get(c, nan).to_numpy() >= limit for c in metric.busy])
            value = value.where(busy, np.nan)  # not under load: the rule does not apply (as the server's `and`)
        out[rule.counter] = value
    return pd.DataFrame(out, index=last.index)

