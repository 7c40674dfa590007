"""Jobs, mentions and pasted tool output, on a small synthetic fleet through the local transport."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from bot.listeners.mentions import HOW
from bot.nodes import NodeSource, TableNodeSource
from bot.transport.local import LocalSlack
from diagnostics import Diagnosis, Severity
from diagnostics.analysis.steps import jobs_on
from diagnostics.service import TableSource
from diagnostics.synth.fleet import build
from diagnostics.synth.rack_fleet import build_racks
from diagnostics.tickets import ClaudeAnswerer
from tests.tickets.test_answers import answering_model

from .helpers import OPS, local_bot, posted, summary_for


@pytest.fixture(scope="module")
def fleet() -> TableNodeSource:
    tables, truth = build(nodes=12, hours=3)
    return TableNodeSource(tables, {n: v["platform"] for n, v in truth["nodes"].items()})


def _paste(gpu2_link1: tuple[int, int, int], at: str | None = None) -> str:
    """`nvidia-smi nvlink -e` of 4 GPUs, GPU 2 link 1 counting; `at`: a `date` line stating when it was read."""
    replay, recovery, crc = gpu2_link1
    lines = ["```", *(["$ date -Is", at] if at else []), "$ nvidia-smi nvlink -e"]
    for gpu in range(4):
        lines.append(f"GPU {gpu}: NVIDIA H100 80GB HBM3 (UUID: GPU-0000000{gpu}-0000-0000-0000-000000000000)")
        for link in range(2):
            hit = (gpu, link) == (2, 1)
            lines += [f"         Link {link}: Replay Errors: {replay if hit else 0}",
                      f"         Link {link}: Recovery Errors: {recovery if hit else 0}",
                      f"         Link {link}: CRC Errors: {crc if hit else 0}", ""]
    return "\n".join([*lines, "```"])


def test_job_command_names_the_node_and_link(fleet: TableNodeSource) -> None:
    with local_bot(source=fleet) as local:
        local.injector.command("job 4411", user="UALICE", channel=OPS)
        assert local.slack.wait_for(lambda s: posted(s))
        text = posted(local.slack)[0].shown_blocks
        assert "Job 4411: hpc-gpu-node-12" in text
        assert "GPU 2 -> GPU 3 NVLink 1" in text and "explains job 4411" in text
        local.injector.command("job 9999", user="UALICE", channel=OPS)
        assert local.slack.wait_for(lambda s: s.calls_to("response_url"))
        assert "job called `9999`" in local.slack.calls_to("response_url")[0].params["text"]


def test_a_mention_asking_about_a_job_is_answered_in_its_thread(fleet: TableNodeSource) -> None:
    with local_bot(source=fleet) as local:
        question = local.injector.mention("why is job 4411 slow?", user="UBOB", channel=OPS)
        assert question.status == 200
        assert local.slack.wait_for(lambda s: posted(s, thread=question.ts))
        answer = posted(local.slack, thread=question.ts)[0].shown
        assert answer.startswith("Job 4411: `hpc-gpu-node-12` has a failing GPU 2 -> GPU 3 NVLink 1")
        slowdown = re.search(r"step time is \+(\d+\.\d)%", answer)
        assert slowdown is not None and float(slowdown[1]) > 50 and "urgent" in answer
        assert [e["kind"] for e in local.audit.entries()][:2] == ["mention", "analysis"]


def test_a_mention_naming_a_node_answers_and_offers_the_tickets(fleet: TableNodeSource) -> None:
    with local_bot(source=fleet) as local:
        question = local.injector.mention("what is wrong with hpc-gpu-node-12?", user="UBOB", channel=OPS)
        assert local.slack.wait_for(lambda s: len(posted(s, thread=question.ts)) >= 2)
        answer, summary = posted(local.slack, thread=question.ts)[:2]
        assert "GPU 2 -> GPU 3 NVLink 1" in answer.shown
        assert any(b["type"] == "actions" for b in summary.blocks)
        other = local.injector.mention("and hpc-gpu-nod-3?", user="UBOB", channel=OPS)
        assert local.slack.wait_for(lambda s: posted(s, thread=other.ts))
        assert "Did you mean `hpc-gpu-node-03`" in posted(local.slack, thread=other.ts)[0].text


@pytest.mark.parametrize(("asked", "command"), [("what is wrong with hpc-gpu-node-99?", "hpc-gpu-node-99"),
                                                ("why is job 9999 slow?", "job 9999")])
def test_a_mention_of_a_name_the_source_does_not_hold_answers_as_the_slash_command(
        fleet: TableNodeSource, asked: str, command: str) -> None:
    """A node or job the source does not hold: the mention says what `/fabric` says, not the generic help."""
    with local_bot(source=fleet) as local:
        question = local.injector.mention(asked, user="UBOB", channel=OPS)
        assert local.slack.wait_for(lambda s: posted(s, thread=question.ts))
        mentioned = posted(local.slack, thread=question.ts)[0].text
        local.injector.command(command, user="UALICE", channel=OPS)
        assert local.slack.wait_for(lambda s: s.calls_to("response_url"))
        assert mentioned == local.slack.calls_to("response_url")[0].params["text"]
        assert "Ask me about" not in mentioned and command.split()[-1] in mentioned


def _paste_reply(local: LocalSlack, thread: str, counts: tuple[int, int, int], at: str, nth: int) -> str:
    """Paste a reading of those counts taken `at` in the thread; the bot's `nth` reply there."""
    local.injector.message(_paste(counts, at), user="UALICE", channel=OPS, thread_ts=thread)
    assert local.slack.wait_for(lambda s: len(posted(s, thread=thread)) >= nth)
    return posted(local.slack, thread=thread)[-1].shown


def test_a_pasted_lifetime_reading_gets_totals_then_rates_from_a_second_paste() -> None:
    with local_bot() as local:
        root = summary_for(local, "hpc-gpu-node-12")
        first = _paste_reply(local, root.ts, (9000, 2, 45000), "2026-03-02T10:00:00+00:00", 1)
        assert "lifetime totals" in first and "not rates" in first
        assert ("GPU 2 NVLink 1 -> NVSwitch 0 port 9: replays 9,000, recoveries 2, CRC errors 45,000 since reset\n"
                "7 of 8 links show no errors") in first
        assert "again in a few minutes" in first
        # ten minutes later (a rate needs readings at least a minute apart: `[rate] min_interval_s`)
        second = _paste_reply(local, root.ts, (12000, 2, 60000), "2026-03-02T10:10:00+00:00", 2)
        assert second.startswith("Rates over the 10 minutes") and "GPU 2" in second


def test_chatter_in_a_thread_is_left_alone() -> None:
    with local_bot() as local:
        root = summary_for(local, "hpc-gpu-node-12")
        local.injector.message("thanks, looking now\nwill update", user="UALICE", channel=OPS, thread_ts=root.ts)
        local.injector.message("ok", user="UBOB", channel=OPS, thread_ts=root.ts)
        assert not local.slack.wait_for(lambda s: posted(s, thread=root.ts), timeout=1.0)


def test_a_snippet_file_is_downloaded_with_the_bot_token_and_read() -> None:
    with local_bot() as local:
        root = summary_for(local, "hpc-gpu-node-12")
        body = _paste((500, 0, 2500)).replace("```", "")
        local.injector.snippet(body, "nvlink-e.txt", user="UALICE", channel=OPS, thread_ts=root.ts)
        assert local.slack.wait_for(lambda s: posted(s, thread=root.ts))
        reply = posted(local.slack, thread=root.ts)[0].shown
        assert "GPU 2 NVLink 1 -> NVSwitch 0 port 9: replays 500, CRC errors 2,500 since reset" in reply
        assert local.slack.calls_to("url_private")  # fetched from Slack, authorized by the bot token


def test_the_fleet_view_explains_each_job_once_and_matches_node_by_node(fleet: TableNodeSource,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import diagnostics.analysis.jobs as engine

    calls: list[str] = []
    real = engine.job_slowdown

    def counted(steps, job_id, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(job_id)
        return real(steps, job_id, **kwargs)

    monkeypatch.setattr(engine, "job_slowdown", counted)
    together = fleet.sweep().diagnoses  # `/fabric fleet`: every node by one engine pass, offending ones kept
    steps = fleet.source.tables["step_samples"]
    assert sorted(calls) == sorted(set(calls)) and len(calls) == len({j for n in fleet.node_ids()
                                                                      for j in jobs_on(steps, n)[:1]})

    def flagged(d: Diagnosis) -> dict[str, object]:  # a fleet keeps findings for flagged links only (and says so),
        # and one node's view alone carries the series for its correlation picture
        return d.model_copy(update={"findings": [f for f in d.findings if f.severity is not Severity.OK],
                                    "evidence": None, "lists_every_link": None}).model_dump()

    one_by_one = {n: fleet.diagnose(n) for n in together}
    assert together and {n: flagged(d) for n, d in together.items()} == {n: flagged(d) for n, d in one_by_one.items()}


def test_a_mention_gets_the_model_answer_in_its_thread() -> None:
    model, _ = answering_model("hpc-gpu-node-12: GPU 2 -> GPU 3 NVLink 1 is failing; step time +89.2%.")
    with local_bot(answerer=ClaudeAnswerer(model=model)) as local:
        asked = local.injector.mention("what is wrong with hpc-gpu-node-12?", user="UBOB", channel=OPS)
        assert local.slack.wait_for(lambda s: posted(s, thread=asked.ts))
        text = posted(local.slack, thread=asked.ts)[0].shown
        assert text.startswith("hpc-gpu-node-12: GPU 2 -> GPU 3 NVLink 1 is failing")
        assert "answered by test-claude from the analysis" in text


def test_two_pastes_seconds_apart_are_told_they_are_too_close_for_a_rate() -> None:
    with local_bot() as local:
        root = summary_for(local, "hpc-gpu-node-12")
        _paste_reply(local, root.ts, (9000, 2, 45000), "2026-03-02T10:00:00+00:00", 1)
        second = _paste_reply(local, root.ts, (9001, 2, 45003), "2026-03-02T10:00:05+00:00", 2)
        assert "could not compute rates" in second and "5 s apart" in second and "at least 60 s" in second
        assert "no fabric fault" not in second


def test_a_mention_naming_a_node_records_the_job_its_diagnosis_names(fleet: TableNodeSource) -> None:
    with local_bot(source=fleet) as local:
        question = local.injector.mention("what is wrong with hpc-gpu-node-12?", user="UBOB", channel=OPS)
        assert local.slack.wait_for(lambda s: len(posted(s, thread=question.ts)) >= 2)
        named = fleet.diagnose("hpc-gpu-node-12").job_id
        (entry,) = [e for e in local.audit.entries("analysis") if e["subject"] == "hpc-gpu-node-12"]
        assert named is not None and entry["detail"]["job"] == named


@pytest.mark.parametrize("asked", ["is the x-1 job slow?", "see GB200-NVL72", "what is wrong with node 4?"])
def test_a_mention_naming_no_node_is_told_how_to_ask(fleet: TableNodeSource, asked: str) -> None:
    """A word with a hyphen and a digit that no node's name is near names no node: the mention gets the help."""
    with local_bot(source=fleet) as local:
        question = local.injector.mention(asked, user="UBOB", channel=OPS)
        assert local.slack.wait_for(lambda s: posted(s, thread=question.ts))
        assert posted(local.slack, thread=question.ts)[0].text == HOW


def test_a_mention_naming_a_rack_is_answered_for_the_rack_as_the_slash_command_answers() -> None:
    """A rack's name is known to the source though no host's name is near it (`pod7` over `rack-01-c01`...), so a
    mention of it is answered for the rack, as `/fabric pod7` is."""
    tables, _, slots, platforms = build_racks(seed=4, racks=1, hours=1, scenarios=["switch_tray"])
    racks = {host: replace(slot, rack="pod7") for host, slot in slots.items()}
    with local_bot(source=NodeSource(TableSource(tables, platforms=platforms, racks=racks))) as local:
        question = local.injector.mention("what is wrong with pod7?", user="UBOB", channel=OPS)
        assert local.slack.wait_for(lambda s: posted(s, thread=question.ts))
        local.injector.command("pod7", user="UALICE", channel=OPS)
        assert local.slack.wait_for(lambda s: len(list(local.audit.entries("analysis"))) >= 2)
        mentioned, commanded = list(local.audit.entries("analysis"))[:2]
        assert mentioned["subject"] == commanded["subject"] == "pod7"


def test_a_mention_of_a_healthy_node_records_no_component_as_the_slash_command_records(
        fleet: TableNodeSource) -> None:
    """A node with no fault has no isolated component: its analysis record names none, through either door."""
    healthy = "hpc-gpu-node-03"
    assert not fleet.diagnose(healthy).fault_detected
    with local_bot(source=fleet) as local:
        question = local.injector.mention(f"what is wrong with {healthy}?", user="UBOB", channel=OPS)
        assert local.slack.wait_for(lambda s: posted(s, thread=question.ts))
        local.injector.command(healthy, user="UALICE", channel=OPS)
        assert local.slack.wait_for(lambda s: len(list(local.audit.entries("analysis"))) >= 2)
        mentioned, commanded = list(local.audit.entries("analysis"))[:2]
        assert mentioned["detail"]["component"] is None
        assert mentioned["detail"] == commanded["detail"] and mentioned["subject"] == commanded["subject"] == healthy
