"""Around the alert, through the real Bolt app: planned work, the watch list, a repair reported, verified, the
digest."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main
from bot.demo import StepClock, bundled, earlier_shift
from bot.listeners.commands import Request, UsageError, parse
from bot.mrkdwn import esc
from bot.nodes import TableNodeSource
from bot.settings import Settings
from bot.transport.local import LocalSlack
from bot.transport.mock_slack import Message
from diagnostics import format as fmt
from diagnostics.analysis import RepairCheck, RepairVerdict
from diagnostics.service import TableSource
from diagnostics.store import open_store

from .helpers import LONG_WAIT, OPS, buttons, local_bot, posted, private, summary_for

FLEET = Path(__file__).resolve().parents[2] / "fixtures" / "fleet"
GROUP = {"SFABRIC": ["UALICE", "UBOB"]}


@pytest.fixture(scope="module")
def fleet() -> tuple[TableNodeSource, dict[str, Any]]:
    return bundled(FLEET)


@pytest.fixture
def local(fleet: tuple[TableNodeSource, dict[str, Any]]) -> Iterator[LocalSlack]:
    tables = fleet[0].source
    assert isinstance(tables, TableSource)
    source = TableNodeSource(tables.tables, tables.platforms())  # maintenance of its own per test
    with local_bot(Settings(filing_usergroups=frozenset(GROUP)), usergroups=GROUP, source=source,
                   clock=StepClock()) as bot:  # the clock at the fleet's newest reading, as on a live fleet
        yield bot


def _say(local: LocalSlack, text: str, user: str = "UALICE") -> Message:
    before = len(posted(local.slack))
    assert local.injector.command(text, user=user, channel=OPS).status == 200
    assert local.slack.wait_for(lambda s: len(posted(s)) > before, timeout=LONG_WAIT)
    return posted(local.slack)[before]


def test_parse_reads_the_lifecycle_verbs() -> None:
    assert parse('maintenance node-7 2h "swap the riser"') == Request(
        "maintenance", "node-7", args=("node-7", "2h", "swap the riser"))
    assert parse("maintenance") == Request("maintenance")
    assert parse("watch node-7") == Request("watch", "node-7")
    assert parse("verify") == Request("verify") and parse("digest") == Request("digest")
    for bad in ("maintenance node-7", "verify now", "watch a b"):
        with pytest.raises(UsageError):
            parse(bad)


def test_planned_work_is_shown_and_pages_nobody_until_it_ends(local: LocalSlack) -> None:
    before = summary_for(local, "hpc-gpu-node-07")
    assert buttons(before)  # it pages: a ticket may be drafted
    said = _say(local, 'maintenance hpc-gpu-node-07 2h "swap the GPU 4 riser"', user="UBOB")
    assert "in maintenance until" in said.text and "swap the GPU 4 riser" in said.text
    during = summary_for(local, "hpc-gpu-node-07")
    assert "in maintenance until" in during.shown_blocks and buttons(during) == []  # nothing to draft
    assert "low" in during.shown_blocks
    listed = _say(local, "maintenance")
    assert "hpc-gpu-node-07" in listed.text
    ended = _say(local, "maintenance hpc-gpu-node-07 end", user="UBOB")
    assert "maintenance ended" in ended.text
    assert local.app is not None
    (window,) = local.app.services.source.maintenance().windows("hpc-gpu-node-07")
    assert window.until is not None and window.until - window.start < timedelta(hours=1)  # ended, not 2 h
    kinds = [(e["kind"], e["detail"].get("action")) for e in local.audit.entries("maintenance")]
    assert kinds == [("maintenance", "set"), ("maintenance", "end")]


def test_work_set_long_after_the_readings_says_it_holds_none_of_them(fleet: tuple[TableNodeSource, Any]) -> None:
    """`/fabric maintenance` months after the readings: the window starts at the command, after every reading, and
    the reply says so and how to place it, as the command line does."""
    tables = fleet[0].source
    assert isinstance(tables, TableSource)
    source = TableNodeSource(tables.tables, tables.platforms())
    newest = source.newest("hpc-gpu-node-07")
    assert newest is not None
    with local_bot(Settings(filing_usergroups=frozenset(GROUP)), usergroups=GROUP, source=source,
                   clock=StepClock(newest + timedelta(days=60))) as late:
        said = _say(late, 'maintenance hpc-gpu-node-07 2h "swap the GPU 4 riser"', user="UBOB")
    assert "in maintenance until" in said.text
    assert f"its newest reading ({fmt.when(newest)}) is before this window" in said.text
    assert "fabricbot maintenance hpc-gpu-node-07 DURATION --at TIME" in said.text


def test_the_newest_reading_is_the_analysis_window_s_end(fleet: tuple[TableNodeSource, Any]) -> None:
    source = fleet[0]
    assert source.newest("hpc-gpu-node-12") == source.diagnose("hpc-gpu-node-12").window_end is not None


def test_work_set_over_open_work_is_said_to_stand_beside_it(local: LocalSlack) -> None:
    """A second `/fabric maintenance` over an open window added another without a word."""
    first = _say(local, 'maintenance hpc-gpu-node-07 2h "swap the GPU 4 riser"', user="UBOB")
    assert "already" not in first.text
    second = _say(local, 'maintenance hpc-gpu-node-07 3h "again"', user="UBOB")
    assert ":warning: already in maintenance until" in second.text and "swap the GPU 4 riser" in second.text
    assert "both stand" in second.text and "`end` ends every one" in second.text


def test_a_bad_maintenance_request_is_told_what_is_wrong(local: LocalSlack) -> None:
    before = len(private(local.slack))
    assert local.injector.command("maintenance hpc-gpu-node12 2h x", user="UALICE", channel=OPS).status == 200
    assert local.slack.wait_for(lambda s: any("I don't know a node" in m.text for m in private(s)[before:]),
                                timeout=30)
    said = next(m.text for m in private(local.slack)[before:] if "I don't know a node" in m.text)
    assert "`hpc-gpu-node12`" in said and "Did you mean `hpc-gpu-node-12`" in said
    before = len(private(local.slack))  # too long: refused with what was asked, as planned work, not an analysis
    assert local.injector.command('maintenance hpc-gpu-node-12 90d "x"', user="UALICE", channel=OPS).status == 200
    assert local.slack.wait_for(lambda s: any("at most 30 days" in m.text for m in private(s)[before:]), timeout=30)
    said = next(m.text for m in private(local.slack)[before:] if "at most 30 days" in m.text)
    assert said.startswith("I could not set that: ") and "(got '90 days')" in said, said


def test_planned_work_reads_a_node_named_in_another_case_as_slash_fabric_does(local: LocalSlack, tmp_path: Path,
                                                                               bundled_store: Path) -> None:
    """`/fabric HPC-GPU-NODE-07` found the node, while `/fabric maintenance HPC-GPU-NODE-07 2h` (and `fabricbot
    maintenance`) answered that no such node is known: both read the name as every door does."""
    said = _say(local, 'maintenance HPC-GPU-NODE-07 2h "riser"', user="UBOB")
    assert said.text.startswith(":construction: `hpc-gpu-node-07`") and "in maintenance until" in said.text
    assert local.app is not None and local.app.services.source.maintenance().windows("hpc-gpu-node-07")
    store = tmp_path / "s"
    shutil.copytree(bundled_store, store)
    assert main(["maintenance", "HPC-GPU-NODE-07", "2h", "--store", str(store), "--by", "bob"]) == 0
    assert open_store(store).maintenance.windows("hpc-gpu-node-07")


def test_the_watch_lists_the_slow_failures_coming(local: LocalSlack, fleet: tuple[TableNodeSource, Any]) -> None:
    said = _say(local, "watch")
    slow = sorted(n for n, v in fleet[1].items() if v["scenario"] == "slow_degradation")
    assert "3 links of the fleet climbing" in said.text and all(n in said.text for n in slow)
    quiet = _say(local, "watch hpc-gpu-node-03")
    # its readings span less than the lookback's buckets: not judged, which an empty list had passed off as calm
    assert "*Watch of `hpc-gpu-node-03`*: cannot judge yet" in quiet.text and "nothing climbing" not in quiet.text
    assert "• hpc-gpu-node-03 not judged: too few readings for a trend" in quiet.text


def _file(local: LocalSlack) -> Message:
    summary = summary_for(local, "hpc-gpu-node-12")
    (draft,) = buttons(summary)
    local.injector.action(draft, user="UALICE", channel=OPS, message_ts=summary.ts)
    assert local.slack.wait_for(lambda s: any(b["action_id"] == "file_ticket" for m in posted(s, thread=summary.ts)
                                              for b in buttons(m)), timeout=30)
    (preview,) = [m for m in posted(local.slack, thread=summary.ts) if buttons(m)]
    (file_button,) = [b for b in buttons(preview) if b["action_id"] == "file_ticket"]
    local.injector.action(file_button, user="UBOB", channel=OPS, message_ts=preview.ts, thread_ts=preview.thread_ts)
    assert local.slack.wait_for(lambda s: "Filed as" in (s.find(preview.ts) or preview).text)
    found = local.slack.find(preview.ts)
    assert found is not None
    return found


def test_report_repair_moves_the_ticket_to_verifying_and_verify_judges_every_repair(
        local: LocalSlack, fleet: tuple[TableNodeSource, dict[str, Any]]) -> None:
    class Rt:  # what `earlier_shift` needs of a runtime: the bot's own tracker and audit trail
        tracker = local.tracker  # type: ignore[attr-defined]
        audit = local.audit

    assert local.app is not None
    earlier = earlier_shift(Rt(), local.app.services.source, fleet[1])  # type: ignore[arg-type]
    assert len(earlier) == 4
    filed = _file(local)
    (repair,) = buttons(filed)
    thread = filed.thread_ts or filed.ts
    replies = len(posted(local.slack, thread=thread))
    local.injector.action(repair, user="UMALLORY", channel=OPS, message_ts=filed.ts, thread_ts=filed.thread_ts)
    assert local.slack.wait_for(lambda s: any("limited to the on-call" in m.text for m in private(s, "UMALLORY")))
    forged = {**repair, "value": "FAB-0001"}  # another ticket than the message shows
    local.injector.action(forged, user="UALICE", channel=OPS, message_ts=filed.ts, thread_ts=filed.thread_ts)
    assert local.slack.wait_for(lambda s: any("does not belong" in m.text for m in private(s, "UALICE")))
    local.injector.action(repair, user="UALICE", channel=OPS, message_ts=filed.ts, thread_ts=filed.thread_ts)
    assert local.slack.wait_for(lambda s: len(posted(s, thread=thread)) > replies)
    assert "FAB-0005* is verifying" in posted(local.slack, thread=thread)[-1].text
    statuses = {t.id: t.status for t in local.tracker.tickets()}  # type: ignore[attr-defined]
    assert statuses["FAB-0005"] == "verifying" and statuses["FAB-0001"] == "verifying"

    said = _say(local, "verify", user="UBOB")
    statuses = {t.id: t.status for t in local.tracker.tickets()}  # type: ignore[attr-defined]
    truth = {n: v for n, v in fleet[1].items() if "holds" in v}
    by_node = {t.node_id: t for t in local.tracker.tickets()}  # type: ignore[attr-defined]
    for node, v in truth.items():
        assert by_node[node].status == ("closed" if v["holds"] else "open"), node
        assert by_node[node].escalated == (not v["holds"])
    assert statuses["FAB-0005"] == "verifying"  # no reading since its repair: still watched
    assert said.text.count("closed") == 2 and said.text.count("reopened") == 2
    verdicts = sorted(e["detail"]["verdict"] for e in local.audit.entries("verification"))
    assert verdicts == ["failed", "failed", "held", "held"]

    digest = _say(local, "digest")
    assert "Fabric digest for" in digest.text and "Waiting for verification (1)" in digest.text
    assert "FAB-0005" in digest.text and "Watch (3)" in digest.text

    # a failed post-repair diagnostic, reported as `fabricbot tickets repaired --diag fail` records it: the channel's
    # verify reads it from the audit trail as the command line's does, and reopens the ticket
    (waiting,) = [t for t in local.tracker.tickets() if t.status == "verifying"]  # type: ignore[attr-defined]
    local.audit.record("repair", actor="UTECH", subject=f"{waiting.node_id} / {waiting.component}", detail={
        "ticket": waiting.id, "repaired_at": waiting.repaired_at, "diag": "fail", "diag_at": waiting.repaired_at})
    said = _say(local, "verify", user="UBOB")
    assert "FAB-0005" in said.text and "reopened" in said.text and "`dcgmi diag -r 3` failed" in said.text
    assert {t.id: t.status for t in local.tracker.tickets()}["FAB-0005"] == "open"  # type: ignore[attr-defined]


def _report(local: LocalSlack, filed: Message) -> None:
    """The filed ticket's "Report repair" pressed: it is verifying."""
    (repair,) = buttons(filed)
    thread = filed.thread_ts or filed.ts
    replies = len(posted(local.slack, thread=thread))
    local.injector.action(repair, user="UALICE", channel=OPS, message_ts=filed.ts, thread_ts=filed.thread_ts)
    assert local.slack.wait_for(lambda s: len(posted(s, thread=thread)) > replies)


def test_a_second_report_repair_press_answers_only_the_person(local: LocalSlack) -> None:
    """A repeat press of "Report repair" changes nothing, so its answer goes to the person who pressed it alone, as
    every other repeat press's does; the thread keeps the one public "is verifying"."""
    filed = _file(local)
    _report(local, filed)
    thread = filed.thread_ts or filed.ts
    public = len(posted(local.slack, thread=thread))
    (repair,) = buttons(filed)
    local.injector.action(repair, user="UBOB", channel=OPS, message_ts=filed.ts, thread_ts=filed.thread_ts)
    assert local.slack.wait_for(lambda s: any("already verifying" in m.text for m in private(s, "UBOB"))
                                or len(posted(s, thread=thread)) > public, timeout=LONG_WAIT)
    assert len(posted(local.slack, thread=thread)) == public
    assert any("already verifying" in m.text for m in private(local.slack, "UBOB"))


def test_a_draft_click_on_a_part_whose_ticket_is_verifying_says_so(local: LocalSlack) -> None:
    """The part's ticket was repaired and waits for its soak: a Draft press says the ticket is verifying its
    repair, and since when, as `fabricbot tickets` lists it, not that it is open."""
    filed = _file(local)
    _report(local, filed)
    (ticket,) = [t for t in local.tracker.tickets() if t.status == "verifying"]  # type: ignore[attr-defined]
    summary = summary_for(local, "hpc-gpu-node-12")
    (draft,) = buttons(summary)
    local.injector.action(draft, user="UBOB", channel=OPS, message_ts=summary.ts)
    assert local.slack.wait_for(lambda s: any(ticket.id in m.text for m in posted(s, thread=summary.ts)),
                                timeout=LONG_WAIT)
    said = next(m.text for m in posted(local.slack, thread=summary.ts) if "is verifying its repair" in m.text)
    assert ticket.id in said and "already open" not in said
    # the button says the ticket ("Add to FAB-0001: ..."); the notice names the part it drafts, as before
    assert draft["text"]["text"].startswith(f"Add to {ticket.id}: ")
    notice = next(str(c.params.get("text")) for c in local.slack.calls_to("chat.postMessage")
                  if "Drafting the ticket for" in str(c.params.get("text")))
    assert f"Drafting the ticket for {esc(ticket.component)}…" in notice, notice
    assert fmt.when(datetime.fromisoformat(str(ticket.repaired_at))) in said


def test_a_ticket_verify_closes_loses_its_report_repair_button(local: LocalSlack,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """`/fabric verify` closes a ticket whose repair held: the message that filed it is updated in place, its
    "Report repair" button gone (pressing it could only be refused) and the close said, the rest kept."""
    filed = _file(local)
    _report(local, filed)
    assert local.app is not None

    def held(*, node_id: str, parts: list[str], repaired_at: datetime, **_: Any) -> RepairCheck:
        return RepairCheck(node_id=node_id, parts=parts, repaired_at=repaired_at, checked_to=repaired_at,
                           soak_hours=24, windows=24, covered=24, verdict=RepairVerdict.HELD)

    monkeypatch.setattr(local.app.services.source, "repair_check", held)  # its readings since said clean
    edits = local.slack.find(filed.ts).edits  # type: ignore[union-attr]
    said = _say(local, "verify", user="UBOB")
    assert "closed" in said.text
    after = local.slack.find(filed.ts)
    assert after is not None and after.edits == edits + 1
    assert buttons(after) == [] and "is closed: its repair was verified" in after.shown_blocks
    assert "Filed as" in after.text and all(b in after.blocks for b in filed.blocks if b["type"] != "actions")
    _say(local, "verify", user="UBOB")  # nothing more to close: the message is left alone
    assert local.slack.find(filed.ts).edits == edits + 1  # type: ignore[union-attr]


def test_a_ticket_closed_from_the_command_line_loses_its_button_when_pressed(local: LocalSlack) -> None:
    """A ticket closed where no Slack client was at hand (`fabricbot tickets verify`) keeps its button until it is
    pressed: the press is refused, saying the ticket is closed, and the message loses the button."""
    filed = _file(local)
    _report(local, filed)
    (ticket,) = [t for t in local.tracker.tickets() if t.status == "verifying"]  # type: ignore[attr-defined]
    local.tracker.close(ticket.id, actor="fabricbot", evidence=["the repair held"])  # type: ignore[attr-defined]
    (repair,) = buttons(filed)
    local.injector.action(repair, user="UALICE", channel=OPS, message_ts=filed.ts, thread_ts=filed.thread_ts)
    assert local.slack.wait_for(lambda s: any("is closed" in m.text for m in private(s, "UALICE")))
    assert local.slack.wait_for(lambda s: buttons(s.find(filed.ts) or filed) == [])
    assert "is closed: its repair was verified" in (local.slack.find(filed.ts) or filed).shown_blocks


def test_the_daily_digest_posts_at_its_time_of_day(local: LocalSlack) -> None:
    from datetime import UTC, datetime

    from bot.schedule import DigestSchedule
    from diagnostics import InputError

    assert local.app is not None
    with pytest.raises(InputError, match="HH:MM"):
        DigestSchedule(local.app.services, local.app.client, at="8 am", channel=OPS)
    ticks = iter([datetime(2026, 9, 17, 7, 59, 59, 900000, tzinfo=UTC)] * 2 + [datetime(2026, 9, 17, 8, 0, 1,
                                                                                        tzinfo=UTC)] * 50)
    before = len(posted(local.slack))
    schedule = DigestSchedule(local.app.services, local.app.client, at="08:00", channel=OPS,
                              now=lambda: next(ticks)).start()
    try:
        assert local.slack.wait_for(lambda s: len(posted(s)) > before)
    finally:
        schedule.stop()
    assert posted(local.slack)[before].text.startswith("*Fabric digest for")
    assert [e["detail"]["command"] for e in local.audit.entries("command")][-1] == "daily digest"


def test_the_digest_is_off_unless_both_settings_are_given() -> None:
    notes = Settings(digest_at="08:00").startup_notes()
    assert any("needs both FABRICBOT_DIGEST_AT and FABRICBOT_DIGEST_CHANNEL" in n for n in notes)
    on = Settings.from_env({"FABRICBOT_DIGEST_AT": "08:00", "FABRICBOT_DIGEST_CHANNEL": "COPS"})
    assert (on.digest_at, on.digest_channel) == ("08:00", "COPS")
    assert any("daily digest: posted to COPS at 08:00 UTC" in n for n in on.startup_notes())


def test_only_those_who_may_file_may_set_planned_work_or_verify(local: LocalSlack) -> None:
    def refused(s: Any) -> int:
        return sum("limited to the on-call" in m.text for m in private(s, "UMALLORY"))

    for n, text in enumerate(("maintenance hpc-gpu-node-07 2h quiet please", "verify"), start=1):
        assert local.injector.command(text, user="UMALLORY", channel=OPS).status == 200
        assert local.slack.wait_for(lambda s, n=n: refused(s) >= n)
    assert local.app is not None
    assert local.app.services.source.maintenance().windows("hpc-gpu-node-07") == []
    assert [e["detail"]["reason"] for e in local.audit.entries("denied")] == [
        "not allowed to change planned work or tickets"] * 2
    listed = _say(local, "maintenance", user="UMALLORY")  # reading the list is anyone's
    assert "No node is in maintenance" in listed.text


def test_verify_of_many_repairs_lists_some_and_counts_the_rest(local: LocalSlack) -> None:
    assert local.app is not None
    source = local.app.services.source
    node = "hpc-gpu-node-12"
    links = source.diagnose(node).findings[:40]
    for f in links:  # forty links of one node, each repaired just now: nothing read since, each still verifying
        filed = local.tracker.file(node_id=node, component=f.component, slug=f.ref.slug,  # type: ignore[attr-defined]
                                   title=f"{node}: {f.component}", body=f"# {node}: {f.component}", priority="high",
                                   actor="UDAVE", evidence=[], parts=[f.ref.slug])
        now = local.app.services.clock().isoformat(timespec="seconds")
        local.tracker.report_repair(filed.ticket.id, actor="UDAVE", at=now)  # type: ignore[attr-defined]
    said = _say(local, "verify", user="UBOB")
    lines = said.text.splitlines()
    assert lines[0] == "*Repairs verified*" and len(lines) == 17
    assert lines[-1] == f"… and {len(links) - 15} more ({len(links) - 15} still verifying; `fabricbot tickets list` " \
                        "shows each)"


def _previews(local: LocalSlack, summary: Message, count: int) -> list[Message]:
    """The summary's draft previews once `count` of them are posted (each with its File button)."""
    def ready(s: Any) -> list[Message]:
        return [m for m in posted(s, thread=summary.ts) if any(b["action_id"] == "file_ticket" for b in buttons(m))]
    assert local.slack.wait_for(lambda s: len(ready(s)) >= count, timeout=LONG_WAIT)
    return ready(local.slack)


def _approve(local: LocalSlack, preview: Message, user: str = "UBOB") -> Message:
    (file_button,) = [b for b in buttons(preview) if b["action_id"] == "file_ticket"]
    local.injector.action(file_button, user=user, channel=OPS, message_ts=preview.ts, thread_ts=preview.thread_ts)
    assert local.slack.wait_for(lambda s: ":link:" in (s.find(preview.ts) or preview).text
                                or "Filed as" in (s.find(preview.ts) or preview).text, timeout=LONG_WAIT)
    found = local.slack.find(preview.ts)
    assert found is not None
    return found


def test_approving_a_draft_whose_part_s_ticket_is_verifying_is_told_so_in_sentences(local: LocalSlack) -> None:
    """Two drafts of one part: the first filed and its repair reported, the second approved joins that ticket; the
    reply says whose ticket it is, that it is verifying its repair and since when, and where the evidence went."""
    summary = summary_for(local, "hpc-gpu-node-12")
    (draft,) = buttons(summary)
    local.injector.action(draft, user="UALICE", channel=OPS, message_ts=summary.ts)
    (first,) = _previews(local, summary, 1)
    again = summary_for(local, "hpc-gpu-node-12", user="UBOB")  # a second `/fabric`: its own preview of the part
    (other,) = buttons(again)
    local.injector.action(other, user="UBOB", channel=OPS, message_ts=again.ts)
    (second,) = _previews(local, again, 1)
    filed = _approve(local, first)
    _report(local, filed)
    (ticket,) = [t for t in local.tracker.tickets() if t.status == "verifying"]  # type: ignore[attr-defined]
    joined = _approve(local, second, user="UALICE")
    since = fmt.when(datetime.fromisoformat(str(ticket.repaired_at)))
    assert joined.text == (f":link: *{ticket.id}* (filed by <@UBOB>) is verifying its repair (repaired {since} by "
                           f"<@UALICE>). <@UALICE>'s approval added this evidence to it.")


def test_a_verb_is_read_in_any_case_as_slack_users_type_it() -> None:
    assert parse("Fleet") == Request("fleet") and parse("JOB 4411") == Request("job", "4411")
    assert parse("Watch node-7") == Request("watch", "node-7")
    assert parse("Node-7") == Request("node", "Node-7")  # a node's name is kept as typed: the source matches it
