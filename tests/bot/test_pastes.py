"""Pasted tool output within bounds (lines, file size and type, the file host, how many readings are kept), and
answered as the file door answers it."""

from __future__ import annotations

import re
import time

import pytest

import bot.pastes as pastes
from bot.mrkdwn import esc
from bot.transport.blockkit import shown
from bot.transport.local import LocalSlack
from diagnostics.ingest import Source
from diagnostics.service import Request, diagnose, files_source
from diagnostics.tickets import rules_answer
from tests.conftest import FIXTURES

from .helpers import OPS, local_bot, posted, summary_for
from .test_mentions import _paste


def _reply(local: LocalSlack, thread: str, n: int = 1) -> str:
    assert local.slack.wait_for(lambda s: len(posted(s, thread=thread)) >= n), posted(local.slack, thread=thread)
    return posted(local.slack, thread=thread)[n - 1].shown


def test_a_paste_over_the_line_cap_is_refused_with_the_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pastes, "MAX_LINES", 30)
    with local_bot() as local:
        root = summary_for(local, "hpc-gpu-node-12")
        local.injector.message(_paste((9000, 2, 45000)), user="UALICE", channel=OPS, thread_ts=root.ts)
        reply = _reply(local, root.ts)
        assert "That paste is 37 lines; I read at most 30." in reply and "one command's output" in reply
        assert local.audit.db[pastes.PASTES].count == 0
        (denied,) = local.audit.entries("denied")
        assert denied["actor"] == "UALICE" and "37 lines" in denied["detail"]["reason"]


def test_a_file_over_the_size_cap_is_not_downloaded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pastes, "MAX_FILE_BYTES", 1000)
    with local_bot() as local:
        root = summary_for(local, "hpc-gpu-node-12")
        local.injector.snippet(_paste((1, 0, 5)).replace("```", "") + "\n" * 2000, "nvlink-e.txt", user="UALICE",
                               channel=OPS, thread_ts=root.ts)
        reply = _reply(local, root.ts)
        assert "`nvlink-e.txt` is 3,152 bytes; I read text files up to 1,000 bytes" in reply
        assert not local.slack.calls_to("url_private")  # refused on its declared size: never fetched


def test_a_file_that_lies_about_its_size_is_read_no_further_than_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pastes, "MAX_FILE_BYTES", 1000)
    with local_bot() as local:
        root = summary_for(local, "hpc-gpu-node-12")
        ts, file = local.slack.user_file("nvlink-e.txt", b"x" * 5000, OPS, "UALICE", root.ts)
        local.injector.event({"type": "message", "subtype": "file_share", "user": "UALICE", "text": "", "ts": ts,
                              "channel": OPS, "thread_ts": root.ts, "files": [{**file, "size": 10}]})
        assert "`nvlink-e.txt` is over 1,000 bytes" in _reply(local, root.ts)


def test_a_shared_text_file_no_reader_can_read_gets_a_reply_that_says_why() -> None:
    headers = "".join(f"# HELP DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL link {i}\n" for i in range(19_999))
    with local_bot() as local:
        root = summary_for(local, "hpc-gpu-node-12")
        local.injector.snippet("x" * 1_999_000, "one-line.txt", user="UALICE", channel=OPS, thread_ts=root.ts)
        one_line = _reply(local, root.ts)
        assert "I could not read `one-line.txt` (1 line, the longest 1,999,000 characters): it is no output I read" \
            in one_line and "--format" not in one_line
        local.injector.snippet(headers, "metrics.prom", user="UALICE", channel=OPS, thread_ts=root.ts)
        said = _reply(local, root.ts, 2)
        assert "I could not read `metrics.prom` (19,999 lines" in said and "announced but no samples follow" in said
        assert [e["detail"]["reason"][:30] for e in local.audit.entries("denied")] == [
            "I could not read `one-line.txt", "I could not read `metrics.prom"]
        ts, good = local.slack.user_file("nvlink-e.txt", _paste((1, 0, 5)).replace("```", "").encode(), OPS,
                                         "UALICE", root.ts)
        _, bad = local.slack.user_file("notes.txt", b"just words\nof a person\n", OPS, "UALICE", root.ts)
        local.injector.event({"type": "message", "subtype": "file_share", "user": "UALICE", "text": "", "ts": ts,
                              "channel": OPS, "thread_ts": root.ts, "files": [good, bad]})
        both = _reply(local, root.ts, 3)  # what could be read is answered, and the file that could not is named
        assert "lifetime totals" in both and "I could not read `notes.txt` (2 lines" in both


def test_a_message_that_holds_no_tool_output_is_chat_and_gets_no_reply() -> None:
    with local_bot() as local:
        root = summary_for(local, "hpc-gpu-node-12")
        local.injector.message("looking at it now\nwill swap the riser after lunch", user="UALICE", channel=OPS,
                               thread_ts=root.ts)
        assert not local.slack.wait_for(lambda s: posted(s, thread=root.ts), timeout=1.0)


def test_pictures_binaries_and_foreign_hosts_are_left_alone() -> None:
    with local_bot() as local:
        root = summary_for(local, "hpc-gpu-node-12")
        local.injector.snippet("not a png", "board.png", user="UALICE", channel=OPS, thread_ts=root.ts)
        local.injector.snippet("\0\1\2 binary\nmore", "dump.log", user="UALICE", channel=OPS, thread_ts=root.ts)
        ts, file = local.slack.user_file("nvlink-e.txt", _paste((1, 0, 5)).encode(), OPS, "UALICE", root.ts)
        foreign = {**file, "url_private": "https://evil.example/x", "url_private_download": "https://evil.example/x"}
        local.injector.event({"type": "message", "subtype": "file_share", "user": "UALICE", "text": "", "ts": ts,
                              "channel": OPS, "thread_ts": root.ts, "files": [foreign]})
        assert not local.slack.wait_for(lambda s: posted(s, thread=root.ts), timeout=1.0)
        fetched = [c.params["file_id"] for c in local.slack.calls_to("url_private")]
        assert len(fetched) == 1 and file["id"] not in fetched  # the binary .log only: no picture, no other host


def test_stored_readings_are_one_per_thread_and_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pastes, "MAX_STORED", 2)
    with local_bot() as local:
        roots = [summary_for(local, node) for node in ("hpc-gpu-node-12", "hpc-gpu-node-03", "hpc-gpu-node-12")]
        for n, root in enumerate(roots):
            local.injector.message(_paste((100 * (n + 1), 0, 5)), user="UALICE", channel=OPS, thread_ts=root.ts)
            _reply(local, root.ts)
        local.injector.message(_paste((900, 0, 5)), user="UALICE", channel=OPS, thread_ts=roots[2].ts)
        second = _reply(local, roots[2].ts, 2)  # compared with the thread's stored reading (seconds apart: no rate)
        assert second.startswith("I could not compute rates") and "a rate needs readings at least 60 s apart" in second
        kept = list(local.audit.db[pastes.PASTES].rows)
        assert len(kept) == 2 and sorted(r["thread_ts"] for r in kept) == sorted([roots[1].ts, roots[2].ts])


def test_a_paste_in_a_thread_that_mentions_someone_is_read() -> None:
    with local_bot() as local:
        root = summary_for(local, "hpc-gpu-node-12")
        local.injector.message("<@UBOB> here is the output\n" + _paste((9000, 2, 45000)), user="UALICE", channel=OPS,
                               thread_ts=root.ts)
        assert "lifetime totals" in _reply(local, root.ts)
        assert local.audit.db[pastes.PASTES].count == 1


def _real(name: str) -> str:
    """A real output as a person pastes it: without the fixture's source lines."""
    text = (FIXTURES / "real" / name).read_text(encoding="utf-8")
    return "\n".join(line for line in text.splitlines() if not line.startswith(("# source:", "# note:")))


def _file_door(name: str, node: str) -> str:
    """What `fabricbot analyze FILE --node NODE` answers of the same output."""
    source, node, _ = files_source([Source.from_text(_real(name), name=name)], node=node)
    return shown(esc(rules_answer(diagnose(source, Request(node=node)).diagnosis)))


@pytest.mark.parametrize("name", ["kernel_xid79_sxid20034_gpud_1.txt", "smi_q_fabric_unhealthy_1.txt",
                                  "nvlink_e_v100_short_form_dated_2.txt"])
def test_a_paste_of_events_or_of_two_readings_is_answered_as_analyze_file_answers_it(name: str) -> None:
    with local_bot() as local:
        root = summary_for(local, "hpc-gpu-node-12")
        local.injector.message(_real(name), user="UALICE", channel=OPS, thread_ts=root.ts)
        reply = _reply(local, root.ts)
    expected = _file_door(name, "hpc-gpu-node-12")  # the node of the thread it was pasted in
    assert reply.splitlines()[0] == expected, (reply, expected)
    assert "pasted node" not in reply
    assert "nothing to rate" not in reply and "lifetime totals" not in reply
    said = {"kernel_xid79_sxid20034_gpud_1.txt": "Priority urgent",  # a GPU off the bus, fatal SXids
            "smi_q_fabric_unhealthy_1.txt": "fabric health summary is 'Unhealthy': none of the Health fields read",
            "nvlink_e_v100_short_form_dated_2.txt": "CRC errors 84,526/h > 100/h (crc). Priority medium"}[name]
    assert said in reply, reply


@pytest.mark.parametrize("name", ["nccl_allreduce_1.txt", "nccl_topo_1.txt"])
def test_a_paste_of_no_link_counter_is_answered_as_analyze_file_answers_it_not_by_its_table_names(name: str) -> None:
    """An nccl-tests run or an NCCL topology pasted in a node's thread was answered "I read that (3 step_samples)
    but it holds no link counters": the table's name, and none of what `analyze FILE` says of it (a bus bandwidth's
    verdict, the board it tells)."""
    with local_bot() as local:
        root = summary_for(local, "hpc-gpu-node-12")
        local.injector.message(_real(name), user="UALICE", channel=OPS, thread_ts=root.ts)
        reply = _reply(local, root.ts)
    named = {"nccl_allreduce_1.txt": "a4bae1424041"}.get(name, "hpc-gpu-node-12")  # its `# Rank` lines' host
    assert reply.splitlines()[0] == _file_door(name, named), reply
    other = f"the paste names {named}, not this thread's node hpc-gpu-node-12: answered for {named}"
    assert (other in reply) == (named != "hpc-gpu-node-12"), reply
    assert not re.search(r"\b(step_samples|topology|link_samples|events)\)", reply), reply


def test_a_paste_naming_another_host_than_its_threads_node_says_so() -> None:
    """A kernel log of dgx01 pasted in hpc-gpu-node-12's thread was answered "Drain node dgx01" with no word that it
    is not the thread's node; so were another host's `nvlink -e` totals. The reply says it first."""
    xid = "\n".join(f"2026-03-01T11:30:0{i}+00:00 dgx01 kernel: NVRM: Xid (PCI:0000:{bus}:00): 79, pid=1, name=x, "
                    "GPU has fallen off the bus." for i, bus in enumerate(("18", "2a")))
    totals = "\n".join(f"dgx01: {line}" for line in _real("nvlink_e_v100_short_form_1.txt").splitlines()
                       if not line.startswith("#"))
    own = xid.replace(" dgx01 ", " hpc-gpu-node-12 ")  # a paste of the thread's own node: no such word
    for text, said in ((xid, True), (totals, True), (own, False)):
        with local_bot() as local:
            root = summary_for(local, "hpc-gpu-node-12")
            local.injector.message(text, user="UALICE", channel=OPS, thread_ts=root.ts)
            reply = _reply(local, root.ts)
        named = reply.startswith("_The paste names dgx01, not this thread's node hpc-gpu-node-12: answered for it._")
        assert named == said and ("The paste names" in reply) == said, reply


def test_a_paste_that_holds_nothing_to_judge_says_so_and_what_reading_it_said() -> None:
    """Fabric Manager saying NV_WARN_NOTHING_TO_DO holds no counter, event or run: the reply says so in words (it
    said "I read that ()") and keeps what reading it said (what the message means)."""
    with local_bot() as local:
        root = summary_for(local, "hpc-gpu-node-12")
        local.injector.message(_real("fabricmanager_nothing_to_do_gpuop610_1.txt"), user="UALICE", channel=OPS,
                               thread_ts=root.ts)
        reply = _reply(local, root.ts)
    assert reply.startswith("I read that, but it holds no link counters, events or benchmark runs to judge."), reply
    assert "()" not in reply and "NV_WARN_NOTHING_TO_DO" in reply, reply


def test_a_paste_of_several_hosts_is_answered_for_one_and_names_the_others() -> None:
    """A kernel log of two hosts was answered "paste one node's output at a time", and a pdsh `nvlink -e` of several
    hosts was judged as its first host with no word of the others. Both are answered for the thread's node where it
    is one of the hosts, else the first, as `analyze FILE --node HOST` answers, and the others are named."""
    two = "\n".join(f"2026-03-01T11:30:00+00:00 {host} kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=1, name=x, "
                    "GPU has fallen off the bus." for host in ("gpu-a", "gpu-b"))
    block = [line for line in _real("nvlink_e_v100_short_form_1.txt").splitlines() if not line.startswith("#")]
    pdsh = "\n".join(f"{h}: {line}" for h in ("dgx01", "hpc-gpu-node-12", "dgx03") for line in block)
    with local_bot() as local:
        root = summary_for(local, "hpc-gpu-node-12")
        local.injector.message(two, user="UALICE", channel=OPS, thread_ts=root.ts)
        xid = _reply(local, root.ts)
        local.injector.message(pdsh, user="UALICE", channel=OPS, thread_ts=root.ts)
        totals = _reply(local, root.ts, 2)
        kept = [r["node_id"] for r in local.audit.db[pastes.PASTES].rows]
    assert xid.startswith("_The paste holds 2 hosts: I read gpu-a's (the first), not gpu-b's;"), xid
    source, node, _ = files_source([Source.from_text(two, name="two")], node="gpu-a")
    assert shown(esc(rules_answer(diagnose(source, Request(node=node)).diagnosis))) in xid, xid
    assert totals.startswith("_The paste holds 3 hosts: I read hpc-gpu-node-12's (this thread's node), not dgx01, "
                             "dgx03's;"), totals
    assert "lifetime totals since the counters were last reset on `hpc-gpu-node-12`" in totals, totals
    assert kept == ["hpc-gpu-node-12"]


def test_readings_on_two_clocks_are_not_rated_and_the_new_ones_totals_are_said() -> None:
    with local_bot() as local:
        root = summary_for(local, "hpc-gpu-node-12")
        local.injector.message(_paste((100, 0, 5), at="2026-03-01T11:00:00+00:00"), user="UALICE", channel=OPS,
                               thread_ts=root.ts)
        _reply(local, root.ts)
        local.injector.message(_paste((9000, 2, 45000)), user="UALICE", channel=OPS, thread_ts=root.ts)
        second = _reply(local, root.ts, 2)
    assert second.startswith("I could not compute rates from the two readings: the earlier reading carries its "
                             "own time"), second
    assert "their clocks differ" in second and "Rates over" not in second
    assert "lifetime totals since reset" in second and "replays 9,000" in second, second


def test_a_paste_of_link_states_only_asks_for_the_counters_and_is_not_kept_for_rates() -> None:
    with local_bot() as local:
        root = summary_for(local, "hpc-gpu-node-12")
        local.injector.message(_real("nvlink_s_b200_all_inactive_1.txt"), user="UALICE", channel=OPS,
                               thread_ts=root.ts)
        reply = _reply(local, root.ts)
        kept = local.audit.db[pastes.PASTES].count
    assert "holds link states and speeds only, no error counters" in reply and "0 of 18 links up" in reply, reply
    assert "GPU 2 NVLinks 0, 1, 2" in reply and "inactive" in reply and "paste `nvidia-smi nvlink -e`" in reply
    assert "lifetime totals" not in reply and "show no errors" not in reply and kept == 0


def _as_slack_sends(text: str, *, glued: bool) -> str:
    """A paste in a Slack code block, as the message event carries it: Slack writes the code right after the opening
    fence and the closing fence right after the code ("```first line\\n...last line```", vercel/chat #842), unless the
    person typed the fences on lines of their own."""
    return f"```{text}```" if glued else f"```\n{text}\n```"


@pytest.mark.parametrize("name", ["nvlink_s_v100_inactive_1.txt", "topo_m_hgx_h100_1.txt"])
def test_a_code_block_pasted_as_slack_sends_it_keeps_its_first_and_last_lines(name: str) -> None:
    """The lines glued to the fences are output too: a `topo -m` whose header row went with the fence was not read at
    all, an `nvlink -s` whose last link went with it was told one inactive link fewer."""
    replies = []
    for glued in (False, True):
        with local_bot() as local:
            root = summary_for(local, "hpc-gpu-node-12")
            local.injector.message(_as_slack_sends(_real(name), glued=glued), user="UALICE", channel=OPS,
                                   thread_ts=root.ts)
            replies.append(re.sub(r"(slack message [\d.]+):\d+:", r"\1:N:", _reply(local, root.ts)))
    assert replies[1] == replies[0], replies  # a warning's line number counts the fence lines of the first


def _autolinked(text: str, host: str) -> str:
    """A message's text as Slack's API gives it: a host name that looks like a domain is made a link,
    `<http://host|host>` (hubot-slack #181), and `<`, `>`, `&` typed by the person are escaped."""
    return esc(text).replace(host, f"<http://{host}|{host}>")


def test_a_host_name_slack_made_a_link_is_read_as_the_host() -> None:
    host = "gpu-a.cluster.example.com"
    log = "\n".join(f"2026-03-01T11:3{i}:00+00:00 {host} kernel: NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', "
                    "name=<unknown>, GPU has fallen off the bus." for i in range(2))
    replies = []
    for text in (esc(log), _autolinked(log, host)):
        with local_bot() as local:
            root = summary_for(local, "hpc-gpu-node-12")
            local.injector.message(text, user="UALICE", channel=OPS, thread_ts=root.ts)
            replies.append(_reply(local, root.ts))
    assert host in replies[0] and "http" not in replies[0], replies
    assert replies[1] == replies[0], replies


def test_a_paste_that_mentions_someone_keeps_what_slack_escaped_in_it() -> None:
    """`@bob the links:` above an `nvlink -s` arrives as `<@UBOB> the links:` over `Link 3: &lt;inactive&gt;`: the
    mention's brackets are no reason to read the escaped `<inactive>` as text, and lose the links down."""
    body = "\n".join(line for line in _real("nvlink_s_v100_inactive_1.txt").splitlines())
    with local_bot() as local:
        root = summary_for(local, "hpc-gpu-node-12")
        local.injector.message("<@UBOB> the links:\n" + esc(body), user="UALICE", channel=OPS, thread_ts=root.ts)
        reply = _reply(local, root.ts)
    assert "NVLinks 3, 5: inactive" in reply and "4 of 6 links up" in reply, reply


def test_a_mig_nodes_dcgmi_states_in_a_thread_are_not_counted_up() -> None:
    """`dcgmi nvlink -s` of a node in MIG mode: X links, whose state no one can judge (DCGM marks them disabled and
    its health check skips them); the thread once counted them among the links up."""
    status = "\n".join(["+----------------------+", "|  NvLink Link Status  |", "+----------------------+", "GPUs:",
                        "    gpuId 0:", "        " + " ".join("X" * 18), "    gpuId 1:",
                        "        " + " ".join("U" * 17 + "X"), "NvSwitches:", "    No NvSwitches found.", "",
                        "Key: Up=U, Down=D, Disabled=X, Not Supported=_"]) + "\n"
    with local_bot() as local:
        root = summary_for(local, "hpc-gpu-node-12")
        local.injector.message(status, user="UALICE", channel=OPS, thread_ts=root.ts)
        reply = _reply(local, root.ts)
    assert "17 of 36 links up, 19 of unknown state (not judged)" in reply, reply


def test_a_paste_right_after_its_summary_is_posted_is_of_the_summarys_node(monkeypatch: pytest.MonkeyPatch) -> None:
    """The summary is on Slack a moment before the bot has noted which analysis it shows: a paste in its thread in
    that moment was judged as an unnamed node's, not hpc-gpu-node-12's (a person is rarely that quick; a script is)."""
    from bot.posted import PostedAnalyses

    noted = PostedAnalyses.remember

    def slow(self: PostedAnalyses, channel: str, ts: str, analysis_id: int) -> None:
        time.sleep(0.5)
        noted(self, channel, ts, analysis_id)

    monkeypatch.setattr(PostedAnalyses, "remember", slow)
    with local_bot() as local:
        root = summary_for(local, "hpc-gpu-node-12")
        local.injector.message(_real("nvlink_s_v100_inactive_1.txt"), user="UALICE", channel=OPS,
                               thread_ts=root.ts)
        reply = _reply(local, root.ts)
    assert "hpc-gpu-node-12" in reply and pastes.PASTED_NODE not in reply, reply


def test_slack_mentions_come_back_as_the_person_typed_them() -> None:
    """A channel, a person, `@here` and a user group read as typed (`#ops`, `@bob`): the label alone dropped the
    `#` and the `@`."""
    assert pastes._unlinked("<#C123|ops> <@U1|bob> <@U2> <!here> <!subteam^S1|@oncall> <http://a.example|a.example>"
                            ) == "#ops @bob @U2 @here @oncall a.example"


def test_readings_with_no_time_in_a_thread_are_told_to_take_a_date_line_not_an_option() -> None:
    """Slack has no `--end`: a paste answered in a thread says how a person there gives its readings their time (a
    `date` line before the paste), where `fabricbot analyze` on the same output names its option too."""
    text = _real("nvlink_s_v100_inactive_1.txt")
    said = pastes.whole_answer([Source.from_text(text, name="slack message")], "pn")
    undated = next(line for line in said.splitlines() if "carry no time" in line)
    assert undated.endswith("(give the time with a `date` line before the paste)_"), undated
    assert "--end" not in said


def test_two_machines_outputs_pasted_as_one_are_not_read_as_one_node() -> None:
    """Two `nvidia-smi nvlink -s` outputs of one GPU model that name no host, in one paste: read as one reading, the
    second's link states stood over the first's, so the order decided whether a down link showed."""
    def status(card: str, down: tuple[int, int] | None = None) -> str:
        lines = []
        for gpu in range(8):
            lines.append(f"GPU {gpu}: NVIDIA A100-SXM4-80GB (UUID: GPU-{card * 8}-0000-0000-0000-00000000000{gpu})")
            lines += [f"\t Link {link}: " + ("<inactive>" if down == (gpu, link) else "25 GB/s") for link in range(12)]
        return "\n".join(lines) + "\n"

    with local_bot() as local:
        root = summary_for(local, "hpc-gpu-node-12")
        local.injector.message("```\n" + status("b", down=(3, 5)) + status("a") + "```", user="UALICE", channel=OPS,
                               thread_ts=root.ts)
        reply = _reply(local, root.ts)
    assert "could not judge it as one node's: two GPUs at one place: GPU 0 is GPU-bbbbbbbb" in reply, reply
    assert "two machines' outputs" in reply and "links up" not in reply


def test_a_paste_with_more_warnings_than_shown_shows_the_answers_caveats_before_the_readers_line_notes() -> None:
    """Six readings, each dated in an ambiguous zone (a line note each), of one GPU's links: the answer's own caveat
    (the readings cover only part of the window) was one of the warnings '…and N more' hid."""
    def reading(minute: int) -> str:
        links = "".join(f"\t Link {n}: Replay Errors: {minute * 10}\n\t Link {n}: Recovery Errors: 0\n"
                        f"\t Link {n}: CRC Errors: 0\n" for n in range(18))
        return (f"$ date\nMon Dec  7 10:{minute:02d}:01 PST 2026\n$ nvidia-smi nvlink -e\n"
                f"GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-abcdefab-cdef-abdc-abcd-ababababab00)\n{links}")
    said = pastes.whole_answer([Source.from_text("".join(reading(m) for m in range(0, 12, 2)), name="paste")], "pn")
    shown = [line for line in said.splitlines() if line.startswith("_warning: ")]
    assert len(shown) == pastes.WARNINGS_SHOWN and "more warnings" in said.splitlines()[-1]
    assert any("cover" in line and "of the 1 h window" in line for line in shown), shown
    assert shown[-1].count("stands for several zones") == 1
