"""Which nodes report in a sweep's span, through httpx.MockTransport: their count settles it where as many report as
the server's index knows; otherwise they are asked by name and the silent ones are named."""

from __future__ import annotations

import re
from collections.abc import Callable
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

    return _swept_by(answer), sent


def _swept_by(answer: Callable[[httpx.Request], httpx.Response]) -> SweepResult:
    """A sweep, unread, of a server that answers as `answer` does."""
    client = PrometheusClient(load_config("http://prom.test:9090", env={}),
                              http=httpx.Client(transport=httpx.MockTransport(answer)), sleep=lambda _s: None)
    return sweep(client, load_thresholds(), at=AT, analyze=False)


def _by_name(sent: list[str]) -> list[str]:
    return [q for q in sent if q.startswith("group by (Hostname) (")]


def test_every_known_node_reporting_is_settled_by_their_count() -> None:
    result, sent = _swept(NODES, NODES)
    assert result.complete and not result.silent
    assert [q for q in sent if q.startswith("count(group by (Hostname) (")] and not _by_name(sent)


def test_fewer_nodes_reporting_than_known_are_asked_by_name_and_the_silent_one_named() -> None:
    result, sent = _swept(NODES, NODES[:2])
    assert len(_by_name(sent)) == 2  # the PCIe names, then the node they leave out over every series
    every = _by_name(sent)[1].replace("\\", "")  # a node's name is escaped in the matcher's regex
    assert "gpu-c" in every and "gpu-a" not in every
    assert not result.complete and result.silent == ["gpu-c"]
    assert any("gpu-c" in r and "no reading" in r for r in result.incomplete_reasons)
    assert "within thresholds" not in result.headline()


def test_no_node_reporting_and_none_known_is_not_an_all_clear() -> None:
    result, _ = _swept([], [])
    assert not result.complete and not result.silent
    assert any(r.startswith("no node of the prometheus has a link reading") for r in result.incomplete_reasons)
    assert "not an all-clear" in result.headline()


def test_the_count_reads_the_pcie_series_and_a_node_without_them_is_asked_by_name() -> None:
    """The count and the names read each GPU's PCIe series alone (a query's cost follows the series it reads); a
    node exposing NVLink series only leaves them short of the index, so it alone is asked by name over every
    series, and it reports: the nodes the PCIe names list are not read again."""
    sent: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return httpx.Response(200, json={"status": "success", "data": NODES})
        query = parse_qs(request.content.decode())["query"][0]
        sent.append(query)
        at = float(parse_qs(request.content.decode())["time"][0])
        pcie_only = "PCIE" in query and "NVLINK" not in query
        nodes = [n for n in NODES if n != "gpu-c" or not pcie_only]  # gpu-c has no PCIe series
        asked = re.search(r'Hostname=~"([^"]*)"', query)
        nodes = [n for n in nodes if asked is None or n in asked[1].replace("\\\\", "")]
        rows: list[dict[str, object]] = []
        if query.startswith("count(group by (Hostname) ("):
            rows = [{"metric": {}, "value": [at, str(len(nodes))]}]
        elif query.startswith("group by (Hostname) ("):
            rows = [{"metric": {"Hostname": n}, "value": [at, "1"]} for n in nodes]
        return httpx.Response(200, json={"status": "success", "data": {"resultType": "vector", "result": rows}})

    result = _swept_by(answer)
    assert result.complete and not result.silent, result.incomplete_reasons
    pcie_names, every = (q.replace("\\", "") for q in _by_name(sent))
    assert "NVLINK" not in pcie_names
    assert "NVLINK" in every and 'Hostname=~"gpu' in every
    assert "gpu-c" in every and "gpu-a" not in every and "gpu-b" not in every


def test_every_node_is_asked_over_every_series_where_the_index_was_not_read_and_no_pcie_series_report() -> None:
    """Without the index's list the nodes the PCIe names leave out are unknown: where those name none, every
    node is asked over every series, so a fleet without PCIe series still reports."""
    sent: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return httpx.Response(500, json={"status": "error", "error": "index unavailable"})
        query = parse_qs(request.content.decode())["query"][0]
        sent.append(query)
        at = float(parse_qs(request.content.decode())["time"][0])
        rows: list[dict[str, object]] = []
        if "PCIE" in query and "NVLINK" not in query:
            rows = [{"metric": {}, "value": [at, "0"]}] if query.startswith("count(") else []
        elif query.startswith("group by (Hostname) ("):
            rows = [{"metric": {"Hostname": n}, "value": [at, "1"]} for n in NODES]
        return httpx.Response(200, json={"status": "success", "data": {"resultType": "vector", "result": rows}})

    result = _swept_by(answer)
    assert not result.silent
    assert not any(r.startswith("no node of the prometheus") for r in result.incomplete_reasons)
    assert len(_by_name(sent)) == 2 and "Hostname=~" not in _by_name(sent)[1]
