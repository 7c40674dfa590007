"""A synthetic fleet with labelled faults, since real fleet telemetry is private.

Each node gets one scenario; rates, onsets, sizes and the slowdown they cause are drawn from ranges that include
values near each threshold, so no fixed pattern can be learned. Output: the normalized tables (Parquet or CSV),
`nodes.csv` (the inventory: node and platform), `ground_truth.json`, and dcgm-exporter scrapes (link series and
Xid counters) of a few nodes. Same seed, same fleet. 24 nodes hold every scenario (23) at least once.

The ground truth holds, per node, its labelled faults (kind, part, onset, whether it slows the job) and what a
diagnosis should conclude (`expect`, see `truth`); per job, its nodes, slowdown and when it stopped logging steps.
A node outside the inventory (`platform_unknown`) is left out of `nodes.csv`; its truth names no platform.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import format as fmt
from ..config.platforms import all_platforms
from ..errors import InputError
from ..ingest.base import Source
from ..ingest.dcgm_map import load_map
from ..ingest.dcgm_write import format_exposition
from ..ingest.tables import READER as TABLES
from ..progress import Progress, advance
from ..tables import EVENTS, LINK_SAMPLES, STEP_SAMPLES, TOPOLOGY, TableSchema
from .lanes import extra_rows, remote_rows
from .node import NodeSim
from .scenarios import BENIGN, CAVEATS, SCENARIOS, apply_scenario
from .truth import expectations

START = pd.Timestamp("2026-01-05T00:00:00Z")
SEED_NODES = {"hpc-gpu-node-12": ("replay_storm", "h100-nvl-8gpu"), "hpc-gpu-node-03": ("healthy", "hgx-h100-8gpu")}
SEED_JOB = "4411"
HEALTHY_SEED = "hpc-gpu-node-03"  # runs a job of its own, so its summary shows no other node's slowdown
DEFAULT_NODES = 27
PLATFORMS = ("hgx-h100-8gpu", "hgx-h200-8gpu", "dgx-a100-8gpu", "dgx1-v100-8gpu", "pcie-8gpu")
B200 = "hgx-b200-8gpu"
# scenarios on one platform only; the fleet skips them when that platform's file is missing
ONLY_ON = {"sku_12_of_18": "h100-nvl-8gpu", "blackwell_link_errors": B200, "healthy_blackwell": B200}
# scenarios that read no pre-Blackwell NVLink counter (replay, CRC, recovery): Blackwell nodes may take them
ANY_GENERATION = ("healthy", "outside_slowdown", "scrape_gaps", "reboot_reset", "pcie_riser_replays",
                  "pcie_lane_errors", "pcie_downtrain", "link_inactive", "xid79_gpu_lost", "xid79_after_pcie_replays",
                  "single_scrape")
SWITCHED = ("hgx-h100-8gpu", "hgx-h200-8gpu", "dgx-a100-8gpu")  # NVSwitch boards running Fabric Manager
NEED_NO_NVLINK = ("pcie_riser_replays", "pcie_downtrain", "pcie_lane_errors", "healthy", "outside_slowdown",
                  "scrape_gaps", "xid79_gpu_lost", "xid79_after_pcie_replays", "single_scrape")


@dataclass
class Fleet:
    nodes: list[str]
    platforms: dict[str, str]
    scenarios: dict[str, str]
    sims: dict[str, NodeSim] = field(default_factory=dict)


def conform(schema: TableSchema, frame: pd.DataFrame) -> pd.DataFrame:
    """`schema.conform`, with absent float columns filled by NaN first (NA cannot start a float column)."""
    missing = {c: np.nan for c, d in schema.columns.items() if c not in frame.columns and d == "float64"}
    return schema.conform(frame.assign(**missing) if missing else frame)


def _assign(rng: np.random.Generator, nodes: int, only: Sequence[str] | None = None) -> tuple[
        dict[str, str], dict[str, str]]:
    names = [f"hpc-gpu-node-{i:02d}" for i in range(1, nodes + 1)]
    known = all_platforms()
    pool = [s for s in SCENARIOS if s not in ("healthy", "replay_storm")]
    order: list[str] = []
    while len(order) < nodes + 2:
        order.extend(list(only) if only else ["healthy", "replay_storm", *map(str, rng.permutation(pool))])
    for name, (scenario, _) in SEED_NODES.items():  # the seed nodes take their scenarios' first slots
        if name in names and not only:
            order.remove(scenario)
    scenarios, platforms = {}, {}
    free = iter(order)
    for name in names:
        if name in SEED_NODES and not only:  # a chosen mix has no demo nodes
            scenarios[name], platforms[name] = SEED_NODES[name]
            if platforms[name] not in known:  # the bridged-pair part is missing: any NVLink platform
                platforms[name] = "hgx-h100-8gpu"
            continue
        scenario = next(free)
        while ONLY_ON.get(scenario, PLATFORMS[0]) not in known:
            scenario = next(free)
        scenarios[name] = scenario
        platforms[name] = _platform(rng, scenario, known)
    return scenarios, platforms


def _platform(rng: np.random.Generator, scenario: str, known: dict[str, Any]) -> str:
    if scenario in ONLY_ON:
        return ONLY_ON[scenario]
    if scenario in ("nvswitch_port_fault", "fabric_manager_down", "platform_unknown", "fatal_sxid",
                    "nvswitch_end_fault"):
        return str(rng.choice([p for p in SWITCHED if p in known]))
    platforms = [*PLATFORMS, B200] if scenario in ANY_GENERATION else list(PLATFORMS)
    if scenario not in NEED_NO_NVLINK:  # the rest need NVLinks
        platforms = [p for p in platforms if p in known and int(known[p].get("nvlinks_per_gpu", 0)) > 0]
    return str(rng.choice([p for p in platforms if p in known]))


def _jobs(rng: np.random.Generator, fleet: Fleet) -> list[tuple[str, list[str]]]:
    """Jobs spanning nodes; each job holds at most one node whose trouble slows it or stops it."""
    slow = [n for n in fleet.nodes if fleet.sims[n].slowdown is not None or fleet.sims[n].stops_job is not None]
    calm = [n for n in fleet.nodes if n not in slow and n != HEALTHY_SEED]
    rng.shuffle(calm)
    jobs: list[tuple[str, list[str]]] = []
    number = 4400
    for node in slow:
        apart = _apart(fleet, node, calm)  # no other fault starting with the slowdown: the two could not be told apart
        members = [node] + [apart.pop() for _ in range(min(len(apart), int(rng.integers(0, 3))))]
        calm = [n for n in calm if n not in members]
        jobs.append((SEED_JOB if node == "hpc-gpu-node-12" else _next(number := number + 1), sorted(members)))
    while calm:
        members = [calm.pop() for _ in range(min(len(calm), int(rng.integers(1, 4))))]
        number += 1
        jobs.append((_next(number), sorted(members)))
    if HEALTHY_SEED in fleet.nodes and HEALTHY_SEED not in slow:
        jobs.append((_next(number + 1), [HEALTHY_SEED]))
    return jobs


def _apart(fleet: Fleet, node: str, calm: list[str]) -> list[str]:
    """The calm nodes none of whose faults starts within an hour of `node`'s slowdown or stop."""
    sim = fleet.sims[node]
    when = sim.slowdown[0] if sim.slowdown is not None else sim.stops_job
    step_h = (sim.times[1] - sim.times[0]).total_seconds() / 3600
    near = int(np.ceil(1.0 / step_h))
    return [n for n in calm if all(abs(int(sim.times.searchsorted(pd.Timestamp(f["onset"]))) - (when or 0)) >= near
                                   for f in fleet.sims[n].faults)]


def _next(number: int) -> str:
    return str(number + 1000 if str(number) == SEED_JOB else number)


def _steps(rng: np.random.Generator, fleet: Fleet, times: pd.DatetimeIndex) -> tuple[pd.DataFrame, dict[str, Any]]:
    frames, truth = [], {}
    for job, members in _jobs(rng, fleet):
        base = 180.0 if job == SEED_JOB else float(rng.uniform(120, 420))
        values = base * (1 + rng.normal(0, 0.012, len(times)))
        cause = next((fleet.sims[n].slowdown for n in members if fleet.sims[n].slowdown), None)
        if cause is not None:
            onset, pct = cause
            values[onset:] *= 1 + pct / 100
        stop = next((fleet.sims[n].stops_job for n in members if fleet.sims[n].stops_job is not None), None)
        truth[job] = {"nodes": members, "baseline_step_time_ms": round(base, 1),
                      "slowdown_pct": cause[1] if cause else 0.0,
                      "onset": str(times[cause[0]]) if cause else None,
                      "stopped_at": str(times[stop]) if stop is not None else None}
        logged = slice(0, stop)  # a job that cannot run logs no step
        frames.append(pd.DataFrame({"timestamp": times[logged], "job_id": job, "node_ids": ",".join(members),
                                    "step": np.arange(len(times))[logged] * 50, "step_time_ms": values[logged].round(2),
                                    "source": "synth"}))
    return conform(STEP_SAMPLES, pd.concat(frames, ignore_index=True)), truth


def build(*, seed: int = 0, nodes: int = DEFAULT_NODES, hours: float = 8.0, interval_min: float = 5.0,
          scenarios: Sequence[str] | None = None,
          progress: Progress | None = None) -> tuple[dict[str, pd.DataFrame], dict[str, Any]]:
    """The fleet's tables and its ground truth, in memory; `scenarios` limits the mix to those (in turn).
    `progress` is advanced by one per node simulated."""
    unknown = sorted(set(scenarios or ()) - set(SCENARIOS))
    if unknown:
        raise InputError(f"unknown {fmt.noun(len(unknown), 'scenario')} {', '.join(unknown)}; known: "
                         f"{', '.join(SCENARIOS)}")
    rng = np.random.default_rng(seed)
    times = pd.date_range(START + pd.Timedelta(days=int(rng.integers(0, 300))), periods=int(hours * 60 / interval_min)
                          + 1, freq=f"{interval_min}min")
    chosen, platforms = _assign(rng, nodes, scenarios)
    fleet = Fleet(list(chosen), platforms, chosen)
    link_frames, event_frames, topology_frames = [], [], []
    truth_nodes: dict[str, dict[str, Any]] = {}
    for name in fleet.nodes:
        sim = NodeSim.new(rng, name, platforms[name], times, near=scenarios is not None or name not in SEED_NODES)
        apply_scenario(sim, chosen[name], demo=not scenarios)
        fleet.sims[name] = sim
        link_frames.append(extra_rows(sim, sim.link_frame()))
        remote = remote_rows(sim)
        if remote is not None:
            topology_frames.append(remote)
        event_frames.append(sim.event_frame())
        advance(progress)
        truth_nodes[name] = {"platform": platforms[name] if sim.inventory else None, "board": platforms[name],
                             "scenario": chosen[name], "benign": chosen[name] in BENIGN, "faults": sim.faults,
                             "near": sim.near, "warnings": sim.warnings}
    steps, jobs = _steps(rng, fleet, times)
    job_of = {n: j for j, v in jobs.items() for n in v["nodes"]}
    for name, node in truth_nodes.items():
        node["job"] = job_of.get(name)
        node["expect"] = expectations(node, jobs.get(job_of.get(name, "")), end=times[-1],
                                      caveats=CAVEATS.get(chosen[name], []))
    tables = {"link_samples": conform(LINK_SAMPLES, pd.concat(link_frames, ignore_index=True)),
              "events": conform(EVENTS, pd.concat(event_frames, ignore_index=True)),
              "step_samples": steps}
    # the `nvidia-smi nvlink -R` a node's scenario reads (none: an empty table, so every fleet has the same files)
    tables["topology"] = conform(TOPOLOGY, pd.concat(topology_frames, ignore_index=True) if topology_frames
                                 else pd.DataFrame())
    truth = {"seed": seed, "hours": hours, "interval_min": interval_min, "start": str(times[0]),
             "end": str(times[-1]), "nodes": truth_nodes, "jobs": jobs}
    return tables, truth


def write_tables(out: Path, tables: dict[str, pd.DataFrame], fmt: str,
                 progress: Progress | None = None) -> None:
    """Each table as `out/<name>.parquet` (zstd) or `.csv`; `progress` advanced by one per table."""
    out.mkdir(parents=True, exist_ok=True)
    for name, frame in tables.items():
        if fmt == "csv":
            frame.to_csv(out / f"{name}.csv", index=False)
        else:
            frame.to_parquet(out / f"{name}.parquet", index=False, compression="zstd")
        advance(progress)


def generate(*, out: Path, seed: int = 0, nodes: int = DEFAULT_NODES, hours: float = 8.0, interval_min: float = 5.0,
             fmt: str = "parquet", scrapes: int = 2, scenarios: Sequence[str] | None = None,
             life: bool = False, progress: Progress | None = None) -> Path:
    """Write the fleet under `out`; returns the ground-truth file. `scrapes` nodes also get dcgm scrapes; `life`
    adds the life nodes (`synth.life`) in `out/life` and the storm (`synth.storm`) in `out/storm`. `progress` is
    advanced by one per node simulated and one per part written (`generate_steps` in all)."""
    tables, truth = build(seed=seed, nodes=nodes, hours=hours, interval_min=interval_min, scenarios=scenarios,
                          progress=progress)
    write_tables(out, tables, fmt, progress)
    known = {n: v["platform"] for n, v in truth["nodes"].items() if v["platform"] is not None}
    pd.DataFrame({"node_id": list(known), "platform": list(known.values())}).to_csv(out / "nodes.csv", index=False)
    # a GPU off the bus first, then Blackwell nodes, then other Xids, so the scrapes show those series
    order = sorted(truth["nodes"], key=lambda n: (not _has_xid(tables["events"], n, 79),
                                                  truth["nodes"][n]["board"] != B200,
                                                  not _has_xid(tables["events"], n), n))
    _scrapes(tables["link_samples"], tables["events"], out / "dcgm", order[:scrapes])
    advance(progress)
    path = out / "ground_truth.json"
    path.write_text(json.dumps(truth, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    if life:
        write_alert_scenarios(out, seed=seed, end=pd.Timestamp(truth["end"]), progress=progress)
    return path


def write_alert_scenarios(out: Path, *, seed: int, end: pd.Timestamp, progress: Progress | None = None) -> None:
    """The life nodes (`synth.life`) in `out/life` and the storm (`synth.storm`) in `out/storm`, ending with the
    fleet: what `fabricbot eval` scores the alert loop on, beside any fleet."""
    from .life import generate_life  # they build on this module
    from .storm import generate_storm

    generate_life(out, seed=seed, end=end)
    advance(progress)
    generate_storm(out, seed=seed, end=end)
    advance(progress)


def generate_steps(nodes: int, *, life: bool = False) -> int:
    """How many steps `generate` advances its progress by: each node, each table file, the scrapes, the life
    nodes."""
    return nodes + 5 + 2 * life


def _has_xid(events: pd.DataFrame, node: str, code: int | None = None) -> bool:
    mine = (events["node_id"] == node) & (events["kind"] == "xid")
    return bool((mine & (events["code"] == code)).any() if code is not None else mine.any())


def _scrapes(links: pd.DataFrame, events: pd.DataFrame, folder: Path, names: list[str]) -> None:
    """The last 15 minutes of each chosen node as dcgm-exporter scrapes (with sample times), one file per node."""
    if not names:
        return
    folder.mkdir(exist_ok=True)
    for name in names:
        rows = links[links["node_id"] == name]
        recent = rows[rows["timestamp"] >= rows["timestamp"].max() - pd.Timedelta(minutes=15)]
        lines = [*format_exposition(recent), *_xid_lines(events[events["node_id"] == name], recent, name)]
        (folder / f"{name}.prom").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _xid_lines(events: pd.DataFrame, recent: pd.DataFrame, node: str) -> list[str]:
    """`DCGM_EXP_XID_ERRORS_COUNT{gpu, xid}` at each scrape time: how many of each Xid the GPU has logged so far."""
    xids = events[events["kind"] == "xid"]
    if xids.empty:
        return []
    name = sorted(load_map().xid_counter)[0]
    lines = [f"# TYPE {name} counter"]
    pairs = xids[["gpu", "code"]].astype("int64").drop_duplicates().sort_values(["gpu", "code"])
    for gpu, code in pairs.itertuples(index=False):
        group = xids[(xids["gpu"] == gpu) & (xids["code"] == code)]
        for ts in sorted(recent["timestamp"].unique()):
            count = int((group["timestamp"] <= ts).sum())
            lines.append(f'{name}{{gpu="{gpu}",xid="{code}",Hostname="{node}"}} {count} '
                         f"{pd.Timestamp(ts).value // 1_000_000}")
    return lines


def load(folder: Path) -> tuple[dict[str, pd.DataFrame], dict[str, str]]:
    """A written fleet's tables and its inventory (node -> platform)."""
    tables: dict[str, pd.DataFrame] = {}
    for schema in (LINK_SAMPLES, EVENTS, STEP_SAMPLES, TOPOLOGY):
        parquet, csv = folder / f"{schema.name}.parquet", folder / f"{schema.name}.csv"
        if parquet.exists():
            tables[schema.name] = conform(schema, pd.read_parquet(parquet))
        elif csv.exists():  # read as `fabricbot ingest` reads it: a bare read_csv made NVSwitch 2 the float 2.0
            tables[schema.name] = conform(schema, TABLES.read(Source.from_path(csv)).tables[schema.name])
    inventory: dict[str, str] = {}
    if (folder / "nodes.csv").exists():
        nodes = pd.read_csv(folder / "nodes.csv", dtype=str)
        inventory = dict(zip(nodes["node_id"], nodes["platform"], strict=True))
    return tables, inventory
