"""A store no longer fed, asked in Slack: the CLI said on stderr that its newest reading was 80 days old, while
`/fabric NODE` and `/fabric fleet` answered as of today, all-clears included, with only the window's end to go by."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from freezegun import freeze_time

from bot.cli import main
from bot.nodes import StoreNodeSource
from bot.transport.local import LocalSlack
from diagnostics import format as fmt
from diagnostics.store.telemetry import TelemetryStore
from tests.conftest import FIXTURES

from .helpers import OPS, local_bot, posted, summary_for
from .test_store_source import START, text_of, write_hours

LOG = FIXTURES / "real" / "sxid_24007_xid_a100_1.txt"  # its events dated 2026-04-22


def _fleet_view(local: LocalSlack) -> str:
    before = len(posted(local.slack))
    assert local.injector.command("fleet", user="UALICE", channel=OPS).status == 200
    assert local.slack.wait_for(lambda s: len(posted(s)) > before, timeout=60)
    return text_of(posted(local.slack)[before])


def test_slack_says_how_old_the_readings_are_as_the_command_line_does(tmp_path: Path) -> None:
    store_dir = tmp_path / "store"
    write_hours(tmp_path / "links.csv", "gpu-node-7", 0, 2, per_reading=0.0)
    TelemetryStore(store_dir).ingest([tmp_path / "links.csv"])
    end = (START + timedelta(hours=2)).to_pydatetime()
    said = f"the store's newest reading is from {fmt.when(end)}, 80 days before now: this answer judges the window " \
           "to it, not now (is the store still fed?)"
    with local_bot(source=StoreNodeSource(store_dir), clock=lambda: end + timedelta(days=80)) as local:
        summary = text_of(summary_for(local, "gpu-node-7"))
        assert "no fabric fault" in summary and said in summary, summary
        assert said in _fleet_view(local)
    with local_bot(source=StoreNodeSource(store_dir), clock=lambda: end + timedelta(hours=2)) as local:
        assert "newest reading is from" not in text_of(summary_for(local, "gpu-node-7"))
        assert "newest reading is from" not in _fleet_view(local)


def test_a_node_judged_to_its_own_older_log_is_worded_alike_in_slack_and_on_the_command_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A store of May readings and one node's April kernel log alone: `analyze --store --node` said "NODE's newest
    reading", while Slack's summary of the same node said "the store's newest reading", a date the store is past."""
    store_dir = tmp_path / "store"
    TelemetryStore(store_dir).ingest([LOG])
    (node,) = TelemetryStore(store_dir).nodes()  # the host the log names
    TelemetryStore(store_dir).ingest([FIXTURES / "real" / "nvlink_e_v100_short_form_dated_2.txt"], node_id="dgx1-07")
    capsys.readouterr()
    main(["analyze", "--store", str(store_dir), "--node", node, "--json"])
    ended = datetime.fromisoformat(json.loads(capsys.readouterr().out)["window_end"])
    now = ended + timedelta(days=300)
    with freeze_time(now):
        main(["analyze", "--store", str(store_dir), "--node", node])
    cli = [line.removeprefix("fabricbot: ") for line in capsys.readouterr().err.splitlines() if "newest" in line]
    assert len(cli) == 1 and cli[0].startswith(f"{node}'s newest reading is from {fmt.when(ended)}"), cli
    with local_bot(source=StoreNodeSource(store_dir), clock=lambda: now) as local:
        summary = text_of(summary_for(local, node))
        said = cli[0].replace("; give --end TIME to judge another", "")  # Slack has no --end
        assert said in summary and "the store's newest" not in summary, (said, summary)
        assert "the store's newest reading is from" in text_of(summary_for(local, "dgx1-07"))
