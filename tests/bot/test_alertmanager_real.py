"""A real Alertmanager (Debian's `prometheus-alertmanager`) sending to the bot's endpoint on loopback, as `fabricbot
serve` mounts it in HTTP mode: a fired and a resolved alert reach the channel as one message, updated, with the bot
restarted in between (its memory of the message is the store's SQLite)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from bot.alertmanager import PATH, Enricher, route
from bot.audit import AuditLog
from bot.demo import bundled
from bot.nodes import TableNodeSource
from bot.settings import Settings
from bot.storage import open_db
from bot.transport.http import asgi_app
from bot.transport.local import LocalSlack
from bot.transport.loopback import LoopbackServer
from bot.transport.mock_slack import Message, MockSlack
from bot.workflow.tracker import SqliteTracker
from diagnostics.service import TableSource
from tests.prometheus.helpers import free_port, wait_ready

from .helpers import posted

pytestmark = [pytest.mark.alertmanager, pytest.mark.timeout(180)]

ALERTS = "CALERTS"
TOKEN = "am-loopback-secret"
NODE = "hpc-gpu-node-12"
# Alertmanager's own config: group by node, send at once, and send resolutions (send_resolved is the default;
# said here as a receiver for this bot must have it)
CONFIG = """route:
  receiver: fabricbot
  group_by: [alertname, Hostname]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: fabricbot
    webhook_configs:
      - url: {url}
        send_resolved: true
        http_config:
          authorization:
            type: Bearer
            credentials: {token}
"""


@dataclass
class Alertmanager:
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def send(self, *alerts: dict[str, object]) -> None:
        """Alerts in through Alertmanager's API (v2), as Prometheus sends them."""
        httpx.post(f"{self.url}/api/v2/alerts", json=list(alerts), timeout=10).raise_for_status()

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def binary() -> str:
    """Alertmanager's path; without it the test skips (locally) or fails (in CI, where it must be installed)."""
    found = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
    if found:
        return found
    reason = "Alertmanager not installed (Debian package `prometheus-alertmanager`)"
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI must install it")
    pytest.skip(reason)


def start_alertmanager(folder: Path, receiver: str) -> Alertmanager:
    """Alertmanager on a free loopback port with no cluster peer, sending every group to `receiver`."""
    config = folder / "alertmanager.yml"
    config.write_text(CONFIG.format(url=receiver, token=TOKEN), encoding="utf-8")
    port = free_port()
    log = folder / "alertmanager.log"
    process = subprocess.Popen([binary(), f"--config.file={config}", f"--storage.path={folder / 'data'}",
                                f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address="],
                               stdout=log.open("wb"), stderr=subprocess.STDOUT)
    running = Alertmanager(f"http://127.0.0.1:{port}", process, log)
    wait_ready(running.url, process, "alertmanager", log, running.stop)
    return running


@contextmanager
def serving_bot(store: Path, slack: MockSlack, port: int) -> Iterator[LocalSlack]:
    """The bot over the bundled fleet and the store's database, its HTTP app with the Alertmanager route on `port`,
    as `fabricbot serve` runs it."""
    tables = bundled()[0].source
    assert isinstance(tables, TableSource)
    db = open_db(store)
    with LocalSlack(settings=Settings(), source=TableNodeSource(tables.tables, tables.platforms()), drafter=None,
                    tracker=SqliteTracker(db), audit=AuditLog(db), slack=slack) as local:
        assert local.app is not None
        extra = [route(Enricher(local.app.services, local.app.client, ALERTS), TOKEN)]
        with LoopbackServer(asgi_app(local.app, local.settings.signing_secret, extra=extra), port=port):
            yield local


def in_channel(slack: MockSlack) -> list[Message]:
    return [m for m in posted(slack) if m.channel == ALERTS]


def wait(slack: MockSlack, until: Callable[[MockSlack], bool], what: str, am: Alertmanager) -> None:
    assert slack.wait_for(until), f"{what} never reached the channel; {am.log.read_text()[-2000:]}"


def test_a_fired_and_a_resolved_alert_are_one_message_updated_across_a_restart(tmp_path: Path) -> None:
    slack, port = MockSlack(), free_port()
    am = start_alertmanager(tmp_path, f"http://127.0.0.1:{port}{PATH}")
    try:
        started = datetime.now(UTC).isoformat(timespec="seconds")
        alerts = [{"labels": {"alertname": "FabricbotNvlinkReplay", "Hostname": NODE, "gpu": gpu,
                              "severity": "failing"},
                   "annotations": {"summary": f"{NODE} GPU {gpu}: replay above 1000 per hour"}, "startsAt": started}
                  for gpu in ("2", "3")]
        with serving_bot(tmp_path, slack, port):
            am.send(*alerts)
            wait(slack, lambda s: len(in_channel(s)) == 1, "the firing alert", am)
            time.sleep(3)  # group_interval passes: any second notification of the group must not post again
            (message,) = in_channel(slack)
            assert f"Alertmanager: FabricbotNvlinkReplay on {NODE}" in str(message.blocks) and "GPU 2" in message.text
        with serving_bot(tmp_path, slack, port) as restarted:  # a new process's memory: the store's database only
            ended = datetime.now(UTC).isoformat(timespec="seconds")
            am.send(*[{**a, "endsAt": ended} for a in alerts])
            wait(slack, lambda s: (m := s.find(message.ts)) is not None and m.text.startswith(":white_check_mark:"),
                 "the resolution", am)
            assert len(in_channel(slack)) == 1  # one message, updated: never reposted
            assert restarted.app is not None
            audit = restarted.app.services.audit
            deadline = time.monotonic() + 10  # recorded just after the update
            while "resolved" not in (steps := [e["detail"]["step"] for e in audit.entries("alert")]):
                assert time.monotonic() < deadline, steps
                time.sleep(0.05)
            assert steps.count("enriched") == 1 and steps.count("resolved") == 1
    finally:
        am.stop()
