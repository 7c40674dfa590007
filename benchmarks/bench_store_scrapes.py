"""A store fed scrape by scrape, as `fabricbot ingest` from cron feeds it: a `fabricbot synth` fleet's link samples
ingested one scrape at a time (one ingest each), against the same rows ingested at once. Prints each ingest's time
(the merges every 16 scrapes show as the slow ones), the parts a node's day is left in, and the fleet sweep's time
over each store: fed with compaction (the default), fed without it (as before compaction), and ingested at once.

    python benchmarks/bench_store_scrapes.py [--nodes 32] [--hours 6]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pandas as pd

from diagnostics.store import compaction
from diagnostics.store.telemetry import TelemetryStore

OTHER_TABLES = ("events.parquet", "nodes.csv", "step_samples.parquet", "topology.parquet")


def _sweep(store: Path) -> float:
    """`fabricbot sweep --store --json` in a fresh process, the best of 3 (start-up included)."""
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "bot.launch", "sweep", "--store", str(store), "--json"],
                       capture_output=True, check=False)
        best = min(best, time.perf_counter() - started)
    return best


def _feed(store: TelemetryStore, fleet: Path, scrapes: list[Path]) -> list[float]:
    store.ingest([fleet / name for name in OTHER_TABLES])
    took = []
    for scrape in scrapes:
        started = time.perf_counter()
        store.ingest([scrape])
        took.append(time.perf_counter() - started)
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=32)
    parser.add_argument("--hours", type=int, default=6)
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores, load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        fleet = root / "fleet"
        subprocess.run([sys.executable, "-m", "bot.cli", "synth", "--out", str(fleet), "--nodes", str(args.nodes),
                        "--hours", str(args.hours), "--scrapes", "0", "--seed", "3", "--no-life"],
                       capture_output=True, check=True)
        links = pd.read_parquet(fleet / "link_samples.parquet")
        folder = root / "scrapes"
        folder.mkdir()
        scrapes = []
        for i, (_, rows) in enumerate(links.groupby("timestamp")):
            scrapes.append(folder / f"scrape-{i:04d}.parquet")
            rows.to_parquet(scrapes[-1], index=False)
        print(f"{args.nodes} nodes x {args.hours} h: {len(links):,} link samples in {len(scrapes)} scrapes")

        at_once = TelemetryStore(root / "at-once")
        at_once.ingest([fleet])
        fed = TelemetryStore(root / "fed")
        took = _feed(fed, fleet, scrapes)
        unmerged = TelemetryStore(root / "unmerged")
        compaction.COMPACT_PARTS = 10**9  # as before compaction: every scrape its own part
        plain = _feed(unmerged, fleet, scrapes)
        node = links["node_id"].astype(str).iloc[0]
        for name, store, times in (("fed, compacted", fed, took), ("fed, not compacted", unmerged, plain)):
            parts = len(store._catalog.parts("link_samples", [node]))
            print(f"  {name}: an ingest p50 {statistics.median(times):.2f} s, max {max(times):.2f} s, "
                  f"total {sum(times):.1f} s; {node}'s day in {parts} part(s)")
        sweeps = {name: _sweep(root / name) for name in ("at-once", "fed", "unmerged")}
        print(f"  sweep --store --json (best of 3): ingested at once {sweeps['at-once']:.2f} s, fed and compacted "
              f"{sweeps['fed']:.2f} s, fed without compaction {sweeps['unmerged']:.2f} s")
        shutil.rmtree(fleet, ignore_errors=True)
    print(f"load average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
