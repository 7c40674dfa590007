"""The watch loop's decisions: one alert per new part, an update when it worsens, is ticketed or recovers, storms held;
and the store keeping them across a restart."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from diagnostics.analysis.alerting import Decision, FailingPart, Step, decide, find_storm, signatures_of
from diagnostics.components import ComponentRef
from diagnostics.config import load_alerts
from diagnostics.enums import LinkType, Priority, Severity
from diagnostics.model import Diagnosis, Finding, RackPlace
from diagnostics.store import AlertBook, AlertStatus, connect

T0 = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)
POLICY = load_alerts()


def part(node: str, slug: str = "gpu2-nvlink5", severity: Severity = Severity.FAILING,
         priority: Priority = Priority.MEDIUM, signatures: tuple[str, ...] = ()) -> FailingPart:
    return FailingPart(node, slug, slug, severity, priority, "replays above 1000 per hour", signatures)


def no_ticket(node: str, slug: str) -> str | None:
    return None


def _post_owed(book: AlertBook, decisions: list[Decision]) -> None:
    """What the loop does after saving: each alert the channel is owed is posted, and its message recorded."""
    for d in decisions:
        if d.alert.owed:
            book.posted(d.alert.node_id, d.alert.slug, channel="CALERTS", ts=f"{d.alert.node_id}.{d.alert.slug}")


def test_an_alert_never_posted_is_new_again_while_failing_and_not_once_posted(tmp_path) -> None:  # type: ignore[no-untyped-def]
    book = AlertBook(connect(tmp_path / "fabricbot.db"))

    def run(parts: list[FailingPart], at: datetime) -> list[Step]:
        done = decide(parts, book.active(), at=at, policy=POLICY, fleet_nodes=100, ticket_of=no_ticket)
        book.save([d.alert for d in done.decisions], done.failing, at)
        return [d.step for d in done.decisions]

    assert run([part("n1")], T0) == [Step.NEW]  # its post failed: the book has it, owed
    assert run([part("n1", severity=Severity.DOWN)], T0 + timedelta(minutes=5)) == [Step.NEW]  # still never told
    book.posted("n1", "gpu2-nvlink5", channel="CALERTS", ts="1.1")
    assert run([part("n1", severity=Severity.DOWN)], T0 + timedelta(minutes=10)) == []
    assert book.get("n1", "gpu2-nvlink5").owed is False  # type: ignore[union-attr]


def test_a_new_part_alerts_once_then_updates_when_worse_ticketed_and_recovered(tmp_path) -> None:  # type: ignore[no-untyped-def]
    book = AlertBook(connect(tmp_path / "fabricbot.db"))
    fleet = 100

    def run(parts: list[FailingPart], at: datetime, ticket: str | None = None) -> list[Step]:
        done = decide(parts, book.active(), at=at, policy=POLICY, fleet_nodes=fleet,
                      ticket_of=lambda n, s: ticket)
        book.save([d.alert for d in done.decisions], done.failing, at)
        _post_owed(book, done.decisions)
        return [d.step for d in done.decisions]

    assert run([part("n1")], T0) == [Step.NEW]
    assert run([part("n1")], T0 + timedelta(minutes=5)) == []  # not already alerted
    # a restart forgets nothing: a fresh book on the same file still knows the alert
    book = AlertBook(connect(tmp_path / "fabricbot.db"))
    assert run([part("n1", severity=Severity.DOWN)], T0 + timedelta(minutes=10)) == [Step.WORSE]
    assert run([part("n1", severity=Severity.DOWN)], T0 + timedelta(minutes=15)) == []
    assert run([part("n1", severity=Severity.DOWN)], T0 + timedelta(minutes=20), ticket="FAB-1") == [Step.TICKETED]
    clean = T0 + timedelta(minutes=20)
    assert run([], clean + POLICY.soak - timedelta(minutes=5), ticket="FAB-1") == []  # clean, not yet for the soak
    assert run([], clean + POLICY.soak, ticket="FAB-1") == [Step.RECOVERED]
    assert book.get("n1", "gpu2-nvlink5").status is AlertStatus.RECOVERED  # type: ignore[union-attr]
    assert run([part("n1")], clean + POLICY.soak + timedelta(hours=1)) == [Step.NEW]  # failing again: a new alert


def test_a_part_already_ticketed_does_not_alert() -> None:
    done = decide([part("n1")], {}, at=T0, policy=POLICY, fleet_nodes=10, ticket_of=lambda n, s: "FAB-7")
    assert done.decisions == []


def test_forty_nodes_with_one_driver_and_one_xid_are_one_storm_naming_the_factor() -> None:
    rollout = [part(f"n{i:02d}", signatures=("driver 550.90.07", "xid 74")) for i in range(40)]
    lone = [part("n99", signatures=("driver 535.161.08",))]
    done = decide(rollout + lone, {}, at=T0, policy=POLICY, fleet_nodes=400, ticket_of=no_ticket)
    assert done.storm is not None and done.count(Step.HELD) == 41 and done.count(Step.NEW) == 0
    assert done.storm.factor == "driver 550.90.07, xid 74" and len(done.storm.nodes) == 41
    assert done.storm.headline().startswith("41 nodes newly failing at once, 40 of them sharing driver 550.90.07, "
                                            "xid 74: 10% of the fleet's 400 nodes")


def test_a_few_faults_in_a_big_fleet_are_not_a_storm_and_a_shared_signature_alone_is() -> None:
    few = [part(f"n{i}", signatures=(f"switch {i}",)) for i in range(4)]
    assert find_storm(few, fleet_nodes=1024, policy=POLICY) is None
    same_switch = [part(f"n{i}", signatures=("switch sw-07",)) for i in range(POLICY.signature_min_nodes)]
    storm = find_storm(same_switch, fleet_nodes=100_000, policy=POLICY)
    assert storm is not None and storm.factor == "switch sw-07"
    racks = {f"n{i}": f"r{i}" for i in range(POLICY.storm_min_nodes)}
    spread = [part(n) for n in racks]
    assert find_storm(spread, fleet_nodes=100_000, policy=POLICY, racks=racks) is not None
    assert find_storm(spread, fleet_nodes=100_000, policy=POLICY) is None


def test_held_parts_wait_for_the_acknowledgement_then_alert_if_still_failing(tmp_path) -> None:  # type: ignore[no-untyped-def]
    book = AlertBook(connect(tmp_path / "fabricbot.db"))
    rollout = [part(f"n{i:02d}", signatures=("xid 74",)) for i in range(10)]
    first = decide(rollout, {}, at=T0, policy=POLICY, fleet_nodes=50, ticket_of=no_ticket)
    assert first.storm is not None
    storm = book.open_storm(at=T0, factor=first.storm.factor, nodes=first.storm.nodes, reason=first.storm.reason,
                            held=first.count(Step.HELD))
    book.save([replace(d.alert, storm=storm.id) for d in first.decisions])
    later = T0 + timedelta(minutes=5)
    waiting = decide([*rollout[:5], part("n77")], book.active(), at=later, policy=POLICY, fleet_nodes=50,
                     ticket_of=no_ticket, open_storm=storm.id)
    assert [d.step for d in waiting.decisions] == [Step.HELD]  # a new one joins the storm; the held ones wait
    acked = book.acknowledge(storm.id, by="U1", at=later)
    assert acked is not None and acked.acknowledged_by == "U1" and book.waiting_storm() is None
    released = decide(rollout[:5], book.active(), at=later, policy=POLICY, fleet_nodes=50, ticket_of=no_ticket)
    assert released.count(Step.NEW) == 5 and released.count(Step.RECOVERED) == 5 and released.storm is None


def test_the_first_pass_takes_standing_faults_as_known_and_a_known_part_alerts_when_worse(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Forty standing faults sharing a driver at the watch's first pass are known, not a storm and not forty pages;
    the next pass says nothing of them, one that gets worse alerts, a new part alerts as ever."""
    book = AlertBook(connect(tmp_path / "fabricbot.db"))
    standing = [part(f"n{i:02d}", signatures=("driver 550.90.07", "xid 74")) for i in range(40)]
    first = decide(standing, {}, at=T0, policy=POLICY, fleet_nodes=400, ticket_of=no_ticket, baseline=True)
    assert first.storm is None and first.count(Step.KNOWN) == 40 and first.count(Step.NEW) == 0
    assert book.watch_began() is None and book.begin_watch(at=T0, known=40) and not book.begin_watch(at=T0, known=0)
    book.save([d.alert for d in first.decisions], first.failing, T0)
    assert AlertBook(connect(tmp_path / "fabricbot.db")).watch_began() == T0  # a restart is not a first pass
    later = T0 + timedelta(minutes=5)
    worse = [part("n00", severity=Severity.DOWN), *standing[1:], part("n99")]
    done = decide(worse, book.active(), at=later, policy=POLICY, fleet_nodes=400, ticket_of=no_ticket)
    assert sorted((d.step, d.alert.node_id) for d in done.decisions) == [(Step.NEW, "n99"), (Step.WORSE, "n00")]


def test_a_priority_that_rises_is_worse_and_one_that_falls_is_not(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The same failing link whose job's slowdown grew past the policy's 20%: medium to urgent is worse (its
    update pages), and urgent back to medium updates nothing."""
    book = AlertBook(connect(tmp_path / "fabricbot.db"))

    def run(priority: Priority, at: datetime) -> list[Step]:
        done = decide([part("n1", priority=priority)], book.active(), at=at, policy=POLICY, fleet_nodes=100,
                      ticket_of=no_ticket)
        book.save([d.alert for d in done.decisions], done.failing, at)
        _post_owed(book, done.decisions)
        return [d.step for d in done.decisions]

    assert run(Priority.MEDIUM, T0) == [Step.NEW]
    assert run(Priority.URGENT, T0 + timedelta(minutes=40)) == [Step.WORSE]
    assert run(Priority.MEDIUM, T0 + timedelta(minutes=80)) == []
    assert part("n1", priority=Priority.URGENT).rank > part("n1", priority=Priority.HIGH).rank > \
        part("n1", priority=Priority.LOW).rank


def test_a_silent_node_is_not_clean_its_alerts_stay_open_marked_not_reporting(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A node that stops reporting is never taken for recovered: its alert is marked not reporting once, stays open
    past the soak, and when the node reports again clean the soak counts from its return."""
    book = AlertBook(connect(tmp_path / "fabricbot.db"))

    def run(parts: list[FailingPart], at: datetime, silent: tuple[str, ...] = ()) -> list[Step]:
        done = decide(parts, book.active(), at=at, policy=POLICY, fleet_nodes=10, ticket_of=no_ticket, silent=silent)
        book.save([d.alert for d in done.decisions], done.failing, at)
        return [d.step for d in done.decisions]

    assert run([part("n1")], T0) == [Step.NEW]
    gone = T0 + timedelta(minutes=5)
    assert run([], gone, silent=("n1",)) == [Step.SILENT]
    assert book.get("n1", "gpu2-nvlink5").silent_since == gone  # type: ignore[union-attr]
    assert run([], gone + POLICY.soak * 3, silent=("n1",)) == []  # said once; never recovered while silent
    assert book.get("n1", "gpu2-nvlink5").status is AlertStatus.OPEN  # type: ignore[union-attr]
    back = gone + POLICY.soak * 3 + timedelta(minutes=5)
    assert run([], back) == [Step.REPORTING]
    assert book.get("n1", "gpu2-nvlink5").silent_since is None  # type: ignore[union-attr]
    assert run([], back + POLICY.soak - timedelta(minutes=5)) == []  # clean since its return, not yet for the soak
    assert run([], back + POLICY.soak) == [Step.RECOVERED]


def test_a_held_alert_of_a_silent_node_is_not_recovered() -> None:
    held = part("n1")
    alert = decide([held], {}, at=T0, policy=POLICY, fleet_nodes=10, ticket_of=no_ticket,
                   open_storm=3).decisions[0].alert
    later = T0 + POLICY.soak * 2
    done = decide([], {alert.key: alert}, at=later, policy=POLICY, fleet_nodes=10, ticket_of=no_ticket,
                  silent=("n1",))
    assert [(d.step, d.alert.status) for d in done.decisions] == [(Step.SILENT, AlertStatus.HELD)]


def test_a_held_alert_whose_node_reports_again_clean_soaks_from_its_return(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A held part whose storm was acknowledged and whose node then fell silent was said to the channel as not
    reporting: when the node reports again with the part clean it is not recovered at once, but opens and counts
    its soak from the return, as an open alert does."""
    book = AlertBook(connect(tmp_path / "fabricbot.db"))

    def run(at: datetime, silent: tuple[str, ...] = (), storm: int | None = None) -> list[tuple[Step, AlertStatus]]:
        done = decide([part("n1")] if at == T0 else [], book.active(), at=at, policy=POLICY, fleet_nodes=10,
                      ticket_of=no_ticket, silent=silent, open_storm=storm)
        book.save([d.alert for d in done.decisions], done.failing, at)
        return [(d.step, d.alert.status) for d in done.decisions]

    assert run(T0, storm=3) == [(Step.HELD, AlertStatus.HELD)]
    gone = T0 + timedelta(minutes=5)  # the storm acknowledged, the node silent
    assert run(gone, silent=("n1",)) == [(Step.SILENT, AlertStatus.HELD)]
    back = gone + POLICY.soak * 2
    assert run(back) == [(Step.REPORTING, AlertStatus.OPEN)]
    assert run(back + POLICY.soak - timedelta(minutes=5)) == []  # clean since its return, not yet for the soak
    assert run(back + POLICY.soak) == [(Step.RECOVERED, AlertStatus.RECOVERED)]


def _switch_fault(node: str, switch: str, rack: str | None = None) -> Diagnosis:
    link = Finding(ref=ComponentRef.nvlink(2, 5, switch=switch, port=9), link_type=LinkType.NVLINK, link_id="l",
                   severity=Severity.FAILING, switch=switch)
    return Diagnosis(node_id=node, window_hours=1, fault_detected=True, isolated_component=link.component,
                     degradation_pct=None, repair_action="", ticket_priority=Priority.MEDIUM, findings=[link],
                     rack=RackPlace(rack_id=rack, platform="gb200-nvl72") if rack else None)


def test_a_switch_is_a_common_factor_only_when_it_is_the_same_chip() -> None:
    """Each HGX node's NVSwitch 2 is its own chip: three nodes failing on theirs share no switch. A rack's switch tray
    chip is one chip for all its trays, and not another rack's chip of the same name."""
    nodes = [signatures_of(_switch_fault(f"n{i}", "NVSwitch 2")) for i in range(POLICY.storm_min_nodes)]
    assert not set(nodes[0]) & set(nodes[1]) and nodes[0] == ("switch NVSwitch 2 on n0",)
    hgx = [part(f"n{i}", signatures=s) for i, s in enumerate(nodes)]
    storm = find_storm(hgx, fleet_nodes=len(hgx), policy=POLICY)  # a storm by its share: no switch in common
    assert storm is not None and storm.factor.startswith("no one signature")
    trays = [signatures_of(_switch_fault(f"r1-c{i}", "Switch tray 1 chip 2", rack="rack-01")) for i in range(2)]
    other = signatures_of(_switch_fault("r2-c1", "Switch tray 1 chip 2", rack="rack-02"))
    assert "switch Switch tray 1 chip 2 of rack-01" in set(trays[0]) & set(trays[1])
    assert "switch Switch tray 1 chip 2 of rack-01" not in other


def test_a_held_nodes_failing_part_carries_why_and_says_its_priority_as_its_ticket_does() -> None:
    """NVLink errors stated on a pcie-8gpu server: every part of the node is held, as its tickets are; the same input
    on its NVLink platform is not."""
    from diagnostics.analysis.alerting import failing_parts
    from diagnostics.tickets import RulesDrafter
    from tests.tickets.helpers import seed_diagnosis

    d = seed_diagnosis(platform="pcie-8gpu")
    parts = failing_parts([d])
    assert d.held and parts and all(p.held == d.held for p in parts)
    ticket = RulesDrafter().draft(d)
    headline = next(p for p in parts if p.slug == ticket.candidate_id)
    assert headline.priority_said() == ticket.priority_line != headline.priority.value
    ok = failing_parts([seed_diagnosis(platform="hgx-h100-8gpu")])
    assert ok and all(p.held is None and p.priority_said() == p.priority.value for p in ok)


def test_an_alert_of_a_node_under_planned_work_never_recovers_while_the_work_lasts(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Planned work keeps a node's failing parts out of the view, so its open alert read as clean: a window of a day
    or more posted "Recovered" while the part may still fail. It stays open, and says so once (the channel was told
    nothing, so an alert that went quiet looked forgotten); the work's end is said once; the soak counts from it."""
    book = AlertBook(connect(tmp_path / "fabricbot.db"))

    def run(parts: list[FailingPart], at: datetime, planned: tuple[str, ...] = ()) -> list[Step]:
        done = decide(parts, book.active(), at=at, policy=POLICY, fleet_nodes=100, ticket_of=no_ticket,
                      planned=planned)
        book.save([d.alert for d in done.decisions], done.failing, at)
        _post_owed(book, done.decisions)
        return [d.step for d in done.decisions]

    assert run([part("n1")], T0) == [Step.NEW]
    ended = T0 + POLICY.soak * 2
    assert run([], T0 + POLICY.soak + timedelta(hours=1), planned=("n1",)) == [Step.PLANNED]  # held back, not clean
    assert run([], ended, planned=("n1",)) == []  # said once
    assert book.get("n1", "gpu2-nvlink5").status is AlertStatus.OPEN  # type: ignore[union-attr]
    # clean since the work ended: its end said, not yet the soak
    assert run([], ended + POLICY.soak - timedelta(minutes=5)) == [Step.PLANNED_ENDED]
    assert book.get("n1", "gpu2-nvlink5").planned_since is None  # type: ignore[union-attr]
    assert run([], ended + POLICY.soak) == [Step.RECOVERED]


def _runner(tmp_path):  # type: ignore[no-untyped-def]
    book = AlertBook(connect(tmp_path / "fabricbot.db"))

    def run(parts: list[FailingPart], at: datetime, planned: tuple[str, ...] = (),
            silent: tuple[str, ...] = ()) -> list[tuple[Step, bool]]:
        done = decide(parts, book.active(), at=at, policy=POLICY, fleet_nodes=100, ticket_of=no_ticket,
                      planned=planned, silent=silent)
        book.save([d.alert for d in done.decisions], done.failing, at)
        _post_owed(book, done.decisions)
        return [(d.step, d.part is not None) for d in done.decisions]

    return book, run


def test_a_part_still_failing_when_its_planned_work_ends_is_said_so(tmp_path) -> None:  # type: ignore[no-untyped-def]
    book, run = _runner(tmp_path)

    assert run([part("n1")], T0) == [(Step.NEW, True)]
    assert run([], T0 + timedelta(minutes=5), planned=("n1",)) == [(Step.PLANNED, False)]
    assert run([part("n1")], T0 + timedelta(hours=2)) == [(Step.PLANNED_ENDED, True)]
    assert run([part("n1")], T0 + timedelta(hours=2, minutes=5)) == []  # failing as told: nothing new
    assert book.get("n1", "gpu2-nvlink5").status is AlertStatus.OPEN  # type: ignore[union-attr]


def test_a_node_powered_off_for_its_planned_work_is_planned_not_silent(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A node is often powered off for its work: its alert said "Not reporting" and lost its planned mark, then
    said "Planned work" again when it came back under the same work."""
    book, run = _runner(tmp_path)
    assert run([part("n1")], T0) == [(Step.NEW, True)]
    at = T0 + timedelta(minutes=5)
    assert run([], at, planned=("n1",)) == [(Step.PLANNED, False)]
    assert run([], at + timedelta(minutes=5), planned=("n1",), silent=("n1",)) == []  # off for the work
    assert run([], at + timedelta(minutes=10), planned=("n1",)) == []  # back, the work still on: said once
    ended = at + timedelta(minutes=15)
    assert run([], ended, silent=("n1",)) == [(Step.SILENT, False)]  # the work over, the node silent: not reporting
    assert book.get("n1", "gpu2-nvlink5").planned_since is None  # type: ignore[union-attr]


def test_a_node_silent_before_its_work_and_back_after_it_says_the_work_ended_once(tmp_path) -> None:  # type: ignore[no-untyped-def]
    book, run = _runner(tmp_path)
    assert run([part("n1")], T0) == [(Step.NEW, True)]
    assert run([], T0 + timedelta(minutes=5), silent=("n1",)) == [(Step.SILENT, False)]
    assert run([], T0 + timedelta(minutes=10), planned=("n1",), silent=("n1",)) == [(Step.PLANNED, False)]
    assert run([], T0 + timedelta(minutes=15)) == [(Step.PLANNED_ENDED, False)]
    alert = book.get("n1", "gpu2-nvlink5")
    assert alert is not None and alert.silent_since is None and alert.planned_since is None
    assert run([], T0 + timedelta(minutes=20)) == []  # not "reporting again" a pass later


def test_a_part_worse_when_its_planned_work_ends_pages_as_worse_at_once(tmp_path) -> None:  # type: ignore[no-untyped-def]
    book, run = _runner(tmp_path)
    assert run([part("n1")], T0) == [(Step.NEW, True)]
    assert run([], T0 + timedelta(minutes=5), planned=("n1",)) == [(Step.PLANNED, False)]
    worse = part("n1", severity=Severity.DOWN, priority=Priority.URGENT)
    assert run([worse], T0 + timedelta(minutes=10)) == [(Step.WORSE, True)]
    assert book.get("n1", "gpu2-nvlink5").planned_since is None  # type: ignore[union-attr]
    assert run([worse], T0 + timedelta(minutes=15)) == []
