"""The sweep's queries run in a bounded pool: several in flight at once, never more than the limit, same answer."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import parse_qs

import httpx
import pytest

from diagnostics import load_thresholds
from diagnostics.prometheus import PrometheusClient, SweepResult, load_config, sweep
from tests.prometheus.mock_api import serving

AT = datetime(2026, 3, 2, 2, 0, tzinfo=UTC)
EMPTY = {"status": "success", "data": {"resultType": "vector", "result": []}}

pytestmark = pytest.mark.timeout(60)


def _client(tmp_path: Path, concurrency: int, handler: Callable[[httpx.Request], httpx.Response]) -> PrometheusClient:
    settings = tmp_path / f"prom-{concurrency}.toml"
    settings.write_text(f"[limits]\nconcurrency = {concurrency}\n", encoding="utf-8")
    config = load_config("http://prom.test:9090", path=settings, env={})
    return PrometheusClient(config, http=httpx.Client(transport=httpx.MockTransport(handler)),
                            sleep=lambda _s: None)


class InFlight:
    """A transport handler that holds each request until `limit` are in flight together (or 2 s pass).

    A sequential sweep never has two requests open, so every request would wait out the timeout and `peak`
    would stay 1; a pool over the limit would push `peak` above it.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.answer = serving(["n1", "n2"], lambda _r: httpx.Response(200, json=EMPTY))
        self.now = self.peak = self.seen = 0
        self.first_alone: bool | None = None
        self.cond = threading.Condition()

    def __call__(self, request: httpx.Request) -> httpx.Response:
        with self.cond:
            self.now += 1
            self.seen += 1
            self.peak = max(self.peak, self.now)
            self.cond.notify_all()
            if self.seen == 1:  # give any request sent beside it time to arrive before judging it alone
                self.cond.wait_for(lambda: self.now > 1, timeout=0.3)
                self.first_alone = self.now == 1
            else:
                self.cond.wait_for(lambda: self.peak >= self.limit, timeout=2)
            self.now -= 1
        return self.answer(request)


def test_queries_overlap_up_to_the_configured_limit(tmp_path: Path) -> None:
    handler = InFlight(limit=3)
    result = sweep(_client(tmp_path, 3, handler), load_thresholds(), at=AT, analyze=False)
    assert result.complete and result.queries > 3
    # the rules and the count of the nodes reporting, the one question of which rates are recorded and the index's
    # list of nodes
    assert handler.seen == result.queries + 2
    assert handler.peak == 3  # overlapping, and bounded by limits.concurrency
    assert handler.first_alone  # the first query probes the server alone before the pool fans out


def _mixed(request: httpx.Request) -> httpx.Response:
    """Offenders for the NVLink replay rule, a refusal for the PCIe rule, partial data for the CRC rule."""
    query = parse_qs(request.content.decode())["query"][0]
    # the rule's query, not the GPU count's, nor the off-bus Xid term's (which asks which GPUs report PCIe series)
    if "PCIE_REPLAY" in query and "increase(" in query and "xid" not in query.lower():
        return httpx.Response(422, json={"status": "error", "errorType": "execution", "error": "boom"})
    rows: list[dict[str, object]] = []
    if "NVLINK_REPLAY" in query and "> 1000" in query and "count_over_time" not in query and "unless" not in query:
        rows = [{"metric": {"Hostname": f"n{i}", "gpu": "1", "nvlink": str(i % 18)}, "value": [AT.timestamp(), "5000"]}
                for i in range(20)]
    body: dict[str, object] = {"status": "success", "data": {"resultType": "vector", "result": rows}}
    if "CRC_DATA" in query and "> 100" in query and "> 1000" not in query:
        body["warnings"] = ["store eu-1 unreachable"]
    return httpx.Response(200, json=body)


def _summary(result: SweepResult) -> tuple[object, ...]:
    return result.complete, [o.model_dump() for o in result.offenders], result.incomplete_reasons


def test_the_pool_gives_the_answer_of_one_query_after_another(tmp_path: Path) -> None:
    mixed = serving([f"n{i}" for i in range(20)], _mixed)
    one = sweep(_client(tmp_path, 1, mixed), load_thresholds(), at=AT, analyze=False)
    many = sweep(_client(tmp_path, 8, mixed), load_thresholds(), at=AT, analyze=False)
    assert _summary(one) == _summary(many)
    assert not many.complete and "INCOMPLETE" in many.headline()
    assert len(many.offenders) == 20 and {o.rule for o in many.offenders} == {"nvlink_replay"}
    # each failure is pinned on its own query, not on whichever was in flight beside it
    refused = [r for r in many.incomplete_reasons if "not evaluated" in r]
    partial = [r for r in many.incomplete_reasons if "partial data" in r]
    assert refused and all(r.startswith("rule pcie_replay (pcie) not evaluated") and "boom" in r for r in refused)
    assert partial and all(r.startswith("rule crc (") and "store eu-1 unreachable" in r for r in partial)
