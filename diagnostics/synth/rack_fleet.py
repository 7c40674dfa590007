"""A synthetic fleet of racks (`fabricbot synth --platform gb200-nvl72`): each rack one labelled scenario, its
trays' and switch trays' telemetry, one job across its compute trays, and the ground truth per rack.

Output beside the tables: `nodes.csv` as a rack inventory (node_id, platform, rack, tray: compute trays 1-18 and
switch trays 1-9 by slot), and `ground_truth.json` with `racks` (each rack's scenario, faults, job and `expect`, in
the rack's own names) and `nodes` empty. `racks = 10` holds every scenario once; more racks repeat them in a shuffled
order, so the mix is the seed's.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import format as fmt
from ..config.racks import rack_spec
from ..errors import InputError
from ..model import RackSlot
from ..tables import EVENTS, LINK_SAMPLES, STEP_SAMPLES
from ..topology.rack import rack_graph
from .fleet import START, conform, write_alert_scenarios, write_tables
from .node import NodeSim
from .rack import RackSim, SwitchSim
from .rack_scenarios import APPLY, RACK_BENIGN, RACK_CAVEATS, RACK_SCENARIOS
from .truth import expectations

DEFAULT_RACKS = len(RACK_SCENARIOS)


def _order(rng: np.random.Generator, racks: int, only: Sequence[str] | None) -> list[str]:
    out: list[str] = []
    while len(out) < racks:
        out.extend(list(only) if only else [str(s) for s in rng.permutation(RACK_SCENARIOS)])
    return out[:racks]


def _rack(rng: np.random.Generator, rack_id: str, platform: str, times: pd.DatetimeIndex) -> RackSim:
    graph = rack_graph(platform)
    spec = graph.spec
    sim = RackSim(rng, rack_id, graph, times)
    cluster = f"{rng.integers(2**32):08x}-0000-4000-8000-{rng.integers(2**48):012x}"
    for tray in graph.compute_trays:
        node = NodeSim.new(rng, sim.host("compute", tray), spec.compute_platform, times)
        node.events = [{"timestamp": times[0], "kind": "fabric_state", "gpu": gpu,
                        "text": f"State: Completed; Status: Success; CliqueId: 32766; ClusterUUID: {cluster}"}
                       for gpu in range(spec.gpus_per_tray)]
        sim.trays[tray] = node
    for st in graph.switch_trays:
        sim.switches[st] = SwitchSim(rng, sim.host("switch", st), spec.chips_per_switch_tray,
                                     spec.compute_trays * spec.gpus_per_tray, spec.wiring.first_port, times)
    return sim


def _steps(rng: np.random.Generator, sim: RackSim, times: pd.DatetimeIndex) -> tuple[pd.DataFrame, dict[str, Any]]:
    hosts = [sim.host("compute", t) for t in sorted(sim.trays)]
    job = f"{sim.rack_id}-train"
    base = float(rng.uniform(120, 420))
    values = base * (1 + rng.normal(0, 0.012, len(times)))
    if sim.slowdown is not None:
        values[sim.slowdown[0]:] *= 1 + sim.slowdown[1] / 100
    frame = pd.DataFrame({"timestamp": times, "job_id": job, "node_ids": ",".join(hosts),
                          "step": np.arange(len(times)) * 50, "step_time_ms": values.round(2), "source": "synth"})
    if sim.stopped is not None:
        frame = frame.iloc[:sim.stopped]
    truth = {"nodes": hosts, "baseline_step_time_ms": round(base, 1),
             "slowdown_pct": sim.slowdown[1] if sim.slowdown else 0.0,
             "onset": str(times[sim.slowdown[0]]) if sim.slowdown else None,
             "stopped_at": str(times[sim.stopped]) if sim.stopped is not None else None}
    return frame, {job: truth}


def build_racks(*, seed: int = 0, racks: int = DEFAULT_RACKS, hours: float = 8.0, interval_min: float = 5.0,
                platform: str = "gb200-nvl72",
                scenarios: Sequence[str] | None = None) -> tuple[dict[str, pd.DataFrame], dict[str, Any],
                                                                  dict[str, RackSlot], dict[str, str]]:
    """A rack fleet's tables, ground truth, inventory (host -> rack and tray) and platforms, in memory."""
    unknown = sorted(set(scenarios or ()) - set(RACK_SCENARIOS))
    if unknown:
        raise InputError(f"unknown rack {fmt.noun(len(unknown), 'scenario')} {', '.join(unknown)}; known: "
                         f"{', '.join(RACK_SCENARIOS)}")
    spec = rack_spec(platform)
    rng = np.random.default_rng(seed)
    times = pd.date_range(START + pd.Timedelta(days=int(rng.integers(0, 300))),
                          periods=int(hours * 60 / interval_min) + 1, freq=f"{interval_min}min")
    links, events, steps = [], [], []
    truth_racks: dict[str, Any] = {}
    jobs: dict[str, Any] = {}
    slots: dict[str, RackSlot] = {}
    platforms: dict[str, str] = {}
    for i, scenario in enumerate(_order(rng, racks, scenarios), start=1):
        rack_id = f"rack-{i:02d}"
        sim = _rack(rng, rack_id, platform, times)
        APPLY[scenario](sim)
        frames, evs = sim.frames()
        links.extend(frames)
        events.extend(evs)
        step, job = _steps(rng, sim, times)
        steps.append(step)
        jobs.update(job)
        for kind, count, plat in (("compute", spec.compute_trays, spec.compute_platform),
                                  ("switch", spec.switch_trays, spec.switch_platform)):
            for slot in range(1, count + 1):
                slots[sim.host(kind, slot)] = RackSlot(rack_id, str(slot))
                platforms[sim.host(kind, slot)] = plat
        record = {"platform": platform, "scenario": scenario, "benign": scenario in RACK_BENIGN,
                  "faults": sim.faults, "warnings": sim.warnings, "near": sim.near, "job": next(iter(job))}
        record["expect"] = expectations(record, next(iter(job.values())), end=times[-1],
                                        caveats=RACK_CAVEATS.get(scenario, []))
        truth_racks[rack_id] = record
    tables = {"link_samples": conform(LINK_SAMPLES, pd.concat(links, ignore_index=True)),
              "events": conform(EVENTS, pd.concat(events, ignore_index=True)),
              "step_samples": conform(STEP_SAMPLES, pd.concat(steps, ignore_index=True))}
    truth = {"seed": seed, "hours": hours, "interval_min": interval_min, "start": str(times[0]),
             "end": str(times[-1]), "platform": platform, "nodes": {}, "racks": truth_racks, "jobs": jobs}
    return tables, truth, slots, platforms


def generate_racks(*, out: Path, seed: int = 0, racks: int = DEFAULT_RACKS, hours: float = 8.0,
                   interval_min: float = 5.0, platform: str = "gb200-nvl72", fmt: str = "parquet",
                   scenarios: Sequence[str] | None = None, life: bool = False) -> Path:
    """Write the rack fleet under `out`; returns the ground-truth file. `life` adds the alert loop's life nodes and
    storm beside it, as `generate` does."""
    tables, truth, slots, platforms = build_racks(seed=seed, racks=racks, hours=hours, interval_min=interval_min,
                                                  platform=platform, scenarios=scenarios)
    write_tables(out, tables, fmt)
    pd.DataFrame({"node_id": list(slots), "platform": [platforms[h] for h in slots],
                  "rack": [s.rack for s in slots.values()], "tray": [s.tray for s in slots.values()]}).to_csv(
        out / "nodes.csv", index=False)
    path = out / "ground_truth.json"
    path.write_text(json.dumps(truth, indent=1, sort_keys=True, default=str) + "\n", encoding="utf-8")
    if life:
        write_alert_scenarios(out, seed=seed, end=pd.Timestamp(truth["end"]))
    return path


def load_slots(folder: Path) -> dict[str, RackSlot]:
    """The rack inventory of a written fleet's `nodes.csv` (hosts with a rack column)."""
    path = folder / "nodes.csv"
    if not path.exists():
        return {}
    nodes = pd.read_csv(path, dtype=str, keep_default_na=False)
    if "rack" not in nodes.columns:
        return {}
    trays = nodes["tray"] if "tray" in nodes.columns else pd.Series([""] * len(nodes))
    roles = nodes["role"] if "role" in nodes.columns else pd.Series([""] * len(nodes))
    return {str(n): RackSlot(str(r), str(t) or None, str(o) or None)
            for n, r, t, o in zip(nodes["node_id"], nodes["rack"], trays, roles, strict=True) if r}
