"""Windowed store reads: 1,024 HGX H100 nodes x 24 h at 5-minute samples (~45M link samples) in the store.

    python benchmarks/bench_store_window.py [--nodes 1024] [--hours 24] [--step-min 5] [--data DIR]
    python benchmarks/bench_store_window.py --synth 256 1024 [--hours 24]

The store is built first and not timed: the fleet's link samples (benchmarks/fleet_data.py, as bench_fleet.py
makes them) a few nodes at a time, written as normalized Parquet tables and ingested as `fabricbot ingest` does,
with jobs of four nodes each (step samples) and a nodes.csv (the synth writer's inventory). Given `--data`, the
store is kept there and reused by the next run. Then, each in its own process so its peak memory is its own:
- one node: its window as `/fabric NODE` reads it (1 h window; a day of history for the job correlation; the
  nodes sharing its job), then that read plus `analyze_tables` (the summary without Slack), p50/p95;
- the fleet: every node over the span the rules need (`history_needed`), then that read plus the engine's fleet
  analysis (`analyze_fleet`), as `/fabric fleet` runs them.
Printed: wall time, rows read (row groups and rows scanned, rows kept), peak RSS of the phase's process, and the
load average (other work on the machine shows in the figures). Budgets (the engine's, the read is part of both):
fleet sweep including the read < 5 s wall and < 3 GB peak; one node's summary p95 < 500 ms.

`--synth N ...`: the same fleet phases and commands on the product's own workload instead, a `fabricbot synth`
fleet of N nodes x `--hours` (every scenario, jobs across nodes, Xid and SXid events, lanes, PCIe ends, life
nodes: benchmarks/synth_data.py builds it once, in a cache folder outside the repository), with a profile of where
`fabricbot sweep --store --json` spends its time (cProfile of the command, imports included; the store's reader
threads show as the read's wait).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fleet_data import fleet, fleet_options, run_phase
from synth_data import built, synth_store

from diagnostics.analysis import history_needed
from diagnostics.config.thresholds import load_thresholds
from diagnostics.service import CORRELATION_SPAN, Request, StoreSource, diagnose, node_span, sweep
from diagnostics.service.shards import PROCESSES_ENV, process_count
from diagnostics.store.telemetry import TelemetryStore

WINDOW = timedelta(hours=1)
# where a sweep's time goes: (what, file, function), cumulative seconds of the function in the command's profile
WHERE = (("the whole command", "bot/cli.py", "<module>"),
         ("  the sweep (the rest is start-up, imports)", "bot/commands/sweep.py", "cmd_sweep"),
         ("  read the window", "diagnostics/store/telemetry.py", "read_window"),
         ("  the engine (analyze_fleet)", "diagnostics/analysis/fleet.py", "analyze_fleet"),
         ("    rates and metrics", "diagnostics/analysis/fleet.py", "_metrics"),
         ("    per-link rows", "diagnostics/analysis/rows.py", "per_link_rows"),
         ("    PCIe ends", "diagnostics/analysis/ends.py", "pcie_ends"),
         ("    Xid and SXid events judged", "diagnostics/analysis/events.py", "event_findings"),
         ("    jobs explained", "diagnostics/analysis/jobs.py", "explain_jobs"),
         ("      a slowed job's history read", "diagnostics/store/telemetry.py", "link_history"),
         ("      step time scored against links", "diagnostics/analysis/correlate.py", "score_links"),
         ("    diagnoses assembled", "diagnostics/analysis/diagnosis.py", "assemble"),
         ("  the JSON written", "bot/commands/output.py", "print_json"))
CHUNK_NODES = 32
JOB_NODES = 4
PLATFORM = "hgx-h100-8gpu"


def load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def steps(names: list[str], times: pd.DatetimeIndex, first: int) -> pd.DataFrame:
    """One job per four nodes, a step-time sample at every reading."""
    frames = []
    for j in range(0, len(names), JOB_NODES):
        members = names[j:j + JOB_NODES]
        frames.append(pd.DataFrame({"timestamp": times, "job_id": f"job-{first + j // JOB_NODES:04d}",
                                    "node_ids": ",".join(members), "step": np.arange(len(times)),
                                    "step_time_ms": 200.0 + (np.arange(len(times)) % 7)}))
    return pd.concat(frames, ignore_index=True)


def phase_build(args: argparse.Namespace) -> dict[str, object]:
    store = TelemetryStore(args.store)
    rows = 0
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for first in range(0, args.nodes, CHUNK_NODES):
            count = min(CHUNK_NODES, args.nodes - first)
            frame = fleet(count, args.hours, args.step_min, seed=first)
            names = [f"node-{first + i:04d}" for i in range(count)]
            frame["node_id"] = frame["node_id"].cat.rename_categories(names)
            path = Path(tmp) / f"links-{first:04d}.parquet"
            frame.to_parquet(path, index=False)
            times = pd.DatetimeIndex(frame["timestamp"].unique()).sort_values()
            steps(names, times, first // JOB_NODES).to_parquet(Path(tmp) / f"steps-{first:04d}.parquet", index=False)
            pd.DataFrame({"node_id": names, "platform": PLATFORM}).to_csv(Path(tmp) / "nodes.csv", index=False)
            report = store.ingest([path, Path(tmp) / f"steps-{first:04d}.parquet", Path(tmp) / "nodes.csv"])
            assert all(f.status == "ingested" for f in report.files), [f.error for f in report.files]
            rows += len(frame)
            for leftover in Path(tmp).iterdir():
                leftover.unlink()
    size = sum(p.stat().st_size for p in Path(args.store).rglob("*") if p.is_file())
    return {"rows": rows, "build_s": round(time.perf_counter() - started, 1), "store_mb": round(size / 2**20)}


def phase_node(args: argparse.Namespace) -> dict[str, object]:
    store = TelemetryStore(args.store)
    thresholds = load_thresholds()
    nodes = store.nodes()
    rng = np.random.default_rng(1)
    picks = [str(n) for n in rng.choice(nodes, size=args.repeat)]
    source = StoreSource(store)
    span = node_span(WINDOW, thresholds, CORRELATION_SPAN)
    diagnose(source, Request(node=picks[0], window=WINDOW, thresholds=thresholds))  # imports, caches
    reads, summaries, stats = [], [], []
    for node in picks:
        started = time.perf_counter()
        got = store.read_window(end=None, span=span, nodes=[node], peers=True)  # what the answer reads
        reads.append(time.perf_counter() - started)
        started = time.perf_counter()
        diagnose(source, Request(node=node, window=WINDOW, thresholds=thresholds))  # read and judged
        summaries.append(time.perf_counter() - started)
        stats.append(got.stats)
    return {"read_p50_ms": round(statistics.median(reads) * 1000, 1), "read_p95_ms": round(pct(reads, 0.95) * 1000, 1),
            "summary_p50_ms": round(statistics.median(summaries) * 1000, 1),
            "summary_p95_ms": round(pct(summaries, 0.95) * 1000, 1), "rows": stats[-1].rows,
            "row_groups": stats[-1].row_groups, "rows_scanned": stats[-1].rows_scanned, "files": stats[-1].files,
            "peak_mb": round(peak_mb())}


def phase_fleet(args: argparse.Namespace) -> dict[str, object]:
    """The fleet as `fabricbot sweep --store` and the bot's `/fabric fleet` read and judge it: the rules' span, a day
    of step samples, and a slowed job's links from the store when the engine asks for them."""
    os.environ[PROCESSES_ENV] = "1"  # one process: the read and the engine apart (the commands phase times shards)
    store = TelemetryStore(args.store)
    thresholds = load_thresholds()
    span = history_needed(WINDOW, thresholds)
    started = time.perf_counter()
    result = sweep(StoreSource(store), Request(window=WINDOW, thresholds=thresholds))
    total_s = time.perf_counter() - started
    got = store.read_window(end=None, span=span, steps=CORRELATION_SPAN)  # what it read, for the figures
    links = got.tables["link_samples"]
    return {"read_s": round(result.timings.fetch_s, 2), "read_and_sweep_s": round(total_s, 2),
            "span_h": span.total_seconds() / 3600, "rows": got.stats.rows, "rows_scanned": got.stats.rows_scanned,
            "row_groups": got.stats.row_groups, "files": got.stats.files, "columns": len(links.columns),
            "failing_nodes": sum(d.fault_detected for d in result.diagnoses.values()), "peak_mb": round(peak_mb())}


def phase_commands(args: argparse.Namespace) -> dict[str, object]:
    """The commands a person runs, as processes: one node's `analyze --store --node`, the fleet's `sweep --store`
    and `watch --store` in one process (FABRICBOT_PROCESSES=1) and in shards on every core (the default), and the
    digest; start-up and imports included, as a person waits for them. Memory is the peak of the process and its
    workers together."""
    store = TelemetryStore(args.store)
    node = store.nodes()[len(store.nodes()) // 2]
    cli = [sys.executable, "-m", "bot.launch"]  # as the installed command runs

    def wall(argv: list[str], processes: int | None = None) -> tuple[float, float, float]:
        """Median wall s, CPU s per run (the workers' included) and the largest tree RSS (MB) of 3 runs."""
        env = {k: v for k, v in os.environ.items() if k != PROCESSES_ENV}
        if processes is not None:
            env[PROCESSES_ENV] = str(processes)
        times, peaks = [], []
        before = cpu()
        for _ in range(3):
            started = time.perf_counter()
            peaks.append(tree_peak_mb([*cli, *argv], env))
            times.append(time.perf_counter() - started)
        return statistics.median(times), (cpu() - before) / 3, max(peaks)

    def cpu() -> float:
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        return children.ru_utime + children.ru_stime

    one, _, _ = wall(["analyze", "--store", args.store, "--node", node, "--json"])
    serial, serial_cpu, serial_mb = wall(["sweep", "--store", args.store, "--json"], 1)
    fleet_s, fleet_cpu, fleet_mb = wall(["sweep", "--store", args.store, "--json"])
    watch_serial, _, _ = wall(["watch", "--store", args.store, "--json"], 1)
    watch_s, watch_cpu, _ = wall(["watch", "--store", args.store, "--json"])
    digest_s, digest_cpu, digest_mb = wall(["digest", "--store", args.store, "--json"])
    return {"node_s": round(one, 2), "serial_s": round(serial, 2), "serial_cpu_s": round(serial_cpu, 1),
            "serial_mb": round(serial_mb), "fleet_s": round(fleet_s, 2), "ratio": round(fleet_s / one, 1),
            "peak_mb": round(fleet_mb), "cpu_s": round(fleet_cpu, 1), "processes": process_count(),
            "watch_serial_s": round(watch_serial, 2), "watch_s": round(watch_s, 2), "watch_cpu_s": round(watch_cpu, 1),
            "digest_s": round(digest_s, 2), "digest_cpu_s": round(digest_cpu, 1), "digest_mb": round(digest_mb)}


def watch_line(cmd: dict[str, object]) -> str:
    return (f"    `fabricbot watch --store --json` (the trends over the lookback) in one process "
            f"{cmd['watch_serial_s']} s, in shards {cmd['watch_s']} s ({cmd['watch_cpu_s']} s CPU); `fabricbot digest "
            f"--store --json` (the sweep and the watch) {cmd['digest_s']} s ({cmd['digest_cpu_s']} s CPU, peak "
            f"{cmd['digest_mb']} MB)")


def tree_peak_mb(argv: list[str], env: dict[str, str]) -> float:
    """Run a command; the peak of its RSS and its descendants' together (sampled every 50 ms), in MB."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    peak = 0
    while proc.poll() is None:
        peak = max(peak, sum(_rss_kb(p) for p in _tree(proc.pid)))
        time.sleep(0.05)
    return peak / 1024


def _tree(pid: int) -> list[int]:
    """The process and its descendants, from each thread's `children` (Linux): a few small files, not all of /proc."""
    out, todo = [], [pid]
    while todo:
        at = todo.pop()
        out.append(at)
        for task in Path(f"/proc/{at}/task").glob("*/children"):
            try:
                todo += [int(c) for c in task.read_text().split()]
            except OSError:
                continue
    return out


def _rss_kb(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    return next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)


def phase_profile(args: argparse.Namespace) -> dict[str, object]:
    """`fabricbot sweep --store --json` under cProfile: cumulative seconds of the parts in WHERE."""
    import pstats

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "sweep.prof"
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "cProfile", "-o", str(out), "-m", "bot.cli", "sweep", "--store",
                        args.store, "--json"], stdout=subprocess.DEVNULL, check=False,
                       env={**os.environ, PROCESSES_ENV: "1"})  # in one process, where the profiler sees it all
        wall_s = time.perf_counter() - started
        stats = pstats.Stats(str(out)).stats  # type: ignore[attr-defined]
    cumulative: dict[str, float] = {}
    for (path, _, function), (_, _, _, cum, _) in stats.items():
        for what, suffix, name in WHERE:
            if function == name and path.endswith(suffix):
                cumulative[what] = cumulative.get(what, 0.0) + cum
    return {"wall_s": round(wall_s, 1), "parts": {k: round(v, 2) for k, v in cumulative.items()}}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def store_line(args: argparse.Namespace) -> str:
    """The store the timings read: the one in --data when it is there, else one built now (not timed)."""
    if Path(args.store, "fabricbot.db").exists():
        return f"store: {args.store} reused ({len(TelemetryStore(args.store).nodes())} nodes; shape options ignored)"
    built = run("build", args)
    return (f"store: {args.nodes} nodes x {args.hours:g} h at {args.step_min:g} min: {built['rows']:,} link samples, "
            f"{built['store_mb']} MB on disk; built in {built['build_s']} s (not timed below)")


def run(phase: str, args: argparse.Namespace) -> dict[str, object]:
    return run_phase(__file__, phase, args, "--store", args.store, "--repeat", str(args.repeat))


def synth(args: argparse.Namespace, nodes: int) -> None:
    """The fleet phases, the commands and a profile on a `fabricbot synth` fleet of `nodes` x `args.hours`."""
    args.store = str(synth_store(nodes, args.hours))
    facts = built(nodes, args.hours)
    print(f"synthetic fleet: {nodes} nodes x {args.hours:g} h (`fabricbot synth` scenarios, seed {facts['seed']}), "
          f"{facts['store_mb']} MB store (built once in {facts['build_s']} s, not timed); load average {load()}")
    fl = run("fleet", args)
    engine = float(fl["read_and_sweep_s"]) - float(fl["read_s"])  # type: ignore[arg-type]
    print(f"  whole fleet over the span the rules need ({fl['span_h']:g} h): read {fl['read_s']} s, read + engine "
          f"{fl['read_and_sweep_s']} s  [budget 5 s]; the engine {engine:.2f} s, {engine / nodes * 1000:.1f} ms per "
          f"node (a slowed job's history read included); {fl['failing_nodes']} failing nodes")
    print(f"    rows read {fl['rows']:,} x {fl['columns']} columns ({fl['row_groups']:,} row groups in "
          f"{fl['files']:,} files, {fl['rows_scanned']:,} rows scanned); peak RSS {fl['peak_mb']} MB  [budget 3 GB]")
    cmd = run("commands", args)
    print(f"  as commands (median of 3, start-up included): `fabricbot analyze --store --node` {cmd['node_s']} s; "
          f"`fabricbot sweep --store --json` in one process {cmd['serial_s']} s ({cmd['serial_cpu_s']} s CPU, peak "
          f"{cmd['serial_mb']} MB), in shards on {cmd['processes']} processes {cmd['fleet_s']} s "
          f"({cmd['cpu_s']} s CPU, peak {cmd['peak_mb']} MB, the workers' memory included): the fleet costs "
          f"{cmd['ratio']}x one node  "
          f"[budget < 10x, < 5 s, < 3 GB]; load average {load()}")
    print(watch_line(cmd))
    prof = run("profile", args)
    parts: dict[str, float] = prof["parts"]  # type: ignore[assignment]
    whole = parts.get("the whole command") or 1.0
    print(f"  where `sweep --store --json` spends its time (cProfile, {prof['wall_s']} s wall under the profiler; "
          f"cumulative s, share of the command):")
    for what, _, _ in WHERE:
        if what in parts:
            print(f"    {what:<46} {parts[what]:7.2f} s  {parts[what] / whole:5.0%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    fleet_options(parser)
    parser.add_argument("--repeat", type=int, default=20, help="one-node reads to time")
    parser.add_argument("--data", help="keep the store in this folder and reuse it on later runs")
    parser.add_argument("--synth", type=int, nargs="+", metavar="N",
                        help="time synthetic fleets of N nodes x --hours (the product's workload) instead")
    parser.add_argument("--phase", choices=("build", "node", "fleet", "commands", "profile"), help=argparse.SUPPRESS)
    parser.add_argument("--store", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        phases = {"build": phase_build, "node": phase_node, "fleet": phase_fleet, "commands": phase_commands,
                  "profile": phase_profile}
        print(json.dumps(phases[args.phase](args)))
        return
    print(f"machine: {os.cpu_count()} cores, load average {load()} (1, 5, 15 min)")
    if args.synth:
        for nodes in args.synth:
            synth(args, nodes)
        print(f"load average after: {load()}")
        return
    with tempfile.TemporaryDirectory() as tmp:
        args.store = args.data or str(Path(tmp) / "store")
        print(store_line(args))
        node = run("node", args)
        print(f"  one node (/fabric NODE: 1 h window, 1 day of history, its job's {JOB_NODES} nodes): read p50 "
              f"{node['read_p50_ms']} ms, p95 {node['read_p95_ms']} ms; read + analyze_tables p50 "
              f"{node['summary_p50_ms']} ms, p95 {node['summary_p95_ms']} ms  [budget p95 500 ms, Slack included]")
        print(f"    rows read {node['rows']:,} ({node['row_groups']} row groups in {node['files']} files, "
              f"{node['rows_scanned']:,} rows scanned); peak RSS {node['peak_mb']} MB")
        fl = run("fleet", args)
        print(f"  whole fleet over the span the rules need ({fl['span_h']:g} h): read {fl['read_s']} s, read + engine "
              f"{fl['read_and_sweep_s']} s  [budget 5 s]; {fl['failing_nodes']} failing nodes")
        print(f"    rows read {fl['rows']:,} x {fl['columns']} columns ({fl['row_groups']:,} row groups in "
              f"{fl['files']:,} files, {fl['rows_scanned']:,} rows scanned); peak RSS {fl['peak_mb']} MB  "
              "[budget 3 GB]")
        cmd = run("commands", args)
        print(f"  as commands (process start-up included): `fabricbot analyze --store --node` {cmd['node_s']} s, "
              f"`fabricbot sweep --store` {cmd['fleet_s']} s: the fleet costs {cmd['ratio']}x one node  "
              "[budget < 10x]")
        print(watch_line(cmd))
    print(f"load average after: {load()}")


if __name__ == "__main__":
    main()
