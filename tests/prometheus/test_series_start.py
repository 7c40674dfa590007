"""A series that begins inside the window (a node that joined, a restarted exporter, a GPU reset that re-created its
series) is rated over the span it covers by every door: the Prometheus push-down flags the link the store and the
files flag, at about their rate, and a series that covers the whole window keeps Prometheus' `increase()` per hour.
The push-down's rate queries take the increase per window-hour; one search names the nodes with a younger series,
and only those are rated again, over each series' span.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from diagnostics import load_thresholds
from diagnostics.ingest.dcgm_map import load_map
from diagnostics.ingest.dcgm_write import format_exposition
from diagnostics.offenders import SweepResult
from diagnostics.prometheus import PrometheusClient, fleet_queries, load_config, sweep
from diagnostics.prometheus.promql import QueryBuilder, rule_queries
from diagnostics.service import Request, StoreSource, tables_source
from diagnostics.service import sweep as sweep_source
from diagnostics.store import open_store
from tests.prometheus.helpers import START, Server, backfill, link_samples, promtool_missing, start_server
from tests.prometheus.mirror import extrapolated_increase

pytestmark = [pytest.mark.prometheus, pytest.mark.timeout(180)]
_REASON = promtool_missing()
if _REASON:
    pytestmark.append(pytest.mark.skip(reason=_REASON))

SCRAPE_S, HOURS, NODE = 30, 2.0, "n1"
END = START + timedelta(hours=HOURS)
NEW = (2, 5)  # GPU, link: its series begins 10 minutes before the end, replaying at 5x the rule
WHOLE = (4, 1)  # replays at 1.5x the rule over the whole history
LONE = (6, 2)  # one reading in the window, a high lifetime total: no rate
NEW_RATE, WHOLE_RATE = 5000.0, 1500.0


def _samples() -> pd.DataFrame:
    rng = np.random.default_rng(11)
    times = pd.date_range(START, END, freq=f"{SCRAPE_S}s", tz="UTC")
    frames = []
    for gpu in range(8):
        for link in range(18):
            at = times
            rate = {NEW: NEW_RATE, WHOLE: WHOLE_RATE}.get((gpu, link), 3.0)
            if (gpu, link) == NEW:
                at = times[times >= END - timedelta(minutes=10)]
            elif (gpu, link) == LONE:
                at = times[-1:]
            steps = len(at)
            replay = np.cumsum(rng.poisson(rate * SCRAPE_S / 3600, steps)).astype(float)
            if (gpu, link) in (NEW, LONE):
                replay += 40_000.0  # the lifetime total the re-created series starts from
            frames.append(pd.DataFrame({"timestamp": at, "node_id": NODE, "link_type": "nvlink", "gpu": gpu,
                                        "link": link, "replay": replay, "recovery": 0.0,
                                        "crc_flit": np.cumsum(rng.poisson(SCRAPE_S / 3600, steps)).astype(float)}))
    return link_samples(pd.concat(frames, ignore_index=True))


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[pd.DataFrame, Path]:
    folder = tmp_path_factory.mktemp("series_start")
    samples = _samples()
    scrape = folder / "fleet.om"
    scrape.write_text("\n".join(format_exposition(samples, openmetrics=True)) + "\n", encoding="utf-8")
    return samples, scrape


@pytest.fixture(scope="module")
def served(written: tuple[pd.DataFrame, Path]) -> Iterator[Server]:
    _, scrape = written
    backfill(scrape, scrape.parent / "data")
    server = start_server(scrape.parent / "data")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def doors(written: tuple[pd.DataFrame, Path], served: Server,
          tmp_path_factory: pytest.TempPathFactory) -> dict[str, SweepResult]:
    _, scrape = written
    thresholds = load_thresholds()
    store = open_store(tmp_path_factory.mktemp("store") / "store")
    store.ingest([scrape])
    files, _ = tables_source([scrape])
    request = Request(end=END, window=timedelta(hours=1), thresholds=thresholds)
    with PrometheusClient(load_config(served.url, env={})) as client:
        pushed = sweep(client, thresholds, at=END, window_hours=1.0)
    return {"prometheus": pushed, "store": sweep_source(StoreSource(store), request),
            "files": sweep_source(files, request)}


def _rates(result: SweepResult, rule: str = "nvlink_replay") -> dict[tuple[int | None, int | None], float]:
    return {(o.gpu, o.link): o.rate_per_hour for o in result.offenders
            if o.rule == rule and o.rate_per_hour is not None}


def test_a_series_begun_inside_the_window_is_flagged_by_every_door(doors: dict[str, SweepResult]) -> None:
    for door, result in doors.items():
        assert result.complete, (door, result.incomplete_reasons)
        assert set(_rates(result)) == {NEW, WHOLE}, door
    local = _rates(doors["store"])[NEW]
    assert local == pytest.approx(_rates(doors["files"])[NEW], rel=1e-9)
    assert local == pytest.approx(NEW_RATE, rel=0.25)  # Poisson over 10 minutes
    # the server's rate is over the span the series covers, as the store's is (increase()'s half interval of
    # extrapolation taken out: it was 2.5 % over here, 12.5 % for a 20-minute series scraped every 5 minutes)
    assert _rates(doors["prometheus"])[NEW] == pytest.approx(local, rel=0.002)


def test_the_read_back_confirms_the_link_the_server_found(doors: dict[str, SweepResult]) -> None:
    confirmed = {(o.gpu, o.link): o.rate_per_hour for o in doors["prometheus"].confirmed[NODE]
                 if o.rule == "nvlink_replay"}
    assert set(confirmed) == {NEW, WHOLE}
    assert confirmed[NEW] == pytest.approx(_rates(doors["store"])[NEW], rel=0.1)  # read at the node read's step


def test_a_whole_window_series_keeps_increase_per_hour(written: tuple[pd.DataFrame, Path],
                                                       doors: dict[str, SweepResult]) -> None:
    samples, _ = written
    rows = samples[(samples["gpu"] == WHOLE[0]) & (samples["link"] == WHOLE[1])
                   & (samples["timestamp"] >= pd.Timestamp(END - timedelta(hours=1)))]
    t = rows["timestamp"].astype("int64").to_numpy() / 1e9
    increase = extrapolated_increase(t, rows["replay"].to_numpy(float), END.timestamp() - 3600, END.timestamp())
    assert increase is not None
    assert _rates(doors["prometheus"])[WHOLE] == pytest.approx(increase / 1.0, rel=1e-9)
    assert _rates(doors["prometheus"])[WHOLE] == pytest.approx(_rates(doors["store"])[WHOLE], rel=0.04)



def test_only_the_nodes_with_young_series_are_rated_again(served: Server) -> None:
    """The rate queries divide the window's increase by the window; one search finds the nodes with a series younger
    than the span they look back over, and only those are rated again, each series over its span."""
    thresholds = load_thresholds()

    def swept(at: datetime, hours: float) -> tuple[SweepResult, int, int]:
        with PrometheusClient(load_config(served.url, env={})) as client:
            result = sweep(client, thresholds, at=at, window_hours=hours, analyze=False)
            # the recorded-rates question, the search, the nodes reporting (counted on their PCIe series, none
            # here, so asked by name), the nodes the index knows and those quiet since before the window
            base = len(fleet_queries(client, thresholds, hours)) + 6
            return result, client.stats.requests, base

    # every series began before the span (a persistent rule looks back 4 windows of 15 min): no second pass
    old, requests, base = swept(END - timedelta(minutes=30), 0.25)
    assert old.complete and not old.young
    assert requests == base and old.queries == base - 2
    # two series began inside the window: their node's rate queries are asked again, once each
    young, requests, base = swept(END, 1.0)
    assert young.complete and set(young.young) == {NODE}
    assert young.young[NODE] == 1.0  # within the window, not only the span: every rule is asked again
    rated = len(rule_queries(thresholds, QueryBuilder(load_config(served.url, env={}), load_map()), 1.0))
    assert requests == base + rated and young.queries == base - 2 + rated
    assert NEW in _rates(young)
