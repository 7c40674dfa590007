"""The watch loop when Slack or a pass fails: the loop lives on, and what it could not post it posts later, once."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from bot.alerts import AlertLoop
from bot.demo import bundled
from bot.nodes import TableNodeSource
from bot.settings import Settings
from bot.transport.local import LocalSlack
from bot.transport.slack_faults import Failure
from diagnostics.analysis.alerting import Step
from diagnostics.config import load_alerts
from diagnostics.service import TableSource

from .helpers import LONG_WAIT, local_bot, posted

ALERTS = "CALERTS"
NEW = "*New failing part*"
NO_STORM = load_alerts(storm_min_nodes=10_000, signature_min_nodes=10_000, first_pass="alert")


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def at(self, hhmm: str) -> None:
        self.now = self.now.replace(hour=int(hhmm[:2]), minute=int(hhmm[3:]))


@pytest.fixture(scope="module")
def fleet() -> TableNodeSource:
    return bundled()[0]


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def local(fleet: TableNodeSource, clock: Clock) -> Iterator[LocalSlack]:
    tables = fleet.source
    assert isinstance(tables, TableSource)
    with local_bot(Settings(), source=TableNodeSource(tables.tables, tables.platforms()), clock=clock) as bot:
        assert bot.app is not None
        bot.app.services.renderer = None  # pictures would only slow these tests
        yield bot


def _loop(local: LocalSlack, every_s: float = 300) -> AlertLoop:
    assert local.app is not None
    return AlertLoop(local.app.services, local.app.client, channel=ALERTS, every_s=every_s, policy=NO_STORM)


def _new(local: LocalSlack) -> list[str]:
    return [m.text for m in posted(local.slack) if m.channel == ALERTS and NEW in m.text]


def test_a_dropped_connection_fails_one_post_not_the_pass(local: LocalSlack) -> None:
    local.slack.faults.queue("chat.postMessage", Failure.dropped(), 2)  # the incomplete view's notice, one alert
    done = _loop(local).run_once()
    told = {d.alert.key for d in done.decisions if d.step is Step.NEW}
    assert len(_new(local)) == len(told) - 1  # every other alert of the pass was posted
    refused = [e for e in local.audit.entries("alert") if e["detail"].get("error")]
    assert [e["detail"]["error"] for e in refused] == ["network_error"]


def test_the_loop_outlives_an_unexpected_failure_and_says_it_once(local: LocalSlack) -> None:
    assert local.app is not None
    source = local.app.services.source
    real = source.alert_pass
    calls = {"n": 0}
    broke = threading.Event()

    def failing(**kw: Any) -> Any:
        calls["n"] += 1
        if calls["n"] <= 3:
            if calls["n"] == 3:
                broke.set()
            raise KeyError("a column the pass did not expect")
        return real(**kw)

    source.alert_pass = failing  # type: ignore[method-assign]
    loop = _loop(local, every_s=0.05).start()
    try:
        assert broke.wait(LONG_WAIT)
        assert local.slack.wait_for(lambda s: len(_new(local)) > 0, timeout=LONG_WAIT)
        assert loop._thread.is_alive()
    finally:
        loop.stop()
    said = [m.text for m in posted(local.slack) if m.channel == ALERTS and "*The alert pass failed*" in m.text]
    assert len(said) == 1 and "KeyError" in said[0] and "a column the pass did not expect" in said[0]
