"""The life of a link around its alerts, labelled: planned restarts, slow failures seen coming, repairs that hold.

The fleet's scenarios judge one window at its end; these judge what happens over days, so each node here holds
four days of readings (20-minute samples) and its own truth:
- `planned_reboot`: the exporter goes quiet for 20-100 minutes, every counter restarts from zero and the NVLinks
  read inactive for the first sample after it, while they train; `driver_reload`: the same without the gap. Neither
  may ticket, in any window around it.
- `healthy_long`: background only (one link in two nodes sits flat just under a threshold): no watch.
- `slow_degradation`: one link's replays (NVLink or PCIe) or CRC data errors climb in a straight line from nothing,
  three days before the end, to cross their failing threshold 30-120 hours after it; the truth holds that time.
- `repair_holds` / `repair_fails`: a replay storm, then a repair 30 hours before the end (a reset and a short gap:
  the part is reseated or swapped); after it the link is clean, or the storm returns 2-20 hours later.
Node names (`hpc-gpu-life-NN`) never clash with the fleet's, so both can share one store.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..enums import FaultKind
from ..tables import EVENTS, LINK_SAMPLES
from .fleet import START, conform, write_tables
from .node import NodeSim, component_of, limit

__all__ = ["LIFE", "LIFE_SCENARIOS", "build_life", "generate_life", "load_life"]

LIFE = "life"  # the fleet's subfolder holding these nodes and their truth
LIFE_SCENARIOS: dict[str, int] = {  # scenario -> nodes of it
    "planned_reboot": 2, "driver_reload": 2, "healthy_long": 3, "slow_degradation": 3,
    "repair_holds": 2, "repair_fails": 2,
}
RESTARTS = ("planned_reboot", "driver_reload")
HOURS, INTERVAL_MIN = 96.0, 20.0
PLATFORM = "dgx-a100-8gpu"  # one NVSwitch board: these scenarios are about time, not boards
SLOW_KINDS = (("replay", "nvlink", "nvlink_replay"), ("crc_data", "nvlink", "nvlink_crc_data"),
              ("replay", "pcie", "pcie_replay"))
RAMP_HOURS = 72.0  # a slow failure climbs from nothing over the last three days
REPAIR_BEFORE_END_H = 30.0


def _at(sim: NodeSim, hours_before_end: float) -> int:
    return int(sim.times.searchsorted(sim.times[-1] - pd.Timedelta(minutes=round(hours_before_end * 60))))


def restart(sim: NodeSim, *, gap: bool) -> dict[str, Any]:
    """Every counter restarts at a drawn sample and the NVLinks read inactive then; with `gap` (a reboot) the
    exporter is silent for 1-5 samples before it, without (a driver reload) it keeps reporting."""
    at = int(sim.rng.integers(len(sim.times) // 3, len(sim.times) - 6))
    silent = int(sim.rng.integers(1, 6)) if gap else 0
    sim.resets.append(at)
    sim.keep[at - silent:at] = False
    sim.inactive[sim.nv_indices(), at] = True
    return {"restart_at": str(sim.times[at])}


def slow_degradation(sim: NodeSim, which: int) -> dict[str, Any]:
    counter, link_type, rule = SLOW_KINDS[which % len(SLOW_KINDS)]
    i = sim.pcie_index(int(sim.rng.integers(0, 8))) if link_type == "pcie" else int(sim.rng.choice(sim.nv_indices()))
    lead_h = float(sim.rng.uniform(30, 120))
    hours_to_end = (sim.times[-1] - sim.times).total_seconds().to_numpy() / 3600
    start = RAMP_HOURS - hours_to_end  # hours since the climb began (negative before it)
    slope = limit(rule) / (RAMP_HOURS + lead_h)  # per hour, per hour: over the threshold `lead_h` after the end
    sim.rate[counter][i] = np.clip(start, 0, None) * slope
    sim.exact.add((counter, i))
    if counter == "crc_data":
        sim.rate["crc_flit"][i] = 0.0
    s = sim.links[i]
    fault = FaultKind.PCIE_REPLAYS if link_type == "pcie" else FaultKind.NVLINK
    crosses = sim.times[-1] + pd.Timedelta(hours=lead_h)
    return {"rule": rule, "component": component_of(fault, {"gpu": s.gpu, "link": s.link}),
            "crosses_at": str(crosses), "lead_hours": round(lead_h, 2)}


def _storm(sim: NodeSim, i: int, start: int, stop: int | None = None) -> None:
    sim.rate["replay"][i, start:stop] = sim.factor() * limit("nvlink_replay")
    sim.exact.add(("replay", i))


def repair(sim: NodeSim, holds: bool) -> dict[str, Any]:
    i = int(sim.rng.choice(sim.nv_indices()))
    at = _at(sim, REPAIR_BEFORE_END_H)
    onset = _at(sim, float(sim.rng.uniform(REPAIR_BEFORE_END_H + 8, REPAIR_BEFORE_END_H + 30)))
    _storm(sim, i, onset, at)
    sim.rate["replay"][i, at:] = float(sim.rng.uniform(0, 15))  # background again
    sim.resets.append(at)
    sim.keep[at - int(sim.rng.integers(1, 4)):at] = False
    back = None
    if not holds:
        back = _at(sim, REPAIR_BEFORE_END_H - float(sim.rng.uniform(2, 20)))
        _storm(sim, i, back)
    s = sim.links[i]
    return {"component": component_of(FaultKind.NVLINK, {"gpu": s.gpu, "link": s.link}), "holds": holds,
            "repaired_at": str(sim.times[at]), "onset": str(sim.times[onset]),
            "returns_at": None if back is None else str(sim.times[back])}


def _apply(sim: NodeSim, scenario: str, nth: int) -> dict[str, Any]:
    if scenario == "slow_degradation":
        return slow_degradation(sim, nth)
    if scenario in ("repair_holds", "repair_fails"):
        return repair(sim, scenario == "repair_holds")
    if scenario in RESTARTS:
        return restart(sim, gap=scenario == "planned_reboot")
    return {}  # healthy_long: the background alone


def build_life(*, seed: int = 0, end: pd.Timestamp | None = None) -> tuple[dict[str, pd.DataFrame], dict[str, Any]]:
    """The life nodes' tables and truth, in memory; a random stream of their own, so the fleet is unchanged. `end`:
    their last sample (the fleet's, so that one store holds both at one time)."""
    rng = np.random.default_rng([seed, 1])
    start = START + pd.Timedelta(days=int(rng.integers(0, 300)))
    periods = int(HOURS * 60 / INTERVAL_MIN) + 1
    times = pd.date_range(end=end, periods=periods, freq=f"{INTERVAL_MIN:g}min") if end is not None else \
        pd.date_range(start, periods=periods, freq=f"{INTERVAL_MIN:g}min")
    links, events, nodes = [], [], {}
    number = 0
    for scenario, count in LIFE_SCENARIOS.items():
        for nth in range(count):
            number += 1
            name = f"hpc-gpu-life-{number:02d}"
            sim = NodeSim.new(rng, name, PLATFORM, times, near=nth == 0)
            truth = _apply(sim, scenario, nth)
            links.append(sim.link_frame())
            events.append(sim.event_frame())
            nodes[name] = {"scenario": scenario, "platform": PLATFORM, **truth}
    tables = {"link_samples": conform(LINK_SAMPLES, pd.concat(links, ignore_index=True)),
              "events": conform(EVENTS, pd.concat(events, ignore_index=True))}  # no job runs here
    return tables, {"seed": seed, "start": str(times[0]), "end": str(times[-1]), "interval_min": INTERVAL_MIN,
                    "nodes": nodes}


def write_side_fleet(out: Path, tables: dict[str, pd.DataFrame], truth: dict[str, Any],
                     inventory: tuple[str, ...] = ()) -> Path:
    """A folder of nodes written beside a fleet (life, storm): its tables, inventory (with the truth's `inventory`
    fields as columns: `driver_version`) and truth file."""
    write_tables(out, tables, "parquet")
    nodes = truth["nodes"]
    pd.DataFrame({"node_id": list(nodes), "platform": [v["platform"] for v in nodes.values()],
                  **{c: [v[c] for v in nodes.values()] for c in inventory}}).to_csv(out / "nodes.csv", index=False)
    path = out / "ground_truth.json"
    path.write_text(json.dumps(truth, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


def load_side_fleet(folder: Path) -> tuple[dict[str, pd.DataFrame], dict[str, str], dict[str, Any]] | None:
    """A side folder's tables, inventory and truth, or None when it was not written."""
    from .fleet import load

    truth_path = folder / "ground_truth.json"
    if not truth_path.exists():
        return None
    tables, inventory = load(folder)
    return tables, inventory, json.loads(truth_path.read_text(encoding="utf-8"))


def generate_life(fleet_dir: Path, *, seed: int = 0, end: pd.Timestamp | None = None) -> Path:
    """Write the life nodes under `fleet_dir/life`; returns their truth file."""
    tables, truth = build_life(seed=seed, end=end)
    return write_side_fleet(fleet_dir / LIFE, tables, truth)


def load_life(fleet_dir: Path) -> tuple[dict[str, pd.DataFrame], dict[str, str], dict[str, Any]] | None:
    """A written fleet's life nodes (tables, inventory, truth), or None when it has none."""
    return load_side_fleet(fleet_dir / LIFE)
