"""Fleet sweep through a real Prometheus vs the same sweep from files, and bytes vs pulling every series.

    python benchmarks/bench_sweep.py [--nodes 256 --hours 24]

The issue's scale is 256 nodes x 24 h at 1-minute scrapes (about 160 million samples). Generating and backfilling
that takes far longer than a few minutes on two cores, so the default is smaller; pass the full figures to run it
where there is room. Data generation and backfill are outside the timed parts. Faults are planted on four nodes.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from diagnostics import load_thresholds
from diagnostics.ingest.base import Source
from diagnostics.ingest.dcgm import read_scrapes
from diagnostics.prometheus import PrometheusClient, load_config, read_node, sweep
from diagnostics.prometheus.local import failing_links
from tests.prometheus_helpers import backfill, generate_fleet, start_server, write_openmetrics


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=32)
    parser.add_argument("--hours", type=float, default=6.0)
    parser.add_argument("--window", type=float, default=1.0)
    args = parser.parse_args()
    if shutil.which("prometheus") is None or shutil.which("promtool") is None:
        print("needs the prometheus and promtool binaries (Debian package `prometheus`)")
        return 1
    folder = Path(tempfile.mkdtemp(prefix="bench-sweep-"))
    try:
        return run(args, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run(args: argparse.Namespace, folder: Path) -> int:
    t = time.perf_counter()
    fleet = generate_fleet(nodes=args.nodes, hours=args.hours)
    om = folder / "fleet.om"
    size = write_openmetrics(fleet, om)
    values = int(fleet.samples[["replay", "crc_flit", "recovery"]].notna().to_numpy().sum())
    print(f"fleet: {args.nodes} nodes x {args.hours:g} h at 1-minute scrapes, {values:,} samples; "
          f"OpenMetrics {size / 1e6:,.0f} MB; generated in {time.perf_counter() - t:.0f} s")
    t = time.perf_counter()
    backfill(om, folder / "data")
    print(f"backfill (promtool): {time.perf_counter() - t:.0f} s (not timed below)")
    server = start_server(folder / "data")
    thresholds = load_thresholds()
    try:
        with PrometheusClient(load_config(server.url, env={})) as client:
            t = time.perf_counter()
            listed = sweep(client, thresholds, at=fleet.end, window_hours=args.window, analyze=False)
            list_s = time.perf_counter() - t
            list_bytes, list_json = client.stats.bytes_received, client.stats.bytes_decoded
        with PrometheusClient(load_config(server.url, env={})) as client:
            t = time.perf_counter()
            full = sweep(client, thresholds, at=fleet.end, window_hours=args.window)
            full_s = time.perf_counter() - t
        assert listed.complete and full.complete, (listed.incomplete_reasons, full.incomplete_reasons)
        with PrometheusClient(load_config(server.url, env={})) as client:
            t = time.perf_counter()
            start = fleet.end - timedelta(hours=args.window)
            for node in sorted(fleet.samples["node_id"].unique()):
                read_node(client, str(node), start, fleet.end, 60)
            pull_s = time.perf_counter() - t
            pull_bytes, pull_json = client.stats.bytes_received, client.stats.bytes_decoded
    finally:
        server.stop()
    t = time.perf_counter()
    tables = read_scrapes([(Source.from_path(om), None)])
    read_s = time.perf_counter() - t
    t = time.perf_counter()
    local = failing_links(tables["link_samples"], thresholds, fleet.end, args.window, tables["gpus"])
    local_s = time.perf_counter() - t
    same = {o.key for o in local} == {o.key for o in listed.offenders}
    print("                              time    wire bytes    JSON bytes")
    print(f"push-down, offender list:   {list_s:6.2f} s  {list_bytes:>12,}  {list_json:>12,}  "
          f"{len(listed.offenders)} offenders on {len(listed.nodes)} nodes ({listed.queries} queries)")
    print(f"push-down + read-back:      {full_s:6.2f} s  {full.bytes_received:>12,}  {full.bytes_decoded:>12,}  "
          f"(offending GPUs' series of {len(full.confirmed)} nodes analyzed locally)")
    print(f"pull every series ({args.window:g} h):   {pull_s:6.2f} s  {pull_bytes:>12,}  {pull_json:>12,}")
    print(f"local from files:           {read_s + local_s:6.2f} s  (read {read_s:.2f} s + sweep {local_s:.2f} s)"
          f"  same failing links as the push-down: {same}")
    print(f"bytes vs pulling every series (wire / JSON): offender list {list_bytes / pull_bytes:.3%} / "
          f"{list_json / pull_json:.3%}, with read-back {full.bytes_received / pull_bytes:.3%} / "
          f"{full.bytes_decoded / pull_json:.3%} (target < 1%)")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
