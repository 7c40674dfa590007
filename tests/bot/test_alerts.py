"""The watch loop through the real Bolt app and the mock Slack: alerts arrive on their own, once, and are updated;
a storm is one incident until someone acknowledges it; a restart neither repeats nor forgets."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bot.alerts import ACK_ACTION, AlertLoop
from bot.demo import bundled
from bot.nodes import TableNodeSource
from bot.settings import Settings
from bot.transport.local import LocalSlack
from diagnostics.analysis.alerting import Step
from diagnostics.config import load_alerts
from diagnostics.service import TableSource

from .helpers import LONG_WAIT, buttons, local_bot, posted

ALERTS = "CALERTS"
# these tests read each part's own alert from the first pass on: the first pass alerts (the default summarizes)
NO_STORM = load_alerts(storm_min_nodes=10_000, signature_min_nodes=10_000, first_pass="alert")


@pytest.fixture(scope="module")
def fleet() -> TableNodeSource:
    return bundled()[0]


class Clock:
    """The services' clock, set by the test: freezegun would freeze the loopback servers' own event loops too."""

    def __init__(self) -> None:
        self.now = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def at(self, hhmm: str) -> None:
        self.now = self.now.replace(hour=int(hhmm[:2]), minute=int(hhmm[3:]))


CLOCK = Clock()


@pytest.fixture
def local(fleet: TableNodeSource) -> Iterator[LocalSlack]:
    tables = fleet.source
    assert isinstance(tables, TableSource)
    CLOCK.at("12:00")
    with local_bot(Settings(), source=TableNodeSource(tables.tables, tables.platforms()), clock=CLOCK) as bot:
        yield bot


def _loop(local: LocalSlack, pictures: bool = False, **kw: Any) -> AlertLoop:
    assert local.app is not None
    if not pictures:
        local.app.services.renderer = None  # the pictures are the first test's; uploads would only slow the rest
    return AlertLoop(local.app.services, local.app.client, channel=ALERTS, every_s=300, oncall="SONCALL", **kw)


def test_each_new_failing_part_gets_one_message_with_its_button_and_pictures(local: LocalSlack) -> None:
    CLOCK.at("12:00")
    first = _loop(local, pictures=True, policy=NO_STORM).run_once()
    new = [d for d in first.decisions if d.step is Step.NEW]
    assert new and first.storm is None
    top = [m for m in posted(local.slack) if m.channel == ALERTS]
    assert len(top) == len({d.alert.key for d in new})
    node12 = next(m for m in top if "hpc-gpu-node-12" in m.text)
    assert node12.text.startswith("<!subteam^SONCALL> :rotating_light: *New failing part*")  # urgent: paged
    assert any(b["action_id"].startswith("draft") for b in buttons(node12))
    assert local.slack.wait_for(lambda s: any(m.files for m in s.thread(ALERTS, node12.ts)), timeout=LONG_WAIT)
    # the next pass, and a restarted bot's first pass, post nothing again
    CLOCK.at("12:05")
    assert _loop(local, pictures=True, policy=NO_STORM).run_once().decisions == []
    assert len([m for m in posted(local.slack) if m.channel == ALERTS]) == len(top)
    alerts = list(local.audit.entries("alert"))
    assert len(alerts) == len(top) and {e["detail"]["step"] for e in alerts} == {"new"}


def test_a_filed_ticket_updates_the_same_message(local: LocalSlack) -> None:
    CLOCK.at("12:00")
    _loop(local, policy=NO_STORM).run_once()
    node12 = next(m for m in posted(local.slack) if m.channel == ALERTS and "hpc-gpu-node-12" in m.text)
    slug = local.app.services.alerts.active()  # type: ignore[union-attr]
    key = next(k for k, a in slug.items() if a.ts == node12.ts)
    local.tracker.file(node_id=key[0], component="c", slug=key[1], title="t", body="b", priority="urgent",
                       actor="alice", evidence=[])
    CLOCK.at("12:05")
    done = _loop(local, policy=NO_STORM).run_once()
    assert [d.step for d in done.decisions if d.alert.key == key] == [Step.TICKETED]
    shown = local.slack.find(node12.ts)
    assert shown is not None and "*Ticket filed*" in shown.text and "FAB-" in shown.text
    assert len([m for m in posted(local.slack) if m.channel == ALERTS and "hpc-gpu-node-12" in m.text]) == 1


def test_many_at_once_is_one_incident_until_acknowledged(local: LocalSlack) -> None:
    storm_policy = load_alerts(storm_share=0.01, storm_min_nodes=2, first_pass="alert")
    CLOCK.at("12:00")
    first = _loop(local, policy=storm_policy).run_once()
    assert first.storm is not None and first.count(Step.NEW) == 0 and first.count(Step.HELD) > 1
    (incident,) = [m for m in posted(local.slack) if m.channel == ALERTS]
    assert "*Incident:" in incident.text and "per-node alert(s) are held" in incident.text
    (ack,) = [b for b in buttons(incident) if b["action_id"] == ACK_ACTION]
    (storm,) = list(local.audit.entries("storm"))
    assert storm["detail"]["held"] == first.count(Step.HELD)
    local.injector.action(ack, user="UALICE", channel=ALERTS, message_ts=incident.ts)
    assert local.slack.wait_for(lambda s: "Acknowledged by <@UALICE>" in (s.find(incident.ts) or incident).text,
                                timeout=30)
    CLOCK.at("12:05")
    released = _loop(local, policy=storm_policy).run_once()
    assert released.count(Step.NEW) == first.count(Step.HELD) and released.storm is None
    assert [e["detail"]["decision"] for e in local.audit.entries("storm")][-1] == "acknowledged"


def test_the_first_pass_says_what_was_already_failing_once_and_pages_none_of_it(local: LocalSlack) -> None:
    """A fleet with many standing faults, the loop's first pass ever on this store: one message listing them (not one
    per part, not a storm incident), each remembered as known; a restarted bot does not take its first pass again."""
    CLOCK.at("12:00")
    first = _loop(local).run_once()  # the data file's policy: first_pass = "summary"
    known = [d for d in first.decisions if d.step is Step.KNOWN]
    assert len({d.alert.node_id for d in known}) > 5 and first.storm is None and first.count(Step.NEW) == 0
    (said,) = [m for m in posted(local.slack) if m.channel == ALERTS]
    assert f"{len(known)} part(s) on {len({d.alert.node_id for d in known})} node(s) were already failing" in said.text
    assert "`hpc-gpu-node-12`" in said.text and not buttons(said) and "<!subteam" not in said.text
    (began,) = list(local.audit.entries("watch"))
    assert began["detail"]["known"] == len(known)
    assert set(local.app.services.alerts.active()) == {d.alert.key for d in known}  # type: ignore[union-attr]
    CLOCK.at("12:05")
    assert _loop(local).run_once().decisions == []  # the next pass, or a restarted bot's: nothing new, nothing said
    assert len([m for m in posted(local.slack) if m.channel == ALERTS]) == 1


def test_the_loop_is_off_without_a_channel_and_its_period_is_a_duration() -> None:
    assert Settings.from_env({}).alert_channel is None
    on = Settings.from_env({"FABRICBOT_ALERT_CHANNEL": "CALERTS", "FABRICBOT_ALERT_EVERY": "90s",
                            "FABRICBOT_ONCALL_USERGROUP": "SONCALL"})
    assert (on.alert_channel, on.alert_every_s, on.oncall_usergroup) == ("CALERTS", 90.0, "SONCALL")
    assert Settings.from_env({"FABRICBOT_ALERT_CHANNEL": "C"}).alert_every_s == 300.0
    assert any("alerts: new failing parts posted to CALERTS every 1.5 min" in n for n in on.startup_notes())
    from diagnostics import ConfigError

    with pytest.raises(ConfigError, match="FABRICBOT_ALERT_EVERY"):
        Settings.from_env({"FABRICBOT_ALERT_EVERY": "soon"})
    assert datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=on.alert_every_s)
