"""The young-series pass through httpx.MockTransport: the nodes the search names are rated again in batches, each
answer replacing those nodes' first-pass offenders of its rule, and a batch that fails keeps them and says so."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from urllib.parse import parse_qs

import httpx

from diagnostics import load_thresholds
from diagnostics.prometheus import PrometheusClient, load_config, sweep
from diagnostics.prometheus.config import Limits
from tests.prometheus.mock_api import serving

AT = datetime(2026, 3, 2, 2, 0, tzinfo=UTC)
YOUNG = ["gpu-a.1", "gpu-b.1", "gpu-c.1"]  # joined 10 minutes before the sweep
OLD = "gpu-d.1"
FAILS = "gpu-c.1"  # the exact query of the batch holding it is refused


def _answer(rows: list[dict[str, object]]) -> httpx.Response:
    return httpx.Response(200, json={"status": "success", "data": {"resultType": "vector", "result": rows}})


def _row(node: str, value: float) -> dict[str, object]:
    return {"metric": {"Hostname": node, "gpu": "2", "nvlink": "5"}, "value": [AT.timestamp(), f"{value:g}"]}


class Server:
    """Answers the search with the young nodes, the NVLink replay rule with a rate per node (the first pass low for a
    young node, as increase over the window is; the exact pass at its span's rate), anything else with nothing."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        query = parse_qs(request.content.decode())["query"][0]
        if "unless last_over_time(" in query and "increase(" not in query:  # the search: young within the window
            return _answer([_row(n, 3600) for n in YOUNG])
        if "NVLINK_REPLAY_ERROR_COUNT" not in query or not query.endswith("> 1000") or "increase(" not in query:
            return _answer([])
        matcher = re.search(r'Hostname=~"((?:[^"\\]|\\.)*)"', query)
        if matcher is None:  # the first pass: every node, each young one at a sixth of its rate
            return _answer([_row(n, 1500) for n in [*YOUNG, OLD]])
        pattern = matcher[1].replace("\\\\", "\\")
        nodes = [n for n in [*YOUNG, OLD] if re.fullmatch(pattern, n)]
        self.batches.append(nodes)
        if FAILS in nodes:
            return httpx.Response(422, json={"status": "error", "errorType": "execution", "error": "timeout"})
        return _answer([_row(n, 9000) for n in nodes])


def test_the_young_nodes_are_rated_again_in_batches_and_a_failed_batch_keeps_its_first_answer() -> None:
    config = load_config("http://prom.test:9090", env={})
    config = config.model_copy(update={"limits": Limits(young_nodes_per_query=2, retries=0)})
    server = Server()
    client = PrometheusClient(config, http=httpx.Client(transport=httpx.MockTransport(serving([*YOUNG, OLD], server))))
    result = sweep(client, load_thresholds(), at=AT, analyze=False)
    assert set(result.young) == set(YOUNG)
    assert sorted(server.batches) == [["gpu-a.1", "gpu-b.1"], ["gpu-c.1"]]  # the node matcher picks only its batch
    rates = {o.node_id: o.rate_per_hour for o in result.offenders if o.rule == "nvlink_replay"}
    # the exact answers replace the first pass's; the failed batch keeps it, the old node was never asked again
    assert rates == {"gpu-a.1": 9000, "gpu-b.1": 9000, "gpu-c.1": 1500, OLD: 1500}
    assert not result.complete
    assert [r for r in result.incomplete_reasons if "nvlink_replay" in r and "1 node with young series" in r]


def test_young_nodes_past_the_limit_are_named_and_the_view_is_incomplete() -> None:
    """After an exporter rollout every series is young: the sweep rates at most `max_young_nodes` of them again, the
    others keep the first pass's (low) rates and are named, and the view is not called complete."""
    config = load_config("http://prom.test:9090", env={})
    config = config.model_copy(update={"limits": Limits(young_nodes_per_query=2, max_young_nodes=2, retries=0)})
    server = Server()
    client = PrometheusClient(config, http=httpx.Client(transport=httpx.MockTransport(serving([*YOUNG, OLD], server))))
    result = sweep(client, load_thresholds(), at=AT, analyze=False)
    assert sorted(result.young) == ["gpu-a.1", "gpu-b.1"] and server.batches == [["gpu-a.1", "gpu-b.1"]]
    rates = {o.node_id: o.rate_per_hour for o in result.offenders if o.rule == "nvlink_replay"}
    assert rates == {"gpu-a.1": 9000, "gpu-b.1": 9000, "gpu-c.1": 1500, OLD: 1500}
    assert not result.complete
    assert [r for r in result.incomplete_reasons if r.startswith("1 more node with") and "gpu-c.1" in r], \
        result.incomplete_reasons


class EarlyServer(Server):
    """The young nodes' series began before the window, inside the persistent rules' span (a server holding less
    history than they look back over)."""

    def __call__(self, request: httpx.Request) -> httpx.Response:
        query = parse_qs(request.content.decode())["query"][0]
        if "unless last_over_time(" in query and "increase(" not in query:
            return _answer([_row(n, 4 * 3600) for n in YOUNG])
        return super().__call__(request)


def test_nodes_young_for_the_persistent_rules_only_past_the_limit_are_said_not_incomplete() -> None:
    config = load_config("http://prom.test:9090", env={})
    config = config.model_copy(update={"limits": Limits(young_nodes_per_query=2, max_young_nodes=2, retries=0)})
    early = serving([*YOUNG, OLD], EarlyServer())
    client = PrometheusClient(config, http=httpx.Client(transport=httpx.MockTransport(early)))
    result = sweep(client, load_thresholds(), at=AT, analyze=False)
    assert sorted(result.young) == ["gpu-a.1", "gpu-b.1"]
    assert result.complete, result.incomplete_reasons
    assert [w for w in result.warnings if w.startswith("1 more node with series begun before the window")]
