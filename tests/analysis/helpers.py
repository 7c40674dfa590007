"""Small link/step/event tables for the history-analysis tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from diagnostics.tables import EVENTS, LINK_SAMPLES, STEP_SAMPLES, TableSchema

T0 = pd.Timestamp("2026-03-01T00:00:00Z")


def conform(schema: TableSchema, rows: pd.DataFrame) -> pd.DataFrame:
    return schema.conform(rows)


def link_series(values: Sequence[float] | dict[str, Sequence[float]], *, node: str = "n1", gpu: int | None = 0,
                link: int | None = 0, link_type: str = "nvlink", step_min: float = 5.0, start: pd.Timestamp = T0,
                peer: str = "NVSwitch 0", times: Sequence[Any] | None = None, **constant: Any) -> pd.DataFrame:
    """One link's readings: `values` of `replay`, or several counters by name; other columns held constant."""
    counters = values if isinstance(values, dict) else {"replay": values}
    n = len(next(iter(counters.values())))
    stamps = list(times) if times is not None else [start + pd.Timedelta(minutes=step_min * i) for i in range(n)]
    frame = pd.DataFrame({"timestamp": stamps, "node_id": node, "gpu": gpu, "link_type": link_type, "link": link,
                          "peer": peer, **{c: np.asarray(v, dtype=float) for c, v in counters.items()}})
    for col, value in constant.items():
        frame[col] = value
    return frame


def links(*frames: pd.DataFrame) -> pd.DataFrame:
    return conform(LINK_SAMPLES, pd.concat(frames, ignore_index=True))


def steady(rate_per_hour: float, n: int = 13, step_min: float = 5.0, base: float = 0.0) -> list[float]:
    """A cumulative counter growing at `rate_per_hour`."""
    return [base + rate_per_hour * step_min / 60 * i for i in range(n)]


def node_links(rates: dict[tuple[int, int], float] | None = None, *, gpus: int = 8, per_gpu: int = 18,
               switches: Sequence[int] = (4, 5, 5, 4), n: int = 13, node: str = "n1",
               state: dict[tuple[int, int], str] | None = None) -> pd.DataFrame:
    """A switched node: every GPU's links with background replays; `rates` sets (gpu, link) replay rates."""
    rates, state = rates or {}, state or {}
    owner = [s for s, count in enumerate(switches) for _ in range(count)][:per_gpu]
    frames = [link_series(steady(rates.get((g, k), 2.0), n), node=node, gpu=g, link=k, peer=f"NVSwitch {owner[k]}",
                          link_state=state.get((g, k), "up"))
              for g in range(gpus) for k in range(per_gpu)]
    return links(*frames)


def steps(values: Sequence[float], *, job: str = "j1", nodes: str = "n1", step_min: float = 5.0,
          start: pd.Timestamp = T0) -> pd.DataFrame:
    stamps = [start + pd.Timedelta(minutes=step_min * i) for i in range(len(values))]
    return conform(STEP_SAMPLES, pd.DataFrame({"timestamp": stamps, "job_id": job, "node_ids": nodes,
                                               "step_time_ms": np.asarray(values, dtype=float)}))


def events(rows: list[dict[str, Any]], node: str = "n1") -> pd.DataFrame:
    return conform(EVENTS, pd.DataFrame([{"node_id": node, **r} for r in rows]))
