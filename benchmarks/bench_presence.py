"""The sweep's presence questions on a real Prometheus as the fleet grows: the count of the nodes reporting in the
span, the node list from the server's index, and the reporting nodes by name: on the PCIe series (the sweep's first
ask), over every series (its only ask before), and one node over every series (what each node the PCIe names leave
out adds).

    python benchmarks/bench_presence.py [--nodes 256 1024] [--hours 6] [--data-dir DIR] [--repeat 5]

Each fleet is HGX H100 nodes at 1-minute scrapes carrying the presence counter only (the per-link NVLink replay
counter of 18 links and the PCIe replay counter per GPU, as dcgm-exporter labels them: 152 series a node), written by
tests/prometheus/fleet_writer.py and backfilled with promtool; the other counters add series the presence selector
does not match, not samples it reads. Each query is timed best of `--repeat` at the fleet's last sample, over the
span a 1 h sweep's rules read, with the bytes of its answer; beside it the forms weighed as bounds on its cost. The
machine's load average is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from diagnostics import load_thresholds
from diagnostics.analysis import history_needed
from diagnostics.ingest.dcgm_map import load_map
from diagnostics.prometheus import PrometheusClient, load_config
from diagnostics.prometheus.presence import known_nodes, presence_queries, presence_selector
from diagnostics.prometheus.promql import QueryBuilder, duration
from tests.prometheus.fleet_writer import NVLINK_COUNTERS, PCIE_REPLAY, BigFleet, write_blocks
from tests.prometheus.helpers import start_server

REPLAY = NVLINK_COUNTERS["replay"].split("{")[0]


def load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def build(fleet: BigFleet, folder: Path) -> None:
    """The presence counter's series backfilled into `folder`/tsdb, once per fleet shape."""
    marker = folder / "fleet.json"
    shape = {"nodes": fleet.nodes, "hours": fleet.hours, "scrape_s": fleet.scrape_s}
    if marker.exists() and json.loads(marker.read_text(encoding="utf-8")) == shape:
        return
    shutil.rmtree(folder, ignore_errors=True)
    started = time.perf_counter()
    for path, _, _ in write_blocks(fleet, folder / "openmetrics", lambda n: n.startswith((REPLAY, PCIE_REPLAY))):
        done = subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", "-q", str(path),
                               str(folder / "tsdb")], capture_output=True, text=True, check=False)
        if done.returncode:
            raise RuntimeError(f"promtool failed on {path.name}: {done.stderr[-2000:]}")
        path.unlink()
    print(f"  built {fleet.nodes} nodes x {fleet.hours:g} h in {time.perf_counter() - started:.0f} s", flush=True)
    marker.write_text(json.dumps(shape), encoding="utf-8")


def best(repeat: int, call: Callable[[], int]) -> tuple[float, int]:
    """The fastest of `repeat` calls, and the bytes its answer took."""
    times, size = [], 0
    for _ in range(repeat):
        started = time.perf_counter()
        size = call()
        times.append(time.perf_counter() - started)
    return min(times), size


def measure(fleet: BigFleet, folder: Path, repeat: int) -> None:
    server = start_server(folder / "tsdb", extra=("--storage.tsdb.max-block-duration=2h",))
    try:
        config = load_config(server.url, env={})
        builder = QueryBuilder(config, load_map())
        span = history_needed(timedelta(hours=1), load_thresholds())
        queries = presence_queries(builder, span.total_seconds() / 3600)
        assert queries is not None and queries.every is not None
        node = builder.by("node")
        every = presence_selector(builder, f'{node}!=""')
        at = fleet.end
        hours = duration(span.total_seconds() / 3600)
        forms = {
            "count (the sweep's: PCIe)": queries.count,
            "count, every link's series": f"count(group by ({node}) (last_over_time({every}[{hours}])))",
            "names, PCIe (some silent)": queries.names,
            "names, every series": queries.every(None),
            "names of 1 node, every": queries.every([fleet.node_ids[-1]]),
            "count, last 5 min": f"count(group by ({node}) ({every}))",
        }
        with PrometheusClient(config) as client:
            for name, promql in forms.items():
                def ask(q: str = promql) -> int:
                    before = client.stats.bytes_decoded
                    rows = client.query(q, at)
                    assert rows, q
                    return client.stats.bytes_decoded - before
                seconds, size = best(repeat, ask)
                print(f"  {fleet.nodes:>5} nodes  {name:<26} {seconds * 1000:8.1f} ms  {size:>6} bytes", flush=True)

            def listed() -> int:
                before = client.stats.bytes_decoded
                known = known_nodes(client, builder, at - span, at)
                assert not isinstance(known, Exception) and len(known.values) == fleet.nodes, known
                return client.stats.bytes_decoded - before
            seconds, size = best(repeat, listed)
            print(f"  {fleet.nodes:>5} nodes  {'node list (label values)':<26} {seconds * 1000:8.1f} ms  "
                  f"{size:>6} bytes", flush=True)
    finally:
        server.stop()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, nargs="+", default=[256, 1024])
    parser.add_argument("--hours", type=float, default=6.0)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--data-dir", type=Path, help="keep the backfilled fleets here and reuse them next time")
    args = parser.parse_args()
    if shutil.which("promtool") is None or shutil.which("prometheus") is None:
        print("prometheus and promtool are needed (Debian package `prometheus`)", file=sys.stderr)
        return 2
    root = args.data_dir or Path(tempfile.mkdtemp(prefix="fabricbot-presence-"))
    print(f"presence queries, best of {args.repeat} (load average {load()})", flush=True)
    try:
        for nodes in args.nodes:
            fleet = BigFleet(nodes=nodes, hours=args.hours)
            folder = root / f"nodes-{nodes}"
            build(fleet, folder)
            measure(fleet, folder, args.repeat)
    finally:
        if args.data_dir is None:
            shutil.rmtree(root, ignore_errors=True)
    print(f"load average {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
