"""A command whose work fails after its ack, on the bot's own side (the store's database busy past its wait, the
store's disk, a bug): the person who asked hears what failed and what to do, never blamed on Slack, and never left
with "Looking at ..." alone."""

from __future__ import annotations

import errno
import sqlite3
from typing import Any

import pytest

from bot.nodes import SnapshotNodeSource
from bot.transport.local import LocalSlack
from diagnostics import Diagnosis, SweepResult

from .helpers import OPS, SEEDS, local_bot, posted, private

NODE = "hpc-gpu-node-12"


class Failing(SnapshotNodeSource):
    """The bundled snapshots, whose analyses fail as a source on a busy database or a full disk does."""

    fault: BaseException = RuntimeError("never set")

    def diagnose(self, node_id: str, **kwargs: Any) -> Diagnosis:
        raise self.fault

    def sweep(self) -> SweepResult:
        raise self.fault


def _told(local: LocalSlack, text: str) -> str:
    assert local.injector.command(text, user="UALICE", channel=OPS).status == 200
    assert local.slack.wait_for(lambda s: [m for m in private(s, "UALICE") if "Looking at" not in m.shown]), \
        local.slack.errors()
    said = [m.shown for m in private(local.slack, "UALICE") if "Looking at" not in m.shown]
    assert len(said) == 1 and not posted(local.slack)
    return said[0]


@pytest.mark.parametrize(("fault", "text", "said"), [
    (sqlite3.OperationalError("database is locked"), NODE,
     "I could not finish the diagnosis: the store's database is busy: another writer"),
    (OSError(errno.ENOSPC, "No space left on device"), "fleet",
     "I could not finish the fleet view: reading or writing the store failed: No space left on device"),
    (KeyError("gpu"), NODE, "I could not finish the diagnosis: something failed on my side (KeyError: 'gpu')"),
])
def test_a_failure_on_the_bots_side_is_told_to_the_person_not_blamed_on_slack(fault: BaseException, text: str,
                                                                             said: str) -> None:
    source = Failing.from_files([SEEDS])
    source.fault = fault
    with local_bot(source=source) as local:
        told = _told(local, text)
    assert told.startswith(said), told
    assert "Slack" not in told and "network_error" not in told


@pytest.mark.parametrize("refusal", ["outside", "missing"])
def test_a_channel_slack_refuses_still_gives_the_person_the_answer(refusal: str) -> None:
    """`not_in_channel` / `channel_not_found`: the person is told why, and gets the answer's headline and action
    through the response URL they still hold (Slack's message responses), rather than nothing."""
    with local_bot() as local:
        getattr(local.slack.faults, refusal).add(OPS)
        assert local.injector.command(NODE, user="UALICE", channel=OPS).status == 200
        assert local.slack.wait_for(lambda s: any("to you alone" in m.shown for m in private(s, "UALICE"))), \
            local.slack.errors()
        told = [m.shown for m in private(local.slack, "UALICE")]
    answer = next(t for t in told if "to you alone" in t)
    assert f"{NODE}: GPU 2 -> GPU 3 NVLink 1 failing, urgent priority. Reseat" in answer  # with its action
    assert not posted(local.slack)
