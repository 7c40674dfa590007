"""How much of the window a node's readings cover: a window asked longer than the readings rates them over the
span they cover (rates divide by the time actually covered, `rates`), so the answer says that span, not the one
asked."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import format as fmt
from ..times import ns, utc_datetime
from .rates import NS_PER_HOUR


@dataclass(frozen=True)
class Covered:
    """The span one node's rates are over, where its readings begin inside the window asked."""

    node_id: str
    first_ns: int  # its earliest reading a rate starts from
    last_ns: int  # its newest reading a rate ends at
    asked_hours: float

    @property
    def hours(self) -> float:
        return (self.last_ns - self.first_ns) / NS_PER_HOUR

    def note(self) -> str:
        """The one line that says why the window shown is not the one asked."""
        return (f"the readings of {self.node_id} cover {fmt.hours(self.hours)} of the {fmt.hours(self.asked_hours)} "
                f"window ({fmt.when(utc_datetime(self.first_ns))} to {fmt.when(utc_datetime(self.last_ns))}): its "
                f"rates are per hour over those {fmt.hours(self.hours)}")


def reach_notes(spans: dict[str, tuple[int, int]], *, start_ns: int, asked_hours: float) -> dict[str, str]:
    """Per node whose rates reach back well before the window (its readings further apart than the window: a rate
    starts from the reading before it), what they are over: `--window 15m` over readings 30 minutes apart rated
    them over the 30 minutes, said as a quarter hour. `spans`: `rate_spans`."""
    window_ns = asked_hours * NS_PER_HOUR
    out = {}
    for node, (first, last) in spans.items():
        if first < start_ns - window_ns / 2 and last - first > 1.5 * window_ns:
            hours = fmt.hours((last - first) / NS_PER_HOUR)
            out[node] = (f"the readings of {node} are further apart than the {fmt.hours(asked_hours)} window: its "
                         f"rates are per hour over the {hours} from the reading before it "
                         f"({fmt.when(utc_datetime(first))} to {fmt.when(utc_datetime(last))})")
    return out


def rate_spans(metrics: pd.DataFrame) -> dict[str, tuple[int, int]]:
    """Per node, the first and last reading its rated links' rates use (ns)."""
    if not len(metrics) or not {"node_id", "readings", "first", "last"} <= set(metrics.columns):
        return {}
    rated = metrics["readings"].to_numpy() >= 2
    if not rated.any():
        return {}
    rows = pd.DataFrame({"node": metrics["node_id"].astype("string").to_numpy()[rated],
                         "first": ns(metrics["first"])[rated], "last": ns(metrics["last"])[rated]})
    spans = rows.groupby("node", sort=True).agg(first=("first", "min"), last=("last", "max"))
    return {str(n): (int(f), int(la)) for n, f, la in zip(spans.index, spans["first"].to_numpy(np.int64),
                                                          spans["last"].to_numpy(np.int64), strict=True)}


def covered_spans(spans: dict[str, tuple[int, int]], *, start_ns: int, asked_hours: float) -> dict[str, Covered]:
    """Per node whose every rated link's readings begin after the window's start (none at or before it gives a
    rate its starting point): the span its rates cover. Nodes whose readings reach the start are left out."""
    return {node: Covered(node, first, last, asked_hours) for node, (first, last) in spans.items()
            if start_ns < first < last}
