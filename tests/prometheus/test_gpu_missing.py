"""A GPU that fell off the bus long before the sweep: every series of it is gone, so only a count of the node's
GPUs against its platform's `gpu_count` can see it, on the server and in the local mirror alike."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import parse_qs

import httpx
import pandas as pd
import pytest

from bot.fleet_blocks import offender_line
from diagnostics import load_thresholds
from diagnostics.config.platforms import ENV_DIRS
from diagnostics.prometheus import PrometheusClient, SweepResult, fleet_queries, load_config, sweep
from diagnostics.prometheus.promql import GPU_MISSING_RULE
from diagnostics.tables import LINK_SAMPLES
from tests.prometheus.helpers import (
    GPUS,
    MODEL,
    Fleet,
    Server,
    generate_fleet,
    link_samples,
    promtool_missing,
    serve_fleet,
)
from tests.prometheus.mirror import failing_links, missing_gpus
from tests.prometheus.mock_api import serving

AT = datetime(2026, 3, 2, 4, 0, tzinfo=UTC)
EMPTY = {"status": "success", "data": {"resultType": "vector", "result": []}}


def _client(handler: httpx.MockTransport) -> PrometheusClient:
    return PrometheusClient(load_config("http://prom.test:9090", env={}), http=httpx.Client(transport=handler),
                            sleep=lambda s: None)


def _gpu_missing_query() -> str:
    client = _client(httpx.MockTransport(lambda r: httpx.Response(200, json=EMPTY)))
    found = [q for q in fleet_queries(client, load_thresholds(), 1.0) if q.rule == GPU_MISSING_RULE]
    assert len(found) == 1
    return found[0].promql


def test_the_query_counts_each_nodes_reporting_gpus_against_the_platform_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    promql = _gpu_missing_query()
    clauses = promql.split(" or ")
    models = {c.split('"modelName", "')[1].split('"')[0] for c in clauses}
    assert models == {"A100", "V100", "B200", "H100", "H200", "GB200"}  # not PCIe cards: a server holds as many
    # as were fitted (the generic PCIe platform, H100 NVL's pairs: `gpu_count_fixed = false`)
    gb200 = next(c for c in clauses if '"GB200"' in c)  # a GB200 rack's compute tray holds 4 GPUs
    assert gb200.endswith("< 4)") and 'modelName!~".*(GB200).*"' in next(c for c in clauses if '"B200"' in c)
    h100 = next(c for c in clauses if '"H100"' in c)
    assert "count by (Hostname, modelName)" in h100 and "group by (Hostname, gpu)" in h100
    assert h100.endswith("< 8 != 4)")  # a node of GPUs 0-3 of the model alone: its 4-GPU board, not 4 gone
    assert next(c for c in clauses if '"B200"' in c).endswith("< 8)")  # built into 8-GPU boards alone
    # the PCIe counter every GPU exports and the NVLink ones both say a GPU reports; no window, only the lookback
    assert "DCGM_FI_DEV_PCIE_REPLAY_COUNTER(_total)?" in h100 and "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L" in h100
    assert "increase(" not in h100 and "[" not in h100.replace("[0-9]", "")
    # an H100 NVL card is its own platform, never counted against the H100 one
    assert 'modelName!~".*(H100\\\\ NVL).*"' in h100 and 'modelName!~"(?i).*PCIe.*"' in h100
    # and so for the links per GPU: 12 on an H100 NVL is its platform's count, not 6 short of the H100's 18
    client = _client(httpx.MockTransport(lambda r: httpx.Response(200, json=EMPTY)))
    below = next(q.promql for q in fleet_queries(client, load_thresholds(), 1.0) if q.rule == "links_below_expected")
    h100_links = next(c for c in below.split(" or ") if c.endswith("< 18)") and '"H100"' in c)
    assert 'modelName!~".*(H100\\\\ NVL).*"' in h100_links
    # a site's own platform file adds its clause with its own count
    (tmp_path / "quad.toml").write_text('name = "quad-x9"\ngpu_model = "X9"\ngpu_count = 4\n'
                                        'nvlinks_per_gpu = 18\n', encoding="utf-8")
    monkeypatch.setenv(ENV_DIRS, str(tmp_path))
    quad = next(c for c in _gpu_missing_query().split(" or ") if '"X9"' in c)
    assert quad.endswith("< 4)")


def test_a_node_short_of_gpus_is_an_offender_and_never_healthy() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        query = parse_qs(request.content.decode())["query"][0]
        rows = []
        if "count by (Hostname, modelName)" in query and "< 8" in query and "gpu!=" in query:
            rows = [{"metric": {"Hostname": "node-b", "modelName": "H100"}, "value": [AT.timestamp(), "7"]}]
        return httpx.Response(200, json={"status": "success", "data": {"resultType": "vector", "result": rows}})

    result = sweep(_client(httpx.MockTransport(serving(["node-b"], answer))), load_thresholds(), at=AT,
                   analyze=False)
    [found] = result.offenders
    assert (found.node_id, found.gpu, found.rule, found.severity.value) == ("node-b", None, "gpus_missing", "down")
    assert (found.rate_per_hour, found.above, found.detail) == (7, 8, "7 of 8 GPUs report")
    assert result.complete and "all links within" not in result.headline()
    assert offender_line(found) == "GPUs: gpus_missing (down), 7 of 8 GPUs report"


def _rows(node: str, gpus: range, start: datetime, minutes: int) -> list[dict[str, object]]:
    return [{"timestamp": start + timedelta(minutes=m), "node_id": node, "gpu": g, "link_type": "pcie",
             "replay": float(m)} for g in gpus for m in range(minutes + 1)]


def _samples(rows: list[dict[str, object]]) -> pd.DataFrame:
    return link_samples(pd.DataFrame(rows))


def test_the_local_mirror_counts_gpus_reporting_within_the_lookback() -> None:
    start = AT - timedelta(hours=4)
    rows = _rows("full", range(8), start, 240) + _rows("short", range(7), start, 240)
    rows += _rows("short", range(7, 8), start, 60)  # GPU 7: last reading three hours before the instant
    rows += _rows("nvl", range(4), start, 240)  # an H100 NVL server of four cards: not counted against eight,
    gpus = pd.DataFrame([{"node_id": n, "gpu": g, "model": "NVIDIA H100 NVL" if n == "nvl" else MODEL}
                         for n in ("full", "short", "nvl") for g in range(8)])  # nor against the H100 board's
    found = missing_gpus(_samples(rows), AT, gpus, "(?i).*PCIe.*")
    assert [(o.node_id, o.detail) for o in found] == [("short", "7 of 8 GPUs report")]
    # without a model for the GPUs there is no platform to hold them to, on the server as here
    assert missing_gpus(_samples(rows), AT, None, "(?i).*PCIe.*") == []
    assert missing_gpus(_samples(rows), AT, gpus.assign(model="NVIDIA H100 PCIe"), "(?i).*PCIe.*") == []


# ---- against a real Prometheus: two nodes x 4 h; one GPU of node-001 falls off the bus 3 h before the end ----

LOST = 5


def _lost_gpu_fleet() -> Fleet:
    base = generate_fleet(nodes=1, hours=4.0, columns=("replay",))
    samples = base.samples.copy()
    nvlink = samples["link_type"].astype(str) == "nvlink"
    healthy = samples.loc[nvlink & (samples["gpu"] == 0) & (samples["link"] == 1), "replay"].to_numpy()
    samples.loc[nvlink & (samples["gpu"] == 0) & (samples["link"] == 0), "replay"] = healthy  # no planted rate
    twin = samples.assign(node_id="node-001")
    gone = (twin["gpu"] == LOST) & (twin["timestamp"] > pd.Timestamp(base.end) - pd.Timedelta(hours=3))
    samples = LINK_SAMPLES.conform(pd.concat([samples, twin[~gone]], ignore_index=True))
    gpus = pd.DataFrame([{"node_id": n, "gpu": g, "model": MODEL} for n in ("node-000", "node-001")
                         for g in range(GPUS)])
    return Fleet(samples, gpus, base.start, base.end, {"node-001": f"GPU {LOST} off the bus 3 h before the end"})


@pytest.fixture(scope="module")
def lost() -> Fleet:
    return _lost_gpu_fleet()


@pytest.fixture(scope="module")
def lost_server(lost: Fleet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    reason = promtool_missing()
    if reason:
        pytest.skip(reason)
    running = serve_fleet(lost, tmp_path_factory.mktemp("prometheus-gpu-missing"))
    yield running
    running.stop()


@pytest.fixture(scope="module")
def swept(lost: Fleet, lost_server: Server) -> SweepResult:
    with PrometheusClient(load_config(lost_server.url, env={})) as client:
        return sweep(client, load_thresholds(), at=lost.end, window_hours=1.0)


@pytest.mark.prometheus
@pytest.mark.timeout(120)
def test_the_sweep_flags_the_node_whose_gpu_vanished_hours_ago(lost: Fleet, lost_server: Server,
                                                               swept: SweepResult) -> None:
    assert swept.complete, swept.incomplete_reasons
    with PrometheusClient(load_config(lost_server.url, env={})) as client:
        pushed = sweep(client, load_thresholds(), at=lost.end, window_hours=1.0, analyze=False)
    assert {(o.node_id, o.rule, o.gpu, o.detail) for o in pushed.offenders} == {
        ("node-001", "gpus_missing", None, "7 of 8 GPUs report")}  # the server's count names no GPU
    assert "all links within" not in swept.headline() and "on 1 node" in swept.headline()
    local = failing_links(lost.samples, load_thresholds(), lost.end, 1.0, lost.gpus)
    assert {o.key for o in pushed.offenders} == {o.key for o in local}
    # its read-back names the GPU gone: the node's row is that GPU's, as the store's sweep lists it
    assert {(o.node_id, o.rule, o.gpu) for o in swept.offenders} == {("node-001", "gpus_missing", LOST)}
    # the node's series, read back over the window, confirm it: seven GPUs left, and the platform has eight
    assert [o.rule for o in swept.confirmed["node-001"]] == ["gpus_missing"]
