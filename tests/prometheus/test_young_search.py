"""The young-series search on a real Prometheus: two plain range selections, no subquery, name the nodes with a
series that began inside the window or the span a persistent rule looks back over, and the lookback it began in."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from diagnostics.ingest.dcgm_map import load_map
from diagnostics.prometheus import PrometheusClient, load_config
from diagnostics.prometheus.promql import QueryBuilder
from diagnostics.prometheus.young import node_batches, young_nodes, young_query
from tests.prometheus.helpers import START, Server, link_samples, promtool_missing, serve_samples

pytestmark = [pytest.mark.prometheus, pytest.mark.timeout(180)]
_REASON = promtool_missing()
if _REASON:
    pytestmark.append(pytest.mark.skip(reason=_REASON))

SCRAPE_S, HOURS, WINDOW_H, SPAN_H = 30, 6.0, 1.0, 4.0
END = START + timedelta(hours=HOURS)
# node: the minutes before the end its series' samples lie in (from, to), gaps as a second range
NODES = {
    "old": [(HOURS * 60, 0)],
    "joined": [(10, 0)],  # began inside the window
    "early": [(150, 0)],  # began before the window, inside the span
    "lone": [(0, 0)],  # one sample, the last: it began after every earlier one
    "gap": [(HOURS * 60, SPAN_H * 60 + 10), (SPAN_H * 60 - 20, 0)],  # an old series silent 30 min at the span's start
    "gone": [(HOURS * 60, 3 * 60)],  # old, and silent for the last 3 h
}


def _samples() -> pd.DataFrame:
    times = pd.date_range(START, END, freq=f"{SCRAPE_S}s", tz="UTC")
    frames = []
    for node, spans in NODES.items():
        minutes = (END - times).total_seconds() / 60
        at = times[np.logical_or.reduce([(minutes <= a) & (minutes >= b) for a, b in spans])]
        for link in range(2):
            frames.append(pd.DataFrame({"timestamp": at, "node_id": node, "link_type": "nvlink", "gpu": 0,
                                        "link": link, "replay": np.arange(len(at), dtype=float),
                                        "recovery": 0.0, "crc_flit": 0.0}))
    return link_samples(pd.concat(frames, ignore_index=True))


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = serve_samples(_samples(), Path(tmp_path_factory.mktemp("young_search")))
    yield server
    server.stop()


def test_the_search_takes_two_range_selections_per_lookback_and_no_subquery() -> None:
    search = young_query(QueryBuilder(load_config("http://prom.test:9090", env={}), load_map()), WINDOW_H, SPAN_H)
    assert search is not None
    assert not re.search(r"\[\d+s:\d+s\]", search)  # a subquery evaluates the presence counter at every step
    assert "timestamp(" not in search
    assert {int(s) for s in re.findall(r"offset (\d+)s", search)} == {3600, 14400}


def test_the_search_names_each_young_node_with_the_lookback_its_series_began_in(served: Server) -> None:
    config = load_config(served.url, env={})
    search = young_query(QueryBuilder(config, load_map()), WINDOW_H, SPAN_H)
    assert search is not None
    with PrometheusClient(config) as client:
        young = young_nodes(client.instant(search, END), config.labels.node)
    # an old series silent longer than the lookback at the span's start looks young: it is only rated again exactly
    assert young == {"joined": WINDOW_H, "lone": WINDOW_H, "early": SPAN_H, "gap": SPAN_H}
    with PrometheusClient(config) as client:  # without a persistent rule, the span is the window
        assert young_nodes(client.instant(young_query(QueryBuilder(config, load_map()), WINDOW_H, WINDOW_H) or "",
                                          END), config.labels.node) == {"joined": WINDOW_H, "lone": WINDOW_H}


def test_a_node_young_only_within_the_span_is_asked_again_for_the_persistent_rules_only() -> None:
    young = {"joined": WINDOW_H, "early": SPAN_H, "lone": WINDOW_H}
    assert list(node_batches(young, WINDOW_H, 1)) == [(["joined"], False), (["lone"], False), (["early"], True)]
