"""Alertmanager in: a webhook body (payload version 4, as Alertmanager documents it:
https://prometheus.io/docs/alerting/latest/configuration/#webhook_config) posts each named node's diagnosis, grouped
per node and part; a resolved alert updates the message; the bearer token is required."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from bot.alertmanager import PATH, Enricher, authorized, route
from bot.audit import AuditLog
from bot.demo import bundled
from bot.nodes import TableNodeSource
from bot.settings import Settings
from bot.storage import open_db
from bot.transport.local import LocalSlack
from bot.transport.mock_slack import MockSlack
from bot.workflow.tracker import SqliteTracker
from diagnostics import Diagnosis, InputError
from diagnostics.ingest import known_node, node_alerts
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
    assert [a.node_id for a in found] == ["gpu-1", "gpu-2", ""] and not skipped and found[-1].where == "no node"
    with pytest.raises(InputError, match="version 4"):
        node_alerts({**body(), "version": "3"})


def test_an_alert_of_a_status_alertmanager_never_sends_is_noted_not_read_as_firing() -> None:
    """Prometheus's own `pending` never reaches a webhook: an alert saying it (a hand-written body, another
    sender) was read as firing and posted."""
    found, skipped = node_alerts(body(alert("pending", Hostname="gpu-1"), alert("resolved", Hostname="gpu-2")))
    assert [(a.node_id, a.status) for a in found] == [("gpu-2", "resolved")]
    assert skipped == ["FabricbotNvlinkReplay: alerts[0].status 'pending' is not one Alertmanager sends (firing or "
                       "resolved): not read"]


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
    one = client.post(PATH, json=body(alert("resolved", Hostname="hpc-gpu-node-12", gpu="2"),
                                      alert(Hostname="hpc-gpu-node-12", gpu="3")), headers=auth)
    assert one.json()["updated"] == 0  # GPU 3's alert still fires under the message
    both = client.post(PATH, json=body(alert("resolved", Hostname="hpc-gpu-node-12", gpu="2"),
                                       alert("resolved", Hostname="hpc-gpu-node-12", gpu="3"), status="resolved"),
                       headers=auth)
    assert both.json()["updated"] == 1
    shown = local.slack.find(message.ts)
    assert shown is not None and shown.text.startswith(":white_check_mark: *Resolved* (Alertmanager)")
    assert "GPU 2" in str(shown.blocks) and "Alertmanager: FabricbotNvlinkReplay" in str(shown.blocks)  # the evidence
    assert len([m for m in posted(local.slack) if m.channel == ALERTS]) == 1
    assert client.post(PATH, content=b"not json", headers=auth).status_code == 400


class Counting(TableNodeSource):
    """The bundled fleet, counting the diagnoses asked of it."""

    asked = 0

    def diagnose(self, node_id: str, *, window_hours: float | None = None, job_id: str | None = None) -> Diagnosis:
        type(self).asked += 1
        return super().diagnose(node_id, window_hours=window_hours, job_id=job_id)


def test_a_repeat_is_known_a_restart_updates_and_firing_again_is_a_new_message(
        fleet: TableNodeSource, tmp_path: Path) -> None:
    """Alertmanager repeats a firing alert every repeat_interval: known by its fingerprint, not diagnosed again. A
    bot restarted between the firing and the resolution updates the message it posted before (the memory is the
    store's SQLite). A resolution finds its message by fingerprint even when the node's diagnosis changed since."""
    tables = fleet.source
    assert isinstance(tables, TableSource)
    slack = MockSlack()
    auth = {"authorization": f"Bearer {TOKEN}"}

    def bot() -> LocalSlack:
        db = open_db(tmp_path)
        return LocalSlack(settings=Settings(), source=Counting(tables.tables, tables.platforms()), drafter=None,
                          tracker=SqliteTracker(db), audit=AuditLog(db), slack=slack)

    firing = body(alert(Hostname="hpc-gpu-node-12", gpu="2"))
    with bot() as first:
        assert first.app is not None
        client = TestClient(Starlette(routes=[route(Enricher(first.app.services, first.app.client, ALERTS), TOKEN)]))
        assert client.post(PATH, json=firing, headers=auth).json()["posted"] == 1
        asked = Counting.asked
        assert client.post(PATH, json=firing, headers=auth).json()["posted"] == 0  # the repeat
        assert Counting.asked == asked
    with bot() as second:  # restarted
        assert second.app is not None
        enricher = Enricher(second.app.services, second.app.client, ALERTS)
        client = TestClient(Starlette(routes=[route(enricher, TOKEN)]))
        assert client.post(PATH, json=firing, headers=auth).json()["posted"] == 0  # remembered across the restart
        resolved = body(alert("resolved", Hostname="hpc-gpu-node-12", gpu="2"), status="resolved")
        assert client.post(PATH, json=resolved, headers=auth).json()["updated"] == 1
        (message,) = [m for m in posted(slack) if m.channel == ALERTS]
        assert message.text.startswith(":white_check_mark: *Resolved*")
        assert client.post(PATH, json=resolved, headers=auth).json()["updated"] == 0  # said once
        assert client.post(PATH, json=firing, headers=auth).json()["posted"] == 1  # firing again: a new message
        assert len([m for m in posted(slack) if m.channel == ALERTS]) == 2
        steps = [e["detail"]["step"] for e in second.app.services.audit.entries("alert")]
        assert steps == ["enriched", "resolved", "enriched"]


def test_a_refused_post_or_update_is_a_502_and_alertmanagers_retry_completes_it(local: LocalSlack) -> None:
    assert local.app is not None
    client = TestClient(Starlette(routes=[route(Enricher(local.app.services, local.app.client, ALERTS), TOKEN)]))
    auth = {"authorization": f"Bearer {TOKEN}"}
    firing = body(alert(Hostname="hpc-gpu-node-12", gpu="2"))
    resolved = body(alert("resolved", Hostname="hpc-gpu-node-12", gpu="2"), status="resolved")
    local.slack.faults.missing.add(ALERTS)
    assert client.post(PATH, json=firing, headers=auth).status_code == 502
    local.slack.faults.missing.discard(ALERTS)
    assert client.post(PATH, json=firing, headers=auth).json()["posted"] == 1  # the retry
    local.slack.faults.missing.add(ALERTS)
    assert client.post(PATH, json=resolved, headers=auth).status_code == 502
    local.slack.faults.missing.discard(ALERTS)
    assert client.post(PATH, json=resolved, headers=auth).json()["updated"] == 1  # not lost to the refusal
    (message,) = [m for m in posted(local.slack) if m.channel == ALERTS]
    assert message.text.startswith(":white_check_mark: *Resolved*")


def test_a_message_slack_refuses_for_its_content_is_a_422_naming_the_limit(local: LocalSlack,
                                                                           caplog: pytest.LogCaptureFixture) -> None:
    """`invalid_blocks` answers every retry alike: a 502 had Alertmanager send it again and again. A 4xx it does not
    retry, with Slack's own words for which block broke which limit, as the log gives them."""
    assert local.app is not None
    client = TestClient(Starlette(routes=[route(Enricher(local.app.services, local.app.client, ALERTS), TOKEN)]))
    why = "[ERROR] must be less than 3001 characters [json-pointer:/blocks/1/text/text]"
    local.slack.faults.fail("chat.postMessage", "invalid_blocks", times=4, response_metadata={"messages": [why]})
    with caplog.at_level("WARNING", logger="fabricbot"):
        answer = client.post(PATH, json=body(alert(Hostname="hpc-gpu-node-12", gpu="2")),
                             headers={"authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 422 and "invalid_blocks" in answer.text and why in answer.text
    assert why in caplog.text  # the log says what Slack said, for whoever runs the bot


def test_a_node_named_by_its_fqdn_or_instance_is_the_node_the_store_knows() -> None:
    found, _ = node_alerts(body(alert(Hostname="hpc-gpu-node-14.cluster.local"), alert(instance="gpu-7.dc:9400"),
                                alert(instance="10.0.0.5:9400"), alert(Hostname="gpu-9.a")))
    nodes = ["hpc-gpu-node-14", "gpu-7", "10", "gpu-9.a", "gpu-9.b"]
    assert [(a.node_id, k.node_id if (k := known_node(a, nodes)) else None) for a in found] == [
        ("hpc-gpu-node-14.cluster.local", "hpc-gpu-node-14"), ("gpu-7.dc", "gpu-7"),
        ("10.0.0.5", None),  # an address is not a name
        ("gpu-9.a", "gpu-9.a")]  # its own name, though another node shares its first label
    (other,) = node_alerts(body(alert(Hostname="gpu-9.c")))[0]
    assert known_node(other, nodes) is None  # two nodes match its first label: neither is taken


def test_an_alert_for_a_node_not_known_is_said_once_and_resolves(local: LocalSlack) -> None:
    assert local.app is not None
    client = TestClient(Starlette(routes=[route(Enricher(local.app.services, local.app.client, ALERTS), TOKEN)]))
    auth = {"authorization": f"Bearer {TOKEN}"}
    fqdn = client.post(PATH, json=body(alert(Hostname="hpc-gpu-node-14.cluster.local")), headers=auth).json()
    assert fqdn["posted"] == 1 and fqdn["skipped"] == []
    assert "on hpc-gpu-node-14" in str(posted(local.slack)[-1].blocks)  # the store's node, diagnosed
    firing = body(alert(Hostname="gpu-nosuch-99", gpu="3"))
    assert client.post(PATH, json=firing, headers=auth).json()["posted"] == 1
    assert client.post(PATH, json=firing, headers=auth).json()["posted"] == 0  # Alertmanager's repeat
    (said,) = [m for m in posted(local.slack) if "do not know" in m.text]
    assert "an alert for a node I do not know: `gpu-nosuch-99` (labels " in said.text and "gpu=3" in said.text
    (entry,) = [e for e in local.audit.entries("alert") if e["detail"]["step"] == "node not known"]
    assert entry["subject"].startswith("gpu-nosuch-99") and entry["detail"]["fingerprint"] == "fp-gpu-nosuch-99-3"
    done = client.post(PATH, json=body(alert("resolved", Hostname="gpu-nosuch-99", gpu="3"), status="resolved"),
                       headers=auth).json()
    assert done["updated"] == 1
    shown = local.slack.find(said.ts)
    assert shown is not None and shown.text.startswith(":white_check_mark: *Resolved*")


@pytest.mark.parametrize(("content", "said"), [
    (json.dumps(body({**alert(Hostname="hpc-gpu-node-12"), "labels": ["Hostname"]})).encode(),
     "field 'alerts[0].labels': an alert's labels are a JSON object of names to values, not a list"),
    (json.dumps(body({**alert(Hostname="hpc-gpu-node-12"), "labels": "Hostname=x"})).encode(),
     "field 'alerts[0].labels': an alert's labels are a JSON object of names to values, not a string"),
    (json.dumps(body(alert(Hostname="hpc-gpu-node-12"), {**alert(Hostname="x"), "annotations": ["x"]})).encode(),
     "field 'alerts[1].annotations': an alert's annotations are a JSON object of names to values, not a list"),
    (json.dumps(body(alert(Hostname="hpc-gpu-node-12"), "hpc-gpu-node-13")).encode(),
     "field 'alerts[1]': an alert is a JSON object of its status, labels and annotations, not a string"),
    (json.dumps(body(None)).encode(),  # type: ignore[arg-type]
     "field 'alerts[0]': an alert is a JSON object of its status, labels and annotations, not a null"),
    (b"\xff\xfe{", "the body is not UTF-8 (byte 0xff at position 0)"),
    (b"[" * 100_000 + b"]" * 100_000, "nested too deep"),
])
def test_a_malformed_body_is_a_400_naming_what_it_holds(local: LocalSlack, content: bytes, said: str) -> None:
    assert local.app is not None
    client = TestClient(Starlette(routes=[route(Enricher(local.app.services, local.app.client, ALERTS), TOKEN)]),
                        raise_server_exceptions=False)
    answer = client.post(PATH, content=content, headers={"authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 400 and said in answer.text
    assert not [m for m in posted(local.slack) if m.channel == ALERTS]


def test_an_alert_naming_no_node_is_said_once_with_how_to_name_one_and_resolves(local: LocalSlack) -> None:
    """A rule summed over every node (`sum(rate(...)) > 10`) keeps no node label: its alert was answered with a note
    in the HTTP response alone, which Alertmanager does not show anyone."""
    assert local.app is not None
    client = TestClient(Starlette(routes=[route(Enricher(local.app.services, local.app.client, ALERTS), TOKEN)]))
    auth = {"authorization": f"Bearer {TOKEN}"}
    firing = body(alert(cluster="dc1"))
    done = client.post(PATH, json=firing, headers=auth).json()
    assert done["posted"] == 1 and done["skipped"] == ["FabricbotNvlinkReplay: no node label (Hostname, node, "
                                                       "instance, ...): said in the channel"]
    assert client.post(PATH, json=firing, headers=auth).json()["posted"] == 0  # Alertmanager's repeat
    (said,) = [m for m in posted(local.slack) if "names no node" in m.text]
    assert said.text.startswith(":grey_question: *Alertmanager: FabricbotNvlinkReplay* names no node (labels ")
    assert "cluster=dc1" in said.text
    assert "), so nothing was diagnosed: replays above 1000 per hour. I diagnose" in said.text
    assert "`Hostname`" in said.text and "`sum by (Hostname) (...)`" in said.text
    (entry,) = [e for e in local.audit.entries("alert") if e["detail"]["step"] == "no node named"]
    assert entry["subject"].startswith("no node / ") and entry["detail"]["fingerprint"] == "fp-dc1"
    done = client.post(PATH, json=body(alert("resolved", cluster="dc1"), status="resolved"), headers=auth).json()
    assert done["updated"] == 1
    shown = local.slack.find(said.ts)
    assert shown is not None and shown.text.startswith(":white_check_mark: *Resolved* (Alertmanager): "
                                                       "FabricbotNvlinkReplay (naming no node)")


def test_an_alert_for_a_node_under_planned_work_is_held_not_posted(local: LocalSlack) -> None:
    """Planned work pages no one, as the watch loop holds it: the rules Prometheus runs know none, so the alert
    arrives; it is recorded as held, and Alertmanager's repeat once the work has ended is posted."""
    from datetime import timedelta

    assert local.app is not None
    services = local.app.services
    end = services.source.diagnose("hpc-gpu-node-12").window_end
    assert end is not None
    services.source.maintenance().set("hpc-gpu-node-12", start=end - timedelta(minutes=30), span=timedelta(hours=2),
                                      reason="swap the GPU 2 riser", set_by="UALICE")
    client = TestClient(Starlette(routes=[route(Enricher(services, local.app.client, ALERTS), TOKEN)]))
    auth = {"authorization": f"Bearer {TOKEN}"}
    sent = client.post(PATH, json=body(alert(Hostname="hpc-gpu-node-12", gpu="2")), headers=auth)
    assert sent.status_code == 200 and sent.json()["posted"] == 0
    assert any("in maintenance until" in s and "swap the GPU 2 riser" in s for s in sent.json()["skipped"])
    assert not [m for m in posted(local.slack) if m.channel == ALERTS]
    assert [e["detail"]["step"] for e in local.audit.entries("alert")] == ["held: planned work"]
    services.source.maintenance().db["maintenance"].delete_where()  # the work long over: no window it overlaps
    again = client.post(PATH, json=body(alert(Hostname="hpc-gpu-node-12", gpu="2")), headers=auth)
    assert again.json()["posted"] == 1  # Alertmanager's repeat, the work over: paged
