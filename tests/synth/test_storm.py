"""The storm beside every synthetic fleet: a driver rollout turning 40 nodes' Xid counters at once is one incident
naming the driver, its 40 per-node alerts held; without the shared driver and Xid it would be 40 alerts."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from bot.cli import main
from diagnostics.analysis import Step
from diagnostics.config import load_alerts
from diagnostics.service import Request, TableSource
from diagnostics.service.fleetwide import alert_pass
from diagnostics.synth.life import load_life
from diagnostics.synth.storm import ROLLED, build_storm, load_storm, score_storm, storm_inventory, storm_line
from diagnostics.tables import GPUS


def test_the_rollout_is_one_incident_naming_the_driver_with_forty_alerts_held() -> None:
    tables, truth = build_storm(seed=3)
    inventory = {n: v["platform"] for n, v in truth["nodes"].items()}
    got = score_storm({**tables, "nodes": storm_inventory(truth)}, inventory, truth)
    assert storm_line(got).startswith(f"storm incidents: 1, per-node alerts held: {ROLLED}")
    assert got["alerts"] == 0 and "driver 550.90.07" in got["factor"] and "xid 74" in got["factor"]
    assert load_alerts().storm_min_nodes < ROLLED  # the figure the storm is judged by is the data file's
    assert score_storm(tables, inventory, truth)["factor"] == "xid 74"  # no inventory: no driver to name


def test_the_live_loop_names_the_driver_an_inventory_gives_or_the_gpu_table_reports() -> None:
    """The service's alert pass reads each node's driver from its node records (an inventory), else from the GPU
    table (dcgm-exporter's driver label, nvidia-smi -q), as the storm's common factor."""
    tables, truth = build_storm(seed=3)
    platforms = {n: v["platform"] for n, v in truth["nodes"].items()}
    gpus = GPUS.conform(pd.DataFrame({"node_id": list(platforms), "gpu": [0] * len(platforms),
                                      "driver_version": ["550.54.15"] * len(platforms), "source": ["dcgm"] * 48}))
    for extra, driver in (({"nodes": storm_inventory(truth)}, "550.90.07"), ({"gpus": gpus}, "550.54.15")):
        _, done = alert_pass(TableSource({**tables, **extra}, platforms=platforms), Request(), alerts={},
                             at=datetime.now(UTC), ticket_of=lambda n, s: None,
                             policy=load_alerts(first_pass="alert"))
        assert done.storm is not None and f"driver {driver}" in done.storm.factor
        assert done.count(Step.HELD) == ROLLED


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
