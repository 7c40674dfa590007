"""A Prometheus server (or anything that speaks its API) as a source: a node's DCGM series read back over the span
its question needs and turned into the same tables a file gives. The fleet-wide question is pushed down to the
server instead (`prometheus.sweep`), which reads only the offending nodes back."""

from __future__ import annotations

from collections.abc import Collection
from datetime import UTC, datetime, timedelta

import pandas as pd

from ..errors import InputError
from ..ingest.dcgm_map import DcgmMap, load_map
from ..model import RackSlot
from ..prometheus.client import PrometheusClient
from ..prometheus.source import all_names, read_node
from ..prometheus.sweep import platform_of
from ..tables import EVENTS, GPUS, LINK_SAMPLES, STEP_SAMPLES, TOPOLOGY
from .source import Unstored, Window


class PrometheusSource(Unstored):
    """One server's DCGM series as of `at` (default: now, as a server holds the present), read per question."""

    name = "prometheus"

    def __init__(self, client: PrometheusClient, *, at: datetime | None = None, step_s: float = 60.0,
                 dmap: DcgmMap | None = None) -> None:
        self.client = client
        self.at = at
        self.step_s = step_s
        self.dmap = dmap or load_map()

    def nodes(self) -> list[str]:
        """The node label's values among the series the DCGM table names."""
        label = self.client.config.labels.node
        rows = self.client.query(f'count by ({label}) ({{__name__=~"{all_names(self.dmap)}"}})', self._now())
        return sorted({str(r["metric"][label]) for r in rows if label in r.get("metric", {})})

    def jobs(self) -> list[str]:
        return []

    def job_nodes(self, job_id: str) -> list[str]:
        return []

    def racks(self) -> dict[str, RackSlot]:
        return {}

    def newest(self, nodes: Collection[str] | None = None) -> datetime | None:
        return self._now()

    def read(self, *, nodes: Collection[str] | None, end: datetime | None, span: timedelta, peers: bool = False,
             steps: timedelta | None = None) -> Window:
        if nodes is None:
            raise InputError("a fleet is swept on the server (`fabricbot sweep --prometheus URL`), not read back "
                             "whole", source=self.name)
        end = end or self._now()
        parts = [read_node(self.client, node, end - span, end, self.step_s, self.dmap) for node in sorted(nodes)]
        tables = {}
        for name, schema in (("link_samples", LINK_SAMPLES), ("step_samples", STEP_SAMPLES), ("events", EVENTS),
                             ("gpus", GPUS), ("topology", TOPOLOGY)):
            frames = [p.tables[name] for p in parts if name in p.tables and len(p.tables[name])]
            tables[name] = schema.conform(pd.concat(frames, ignore_index=True)) if frames else schema.empty()
        platforms = {node: p for node, part in zip(sorted(nodes), parts, strict=True)
                     if (p := platform_of(part.tables.get("gpus"))) is not None}
        return Window(tables=tables, end=end, platforms=platforms,
                      warnings=[str(w) for p in parts for w in p.warnings])

    def _now(self) -> datetime:
        return self.at or datetime.now(UTC)
