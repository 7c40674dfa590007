"""`/fabric` through the local transport: ack first, then the summary, the picture and the buttons."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from bot.blocks import DraftTarget
from bot.drafting import render_png
from bot.nodes import NodeSource, SnapshotNodeSource
from bot.settings import Settings
from bot.state import BotState
from bot.transport.mock_slack import MockSlack
from diagnostics import Diagnosis
from diagnostics.service import TableSource
from diagnostics.synth.rack_fleet import build_racks

from .helpers import LONG_WAIT, OPS, SEEDS, buttons, local_bot, posted, summary_for


class SlowSource(SnapshotNodeSource):
    """The seed nodes, with an analysis that waits until the test lets it go (as a large store's takes a while)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.gate = threading.Event()

    def diagnose(self, node_id: str, *, window_hours: float | None = None) -> Diagnosis:
        self.gate.wait(timeout=LONG_WAIT)
        return super().diagnose(node_id, window_hours=window_hours)


def test_the_ack_arrives_before_the_work() -> None:
    """The ack comes while the analysis still runs (how fast: benchmarks/bench_slash.py)."""
    source = SlowSource(SnapshotNodeSource.from_files([SEEDS]).snapshots.values())
    with local_bot(source=source) as local:
        sent = local.injector.command("hpc-gpu-node-12", user="UALICE", channel=OPS)
        acked = time.monotonic()
        assert sent.status == 200 and "Looking at `hpc-gpu-node-12`" in sent.body
        assert not local.slack.calls_to("chat.postMessage")
        source.gate.set()
        assert local.slack.wait_for(lambda s: s.calls_to("chat.postMessage"), timeout=LONG_WAIT)
        assert local.slack.calls_to("chat.postMessage")[0].at > acked


def test_a_faulty_node_gets_a_summary_a_png_in_the_thread_and_a_draft_button() -> None:
    with local_bot(renderer=render_png) as local:
        summary = summary_for(local, "hpc-gpu-node-12")
        text = json.dumps(summary.blocks)
        for fact in ("GPU 2 -> GPU 3 NVLink 1", "+89.2%", "urgent", "Reseat high-speed mezzanine"):
            assert fact in text
        assert local.slack.wait_for(lambda s: s.calls_to("files.completeUploadExternal"))
        order = [c.method for c in local.slack.calls
                 if c.method in ("files.getUploadURLExternal", "upload", "files.completeUploadExternal")]
        assert order == ["files.getUploadURLExternal", "upload", "files.completeUploadExternal"]
        (png,) = local.slack.files.values()
        assert png.content is not None and png.content.startswith(b"\x89PNG") and png.length == len(png.content)
        assert png.thread_ts == summary.ts and png.channel == OPS
        (button,) = buttons(summary)
        target = DraftTarget.parse(button["value"])
        diagnosis = BotState(local.audit.db).analysis(target.analysis_id)
        assert diagnosis is not None and target.finding is not None
        assert diagnosis.findings[target.finding].component == "GPU 2 -> GPU 3 NVLink 1"


def test_a_healthy_node_gets_no_draft_button() -> None:
    with local_bot() as local:
        summary = summary_for(local, "hpc-gpu-node-03")
        assert "no fabric fault" in summary.text
        assert buttons(summary) == []


def test_unknown_node_and_bad_arguments_get_helpful_ephemeral_replies() -> None:
    with local_bot() as local:
        local.injector.command("hpc-gpu-node12", user="UALICE", channel=OPS)
        assert local.slack.wait_for(lambda s: s.calls_to("response_url"))
        reply = local.slack.calls_to("response_url")[0].params
        assert reply["response_type"] == "ephemeral" and "`hpc-gpu-node-12`" in reply["text"]
        bad = local.injector.command("hpc-gpu-node-12 --window soon", user="UALICE", channel=OPS).body
        assert "--window" in bad and "6h" in bad and "`soon`" in bad
        assert local.injector.command("job", user="UALICE", channel=OPS).body.startswith("usage")
        help_text = json.dumps(local.injector.command("help", user="UALICE", channel=OPS).json())
        assert "/fabric job" in help_text
        time.sleep(0.2)
        assert not posted(local.slack)


def _told(local: Any, text: str) -> str:
    """What `/fabric TEXT` tells its asker alone (an unknown name's reply)."""
    before = len(local.slack.calls_to("response_url"))
    assert "Looking at" in local.injector.command(text, user="UALICE", channel=OPS).body
    assert local.slack.wait_for(lambda s: len(s.calls_to("response_url")) > before)
    return str(local.slack.calls_to("response_url")[before].params["text"])


def test_a_mistyped_command_taken_for_a_node_is_offered_the_command() -> None:
    """`/fabric flet` was answered as a node no one knows, naming five nodes and no command. A word no node is close
    to now also says where the commands are listed, and the command it is close to; a name close to a node, only
    the node."""
    with local_bot() as local:
        flet, statsu, node, jbo = (_told(local, t) for t in ("flet", "statsu", "hpc-gpu-node12", "jbo"))
    assert flet.startswith("I don't know a node called `flet`") and flet.endswith(
        "Or did you mean `/fabric fleet`? `/fabric help` lists the commands.")
    assert jbo.endswith("Or did you mean `/fabric job`? `/fabric help` lists the commands.")
    assert statsu.endswith("`/fabric help` lists the commands.") and "did you mean `/fabric" not in statsu
    assert "`hpc-gpu-node-12`" in node and "/fabric help" not in node


def test_an_unknown_rack_is_said_as_a_rack_with_the_racks_known() -> None:
    """`/fabric rack NAME` answers about racks, never nodes: the rack names close to it, or, with no rack inventory,
    that none is known and how racks become known."""
    with local_bot() as local:  # the seed nodes: no rack inventory
        told = _told(local, "rack nope")
        assert told.startswith("I don't know a rack called `nope`. Known racks: none yet") and "nodes.csv" in told
        assert "Known nodes" not in told and "hpc-gpu-node" not in told
    tables, _, slots, platforms = build_racks(seed=4, racks=1, hours=1, scenarios=["switch_tray"])
    with local_bot(source=NodeSource(TableSource(tables, platforms=platforms, racks=slots))) as local:
        assert _told(local, "rack rack-1") == "I don't know a rack called `rack-1`. Did you mean `rack-01`?"
        assert not posted(local.slack)


def test_twenty_concurrent_commands_are_all_answered() -> None:
    with local_bot() as local:
        nodes = ["hpc-gpu-node-12", "hpc-gpu-node-03"] * 10
        statuses: list[int] = []

        def send(node: str) -> None:
            statuses.append(local.injector.command(node, user="UALICE", channel=OPS).status)

        threads = [threading.Thread(target=send, args=(n,)) for n in nodes]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert statuses == [200] * 20
        assert local.slack.wait_for(lambda s: len(posted(s)) == 20)

        def pictures(s: MockSlack) -> list[str]:  # a node's topology (a node with a job's history adds its step time)
            return [m.text for m in s.messages if m.text.startswith("Topology of ")]

        # `>=` on a count that only grows: several uploads may land between two looks at it
        assert local.slack.wait_for(lambda s: len(pictures(s)) >= 20), pictures(local.slack)
        assert sorted(t.split(":")[0].removeprefix("Topology of ") for t in pictures(local.slack)) == sorted(nodes)
        titles = sorted(m.text.split(":")[0] for m in posted(local.slack))
        assert titles == sorted(nodes)


def test_fleet_ranks_the_degraded_links() -> None:
    with local_bot() as local:
        local.injector.command("fleet", user="UALICE", channel=OPS)
        assert local.slack.wait_for(lambda s: posted(s))
        text = json.dumps(posted(local.slack)[0].blocks)
        assert "1 offending link on 1 of 2 nodes" in text and "hpc-gpu-node-12" in text


def test_arguments_are_capped_and_read_in_one_pass() -> None:
    from bot.listeners.commands import MAX_ARGUMENTS, UsageError, parse

    huge = "hpc-gpu-node-12 " + "--window 6h " * 40_000  # 480k characters
    start = time.process_time()  # CPU time: a parse that went over the text again and again would take seconds
    try:
        parse(huge)
    except UsageError as exc:
        assert f"`/fabric` takes at most {MAX_ARGUMENTS}" in str(exc)
    assert time.process_time() - start < 0.5
    many = "node " + " ".join(["--window 6h"] * ((MAX_ARGUMENTS - 5) // 12))
    assert len(many) <= MAX_ARGUMENTS and parse(many).window_hours == 6.0
    with local_bot() as local:
        sent = local.injector.command(huge, user="UALICE", channel=OPS)
        assert sent.status == 200 and "characters of arguments" in sent.body


def test_a_full_queue_is_said_in_the_acknowledgement() -> None:
    source = SlowSource(SnapshotNodeSource.from_files([SEEDS]).snapshots.values())
    with local_bot(Settings(workers=1, queue_limit=1), source=source) as local:
        bodies = [local.injector.command("hpc-gpu-node-12", user="UALICE", channel=OPS).body for _ in range(4)]
        assert [b.startswith("Looking at") for b in bodies] == [True, True, False, False]
        assert all("try again in a minute" in b for b in bodies[2:])
        source.gate.set()
        assert local.slack.wait_for(lambda s: len(posted(s)) == 2, timeout=LONG_WAIT)


def test_the_audit_trail_records_the_job_a_node_diagnosis_names() -> None:
    """`/fabric NODE` whose diagnosis names its job: the trail's analysis entry carries that job, as `/fabric job`
    does (it said `job: null`)."""
    with local_bot() as local:
        summary_for(local, "hpc-gpu-node-12")
        shown = BotState(local.audit.db).analysis(DraftTarget.parse(buttons(posted(local.slack)[-1])[0]["value"])
                                                  .analysis_id)
        assert shown is not None and shown.job_id
        (entry,) = [e for e in local.audit.entries("analysis") if e["subject"] == "hpc-gpu-node-12"]
        assert entry["detail"]["job"] == shown.job_id


def test_a_name_pasted_with_an_invisible_character_finds_its_node_and_an_unknown_one_says_why() -> None:
    """`/fabric rack-01-c01` pasted with a zero-width space was answered "I don't know a node called `rack-01-c01`.
    Did you mean `rack-01-c01`?": the name typed offered back as the fix, with nothing saying why it failed."""
    with local_bot() as local:
        local.injector.command("hpc-gpu-node-12\u200b", user="UALICE", channel=OPS)
        assert local.slack.wait_for(lambda s: any("hpc-gpu-node-12" in m.text for m in posted(s)))
        told = _told(local, "hpc-gpu-node-99\u200b")
    assert told.startswith("I don't know a node called `hpc-gpu-node-99\u200b` (holds characters outside ASCII: "
                           "'\u200b' U+200B ZERO WIDTH SPACE at character 16: retype it)."), told
