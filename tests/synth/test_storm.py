"""The storm beside every synthetic fleet: a driver rollout turning 40 nodes' Xid counters at once is one incident
naming the driver, its 40 per-node alerts held; without the shared driver and Xid it would be 40 alerts."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from bot.cli import main
from diagnostics.config import load_alerts
from diagnostics.synth.life import load_life
from diagnostics.synth.storm import ROLLED, build_storm, load_storm, score_storm, storm_line


def test_the_rollout_is_one_incident_naming_the_driver_with_forty_alerts_held() -> None:
    tables, truth = build_storm(seed=3)
    inventory = {n: v["platform"] for n, v in truth["nodes"].items()}
    got = score_storm(tables, inventory, truth)
    assert storm_line(got).startswith(f"storm incidents: 1, per-node alerts held: {ROLLED}")
    assert got["alerts"] == 0 and "driver 550.90.07" in got["factor"] and "xid 74" in got["factor"]
    assert load_alerts().storm_min_nodes < ROLLED  # the figure the storm is judged by is the data file's


def test_synth_writes_the_storm_and_the_life_beside_a_rack_fleet_too(tmp_path: Path) -> None:
    """Beside every fleet by default, so the eval of any synthetic fleet scores the alert loop; `--no-life` leaves
    both out."""
    out = tmp_path / "racks"
    assert main(["synth", "--platform", "gb200-nvl72", "--racks", "1", "--hours", "6", "--out", str(out)]) == 0
    storm, life = load_storm(out), load_life(out)
    assert storm is not None and life is not None
    end = json.loads((out / "ground_truth.json").read_text(encoding="utf-8"))["end"]
    assert pd.Timestamp(storm[2]["end"]) == pd.Timestamp(life[2]["end"]) == pd.Timestamp(end)  # ending with it
    assert storm_line(score_storm(*storm)).startswith(f"storm incidents: 1, per-node alerts held: {ROLLED}")
    assert main(["synth", "--platform", "gb200-nvl72", "--racks", "1", "--hours", "6", "--no-life",
                 "--out", str(tmp_path / "bare")]) == 0
    assert load_storm(tmp_path / "bare") is None and load_life(tmp_path / "bare") is None
