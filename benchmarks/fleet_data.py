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
