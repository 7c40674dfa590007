"""One pass of the watch loop over a 1,024-node fleet: the service's sweep, the failing parts, the decisions.

    python benchmarks/bench_alert_pass.py [--nodes 1024] [--hours 6] [--step-min 5] [--store DIR]

The fleet is benchmarks/fleet_data.py's HGX H100 nodes (152 links each, background noise, a replay storm on one
link per 200 nodes), held in memory. With `--store DIR` the pass also runs over a store, as `fabricbot serve` runs
it: the store benchmarks/bench_store_window.py builds (24 h of the same fleet, jobs of four nodes, an inventory),
built here by that script's build phase when DIR holds none (not timed; `--hours` then sizes it, 24 h is the
issue's). Not timed: building the tables or the store. Printed: each pass's wall and CPU time (p50 of 3, after one
warm-up that alerts the storms), its share of one core (CPU time) at the default 5-minute period (the budget: under
10%), the per-node cost, and the load average.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fleet_data import fleet, fleet_options, run_phase

from diagnostics.config import load_alerts
from diagnostics.service import Request, Source, StoreSource, TableSource, alert_pass

HERE = Path(__file__).resolve().parent
PERIOD_S = 300.0
BUDGET = 0.10


def load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def _cpu() -> float:
    """This process's CPU time and its ended children's: a fleet of the store is judged in worker processes."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def timed(source: Source, nodes: int, what: str) -> None:
    """The warm-up pass (every failing part new), then three passes that find them all already alerted."""
    request = Request(window=timedelta(hours=1))
    policy = load_alerts(first_pass="alert")
    end = source.newest(source.nodes())
    assert end is not None
    _, first = alert_pass(source, request, alerts={}, at=end, ticket_of=lambda n, s: None, policy=policy)
    alerts = {d.alert.key: d.alert for d in first.decisions}
    times, cpu = [], []
    for _ in range(3):
        t0, c0 = time.perf_counter(), _cpu()
        alert_pass(source, request, alerts=alerts, at=end, ticket_of=lambda n, s: None, policy=policy)
        times.append(time.perf_counter() - t0)
        cpu.append(_cpu() - c0)
    p50, cpu50 = statistics.median(times), statistics.median(cpu)
    print(f"{what}: first pass alerted {len(alerts)} part(s), storm: "
          f"{first.storm.headline() if first.storm else 'none'}")
    # the share of one core is the CPU time a pass takes (on a loaded machine its wall time is mostly waiting)
    print(f"  one pass p50 {p50:.2f} s wall (min {min(times):.2f}, max {max(times):.2f}), {cpu50:.2f} s CPU "
          f"({cpu50 / nodes * 1000:.2f} ms per node); at a {PERIOD_S / 60:g}-minute period {cpu50 / PERIOD_S:.1%} of "
          f"one core (budget {BUDGET:.0%}; ratio {cpu50 / PERIOD_S / BUDGET:.2f}); load average {load()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    fleet_options(parser)
    parser.set_defaults(hours=6.0)
    parser.add_argument("--store", metavar="DIR", help="also time the pass over this store (built when missing)")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores, load average {load()}")
    source = TableSource({"link_samples": fleet(args.nodes, args.hours, args.step_min)},
                         platforms=dict.fromkeys((f"node-{i:04d}" for i in range(args.nodes)), "hgx-h100-8gpu"))
    timed(source, args.nodes, f"in memory: {args.nodes} nodes, {args.hours:g} h at {args.step_min:g} min")
    if args.store:
        if not (Path(args.store) / "fabricbot.db").exists():
            built = run_phase(str(HERE / "bench_store_window.py"), "build", args, "--store", args.store)
            print(f"store built in {built['build_s']} s (not timed): {built['rows']:,} link samples, "
                  f"{built['store_mb']} MB")
        store = StoreSource(args.store)
        timed(store, len(store.nodes()), f"over the store {args.store} ({len(store.nodes())} nodes, read per pass)")


if __name__ == "__main__":
    main()
