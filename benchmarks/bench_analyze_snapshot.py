"""Snapshot analysis throughput: how long one 8-GPU, 144-link snapshot takes to diagnose."""

from __future__ import annotations

import statistics
import time

from diagnostics import Snapshot, diagnose_snapshot, load_thresholds


def node_snapshot() -> Snapshot:
    links = [
        {"gpu_src": g, "gpu_dst": (g + 1 + i % 7) % 8, "link_id": f"nvlink-{i}", "crc_errors": i * 3,
         "replay_count": 1500 if (g, i) == (2, 1) else i}
        for g in range(8) for i in range(18)
    ]
    return Snapshot.model_validate({"node_id": "bench-node", "platform": "hgx-h100-8gpu", "fabric_errors": links,
                                    "step_time_ms": 210.0, "baseline_step_time_ms": 180.0})


def main() -> None:
    snapshot = node_snapshot()
    thresholds = load_thresholds()
    diagnose_snapshot(snapshot, thresholds)
    times = []
    for _ in range(200):
        start = time.perf_counter()
        diagnose_snapshot(snapshot, thresholds)
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    print(f"diagnose_snapshot, 144 links: p50 {statistics.median(times):.2f} ms, "
          f"p95 {times[int(len(times) * 0.95)]:.2f} ms (200 runs)")


if __name__ == "__main__":
    main()
