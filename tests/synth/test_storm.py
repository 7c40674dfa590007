"""The storm beside every synthetic fleet: a driver rollout turning 40 nodes' Xid counters at once is one incident
naming the driver, its 40 per-node alerts held; without the shared driver and Xid it would be 40 alerts."""

from __future__ import annotations

from diagnostics.config import load_alerts
from diagnostics.synth.storm import ROLLED, build_storm, score_storm, storm_line


def test_the_rollout_is_one_incident_naming_the_driver_with_forty_alerts_held() -> None:
    tables, truth = build_storm(seed=3)
    inventory = {n: v["platform"] for n, v in truth["nodes"].items()}
    got = score_storm(tables, inventory, truth)
    assert storm_line(got).startswith(f"storm incidents: 1, per-node alerts held: {ROLLED}")
    assert got["alerts"] == 0 and "driver 550.90.07" in got["factor"] and "xid 74" in got["factor"]
    assert load_alerts().storm_min_nodes < ROLLED  # the figure the storm is judged by is the data file's
