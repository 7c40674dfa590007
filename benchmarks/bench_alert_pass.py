"""One pass of the watch loop over a fleet held in memory: the service's sweep, the failing parts, the decisions.

    python benchmarks/bench_alert_pass.py [--nodes 1024] [--hours 6] [--step-min 5]

The fleet is benchmarks/fleet_data.py's HGX H100 nodes (152 links each, background noise, a replay storm on one
link per 200 nodes). Not timed: building the table. Printed: the pass's wall time (p50 of 3, after one warm-up that
alerts the storms), its share of one core at the default 5-minute period (the budget: under 10%), and the per-node
cost. A store-backed loop adds the store's windowed read (benchmarks/bench_store_window.py measures it).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fleet_data import fleet, fleet_options

from diagnostics.config import load_alerts
from diagnostics.service import Request, TableSource, alert_pass

PERIOD_S = 300.0
BUDGET = 0.10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    fleet_options(parser)
    parser.set_defaults(hours=6.0)
    args = parser.parse_args()
    source = TableSource({"link_samples": fleet(args.nodes, args.hours, args.step_min)},
                         platforms=dict.fromkeys((f"node-{i:04d}" for i in range(args.nodes)), "hgx-h100-8gpu"))
    request = Request(window=timedelta(hours=1))
    policy = load_alerts()
    end = source.newest(source.nodes())
    assert end is not None
    _, first = alert_pass(source, request, alerts={}, at=end, ticket_of=lambda n, s: None, policy=policy)
    alerts = {d.alert.key: d.alert for d in first.decisions}
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        alert_pass(source, request, alerts=alerts, at=end, ticket_of=lambda n, s: None, policy=policy)
        times.append(time.perf_counter() - t0)
    p50 = statistics.median(times)
    print(f"nodes {args.nodes}, {args.hours:g} h at {args.step_min:g} min; first pass alerted "
          f"{len(alerts)} part(s), storm: {first.storm.headline() if first.storm else 'none'}")
    print(f"one pass p50 {p50:.2f} s ({p50 / args.nodes * 1000:.2f} ms per node); at a {PERIOD_S / 60:g}-minute "
          f"period {p50 / PERIOD_S:.1%} of one core (budget {BUDGET:.0%}; ratio {p50 / PERIOD_S / BUDGET:.2f})")


if __name__ == "__main__":
    main()
