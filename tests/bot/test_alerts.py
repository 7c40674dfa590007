"""The watch loop through the real Bolt app and the mock Slack: alerts arrive on their own, once, and are updated;
a storm is one incident until someone acknowledges it; a restart neither repeats nor forgets."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bot.alerts import _SAID, ACK_ACTION, AlertLoop, _status
from bot.demo import Replay, bundled
from bot.mrkdwn import esc
from bot.nodes import TableNodeSource
from bot.settings import Settings
from bot.transport.local import LocalSlack
from bot.transport.mock_slack import Message
from diagnostics import format as fmt
from diagnostics.analysis.alerting import Step
from diagnostics.config import load_alerts
from diagnostics.enums import Priority
from diagnostics.service import TableSource
from diagnostics.store import Alert, AlertStatus

from .helpers import LONG_WAIT, buttons, local_bot, posted

ALERTS = "CALERTS"
INCOMPLETE = "*Fleet view incomplete*"
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


def _alerted(local: LocalSlack) -> list[Message]:
    """The alert channel's messages of alerts, storms and the watch's start (the bundled fleet's view is incomplete,
    one node holding one reading: that is said apart, once)."""
    return [m for m in posted(local.slack) if m.channel == ALERTS and INCOMPLETE not in m.text]


def test_each_new_failing_part_gets_one_message_with_its_button_and_pictures(local: LocalSlack) -> None:
    CLOCK.at("12:00")
    first = _loop(local, pictures=True, policy=NO_STORM).run_once()
    new = [d for d in first.decisions if d.step is Step.NEW]
    assert new and first.storm is None
    top = _alerted(local)
    assert len(top) == len({d.alert.key for d in new})
    node12 = next(m for m in top if "hpc-gpu-node-12" in m.text)
    assert node12.text.startswith("<!subteam^SONCALL> :rotating_light: *New failing part*")  # urgent: paged
    assert any(b["action_id"].startswith("draft") for b in buttons(node12))
    assert local.slack.wait_for(lambda s: any(m.files for m in s.thread(ALERTS, node12.ts)), timeout=LONG_WAIT)
    # the next pass, and a restarted bot's first pass, post nothing again
    CLOCK.at("12:05")
    assert _loop(local, pictures=True, policy=NO_STORM).run_once().decisions == []
    assert len(_alerted(local)) == len(top)
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
    (incident,) = _alerted(local)
    assert "*Incident:" in incident.text and f"{first.count(Step.HELD)} per-node alerts are held" in incident.text
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
    (said,) = _alerted(local)
    assert f"{len(known)} parts on {len({d.alert.node_id for d in known})} nodes were already failing" in said.text
    assert "`hpc-gpu-node-12`" in said.text and not buttons(said) and "<!subteam" not in said.text
    (began,) = [e for e in local.audit.entries("watch") if e["detail"]["decision"] == "watch began"]
    assert began["detail"]["known"] == len(known)
    assert set(local.app.services.alerts.active()) == {d.alert.key for d in known}  # type: ignore[union-attr]
    CLOCK.at("12:05")
    assert _loop(local).run_once().decisions == []  # the next pass, or a restarted bot's: nothing new, nothing said
    assert len(_alerted(local)) == 1


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


def _replay(fleet: TableNodeSource) -> tuple[Replay, datetime]:
    """The bundled fleet replayed up to its last reading (moved on by setting `until`), and that reading's time."""
    tables = fleet.source
    assert isinstance(tables, TableSource)
    replay = Replay(tables.tables, tables.platforms())
    end = datetime(2026, 9, 17, 8, 0, tzinfo=UTC)
    replay.until = end
    return replay, end


def test_a_fleet_gone_silent_is_said_once_and_its_alerts_stay_open_not_reporting(fleet: TableNodeSource) -> None:
    """A pass long after the last reading: the incomplete view is one message, updated (never reposted) while it
    lasts; every open alert is marked not reporting and none recovers, however long the silence."""
    replay, end = _replay(fleet)
    with local_bot(Settings(), source=replay, clock=lambda: replay.until or end) as bot:
        loop = _loop(bot, policy=NO_STORM)
        first = loop.run_once()
        opened = {d.alert.key for d in first.decisions if d.step is Step.NEW}
        (notice,) = [m for m in posted(bot.slack) if m.channel == ALERTS and INCOMPLETE in m.text]
        assert "hpc-gpu-node-18" in notice.text and "not an all-clear" in notice.text
        replay.until = end + timedelta(days=3)  # no reading for three days: longer than the soak
        gone = loop.run_once()
        silent = {d.alert.key for d in gone.decisions if d.step is Step.SILENT}
        assert ("hpc-gpu-node-12", "gpu2-nvlink1") in silent
        assert opened <= silent | set(gone.failing)  # the rest (undated Xids alone) still read as failing
        assert not [d for d in gone.decisions if d.step is Step.RECOVERED]
        said = bot.slack.find(notice.ts)
        assert said is not None and said.edits == 1 and "silent nodes stay open" in said.text
        node12 = next(m for m in posted(bot.slack) if m.channel == ALERTS and "hpc-gpu-node-12" in m.text)
        shown = bot.slack.find(node12.ts)
        assert shown is not None and "*Not reporting*" in shown.text and "Silence is not health" in shown.text
        replay.until = end + timedelta(days=3, minutes=5)
        assert loop.run_once().decisions == []
        assert [m.ts for m in posted(bot.slack) if m.channel == ALERTS and INCOMPLETE in m.text] == [notice.ts]
        assert (bot.slack.find(notice.ts) or notice).edits == 1  # nothing changed: not said again
        active = bot.app.services.alerts.active()  # type: ignore[union-attr]
        assert opened <= set(active) and all(active[k].silent_since is not None for k in silent)


def _tables(fleet: TableNodeSource) -> TableSource:
    tables = fleet.source
    assert isinstance(tables, TableSource)
    return tables


def _stated(tables: TableSource, node: str | None = None, platform: str | None = None) -> TableNodeSource:
    """The fleet's tables with `node`'s platform stated as `platform` in its inventory (none: as the fleet says)."""
    return TableNodeSource(tables.tables, tables.platforms() | ({node: platform} if node and platform else {}))


def test_a_held_nodes_new_part_is_said_held_and_its_page_names_the_inventory(fleet: TableNodeSource) -> None:
    """An NVLink node stated pcie-8gpu (the platform has no NVLink): its tickets are held and say do not drain. Its
    alert's status line said the bare level '(failing, urgent)' over a summary saying held, and paged on-call to act
    on the part. It still pages at the level it takes once released (the fault may be real), but says held in the
    ticket's words and that the inventory is what needs the person now, not the part."""
    tables, node = _tables(fleet), "hpc-gpu-node-12"
    CLOCK.at("12:00")
    with local_bot(Settings(), source=_stated(tables, node, "pcie-8gpu"), clock=CLOCK) as bot:
        done = _loop(bot, policy=NO_STORM).run_once()
        (new,) = [d.part for d in done.decisions if d.step is Step.NEW and d.alert.node_id == node]
        assert new is not None
        (said,) = [m for m in _alerted(bot) if f"`{node}`" in m.text]
        fields = [f["text"] for b in said.blocks or [] for f in b.get("fields") or []]
        (summary,) = [f.split("\n", 1)[1] for f in fields if f.startswith("*Priority*")]
        assert summary == esc(fmt.priority(new.priority.value, held=True))  # the node's summary: held
        status = said.text.split("\n_")[0]
        assert f"({new.severity.value}, {summary})" in status and f", {new.priority.value}):" not in status
        assert "do not drain" in status.lower() and "inventory" in status
        assert status.startswith("<!subteam^SONCALL>") is (new.priority is Priority.URGENT)


def test_a_held_parts_alert_is_restated_once_its_inventory_is_mended(fleet: TableNodeSource) -> None:
    """A part alerted held (its node stated pcie-8gpu, its readings NVLink's) whose inventory is then mended: its
    alert kept saying held, do not drain, pass after pass, until its rank changed. The next pass restates it at its
    plain level, says it is released, and says it once."""
    tables, node = _tables(fleet), "hpc-gpu-node-12"
    CLOCK.at("12:00")
    with local_bot(Settings(), source=_stated(tables, node, "pcie-8gpu"), clock=CLOCK) as bot:
        assert bot.app is not None
        loop = _loop(bot, policy=NO_STORM)
        (new,) = [d for d in loop.run_once().decisions if d.step is Step.NEW and d.alert.node_id == node]
        assert new.part is not None and new.part.held is not None
        bot.app.services.source = _stated(tables)  # the inventory mended
        CLOCK.at("12:05")
        (again,) = [d for d in loop.run_once().decisions if d.alert.key == new.alert.key]
        assert again.step is Step.RESTATED and again.part is not None and again.part.held is None
        assert again.part.rank == new.part.rank, "its rank is the same: only the inventory changed"
        stored = bot.app.services.alerts.get(*new.alert.key)  # type: ignore[union-attr]
        assert stored is not None and not stored.held and stored.ts
        shown = bot.slack.find(stored.ts)
        assert shown is not None
        status = shown.text.split("\n_")[0]
        assert f"({again.part.severity.value}, {again.part.priority.value}):" in status and "Released" in status
        assert "held (" not in status and "Do not drain" not in status
        CLOCK.at("12:10")
        assert [d for d in loop.run_once().decisions if d.alert.key == new.alert.key] == []


@pytest.mark.parametrize("many", [1, 3])
def test_the_loops_messages_count_in_words_that_agree(many: int) -> None:
    """The watch's first message, the incomplete view's and a storm's say their counts singular for one, plural for
    more, the verb agreeing: '1 part on 1 node was', '3 parts on 3 nodes were'."""
    from bot.alerts import incomplete_message, storm_message, watch_began_message
    from diagnostics import Severity, SweepResult
    from diagnostics.analysis import FailingPart
    from diagnostics.store import StormRecord

    at = datetime(2026, 3, 2, tzinfo=UTC)
    nodes = [f"node-{i}" for i in range(many)]
    known = [FailingPart(n, "gpu2-nvlink1", "GPU 2 NVLink 1", Severity.FAILING, Priority.HIGH, "replays")
             for n in nodes]
    began = watch_began_message(known, many, 300)
    assert f"*Watching {fmt.count(many, 'node')} every 5 min.*" in began
    assert f"{fmt.count(many, 'part')} on {fmt.count(many, 'node')} {'was' if many == 1 else 'were'} already" in began
    swept = SweepResult(at=at, window_hours=1, complete=False, silent=nodes)
    assert f"Alerts on the {fmt.count(many, 'silent node')} stay open" in incomplete_message(swept, at, 300)
    storm = StormRecord(1, at, "driver=550.90.07", nodes, "a rollout", held=many)
    text, _ = storm_message(storm, None)
    assert f"{fmt.count(many, 'per-node alert')} {'is' if many == 1 else 'are'} held until" in text


def test_an_alert_whose_node_goes_under_planned_work_says_it_waits_and_when_the_work_ends(
        local: LocalSlack) -> None:
    """Planned work keeps a node's parts out of the view, so its open alert neither pages nor recovers: the channel
    was told nothing, and an alert gone quiet looked forgotten or mended."""
    assert local.app is not None
    services = local.app.services
    CLOCK.at("12:00")
    _loop(local, policy=NO_STORM).run_once()
    node12 = next(m for m in _alerted(local) if "hpc-gpu-node-12" in m.text)
    newest = services.source.source.newest(["hpc-gpu-node-12"])
    assert newest is not None
    log = services.source.maintenance()
    log.set("hpc-gpu-node-12", start=newest - timedelta(days=1), span=timedelta(days=2), reason="swap GPU 3",
            set_by="UALICE")
    CLOCK.at("12:05")
    done = _loop(local, policy=NO_STORM).run_once()
    mine = [d for d in done.decisions if d.alert.node_id == "hpc-gpu-node-12"]
    assert mine and {d.step for d in mine} == {Step.PLANNED}
    shown = local.slack.find(node12.ts)
    assert shown is not None and shown.text.startswith(":construction: *Planned work*: `hpc-gpu-node-12`")
    assert "in maintenance until" in shown.text and "swap GPU 3" in shown.text and "stays open" in shown.text
    CLOCK.at("12:10")
    assert not [d for d in _loop(local, policy=NO_STORM).run_once().decisions
                if d.alert.node_id == "hpc-gpu-node-12"]  # said once
    log.end("hpc-gpu-node-12", at=newest - timedelta(days=1) + timedelta(minutes=1), by="UALICE")
    CLOCK.at("12:15")
    done = _loop(local, policy=NO_STORM).run_once()
    assert {d.step for d in done.decisions if d.alert.node_id == "hpc-gpu-node-12"} == {Step.PLANNED_ENDED}
    shown = local.slack.find(node12.ts)
    assert shown is not None and shown.text.startswith(":arrows_counterclockwise: *Planned work ended*: "
                                                       "`hpc-gpu-node-12`")
    assert "planned work is over and the part still fails" in shown.text
    steps = {e["detail"]["step"] for e in local.audit.entries("alert") if "hpc-gpu-node-12" in e["subject"]}
    assert {"planned work", "planned work ended"} <= steps


def test_a_node_silent_under_planned_work_is_said_planned_not_not_reporting(fleet: TableNodeSource) -> None:
    """A node is often powered off for its work: its alert was marked "Not reporting" as a fault's silence is."""
    replay, end = _replay(fleet)
    with local_bot(Settings(), source=replay, clock=lambda: replay.until or end) as bot:
        assert bot.app is not None
        loop = _loop(bot, policy=NO_STORM)
        loop.run_once()
        bot.app.services.source.maintenance().set("hpc-gpu-node-12", start=end, span=timedelta(days=5),
                                                  reason="riser swap", set_by="UALICE")
        replay.until = end + timedelta(days=3)  # no reading since: node 12 under its work, the others silent
        gone = loop.run_once()
        steps = {d.alert.key: d.step for d in gone.decisions}
        assert {s for k, s in steps.items() if k[0] == "hpc-gpu-node-12"} == {Step.PLANNED}
        assert steps[("hpc-gpu-node-12", "gpu2-nvlink1")] is Step.PLANNED
        assert Step.SILENT in {s for k, s in steps.items() if k[0] != "hpc-gpu-node-12"}  # the others' silence
        node12 = next(m for m in posted(bot.slack) if m.channel == ALERTS and "hpc-gpu-node-12" in m.text)
        shown = bot.slack.find(node12.ts)
        assert shown is not None and "*Planned work*" in shown.text and "Silence is not health" not in shown.text
        assert "its node is in maintenance until " in shown.text and ": riser swap (set by UALICE)" in shown.text


@pytest.mark.parametrize("step", [Step.SILENT, Step.PLANNED, Step.RECOVERED])
def test_a_ticketed_alerts_status_line_reads_on_before_its_ticket(step: Step) -> None:
    """The step's clause continues the status line: it came after the ticket's line ("...is filed for it. — its
    node has sent no reading ...")."""
    at = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
    alert = Alert("n1", "gpu2-nvlink5", "GPU 2 NVLink 5", AlertStatus.OPEN, 2, opened_at=at, failing_at=at,
                  ticket="FAB-0007", silent_since=at if step is Step.SILENT else None)
    said = _status(step, alert, None, at, None, "in maintenance until 2026-03-03 10:00 UTC: riser swap")
    head, ticket, when = said.split("\n")
    assert head.startswith(f"{_SAID[step]}: `n1` GPU 2 NVLink 5 — ") and ticket == "Ticket *FAB-0007* is filed for it."
    assert when == "_2026-03-02 12:00 UTC_"
