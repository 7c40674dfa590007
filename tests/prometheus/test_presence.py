"""Which nodes report in a sweep's span, through httpx.MockTransport: their count settles it where as many report as
the server's index knows; otherwise they are asked by name and the silent ones are named."""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import parse_qs

import httpx

from diagnostics import load_thresholds
from diagnostics.prometheus import PrometheusClient, SweepResult, load_config, sweep
from tests.prometheus.mock_api import serving

AT = datetime(2026, 3, 2, 2, 0, tzinfo=UTC)
NODES = ["gpu-a", "gpu-b", "gpu-c"]


def _swept(known: list[str], reports: list[str]) -> tuple[SweepResult, list[str]]:
    """A sweep of a server whose index knows `known` and whose span holds samples of `reports`; the queries sent."""
    sent: list[str] = []
    index = serving(known, lambda r: httpx.Response(200, json={"status": "success",
                                                               "data": {"resultType": "vector", "result": []}}))
    span = serving(reports, index)

    def answer(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return index(request)
        sent.append(parse_qs(request.content.decode())["query"][0])
        return span(request)

    client = PrometheusClient(load_config("http://prom.test:9090", env={}),
                              http=httpx.Client(transport=httpx.MockTransport(answer)), sleep=lambda _s: None)
    return sweep(client, load_thresholds(), at=AT, analyze=False), sent


def _by_name(sent: list[str]) -> list[str]:
    return [q for q in sent if q.startswith("group by (Hostname) (")]


def test_every_known_node_reporting_is_settled_by_their_count() -> None:
    result, sent = _swept(NODES, NODES)
    assert result.complete and not result.silent
    assert [q for q in sent if q.startswith("count(group by (Hostname) (")] and not _by_name(sent)


def test_fewer_nodes_reporting_than_known_are_asked_by_name_and_the_silent_one_named() -> None:
    result, sent = _swept(NODES, NODES[:2])
    assert len(_by_name(sent)) == 1
    assert not result.complete and result.silent == ["gpu-c"]
    assert any("gpu-c" in r and "no reading" in r for r in result.incomplete_reasons)
    assert "within thresholds" not in result.headline()


def test_no_node_reporting_and_none_known_is_not_an_all_clear() -> None:
    result, _ = _swept([], [])
    assert not result.complete and not result.silent
    assert any(r.startswith("no node of the prometheus has a link reading") for r in result.incomplete_reasons)
    assert "not an all-clear" in result.headline()


def test_the_count_reads_the_pcie_series_and_a_node_without_them_is_asked_by_name() -> None:
    """The count reads each GPU's PCIe series alone (its cost follows the series it reads); a node exposing NVLink
    series only leaves it short of the index, so the nodes are asked by name over every series, and it reports."""
    sent: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return httpx.Response(200, json={"status": "success", "data": NODES})
        query = parse_qs(request.content.decode())["query"][0]
        sent.append(query)
        at = float(parse_qs(request.content.decode())["time"][0])
        rows: list[dict[str, object]] = []
        if query.startswith("count(group by (Hostname) ("):  # gpu-c has no PCIe series
            pcie_only = "PCIE" in query and "NVLINK" not in query
            rows = [{"metric": {}, "value": [at, str(len(NODES) - 1 if pcie_only else len(NODES))]}]
        elif query.startswith("group by (Hostname) ("):
            rows = [{"metric": {"Hostname": n}, "value": [at, "1"]} for n in NODES]
        return httpx.Response(200, json={"status": "success", "data": {"resultType": "vector", "result": rows}})

    client = PrometheusClient(load_config("http://prom.test:9090", env={}),
                              http=httpx.Client(transport=httpx.MockTransport(answer)), sleep=lambda _s: None)
    result = sweep(client, load_thresholds(), at=AT, analyze=False)
    assert result.complete and not result.silent, result.incomplete_reasons
    assert len(_by_name(sent)) == 1
