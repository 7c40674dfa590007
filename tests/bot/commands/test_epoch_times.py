"""A link-samples CSV in epoch seconds, as exporters write it, is a 12-hour series: its failing link is found."""

from __future__ import annotations

import json
from pathlib import Path

from tests.bot.commands.conftest import Cli

START = 1764000000  # 2025-11-24 16:00 UTC


def test_a_12_hour_epoch_seconds_series_with_a_failing_link_is_a_fault(tmp_path: Path, cli: Cli) -> None:
    rows = ["timestamp,node_id,gpu,link_type,link,replay"]
    for i in range(145):  # every 5 minutes for 12 hours; link 0 replays 3,800 times an hour, link 1 never
        rows += [f"{START + 300 * i},n1,0,nvlink,0,{i * 3800 // 12}", f"{START + 300 * i},n1,0,nvlink,1,0"]
    table = tmp_path / "links.csv"
    table.write_text("\n".join(rows) + "\n")
    code, out, err = cli("analyze", str(table), "--json")
    assert code == 0, err
    diagnosis = json.loads(out)
    assert diagnosis["fault_detected"] and diagnosis["window_end"].startswith("2025-11-25T04:00")
    failing = [f for f in diagnosis["findings"] if f["severity"] != "ok"]
    assert [(f["gpu"], f["link"]) for f in failing] == [(0, 0)]
    assert 3700 < failing[0]["rates_per_hour"]["replay"] < 3900
    said = [w for w in diagnosis["warnings"] if "epoch" in w]
    assert len(said) == 1 and "epoch seconds" in said[0]
    assert not any("taken as read" in w or "not a valid" in w for w in diagnosis["warnings"])
    store = tmp_path / "store"
    assert cli("ingest", str(table), "--store", str(store))[0] == 0
    code, out, err = cli("analyze", "--store", str(store), "--node", "n1", "--json")
    assert code == 0 and json.loads(out)["fault_detected"], err
