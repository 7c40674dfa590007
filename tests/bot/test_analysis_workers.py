"""`/fabric` with its analyses in worker processes (a served bot's default on a machine of several cores) posts what
the bot's own process posts: the same summaries and buttons, before and after planned work is set from Slack (a worker
judges with the planned work the bot holds: tests/service/test_workers.py)."""

from __future__ import annotations

import json
import logging
import re
import threading

import pytest

from bot.nodes import SnapshotNodeSource
from bot.settings import Settings

from .helpers import LONG_WAIT, OPS, SEEDS, buttons, local_bot, posted, slash, summary_for


def _answers(processes: int) -> list[str]:
    source = SnapshotNodeSource.from_files([SEEDS])
    with local_bot(Settings(analysis_processes=processes), source=source) as local:
        assert _serving(source) is (processes > 1)
        if source._workers is not None:  # beside the bot's threads, from a clean server process, never a fork of them
            pool = source._workers._pool
            assert pool is not None and pool._mp_context.get_start_method() == "forkserver"
        faulty = summary_for(local, "hpc-gpu-node-12")
        healthy = summary_for(local, "hpc-gpu-node-03")
        said = slash(local, 'maintenance hpc-gpu-node-12 2h "swap the mezzanine"')
        held = summary_for(local, "hpc-gpu-node-12")
        assert local.injector.command("hpc-gpu-node12", user="UALICE", channel=OPS).status == 200
        assert local.slack.wait_for(lambda s: s.calls_to("response_url"), timeout=LONG_WAIT)
        unknown = local.slack.calls_to("response_url")[0].params["text"]
        answers = [json.dumps(m.blocks) for m in (faulty, healthy, held)] + [said, unknown,
                                                                             json.dumps(buttons(faulty))]
        answers = [re.sub(r"until \d{4}-\d\d-\d\d \d\d:\d\d UTC", "until <then>", a) for a in answers]  # the clock's
    assert source._workers is None  # stopped with the bot
    return answers


def test_workers_post_what_the_bot_posts() -> None:
    alone, shared = _answers(1), _answers(2)
    assert "urgent" in alone[0] and "swap the mezzanine" in alone[3] and "`hpc-gpu-node-12`" in alone[4]
    assert shared == alone


def test_a_burst_of_commands_is_answered_once_each_by_the_workers() -> None:
    source = SnapshotNodeSource.from_files([SEEDS])
    with local_bot(Settings(analysis_processes=2), source=source) as local:
        assert _serving(source)
        asked = ["hpc-gpu-node-12", "hpc-gpu-node-03"] * 5
        threads = [threading.Thread(target=local.injector.command, args=(n,), kwargs={"user": "UALICE",
                                                                                      "channel": OPS})
                   for n in asked]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert local.slack.wait_for(lambda s: len(posted(s)) >= len(asked), timeout=LONG_WAIT)
        texts = [m.text for m in posted(local.slack)]
        assert sum("hpc-gpu-node-12" in t for t in texts) == 5 and sum("hpc-gpu-node-03" in t for t in texts) == 5


def test_a_source_the_workers_cannot_copy_is_answered_here(caplog: pytest.LogCaptureFixture) -> None:
    class Local(SnapshotNodeSource):
        def __init__(self) -> None:
            super().__init__(SnapshotNodeSource.from_files([SEEDS]).snapshots.values())
            self.source.__class__ = type("Held", (type(self.source),), {"__reduce__": _refuse})

    source = Local()
    with caplog.at_level(logging.WARNING, logger="fabricbot"), \
            local_bot(Settings(analysis_processes=2), source=source) as local:
        assert "urgent" in json.dumps(summary_for(local, "hpc-gpu-node-12").blocks)  # answered while they start
        assert not _serving(source)
        assert "analysis workers could not start" in caplog.text
        assert "urgent" in json.dumps(summary_for(local, "hpc-gpu-node-12").blocks)
    assert "holds an open connection" in caplog.text


def _serving(source: SnapshotNodeSource) -> bool:
    return source.workers_serving(timeout=LONG_WAIT)


def _refuse(self: object) -> tuple[object, ...]:
    raise TypeError("holds an open connection")
