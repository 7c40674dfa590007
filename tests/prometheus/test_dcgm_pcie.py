"""The `dcgm` profile's PCIe rule pushed down: each link's limit from its own generation and width, on a real server.

DCGM's MonitorPcie warns when a link's replays exceed ceil(rate per lane x width) a minute (16 at Gen4 x16, 31 at Gen5
x16, 16 at Gen5 x8): the generated query must compute that limit per link from the gauges, and find the same links
the history analysis finds from the same rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from diagnostics import load_thresholds
from diagnostics.analysis import analyze_tables
from diagnostics.prometheus import PrometheusClient, load_config, sweep
from tests.prometheus.helpers import START, Server, link_samples, promtool_missing, serve_samples

# GPU -> (generation, width, replays per hour): each rate just over or under its link's own limit
LINKS = {0: (5, 16, 1900.0), 1: (5, 16, 1700.0), 2: (4, 16, 1000.0), 3: (4, 16, 900.0), 4: (5, 8, 1000.0),
         5: (3, 8, 200.0)}
OVER = {0, 2, 4}  # 1860/h, 960/h and 960/h are the limits of the first three pairs; Gen3 x8's is 240/h


def _samples() -> pd.DataFrame:
    times = [START + timedelta(minutes=i) for i in range(121)]
    rows = []
    for gpu, (gen, width, rate) in LINKS.items():
        replay = np.arange(len(times)) * rate / 60.0
        rows.append(pd.DataFrame({"timestamp": times, "node_id": "node-a", "gpu": gpu, "link_type": "pcie",
                                  "replay": np.floor(replay), "gen": gen, "max_gen": gen, "width": width,
                                  "max_width": 16}))
    return link_samples(pd.concat(rows, ignore_index=True))


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[pd.DataFrame, Server]]:
    if promtool_missing():
        pytest.skip(str(promtool_missing()))
    samples = _samples()
    server = serve_samples(samples, tmp_path_factory.mktemp("dcgm_pcie"))
    yield samples, server
    server.stop()


@pytest.mark.prometheus
@pytest.mark.timeout(120)
def test_the_push_down_judges_each_pcie_link_by_its_generation_and_width(
        served: tuple[pd.DataFrame, Server]) -> None:
    samples, server = served
    at = samples["timestamp"].max().to_pydatetime()
    dcgm = load_thresholds(profile="dcgm")
    with PrometheusClient(load_config(server.url, env={})) as client:
        result = sweep(client, dcgm, at=at, window_hours=1.0, analyze=False)
    assert result.complete, result.incomplete_reasons
    remote = {o.gpu: o for o in result.offenders if o.rule == "pcie_replay"}
    assert set(remote) == OVER
    assert all(o.above is None and "the link's own limit" in o.detail for o in remote.values())
    assert remote[0].rate_per_hour == pytest.approx(1900, rel=0.02)
    local = analyze_tables({"link_samples": samples}, node_id="node-a", thresholds=dcgm, end=at)
    found = {f.gpu: c.above for f in local.findings for c in f.crossed if c.rule == "pcie_replay"}
    assert found == {0: 1860.0, 2: 960.0, 4: 960.0}


def test_the_query_names_the_per_lane_table_and_the_links_gauges(tmp_path: Path) -> None:
    from diagnostics.ingest.dcgm_map import load_map
    from diagnostics.prometheus.promql import QueryBuilder, rule_queries

    builder = QueryBuilder(load_config("http://prom.test:9090", env={}), load_map())
    query = next(q for q in rule_queries(load_thresholds(profile="dcgm"), builder, 1.0)
                 if q.rule == "pcie_replay")
    assert "DCGM_FI_DEV_PCIE_LINK_WIDTH" in query.promql and "DCGM_FI_DEV_PCIE_LINK_GEN" in query.promql
    assert "60 * ceil(" in query.promql and "1.92 * (" in query.promql and ">= bool 6" in query.promql
    default = next(q for q in rule_queries(load_thresholds(), builder, 1.0) if q.rule == "pcie_replay")
    assert default.promql.endswith("> 1000")
