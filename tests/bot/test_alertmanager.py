"""Alertmanager in: a webhook body (payload version 4, as Alertmanager documents it:
https://prometheus.io/docs/alerting/latest/configuration/#webhook_config) posts each named node's diagnosis, grouped
per node and part; a resolved alert updates the message; the bearer token is required."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from bot.alertmanager import PATH, Enricher, authorized, route
from bot.demo import bundled
from bot.nodes import TableNodeSource
from bot.settings import Settings
from bot.transport.local import LocalSlack
from diagnostics import InputError
from diagnostics.ingest import node_alerts
from diagnostics.service import TableSource

from .helpers import local_bot, posted

ALERTS = "CALERTS"
TOKEN = "am-secret"


def body(*alerts: dict[str, Any], status: str = "firing") -> dict[str, Any]:
    """A webhook body with every field of version 4."""
    return {"version": "4", "groupKey": '{}:{alertname="FabricbotNvlinkReplay"}', "truncatedAlerts": 0,
            "status": status, "receiver": "fabricbot", "groupLabels": {"alertname": "FabricbotNvlinkReplay"},
            "commonLabels": {}, "commonAnnotations": {}, "externalURL": "http://alertmanager:9093",
            "alerts": list(alerts)}


def alert(status: str = "firing", **labels: str) -> dict[str, Any]:
    return {"status": status, "labels": {"alertname": "FabricbotNvlinkReplay", "severity": "failing", **labels},
            "annotations": {"summary": "replays above 1000 per hour"}, "startsAt": "2026-03-02T11:58:00Z",
            "endsAt": "0001-01-01T00:00:00Z", "generatorURL": "http://prometheus:9090/graph",
            "fingerprint": f"fp-{'-'.join(labels.values())}"}


@pytest.fixture(scope="module")
def fleet() -> TableNodeSource:
    return bundled()[0]


@pytest.fixture
def local(fleet: TableNodeSource) -> Iterator[LocalSlack]:
    tables = fleet.source
    assert isinstance(tables, TableSource)
    with local_bot(Settings(), source=TableNodeSource(tables.tables, tables.platforms())) as bot:
        assert bot.app is not None
        bot.app.services.renderer = None
        yield bot


def test_nodes_are_named_by_the_dcgm_labels_or_the_instance() -> None:
    found, skipped = node_alerts(body(alert(Hostname="gpu-1", gpu="2"), alert(instance="gpu-2:9400"),
                                      alert(job="dcgm")))
    assert [a.node_id for a in found] == ["gpu-1", "gpu-2"] and len(skipped) == 1 and "no node label" in skipped[0]
    with pytest.raises(InputError, match="version 4"):
        node_alerts({**body(), "version": "3"})


def test_the_token_is_required() -> None:
    assert authorized(f"Bearer {TOKEN}", TOKEN) and not authorized("Bearer nope", TOKEN)
    assert not authorized(None, TOKEN) and not authorized(f"Bearer {TOKEN}", None)


def test_an_alert_posts_the_diagnosis_once_per_node_and_part_and_resolves(local: LocalSlack) -> None:
    assert local.app is not None
    client = TestClient(Starlette(routes=[route(Enricher(local.app.services, local.app.client, ALERTS), TOKEN)]))
    auth = {"authorization": f"Bearer {TOKEN}"}
    assert client.post(PATH, json=body(alert(Hostname="hpc-gpu-node-12"))).status_code == 401
    sent = client.post(PATH, json=body(alert(Hostname="hpc-gpu-node-12", gpu="2"),
                                       alert(Hostname="hpc-gpu-node-12", gpu="3")), headers=auth)
    assert sent.status_code == 200 and sent.json()["posted"] == 1  # one node, one part: one message
    (message,) = [m for m in posted(local.slack) if m.channel == ALERTS]
    assert "Alertmanager: FabricbotNvlinkReplay on hpc-gpu-node-12" in str(message.blocks)
    assert "GPU 2" in message.text  # the node's own diagnosis, as /fabric gives it
    again = client.post(PATH, json=body(alert("resolved", Hostname="hpc-gpu-node-12", gpu="2"), status="resolved"),
                        headers=auth)
    assert again.json()["updated"] == 1
    shown = local.slack.find(message.ts)
    assert shown is not None and shown.text.startswith(":white_check_mark: *Resolved* (Alertmanager)")
    assert client.post(PATH, content=b"not json", headers=auth).status_code == 400
