"""Against a real Prometheus: a node whose every series stopped inside the window (its exporter or the node went
away) is one node that stopped reporting, its view incomplete: neither each of its links down nor healthy."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest

from diagnostics import load_thresholds
from diagnostics.format import Unit
from diagnostics.prometheus import PrometheusClient, SweepResult, load_config, sweep
from tests.prometheus.helpers import Fleet, Server, generate_fleet, promtool_missing, serve_fleet

pytestmark = [pytest.mark.prometheus, pytest.mark.timeout(180)]
_REASON = promtool_missing()
if _REASON:
    pytestmark.append(pytest.mark.skip(reason=_REASON))

STOPPED = "node-000"  # every series stops 20 minutes before the fleet's end: inside a 1 h window
STOPPED_FOR = timedelta(minutes=20)


@pytest.fixture(scope="module")
def fleet() -> Fleet:
    fleet = generate_fleet(nodes=4, hours=2.0)
    samples = fleet.samples
    gone = (samples["node_id"] == STOPPED) & (samples["timestamp"] > fleet.end - STOPPED_FOR)
    fleet.samples = samples[~gone].reset_index(drop=True)
    return fleet


@pytest.fixture(scope="module")
def server(fleet: Fleet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    served = serve_fleet(fleet, tmp_path_factory.mktemp("stopped"))
    yield served
    served.stop()


@pytest.fixture(scope="module")
def swept(fleet: Fleet, server: Server) -> SweepResult:
    with PrometheusClient(load_config(server.url, env={})) as client:
        return sweep(client, load_thresholds(), at=fleet.end, window_hours=1.0, analyze=False)


def test_a_node_that_stopped_reporting_is_said_not_each_link_down(swept: SweepResult) -> None:
    assert not [o for o in swept.offenders if o.node_id == STOPPED and o.rule == "link_missing"]
    assert not swept.complete
    assert [r for r in swept.incomplete_reasons if STOPPED in r and "stopped reporting" in r]


def test_the_other_nodes_faults_are_still_found(swept: SweepResult) -> None:
    assert ("node-001", 2, 5) in {(o.node_id, o.gpu, o.link) for o in swept.offenders}


def test_a_gpu_short_of_links_counts_links_not_a_rate(swept: SweepResult) -> None:
    short = [o for o in swept.offenders if o.rule == "links_below_expected"]
    assert {(o.node_id, o.gpu, o.unit) for o in short} == {("node-003", 3, Unit.LINKS), ("node-003", 6, Unit.LINKS)}
