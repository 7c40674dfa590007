"""A store no longer fed, asked in Slack: the CLI said on stderr that its newest reading was 80 days old, while
`/fabric NODE` and `/fabric fleet` answered as of today, all-clears included, with only the window's end to go by."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from bot.nodes import StoreNodeSource
from bot.transport.local import LocalSlack
from diagnostics import format as fmt
from diagnostics.store.telemetry import TelemetryStore

from .helpers import OPS, local_bot, posted, summary_for
from .test_store_source import START, text_of, write_hours


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
