"""Prometheus faults through httpx.MockTransport: slow, refusing, partial, over limits; secrets never shown."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from datetime import UTC, datetime
from urllib.parse import parse_qs

import httpx
import pytest

from diagnostics import load_thresholds
from diagnostics.errors import ConfigError
from diagnostics.prometheus import PrometheusClient, PrometheusError, fleet_queries, load_config, read_node, sweep
from tests.prometheus.mock_api import serving

AT = datetime(2026, 3, 2, 2, 0, tzinfo=UTC)
EMPTY = {"status": "success", "data": {"resultType": "vector", "result": []}}
SECRET = "s3cr3t-token-value"


def _row(**labels: str) -> dict[str, object]:
    return {"metric": labels, "value": [AT.timestamp(), "4000"]}


def client_for(handler: Callable[[httpx.Request], httpx.Response], **env: str) -> tuple[PrometheusClient,
                                                                                         list[float]]:
    config = load_config("http://prom.test:9090", env={"FABRICBOT_PROMETHEUS_TOKEN": SECRET, **env})
    sleeps: list[float] = []
    http = httpx.Client(transport=httpx.MockTransport(handler), headers=config.auth_headers())
    return PrometheusClient(config, http=http, sleep=sleeps.append), sleeps


def _query(request: httpx.Request) -> str:
    return parse_qs(request.content.decode())["query"][0]


def test_generated_promql_follows_the_thresholds_file() -> None:
    client, _ = client_for(lambda r: httpx.Response(200, json=EMPTY))
    default = {q.rule: q.promql for q in fleet_queries(client, load_thresholds(), 1.0) if q.link_type != "nvswitch"}
    changed = {q.rule: q.promql for q in fleet_queries(client, load_thresholds(overrides={"nvlink_replay": 250}),
                                                       2.0) if q.link_type != "nvswitch"}
    assert default["nvlink_replay"].endswith("> 1000") and "[7200s]" not in default["nvlink_replay"]
    assert changed["nvlink_replay"].endswith("> 250") and "[7200s]" in changed["nvlink_replay"]
    assert "/ 2 > 250" in changed["nvlink_replay"]
    # crc sums both CRC columns; the PCIe rule reads the PCIe counter only
    assert "CRC_FLIT" in default["crc"] and "CRC_DATA" in default["crc"]
    assert "PCIE_REPLAY" in default["pcie_replay"] and "NVLINK" not in default["pcie_replay"]
    assert {"link_missing", "links_below_expected"} <= set(default)


def test_every_query_carries_the_site_matchers(tmp_path: pytest.TempPathFactory) -> None:
    path = tmp_path / "prom.toml"  # type: ignore[operator]
    path.write_text('[labels]\nnode = "instance"\n[selector]\nmatchers = \'cluster="east"\'\n')
    config = load_config("http://prom.test", path=path, env={})
    client = PrometheusClient(config, http=httpx.Client(transport=httpx.MockTransport(
        lambda r: httpx.Response(200, json=EMPTY))))
    for query in fleet_queries(client, load_thresholds(), 1.0):
        assert 'cluster="east"' in query.promql
        assert "instance" in query.promql and "Hostname" not in query.promql


def test_healthy_only_when_every_query_answered() -> None:
    client, _ = client_for(serving(["n1", "n2"], lambda r: httpx.Response(200, json=EMPTY)))
    result = sweep(client, load_thresholds(), at=AT)
    assert result.complete and not result.offenders
    assert result.headline().startswith("all links within thresholds")


def test_timeouts_retry_with_backoff_then_say_incomplete() -> None:
    def slow(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("slow", request=request)

    client, sleeps = client_for(slow)
    result = sweep(client, load_thresholds(), at=AT)
    assert not result.complete and not result.offenders
    assert "INCOMPLETE" in result.headline() and "not an all-clear" in result.headline()
    assert "no answer within 30 s" in result.incomplete_reasons[0]
    per_query = client.config.limits.retries
    assert sleeps == [0.5, 1.0, 2.0]  # doubled each retry
    assert client.stats.requests == per_query + 1  # the first query's tries; the rest are not sent to it
    assert result.queries > 1
    assert result.incomplete_reasons[1:] == [f"the other {result.queries - 1} queries not sent: the server did not "
                                             "answer the first"]  # said once, not once per query with its URL


def test_transient_503_is_retried_and_then_answers() -> None:
    calls: list[int] = []

    def flaky(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        if len(calls) == 1:
            return httpx.Response(503, text="overloaded")
        return httpx.Response(200, json=EMPTY)

    client, sleeps = client_for(serving(["n1"], flaky))
    result = sweep(client, load_thresholds(), at=AT, analyze=False)
    assert result.complete and result.retries == 1 and sleeps == [0.5]


def test_server_down_names_the_server_and_never_reports_healthy() -> None:
    def down(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    client, _ = client_for(down)
    result = sweep(client, load_thresholds(), at=AT)
    assert not result.complete
    first, *rest = result.incomplete_reasons
    assert "prom.test:9090 unavailable" in first and "cannot connect" in first
    assert rest == [f"the other {result.queries - 1} queries not sent: the server did not answer the first"]
    assert client.stats.requests == client.config.limits.retries + 1


def test_partial_data_warning_marks_the_view_incomplete_but_keeps_offenders() -> None:
    def partial(request: httpx.Request) -> httpx.Response:
        rows = [_row(Hostname="n7", gpu="2", nvlink="5")] if "NVLINK_REPLAY" in _query(request) else []
        return httpx.Response(200, json={"status": "success", "warnings": ["store eu-1 unreachable"],
                                         "data": {"resultType": "vector", "result": rows}})

    client, _ = client_for(serving(["n7"], partial))
    result = sweep(client, load_thresholds(), at=AT, analyze=False)
    assert not result.complete
    assert any("partial data: store eu-1 unreachable" in r for r in result.incomplete_reasons)
    assert {(o.node_id, o.gpu, o.link) for o in result.offenders} >= {("n7", 2, 5)}
    assert f"{len({(*o.link_key, o.counted_as) for o in result.offenders})} offending " in result.headline()
    assert "found so far" in result.headline()


def test_over_the_sample_limit_is_explained() -> None:
    body = {"status": "error", "errorType": "execution",
            "error": "query processing would load too many samples into memory in query execution"}
    client, sleeps = client_for(lambda r: httpx.Response(422, json=body))
    result = sweep(client, load_thresholds(), at=AT)
    assert not result.complete and not sleeps  # a refusal is not retried
    assert "sample limit" in result.incomplete_reasons[0] and "shorter window" in result.incomplete_reasons[0]


def test_too_many_series_is_refused_not_half_read() -> None:
    rows = [_row(Hostname=f"n{i}", gpu="0", nvlink="1") for i in range(30)]
    client, _ = client_for(lambda r: httpx.Response(200, json={"status": "success",
                                                               "data": {"resultType": "vector", "result": rows}}),
                           FABRICBOT_PROMETHEUS_CONFIG="")
    limited = client.config.model_copy(update={"limits": client.config.limits.model_copy(update={"max_series": 10})})
    client.config = limited
    with pytest.raises(PrometheusError, match="30 series is over the 10 series limit"):
        client.query("up", AT)


def test_not_json_is_a_clear_error() -> None:
    client, _ = client_for(lambda r: httpx.Response(200, text="<html>login</html>",
                                                    headers={"content-type": "text/html"}))
    with pytest.raises(PrometheusError, match="not a Prometheus API answer"):
        client.query("up", AT)


def test_range_queries_are_bounded() -> None:
    seen: list[dict[str, list[str]]] = []

    def capture(request: httpx.Request) -> httpx.Response:
        seen.append(parse_qs(request.content.decode()))
        return httpx.Response(200, json={"status": "success", "data": {"resultType": "matrix", "result": []}})

    client, _ = client_for(capture)
    with pytest.raises(PrometheusError, match="longer than the 168 h limit"):
        client.query_range("up", AT.timestamp() - 200 * 3600, AT, 60)
    client.query_range("up", AT.timestamp() - 150 * 3600, AT, 1)
    assert float(seen[0]["step"][0]) >= 150 * 3600 / 11000  # never more than 11,000 points a series


def test_secrets_never_appear(capsys: pytest.CaptureFixture[str]) -> None:
    sent: list[str] = []

    def record(request: httpx.Request) -> httpx.Response:
        sent.append(request.headers.get("authorization", ""))
        raise httpx.ConnectError("refused", request=request)

    client, _ = client_for(record)
    result = sweep(client, load_thresholds(), at=AT)
    assert sent[0] == f"Bearer {SECRET}"  # it is sent ...
    shown = json.dumps(result.model_dump(mode="json")) + repr(client) + repr(client.config) + str(client.config)
    assert SECRET not in shown  # ... and never shown


def test_configuration_errors_name_the_setting() -> None:
    with pytest.raises(ConfigError, match="FABRICBOT_PROMETHEUS_URL"):
        load_config(None, env={})
    with pytest.raises(ConfigError, match="must start with http"):
        load_config("prom:9090", env={})
    with pytest.raises(PrometheusError, match="over the 168 h limit"):
        sweep(client_for(lambda r: httpx.Response(200, json=EMPTY))[0], load_thresholds(), at=AT,
              window_hours=500)


def test_read_node_maps_labels_and_reads_the_step_time_metric(tmp_path: pytest.TempPathFactory) -> None:
    path = tmp_path / "prom.toml"  # type: ignore[operator]
    path.write_text('[labels]\nnode = "instance"\n[step_time]\nmetric = "train_step_ms"\njob_label = "job"\n')
    t0 = AT.timestamp() - 120
    queries: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        query = _query(request)
        queries.append(query)
        if query.startswith("train_step_ms"):
            rows = [{"metric": {"job": "4411", "instance": "gpu-7"}, "values": [[t0, "101"], [t0 + 60, "130"]]}]
        else:
            rows = [{"metric": {"__name__": "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L3", "gpu": "2",
                                "instance": "gpu-7", "modelName": "NVIDIA H100 80GB HBM3"},
                     "values": [[t0, "10"], [t0 + 60, "70"], [t0 + 120, "130"]]}]
        return httpx.Response(200, json={"status": "success", "data": {"resultType": "matrix", "result": rows}})

    config = load_config("http://prom.test", path=path, env={})
    client = PrometheusClient(config, http=httpx.Client(transport=httpx.MockTransport(answer)))
    tables = read_node(client, "gpu-7", datetime.fromtimestamp(t0, UTC), AT, 60)
    links = tables["link_samples"]
    assert 'instance="gpu-7"' in queries[0]
    assert list(links["replay"]) == [10.0, 70.0, 130.0]
    assert set(links["node_id"]) == {"gpu-7"} and set(links["gpu"]) == {2} and set(links["link"]) == {3}
    steps = tables["step_samples"]
    assert list(steps["step_time_ms"]) == [101.0, 130.0] and set(steps["job_id"]) == {"4411"}


def test_basic_auth_from_the_environment_is_sent_and_hidden() -> None:
    seen: list[str] = []

    def record(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("authorization", ""))
        return httpx.Response(200, json=EMPTY)

    config = load_config("https://prom.test", env={"FABRICBOT_PROMETHEUS_USER": "ops",
                                                   "FABRICBOT_PROMETHEUS_PASSWORD": SECRET})
    client = PrometheusClient(config, transport=httpx.MockTransport(record))
    client.query("up", AT)
    assert seen == ["Basic " + base64.b64encode(f"ops:{SECRET}".encode()).decode()]
    assert SECRET not in repr(config) + str(config.model_dump())


def test_a_password_in_the_url_never_reaches_a_message() -> None:
    def down(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    config = load_config("http://ops:s3cret@127.0.0.1:9/prom")
    client = PrometheusClient(config, transport=httpx.MockTransport(down), sleep=lambda _s: None)
    with pytest.raises(PrometheusError) as info:
        client.query("up", AT)
    assert "s3cret" not in str(info.value) and "127.0.0.1:9/prom" in str(info.value)
    assert "s3cret" not in repr(client)
