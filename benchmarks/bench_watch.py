"""Early warning over a fleet's history: the watch list on 72 h of 5-minute samples, in memory.

    python benchmarks/bench_watch.py [--nodes 128] [--hours 72] [--step-min 5]

The fleet is benchmarks/fleet_data.py's HGX H100 nodes (152 links each, background noise, a few replay storms),
with one link per 16 nodes made to climb toward the replay threshold (so the list has something to find). Not
timed: building the table. Printed: rows, the watch list's wall time (p50 of 3), links watched and found, and the
per-node cost. The store's `fabricbot watch` reads 64 nodes at a time, so its memory follows that chunk; this
measures the fit itself.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fleet_data import LINKS_PER_NODE, fleet, fleet_options

from diagnostics.analysis import watch_list


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    fleet_options(parser)
    parser.set_defaults(nodes=128, hours=72.0)
    args = parser.parse_args()
    frame = fleet(args.nodes, args.hours, args.step_min)
    times = int(args.hours * 60 / args.step_min) + 1
    climbing = np.arange(0, args.nodes, 16) * LINKS_PER_NODE + 5  # GPU 0 NVLink 5 of every 16th node
    ramp = np.cumsum(np.linspace(0, 500, times) * args.step_min / 60)
    replay = frame["replay"].to_numpy().copy().reshape(-1, times)
    replay[climbing] += ramp
    frame["replay"] = replay.reshape(-1)
    runs = []
    for _ in range(3):
        start = time.perf_counter()
        found = watch_list({"link_samples": frame})
        runs.append(time.perf_counter() - start)
    wall = statistics.median(runs)
    print(f"rows {len(frame):,} ({args.nodes} nodes x {LINKS_PER_NODE} links x {times} readings)")
    print(f"watch list: {wall:.2f} s p50 of 3 ({wall / args.nodes * 1000:.1f} ms per node); "
          f"{len(found)} watched of {len(climbing)} climbing links")


if __name__ == "__main__":
    main()
