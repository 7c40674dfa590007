"""A Prometheus server (or anything that speaks its API) as a source: a node's DCGM series read back over the span
its question needs and turned into the same tables a file gives. The fleet-wide question is pushed down to the
server instead (`prometheus.sweep`), which reads only the offending nodes back."""

from __future__ import annotations

from collections.abc import Collection
from datetime import UTC, datetime, timedelta

import pandas as pd

from ..errors import InputError
from ..ingest.base import IngestResult
from ..ingest.dcgm_map import DcgmMap, load_map
from ..model import RackSlot
from ..prometheus.client import PrometheusClient, PrometheusError
from ..prometheus.presence import check_node_label, known_nodes, reading_bounds
from ..prometheus.promql import QueryBuilder
from ..prometheus.source import NoSeries, read_node, step_time_unread
from ..prometheus.sweep import platform_of
from ..tables import EVENTS, GPUS, LINK_SAMPLES, STEP_SAMPLES, TOPOLOGY
from .request import CORRELATION_SPAN
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
        """The nodes the server's index holds presence series of about the source's instant (`known_nodes`: the
        label values API, no samples read), as a sweep knows them: a node that went quiet is still one, and its
        answer says where its readings run, not that it is unknown."""
        now = self._now()
        known = known_nodes(self.client, QueryBuilder(self.client.config, self.dmap), now - CORRELATION_SPAN, now)
        if isinstance(known, PrometheusError):
            raise known
        if not known.values:
            check_node_label(self.client, QueryBuilder(self.client.config, self.dmap), now - CORRELATION_SPAN, now)
        return known.values

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
        """The nodes' series over (end - span, end]; a node with none there is silent, not an error (its answer says
        so), and where its readings run about the window is asked of the server."""
        if nodes is None:
            raise InputError("a fleet is swept on the server (`fabricbot sweep --prometheus URL`), not read back "
                             "whole", source=self.name)
        end = end or self._now()
        parts: dict[str, IngestResult] = {}
        newest: dict[str, datetime] = {}
        oldest: dict[str, datetime] = {}
        for node in sorted(nodes):
            try:
                parts[node] = part = read_node(self.client, node, end - span, end, self.step_s, self.dmap)
            except NoSeries:  # where its readings run, as the store says it of a node it holds
                first, last = reading_bounds(self.client, QueryBuilder(self.client.config, self.dmap), node,
                                             *self._known_between(end - max(span, CORRELATION_SPAN), end),
                                             self.step_s)
                oldest.update({node: first} if first else {})
                newest.update({node: last} if last else {})
                continue
            links = part.tables.get("link_samples")
            if links is not None and len(links):
                newest[node] = links["timestamp"].max().to_pydatetime()
                oldest[node] = links["timestamp"].min().to_pydatetime()
                if newest[node] < end - timedelta(seconds=self.step_s):  # quiet before the end: say when exactly
                    first, last = reading_bounds(self.client, QueryBuilder(self.client.config, self.dmap), node,
                                                 end - span, end, self.step_s)
                    newest.update({node: last} if last else {})
                    oldest.update({node: first} if first else {})
        tables = {}
        for name, schema in (("link_samples", LINK_SAMPLES), ("step_samples", STEP_SAMPLES), ("events", EVENTS),
                             ("gpus", GPUS), ("topology", TOPOLOGY)):
            frames = [p.tables[name] for p in parts.values() if name in p.tables and len(p.tables[name])]
            tables[name] = schema.conform(pd.concat(frames, ignore_index=True)) if frames else schema.empty()
        platforms = {node: p for node, part in parts.items() if (p := platform_of(part.tables.get("gpus"))) is not None}
        unread = step_time_unread(self.client.config)  # what its priorities weigh, said with every answer
        return Window(tables=tables, end=end, platforms=platforms, newest=newest, oldest=oldest,
                      warnings=[str(w) for p in parts.values() for w in p.warnings] + ([unread] if unread else []))

    def _known_between(self, start: datetime, end: datetime) -> tuple[datetime, datetime]:
        """From `limits.known_nodes_hours` before `start` to as long after `end`: where the index knows a node."""
        around = timedelta(hours=self.client.config.limits.known_nodes_hours)
        return start - around, end + around

    def _now(self) -> datetime:
        return self.at or datetime.now(UTC)
