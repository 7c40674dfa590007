"""Benchmark data on the product's own workload: `fabricbot synth` fleets ingested into a store, kept on disk.

The fleet is built in chunks of CHUNK nodes (the synthetic fleet is simulated in memory, several GB per 256 nodes
x 24 h), each chunk in a process of its own with a seed of its own: every scenario in each chunk, its jobs across
its own nodes, its Xid and SXid events, lanes and PCIe ends, in the proportions `fabricbot synth` writes them. A
chunk's times are moved onto the first chunk's (a synthetic fleet starts on a day its seed draws) and its nodes and
jobs numbered after the chunks before it (`hpc-gpu-node-129`, ...), so the store holds one fleet. The first chunk
is written as `fabricbot synth` writes it, with the life nodes and the storm beside it.

The store is built once under the cache folder (default `$FABRICBOT_BENCH_CACHE`, else `~/.cache/fabricbot-bench`:
outside the repository) and reused by later runs; delete its folder to build it afresh.

    python benchmarks/synth_data.py --nodes 1024 --hours 24    # build (or find) the store, print its folder
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

SEED = 7321
CHUNK = 128
VERSION = 7  # bump when the way a store is built changes, so an old cache is not reused (2: slim parts, 4: directories,
# 5: busy links apart, 6: a link by its order columns, 7: its rises by its identity)


def cache_root() -> Path:
    return Path(os.environ.get("FABRICBOT_BENCH_CACHE") or Path.home() / ".cache" / "fabricbot-bench")


def store_dir(nodes: int, hours: float, seed: int = SEED) -> Path:
    return cache_root() / f"synth-v{VERSION}-{nodes}n-{hours:g}h-s{seed}"


def synth_store(nodes: int, hours: float, seed: int = SEED, *, say: bool = True) -> Path:
    """The folder of a store holding a synthetic fleet of `nodes` x `hours` (built now unless cached)."""
    folder = store_dir(nodes, hours, seed)
    done = folder / "built.json"
    if done.exists():
        return folder / "store"
    folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    for chunk, first in enumerate(range(0, nodes, CHUNK)):
        count = min(CHUNK, nodes - first)
        if say:
            print(f"  building the synthetic store: nodes {first + 1}-{first + count} of {nodes} ...", flush=True)
        subprocess.run([sys.executable, __file__, "--chunk", str(chunk), "--first", str(first), "--count", str(count),
                        "--hours", str(hours), "--seed", str(seed), "--store", str(folder / "store")], check=True)
    size = sum(p.stat().st_size for p in (folder / "store").rglob("*") if p.is_file())
    done.write_text(json.dumps({"nodes": nodes, "hours": hours, "seed": seed, "store_mb": round(size / 2**20),
                                "build_s": round(time.perf_counter() - started, 1)}) + "\n", encoding="utf-8")
    return folder / "store"


def built(nodes: int, hours: float, seed: int = SEED) -> dict[str, object]:
    result: dict[str, object] = json.loads((store_dir(nodes, hours, seed) / "built.json").read_text(encoding="utf-8"))
    return result


def _renumber(name: str, first: int) -> str:
    """hpc-gpu-node-NN of a later chunk as hpc-gpu-node-(first + NN)."""
    match = re.fullmatch(r"hpc-gpu-node-(\d+)", name)
    return f"hpc-gpu-node-{first + int(match.group(1)):02d}" if match else name


def _chunk(chunk: int, first: int, count: int, hours: float, seed: int, store: str) -> None:
    from diagnostics.store.telemetry import TelemetryStore
    from diagnostics.synth.fleet import build, generate, write_tables

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        if chunk == 0:  # as `fabricbot synth --scrapes 0` writes it, life nodes and storm included
            generate(out=out, seed=seed, nodes=count, hours=hours, scrapes=0, life=True)
        else:
            first_start = pd.Timestamp(build(seed=seed, nodes=1, hours=hours)[1]["start"])
            tables, truth = build(seed=seed + chunk, nodes=count, hours=hours)
            shift = first_start - pd.Timestamp(truth["start"])
            names = {n: _renumber(n, first) for n in truth["nodes"]}
            for frame in tables.values():
                if "timestamp" in frame.columns:  # the topology table has no time
                    frame["timestamp"] = frame["timestamp"] + shift
                if "node_id" in frame.columns:
                    frame["node_id"] = frame["node_id"].astype("string").map(names).astype("category")
            steps = tables["step_samples"]
            steps["job_id"] = steps["job_id"].astype("string").map(lambda j: str(int(j) + 10_000 * chunk))
            steps["node_ids"] = steps["node_ids"].astype("string").map(
                lambda v: ",".join(names.get(n, n) for n in v.split(",")))
            write_tables(out, tables, "parquet")
            known = {names[n]: v["platform"] for n, v in truth["nodes"].items() if v["platform"] is not None}
            pd.DataFrame({"node_id": list(known), "platform": list(known.values())}).to_csv(out / "nodes.csv",
                                                                                             index=False)
        report = TelemetryStore(store).ingest([out])
        bad = [f"{f.name}: {f.error}" for f in report.files if f.status == "error"]
        assert not bad, bad


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1024)
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--chunk", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--first", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--count", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--store", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.chunk is not None:
        _chunk(args.chunk, args.first, args.count, args.hours, args.seed, args.store)
        return
    print(synth_store(args.nodes, args.hours, args.seed))


if __name__ == "__main__":
    main()
