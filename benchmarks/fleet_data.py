"""Benchmark data: a fleet of HGX H100 nodes as one link_samples table, built with numpy (not timed).

Rows are link-major (each link's readings together, in time order), as a store partition reads back.
Counters: crc_flit, crc_data, replay, recovery (cumulative, background noise); a few links per thousand
nodes carry a replay storm so the sweep has something to find.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import numpy as np
import pandas as pd

LINKS_PER_NODE = 8 * 18 + 8  # 144 NVLinks + 8 PCIe links
START = pd.Timestamp("2026-02-01T00:00:00Z")


def fleet(nodes: int, hours: float, step_min: float, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    times = int(hours * 60 / step_min) + 1
    links = nodes * LINKS_PER_NODE
    n = links * times
    t = (START.value + np.arange(times, dtype=np.int64) * int(step_min * 60e9))
    link_in_node = np.arange(LINKS_PER_NODE)
    gpu = np.where(link_in_node < 144, link_in_node // 18, link_in_node - 144).astype(np.int16)
    link = np.where(link_in_node < 144, link_in_node % 18, -1).astype(np.int16)
    columns: dict[str, object] = {
        "timestamp": pd.to_datetime(np.tile(t, links), utc=True),
        "node_id": pd.Categorical.from_codes(np.repeat(np.arange(nodes, dtype=np.int32), LINKS_PER_NODE * times),
                                             [f"node-{i:04d}" for i in range(nodes)]),
        "gpu": pd.array(np.tile(np.repeat(gpu, times), nodes), dtype="Int16"),
        "link_type": pd.Categorical.from_codes(np.tile(np.repeat((link_in_node >= 144).astype(np.int8), times),
                                                       nodes), ["nvlink", "pcie"]),
        "link": pd.array(np.tile(np.repeat(link, times), nodes), dtype="Int16").astype("Int16"),
    }
    columns["link"] = pd.Series(columns["link"]).mask(pd.Series(np.tile(np.repeat(link < 0, times), nodes)))
    for name, lam in (("crc_flit", 0.8), ("crc_data", 0.2), ("replay", 0.5), ("recovery", 0.0005)):
        inc = rng.poisson(lam, n).astype(np.float32).reshape(links, times)
        if name == "replay":
            storm = rng.choice(links, size=max(1, nodes // 200), replace=False)
            inc[storm, times // 2:] += 400
        columns[name] = np.cumsum(inc, axis=1, dtype=np.float64).reshape(-1)
    return pd.DataFrame(columns)


def fleet_options(parser: argparse.ArgumentParser) -> None:
    """The fleet's shape as the fleet benchmarks take it (the issue's size by default)."""
    parser.add_argument("--nodes", type=int, default=1024)
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--step-min", type=float, default=5.0)


def run_phase(script: str, phase: str, args: argparse.Namespace, *extra: str) -> dict[str, object]:
    """One phase of a benchmark in its own process (so its peak memory is its own): its last line, as JSON."""
    cmd = [sys.executable, script, "--phase", phase, "--nodes", str(args.nodes), "--hours", str(args.hours),
           "--step-min", str(args.step_min), *extra]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    result: dict[str, object] = json.loads(out.strip().splitlines()[-1])
    return result


def rack_fleet(racks: int, hours: float, step_min: float, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """GB200 NVL72 racks as one link_samples table and their inventory (node_id, platform, rack, tray).

    Each rack: 18 compute trays of 4 GPUs x 18 NVLinks, 9 switch trays of 2 chips x 72 ports (DCGM switch
    entities), the same four counters; one rack in eight has a switch port whose link replays, at both ends."""
    from diagnostics.topology.rack import rack_graph

    rack = rack_graph("gb200-nvl72")
    spec = rack.spec
    rng = np.random.default_rng(seed)
    times = int(hours * 60 / step_min) + 1
    t = START.value + np.arange(times, dtype=np.int64) * int(step_min * 60e9)
    gpu_links, ports = spec.gpus_per_tray * spec.nvlinks_per_gpu, spec.chips_per_switch_tray * spec.ports_per_chip
    hosts = [f"r{r:02d}-{kind}{slot:02d}" for r in range(racks)
             for kind, count in (("c", spec.compute_trays), ("s", spec.switch_trays)) for slot in range(1, count + 1)]
    per_host = np.array([gpu_links if "-c" in h else ports for h in hosts])
    links = int(per_host.sum())
    host_of = np.repeat(np.arange(len(hosts), dtype=np.int32), per_host)
    within = np.arange(links) - np.repeat(np.cumsum(per_host) - per_host, per_host)
    switch = per_host[host_of] == ports
    gpu = np.where(switch, -1, within // spec.nvlinks_per_gpu)
    link = np.where(switch, within % spec.ports_per_chip + spec.wiring.first_port, within % spec.nvlinks_per_gpu)
    chip = np.where(switch, within // spec.ports_per_chip, -1)
    columns: dict[str, object] = {
        "timestamp": pd.to_datetime(np.tile(t, links), utc=True),
        "node_id": pd.Categorical.from_codes(np.repeat(host_of, times), hosts),
        "gpu": pd.Series(np.repeat(gpu, times), dtype="Int16").mask(np.repeat(switch, times)),
        "link_type": pd.Categorical.from_codes(np.repeat(switch.astype(np.int8), times), ["nvlink", "nvswitch"]),
        "link": pd.array(np.repeat(link, times), dtype="Int16"),
        "nvswitch": pd.Categorical.from_codes(np.repeat(np.where(switch, chip, -1), times), ["0", "1"]),
    }
    first = {h: i for i, h in enumerate(hosts)}
    offset = np.cumsum(per_host) - per_host
    storms = []
    for r in range(0, racks, 8):  # a switch port failing: the GPU link on it and the port itself replay
        end = rack.end(int(rng.integers(1, 19)), int(rng.integers(4)), int(rng.integers(18)))
        gpu_row = offset[first[f"r{r:02d}-c{end.tray:02d}"]] + end.gpu * spec.nvlinks_per_gpu + end.link
        port_row = offset[first[f"r{r:02d}-s{end.switch_tray:02d}"]] + (end.chip - 1) * spec.ports_per_chip \
            + end.port - spec.wiring.first_port
        storms += [gpu_row, port_row]
    for name, lam in (("crc_flit", 0.8), ("crc_data", 0.2), ("replay", 0.5), ("recovery", 0.0005)):
        inc = rng.poisson(lam, links * times).astype(np.float32).reshape(links, times)
        if name == "replay":
            inc[storms, times // 2:] += 400
        columns[name] = np.cumsum(inc, axis=1, dtype=np.float64).reshape(-1)
    inventory = pd.DataFrame({"node_id": hosts,
                              "platform": [spec.compute_platform if "-c" in h else spec.switch_platform for h in hosts],
                              "rack": [h.split("-")[0] for h in hosts], "tray": [str(int(h[-2:])) for h in hosts]})
    return pd.DataFrame(columns), inventory
