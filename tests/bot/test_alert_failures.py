"""The watch loop when Slack or a pass fails: the loop lives on, and what it could not post it posts later, once."""

from __future__ import annotations

import threading
from collections.abc import Iterator
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
from .test_alerts import ALERTS, NO_STORM, Clock

NEW = "*New failing part*"


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


def _unposted(local: LocalSlack) -> list[tuple[str, str]]:
    assert local.app is not None
    return [k for k, a in local.app.services.alerts.active().items() if a.ts is None]


def test_an_alert_whose_post_failed_is_posted_by_the_next_pass_once(local: LocalSlack, clock: Clock) -> None:
    local.slack.faults.fail("chat.postMessage", "internal_error", times=2)  # the incomplete view's notice, one alert
    first = _loop(local).run_once()
    told = {d.alert.key for d in first.decisions if d.step is Step.NEW}
    assert len(_new(local)) == len(told) - 1
    (lost,) = _unposted(local)
    clock.at("12:05")
    second = _loop(local).run_once()
    assert [(d.step, d.alert.key) for d in second.decisions] == [(Step.NEW, lost)]
    assert len(_new(local)) == len(told) and not _unposted(local)
    assert len([m for m in posted(local.slack) if "*Fleet view incomplete*" in m.text]) == 1
    clock.at("12:10")
    assert _loop(local).run_once().decisions == []  # a restarted bot's pass too: nothing posted twice
    assert len(_new(local)) == len(told)
    assert len([m for m in posted(local.slack) if "*Fleet view incomplete*" in m.text]) == 1


def test_alerts_saved_but_never_posted_are_posted_by_a_restarted_bot(local: LocalSlack, clock: Clock) -> None:
    stopped = _loop(local)
    stopped._tell = lambda *args: None  # type: ignore[method-assign]  # stopped after the book, before the posts
    first = stopped.run_once()
    told = {d.alert.key for d in first.decisions if d.step is Step.NEW}
    assert told and not _new(local) and set(_unposted(local)) == told
    clock.at("12:05")
    again = _loop(local).run_once()
    assert {d.alert.key for d in again.decisions if d.step is Step.NEW} == told
    assert len(_new(local)) == len(told) and not _unposted(local)
    clock.at("12:10")
    assert _loop(local).run_once().decisions == [] and len(_new(local)) == len(told)


def test_an_incident_whose_post_failed_is_posted_by_the_next_pass(local: LocalSlack, clock: Clock) -> None:
    assert local.app is not None
    storm = load_alerts(storm_share=0.01, storm_min_nodes=2, first_pass="alert")
    local.slack.faults.fail("chat.postMessage", "internal_error", times=2)  # the incident, the incomplete view
    first = AlertLoop(local.app.services, local.app.client, channel=ALERTS, every_s=300, policy=storm).run_once()
    assert first.storm is not None and not [m for m in posted(local.slack) if m.channel == ALERTS]
    clock.at("12:05")
    AlertLoop(local.app.services, local.app.client, channel=ALERTS, every_s=300, policy=storm).run_once()
    (incident,) = [m for m in posted(local.slack) if "*Incident:" in m.text]
    waiting = local.app.services.alerts.waiting_storm()
    assert waiting is not None and waiting.ts == incident.ts
    clock.at("12:10")
    AlertLoop(local.app.services, local.app.client, channel=ALERTS, every_s=300, policy=storm).run_once()
    assert len([m for m in posted(local.slack) if "*Incident:" in m.text]) == 1


def test_the_first_pass_message_whose_post_failed_is_posted_by_the_next_pass_once(local: LocalSlack,
                                                                                    clock: Clock) -> None:
    """The parts already failing when the watch began are never paged one by one: where the one message naming them
    was lost, the channel would never hear of them."""
    summary = load_alerts(storm_min_nodes=10_000, signature_min_nodes=10_000, first_pass="summary")
    assert local.app is not None

    def began() -> list[str]:
        return [m.text for m in posted(local.slack) if m.channel == ALERTS and "*Watching " in m.text]

    local.slack.faults.fail("chat.postMessage", "internal_error", times=1)  # the first message, before any other
    first = AlertLoop(local.app.services, local.app.client, channel=ALERTS, every_s=300, policy=summary).run_once()
    known = {d.alert.key for d in first.decisions if d.step is Step.KNOWN}
    assert known and not began()
    clock.at("12:05")
    AlertLoop(local.app.services, local.app.client, channel=ALERTS, every_s=300, policy=summary).run_once()
    (said,) = began()
    nodes = {node for node, _ in known}
    assert f"{len(known)} parts on {len(nodes)} nodes were already failing" in said  # the first pass's own count
    assert "`hpc-gpu-node-12`" in said
    assert not _new(local)  # said once, as standing faults: none paged one by one
    clock.at("12:10")
    AlertLoop(local.app.services, local.app.client, channel=ALERTS, every_s=300, policy=summary).run_once()
    assert len(began()) == 1
