"""A storm, labelled: a driver rollout that turns 40 nodes' Xid counters at once, beside 8 nodes left on the old
driver. The alert loop must see one incident naming the driver (and the Xid) and hold the 40 per-node alerts.

Written under a fleet's `storm/` folder by `fabricbot synth` (as `life/` is), with each node's driver version in
its inventory (`nodes.csv`'s driver_version column: the fact the storm shares, read as the live loop reads an
inventory's node records) and scored by `fabricbot eval`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..analysis import Step, analyze_fleet, decide, failing_parts
from ..analysis.alerting import version_facts
from ..config.alerts import load_alerts
from ..tables import EVENTS, LINK_SAMPLES
from .fleet import START, conform
from .life import load_side_fleet, write_side_fleet
from .node import NodeSim

STORM = "storm"
ROLLED, KEPT = 40, 8  # nodes on the new driver (each with an Xid 74 at once), nodes left on the old one
NEW_DRIVER, OLD_DRIVER = "550.90.07", "535.161.08"  # driver versions of the R550 and R535 branches
PLATFORM = "dgx-a100-8gpu"
HOURS, INTERVAL_MIN = 6.0, 20.0


def build_storm(*, seed: int = 0, end: pd.Timestamp | None = None) -> tuple[dict[str, pd.DataFrame], dict[str, Any]]:
    rng = np.random.default_rng([seed, 2])
    periods = int(HOURS * 60 / INTERVAL_MIN) + 1
    times = pd.date_range(end=end, periods=periods, freq=f"{INTERVAL_MIN:g}min") if end is not None else \
        pd.date_range(START, periods=periods, freq=f"{INTERVAL_MIN:g}min")
    links, events, nodes = [], [], {}
    for n in range(ROLLED + KEPT):
        name = f"hpc-gpu-storm-{n:02d}"
        sim = NodeSim.new(rng, name, PLATFORM, times)
        rolled = n < ROLLED
        if rolled:  # the first pass after the rollout: an NVLink Xid on one GPU of every rolled node
            gpu, link = int(rng.integers(0, 8)), int(rng.integers(0, 12))
            sim.events.append({"timestamp": times[-2], "kind": "xid", "code": 74, "gpu": gpu, "link": link,
                               "text": f"NVRM: Xid (PCI:0000:{0x07 + gpu:02x}:00): 74, pid=1912, name=python, "
                                       f"NVLink: fatal error detected on link {link}"})
        links.append(sim.link_frame())
        events.append(sim.event_frame())
        nodes[name] = {"platform": PLATFORM, "driver_version": NEW_DRIVER if rolled else OLD_DRIVER, "xid": rolled}
    tables = {"link_samples": conform(LINK_SAMPLES, pd.concat(links, ignore_index=True)),
              "events": conform(EVENTS, pd.concat(events, ignore_index=True))}
    return tables, {"seed": seed, "end": str(times[-1]), "rolled": ROLLED, "nodes": nodes}


def generate_storm(fleet_dir: Path, *, seed: int = 0, end: pd.Timestamp | None = None) -> Path:
    tables, truth = build_storm(seed=seed, end=end)
    return write_side_fleet(fleet_dir / STORM, tables, truth, inventory=("driver_version",))


def load_storm(fleet_dir: Path) -> tuple[dict[str, pd.DataFrame], dict[str, str], dict[str, Any]] | None:
    """The storm's tables (its inventory's node records among them: each node's driver), platforms and truth."""
    got = load_side_fleet(fleet_dir / STORM)
    if got is None:
        return None
    tables, inventory, truth = got
    return {**tables, "nodes": pd.read_csv(fleet_dir / STORM / "nodes.csv", dtype=str)}, inventory, truth


def storm_inventory(truth: dict[str, Any]) -> pd.DataFrame:
    """The node records an inventory of the storm's nodes gives: platform and driver version."""
    return pd.DataFrame([{"node_id": n, "platform": v["platform"], "driver_version": v["driver_version"]}
                         for n, v in truth["nodes"].items()])


def score_storm(tables: dict[str, pd.DataFrame], inventory: dict[str, str], truth: dict[str, Any]) -> dict[str, Any]:
    """One pass of the alert loop at the end: the incidents it opens, the alerts it holds and what it names."""
    end = pd.Timestamp(truth["end"]).to_pydatetime()
    nodes = sorted(truth["nodes"])
    found = analyze_fleet(tables, end=end, platforms=inventory, nodes=nodes).diagnoses
    facts = version_facts([tables])  # the driver each node's inventory record gives, as the live loop reads it
    done = decide(failing_parts(found.values(), facts), {}, at=end, policy=load_alerts(),
                  ticket_of=lambda n, s: None, fleet_nodes=len(nodes))
    return {"incidents": int(done.storm is not None), "held": done.count(Step.HELD),
            "alerts": done.count(Step.NEW), "factor": done.storm.factor if done.storm else None,
            "rolled": truth["rolled"]}


def storm_line(got: dict[str, Any]) -> str:
    return (f"storm incidents: {got['incidents']}, per-node alerts held: {got['held']} (a driver rollout on "
            f"{got['rolled']} nodes; common factor: {got['factor'] or 'none found'}; {got['alerts']} alerted)")
