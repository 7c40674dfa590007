"""A seven-month-old kernel log read today: `analyze FILE` answered "priority=high" with nothing on its age beside the
window's end, `analyze --store` alike, and its ticket gave no time at all; only `sweep` said the readings were old."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

from freezegun import freeze_time

from diagnostics import format as fmt
from tests.conftest import FIXTURES

from .conftest import Cli

LOG = FIXTURES / "real" / "sxid_24007_xid_a100_1.txt"  # its events dated 2026-04-22


def test_an_answer_of_old_readings_says_how_old_and_its_ticket_when(tmp_path: Path, cli: Cli) -> None:
    out = cli("analyze", str(LOG), "--json")[1]  # once before the clock is frozen: what it builds lazily, built
    end = json.loads(out)["window_end"]
    assert end is not None
    ended = datetime.fromisoformat(end)
    said = f"the input's newest reading is from {fmt.when(ended)}, 30 days before now: this answer judges the window"
    store = tmp_path / "store"
    assert cli("ingest", str(LOG), "--store", str(store))[0] == 0
    node = json.loads(out)["node_id"]
    with freeze_time(ended + timedelta(days=30)):
        assert said in cli("analyze", str(LOG))[2]
        stored = cli("analyze", "--store", str(store), "--node", node)[2]
        assert f"the store's newest reading is from {fmt.when(ended)}, 30 days before now" in stored
        assert "newest reading" not in cli("analyze", str(LOG), "--end", end)[2]  # the end asked: as asked
    with freeze_time(ended + timedelta(hours=2)):
        assert "newest reading" not in cli("analyze", str(LOG))[2]
    out = cli("ticket", str(LOG), "--rules")[1]
    assert f"- judged over the window 1 h to {fmt.when(ended)}" in out, out
    out = cli("ticket", str(LOG), "--rules", "--json")[1]
    assert json.loads(out)["evidence"]["window"] == f"window 1 h to {fmt.when(ended)}"


def test_a_node_judged_to_its_own_older_log_says_its_own_newest_reading_not_the_stores(tmp_path: Path,
                                                                                        cli: Cli) -> None:
    """A store with readings of May and a node whose kernel log alone, of April, was ingested: that node's window
    ends at its own newest event, yet the answer said "the store's newest reading is from" April."""
    store = str(tmp_path / "store")
    assert cli("ingest", str(LOG), "--store", store)[0] == 0
    readings = FIXTURES / "real" / "nvlink_e_v100_short_form_dated_2.txt"  # dated 2026-05-13
    assert cli("ingest", str(readings), "--node", "dgx1-07", "--store", store)[0] == 0
    node = json.loads(cli("analyze", str(LOG), "--json")[1])["node_id"]
    out = cli("analyze", "--store", store, "--node", node, "--json")[1]
    ended = datetime.fromisoformat(json.loads(out)["window_end"])
    with freeze_time(ended + timedelta(days=300)):
        said = cli("analyze", "--store", store, "--node", node)[2]
        assert f"{node}'s newest reading is from {fmt.when(ended)}" in said and "the store's" not in said, said
        assert "the store's newest reading" in cli("analyze", "--store", store, "--node", "dgx1-07")[2]
