"""Fleet sweep through a real Prometheus vs the same sweep from files, and bytes vs pulling every series.

    python benchmarks/bench_sweep.py [--nodes 256 --hours 24] [--data-dir DIR] [--jobs 2] [--concurrency 4]

The issue's scale (the default): 256 HGX H100 nodes x 24 h at 1-minute scrapes, every series dcgm-exporter
exposes for the counters the sweep reads (4 NVLink error counters x 18 links, the PCIe replay counter and the
last-Xid gauge per GPU: 151,552 series, about 218 million samples). The fleet is written as OpenMetrics, one file
per 2-hour block (tests/prometheus_fleet.py), and each file is backfilled by its own `promtool tsdb
create-blocks-from openmetrics` as soon as it is written, `--jobs` at a time. Given `--data-dir`, the backfilled
TSDB and the OpenMetrics files the local sweep reads are kept there and reused by the next run with the same fleet
shape, so a rerun times only the sweeps. Faults are planted on nodes 0-3. The machine's load average is printed.

Timed: the offender list (push-down, queries in a pool and one after another), the push-down with the read-back
and local analysis of the offending nodes, pulling every series of every node over the window, and the same
sweep done locally from the files (the dcgm reader over the files the windows need, then the local sweep).

Then with recording rules: `fabricbot rules`' recording rules are backfilled by `promtool tsdb create-blocks-from
rules` from the first server over the span the rules need (their evaluations every minute, as the file's group
runs), into a hard-linked copy of the TSDB (the cached one is left as it was), and a second server over it is swept
the same ways: the sweep reads the recorded rates instead of computing every counter's increase.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from datetime import timedelta
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.progress import progress_bar
from diagnostics import load_thresholds
from diagnostics.config.thresholds import Thresholds
from diagnostics.ingest.base import Source
from diagnostics.ingest.dcgm import read_scrapes
from diagnostics.prometheus import PrometheusClient, SweepResult, load_config, read_node, rules_yaml, sweep
from tests.prometheus.fleet_writer import BLOCK_S, BigFleet, write_blocks
from tests.prometheus.helpers import GPUS, MODEL, start_server
from tests.prometheus.mirror import failing_links

FORMAT = 2  # bump when the generated fleet changes, so that a cached data dir is rebuilt
NO_COMPACTION = ("--storage.tsdb.max-block-duration=2h",)  # keep promtool's 2 h blocks: no compaction mid-timing
# the rule backfill asks each recording rule's whole span in one range query: more than the default 2 minutes on a
# loaded machine (the server answers 503); the sweeps' queries take seconds and never meet either limit
BACKFILL_TIMEOUT = ("--query.timeout=30m",)


def load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def history_hours(thresholds: Thresholds, window: float) -> float:
    """How far back the local sweep reads: the longest persistence span (m windows)."""
    return window * max([int(r.persist[1]) for r in thresholds.rules if r.persist] + [1])


def needed(fleet: BigFleet, path: Path, hours: float) -> bool:
    """Whether the block file holds samples the local sweep reads (the last `hours` before the end)."""
    start = int(path.stem.split("-")[1])
    return start + BLOCK_S > fleet.end.timestamp() - hours * 3600


def promtool(path: Path, tsdb: Path, keep: bool) -> float:
    started = time.perf_counter()
    done = subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", "-q", str(path), str(tsdb)],
                          capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"promtool failed on {path.name}: {done.stderr[-2000:]}")
    if not keep:
        path.unlink()
    return time.perf_counter() - started


def build(fleet: BigFleet, folder: Path, jobs: int, keep_hours: float) -> dict[str, object]:
    """Write and backfill the fleet; the files the local sweep needs stay, the rest go once backfilled."""
    shutil.rmtree(folder / "tsdb", ignore_errors=True)
    shutil.rmtree(folder / "openmetrics", ignore_errors=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    gen_s = 0.0
    size = samples = 0
    futures: list[Future[float]] = []
    blocks = int(fleet.steps * fleet.scrape_s // BLOCK_S) + 1  # at most: one file per 2-hour block
    with progress_bar(blocks, "backfill", unit="block") as done, ThreadPoolExecutor(max_workers=jobs) as pool:
        t = time.perf_counter()
        for path, nbytes, count in write_blocks(fleet, folder / "openmetrics"):
            gen_s += time.perf_counter() - t
            size, samples = size + nbytes, samples + count
            futures.append(pool.submit(promtool, path, folder / "tsdb", needed(fleet, path, keep_hours)))
            futures[-1].add_done_callback(lambda _: done(1))
            while len(pending := [f for f in futures if not f.done()]) > jobs:  # bound the disk used
                wait(pending, return_when=FIRST_COMPLETED)
            t = time.perf_counter()
        gen_done = time.perf_counter() - started
        per_file = [f.result() for f in futures]
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    fleet.files = [p for p in fleet.files if p.exists()]
    info: dict[str, object] = {
        "format": FORMAT, "nodes": fleet.nodes, "hours": fleet.hours, "seed": fleet.seed,
        "scrape_s": fleet.scrape_s, "planted": fleet.planted, "files": [p.name for p in fleet.files],
        "bytes": size, "samples": samples, "generate_s": gen_s, "generate_wall_s": gen_done,
        "build_s": time.perf_counter() - started, "promtool_s": sum(per_file),
        "promtool_cpu_s": (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime),
        "blocks": len(per_file), "jobs": jobs, "load": load(),
    }
    (folder / "fleet.json").write_text(json.dumps(info, indent=1), encoding="utf-8")
    return info


def cached(folder: Path, fleet: BigFleet) -> dict[str, object] | None:
    marker = folder / "fleet.json"
    if not marker.exists():
        return None
    info: dict[str, object] = json.loads(marker.read_text(encoding="utf-8"))
    shape = {"format": FORMAT, "nodes": fleet.nodes, "hours": fleet.hours, "seed": fleet.seed,
             "scrape_s": fleet.scrape_s}
    if any(info.get(k) != v for k, v in shape.items()):
        return None
    fleet.planted = dict(info["planted"])  # type: ignore[call-overload]
    fleet.files = [folder / "openmetrics" / str(n) for n in info["files"]]  # type: ignore[attr-defined]
    return info if all(p.exists() for p in fleet.files) else None


def timed_sweep(url: str, thresholds: Thresholds, fleet: BigFleet, window: float, concurrency: int,
                analyze: bool) -> tuple[SweepResult, float]:
    config = load_config(url, env={})
    config = config.model_copy(update={"limits": config.limits.model_copy(update={"concurrency": concurrency})})
    with PrometheusClient(config) as client:
        t = time.perf_counter()
        result = sweep(client, thresholds, at=fleet.end, window_hours=window, analyze=analyze)
        return result, time.perf_counter() - t


def pull_everything(url: str, fleet: BigFleet, window: float, concurrency: int) -> tuple[float, int, int]:
    """Every series of every node over the window, as a local analysis of the whole fleet would need."""
    with PrometheusClient(load_config(url, env={})) as client:
        start = fleet.end - timedelta(hours=window)
        t = time.perf_counter()
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            list(pool.map(lambda node: read_node(client, node, start, fleet.end, 60), fleet.node_ids))
        return time.perf_counter() - t, client.stats.bytes_received, client.stats.bytes_decoded


def local_sweep(fleet: BigFleet, thresholds: Thresholds,
                window: float) -> tuple[set[tuple[object, ...]], dict[str, float]]:
    """The dcgm reader over the kept files (one at a time, the Xid state carried), then the local sweep."""
    t = time.perf_counter()
    xid_last: dict[tuple[object, ...], float] = {}
    parts = [read_scrapes([(Source.from_path(p), None)], xid_last=xid_last)["link_samples"] for p in fleet.files]
    samples = pd.concat(parts, ignore_index=True)
    read_s = time.perf_counter() - t
    gpus = pd.DataFrame([{"node_id": n, "gpu": g, "model": MODEL} for n in fleet.node_ids for g in range(GPUS)])
    t = time.perf_counter()
    found = failing_links(samples, thresholds, fleet.end, window, gpus)
    return {o.key for o in found}, {"read_s": read_s, "sweep_s": time.perf_counter() - t,
                                    "bytes": sum(p.stat().st_size for p in fleet.files), "rows": len(samples)}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=256)
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--window", type=float, default=1.0)
    parser.add_argument("--jobs", type=int, default=2, help="promtool processes at once")
    parser.add_argument("--concurrency", type=int, default=4, help="sweep queries in flight at once")
    parser.add_argument("--data-dir", type=Path, help="keep the backfilled fleet here and reuse it next time")
    args = parser.parse_args()
    if shutil.which("prometheus") is None or shutil.which("promtool") is None:
        print("needs the prometheus and promtool binaries (Debian package `prometheus`)")
        return 1
    folder = args.data_dir or Path(tempfile.mkdtemp(prefix="bench-sweep-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        return run(args, folder)
    finally:
        if args.data_dir is None:
            shutil.rmtree(folder, ignore_errors=True)


def run(args: argparse.Namespace, folder: Path) -> int:
    thresholds = load_thresholds()
    fleet = BigFleet(nodes=args.nodes, hours=args.hours)
    keep_hours = history_hours(thresholds, args.window)
    info = cached(folder, fleet)
    print(f"machine: {os.cpu_count()} cores, load average {load()}")
    if info is None:
        info = build(fleet, folder, args.jobs, keep_hours)
        state = "built now"
    else:
        state = f"reused from {folder} (built with load average {info['load']})"
    samples, size = int(info["samples"]), int(info["bytes"])  # type: ignore[call-overload]
    print(f"fleet: {args.nodes} nodes x {args.hours:g} h at 1-minute scrapes, {samples:,} samples, "
          f"OpenMetrics {size / 1e9:.1f} GB in {info['blocks']} block files; {state}")
    gen_s, promtool_cpu = float(info["generate_s"]), float(info["promtool_cpu_s"])  # type: ignore[arg-type]
    print(f"  generate: {gen_s:.0f} s ({size / 1e6 / gen_s:.0f} MB/s, {samples / gen_s / 1e6:.1f} M samples/s); "
          f"promtool: {promtool_cpu:.0f} CPU s ({samples / promtool_cpu / 1e6:.2f} M samples/s per core), "
          f"{info['jobs']} at a time; wall {float(info['build_s']):.0f} s in all (not timed below)")  # type: ignore[arg-type]
    t = time.perf_counter()
    server = start_server(folder / "tsdb", extra=NO_COMPACTION + BACKFILL_TIMEOUT)
    print(f"prometheus ready in {time.perf_counter() - t:.1f} s; load average {load()}")
    try:
        listed, list_s = timed_sweep(server.url, thresholds, fleet, args.window, args.concurrency, analyze=False)
        again, again_s = timed_sweep(server.url, thresholds, fleet, args.window, args.concurrency, analyze=False)
        one, one_s = timed_sweep(server.url, thresholds, fleet, args.window, 1, analyze=False)
        full, full_s = timed_sweep(server.url, thresholds, fleet, args.window, args.concurrency, analyze=True)
        assert all(r.complete for r in (listed, again, one, full)), listed.incomplete_reasons
        assert not listed.recorded, "the cached TSDB holds recorded rates: build it again (no --data-dir reuse)"
        pull_s, pull_bytes, pull_json = pull_everything(server.url, fleet, args.window, args.concurrency)
        recorded_dir, backfill_s = record(server.url, folder, thresholds, fleet, keep_hours + args.window,
                                          args.window)
    finally:
        server.stop()
    print(f"load average after the server runs: {load()}")
    with_rules = sweep_recorded(recorded_dir, thresholds, fleet, args)
    local, figures = local_sweep(fleet, thresholds, args.window)
    same = local == {o.key for o in listed.offenders} == {o.key for o in one.offenders}
    planted = {f"{o.node_id} {o.component}" for o in listed.offenders}
    missed = [p for p in fleet.planted if not any(found.startswith(p) for found in planted)]
    print(f"\n{'':38}{'time':>8} {'wire bytes':>13} {'JSON bytes':>13}")
    print(f"{'push-down, offender list (cold)':38}{list_s:7.2f}s {listed.bytes_received:>13,} "
          f"{listed.bytes_decoded:>13,}  {len(listed.offenders)} offenders on {len(listed.nodes)} nodes, "
          f"{listed.queries} queries, {args.concurrency} in flight")
    print(f"{'push-down, offender list (again)':38}{again_s:7.2f}s {again.bytes_received:>13,} "
          f"{again.bytes_decoded:>13,}")
    print(f"{'push-down, queries one after another':38}{one_s:7.2f}s {one.bytes_received:>13,} "
          f"{one.bytes_decoded:>13,}")
    print(f"{'push-down + read-back + analysis':38}{full_s:7.2f}s {full.bytes_received:>13,} "
          f"{full.bytes_decoded:>13,}  (offending GPUs of {len(full.confirmed)} nodes: fetch "
          f"{full.timings.fetch_s:.2f} s, analyze {full.timings.analyze_s:.2f} s)")
    print(f"{f'pull every series ({args.window:g} h window)':38}{pull_s:7.2f}s {pull_bytes:>13,} {pull_json:>13,}"
          f"  ({args.nodes} nodes, {args.concurrency} at a time)")
    print(f"{'local from files':38}{figures['read_s'] + figures['sweep_s']:7.2f}s  read {figures['read_s']:.1f} s "
          f"({len(fleet.files)} block files, {figures['bytes'] / 1e9:.1f} GB: the last {keep_hours:g} h the rules "
          f"need, {int(figures['rows']):,} link rows) + sweep {figures['sweep_s']:.2f} s")
    print(f"\nsame failing links, push-down (pool and one by one) and local from files: {same}; "
          f"planted faults found: {len(fleet.planted) - len(missed)} of {len(fleet.planted)}"
          + (f" (missed: {missed})" if missed else ""))
    print(f"bytes vs pulling every series (wire / JSON): offender list {listed.bytes_received / pull_bytes:.3%} / "
          f"{listed.bytes_decoded / pull_json:.3%}, with read-back {full.bytes_received / pull_bytes:.3%} / "
          f"{full.bytes_decoded / pull_json:.3%} (target < 1%)")
    rec_list, rec_list_s, rec_one_s, rec_full, rec_full_s = with_rules
    rec_same = {o.key for o in rec_list.offenders} == {o.key for o in listed.offenders}
    print(f"\nwith the recording rules ({len(rec_list.recorded)} recorded rates, backfilled by promtool over the last "
          f"{keep_hours + args.window:g} h in {backfill_s:.0f} s, not timed below):")
    print(f"{'push-down, offender list (cold)':38}{rec_list_s:7.2f}s {rec_list.bytes_received:>13,} "
          f"{rec_list.bytes_decoded:>13,}  {rec_list.queries} queries, {list_s / rec_list_s:.1f}x the computed")
    print(f"{'push-down, queries one after another':38}{rec_one_s:7.2f}s{'':29}{one_s / rec_one_s:.1f}x the computed")
    print(f"{'push-down + read-back + analysis':38}{rec_full_s:7.2f}s {rec_full.bytes_received:>13,} "
          f"{rec_full.bytes_decoded:>13,}  {full_s / rec_full_s:.1f}x the computed")
    print(f"same offenders with and without the recording rules: {rec_same}")
    print(f"load average at the end: {load()}")
    return 0 if same and rec_same and not missed else 1


def record(url: str, folder: Path, thresholds: Thresholds, fleet: BigFleet, hours: float,
           window: float) -> tuple[Path, float]:
    """The recording rules backfilled from the server at `url` over the last `hours`, into a hard-linked copy of
    its TSDB (blocks are never written in place, so the cached TSDB stays as it was); the copy and the seconds."""
    copy = folder / "tsdb-recorded"
    shutil.rmtree(copy, ignore_errors=True)
    subprocess.run(["cp", "-al", str(folder / "tsdb"), str(copy)], check=True)
    for transient in ("wal", "chunks_head", "lock", "queries.active"):
        target = copy / transient
        shutil.rmtree(target, ignore_errors=True) if target.is_dir() else target.unlink(missing_ok=True)
    rules = folder / "fabricbot.rules.yml"
    rules.write_text(rules_yaml(thresholds, window_hours=window, alerts=False), encoding="utf-8")  # promtool
    # backfills recording rules only
    end = int(fleet.end.timestamp()) + 1
    started = time.perf_counter()
    done = subprocess.run(["promtool", "tsdb", "create-blocks-from", "rules", f"--url={url}",
                           f"--start={end - int(hours * 3600)}", f"--end={end}", f"--output-dir={copy}",
                           "--eval-interval=60s", "--quiet", str(rules)],
                          capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"promtool rule backfill failed: {done.stdout[-1000:]}{done.stderr[-2000:]}")
    return copy, time.perf_counter() - started


def sweep_recorded(tsdb: Path, thresholds: Thresholds, fleet: BigFleet,
                   args: argparse.Namespace) -> tuple[SweepResult, float, float, SweepResult, float]:
    """The sweeps again, on a server over the TSDB with the recorded rates."""
    server = start_server(tsdb, extra=NO_COMPACTION)
    try:
        listed, list_s = timed_sweep(server.url, thresholds, fleet, args.window, args.concurrency, analyze=False)
        one, one_s = timed_sweep(server.url, thresholds, fleet, args.window, 1, analyze=False)
        full, full_s = timed_sweep(server.url, thresholds, fleet, args.window, args.concurrency, analyze=True)
    finally:
        server.stop()
        shutil.rmtree(tsdb, ignore_errors=True)
    assert listed.recorded and all(r.complete for r in (listed, one, full)), listed.incomplete_reasons
    return listed, list_s, one_s, full, full_s


if __name__ == "__main__":
    sys.exit(main())
