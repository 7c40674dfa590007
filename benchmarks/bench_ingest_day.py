"""Store ingest of one node's day: 24 h of 1-minute dcgm-exporter scrapes in one file (~1M samples).

Budget: < 5 s and < 500 MB peak memory. The ingest runs in a child process so that its peak RSS
(getrusage of the child) is measured alone, without the generator's memory.
"""

from __future__ import annotations

import multiprocessing
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.ingest.dcgm_helpers import scrape

BUDGET_S = 5.0
BUDGET_MB = 500.0
START_MS = 1_772_323_200_000


def write_day(path: Path) -> int:
    samples = 0
    with path.open("w") as fh:
        for minute in range(24 * 60):
            lines = [line for line in scrape(ts_ms=START_MS + minute * 60_000, value=minute // 30)
                     if not line.startswith("#")]
            samples += len(lines)
            fh.write("\n".join(lines) + "\n")
    return samples


def ingest(path: str, store: str, queue: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    from diagnostics.store.telemetry import TelemetryStore

    start, cpu = time.perf_counter(), time.process_time()
    report = TelemetryStore(store).ingest([path])
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    queue.put((elapsed, cpu, report.result.rows["link_samples"], len(report.warnings)))


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "day.prom"
        samples = write_day(path)
        size_mb = path.stat().st_size / 1e6
        queue: multiprocessing.Queue = multiprocessing.Queue()  # type: ignore[type-arg]
        child = multiprocessing.get_context("fork").Process(target=ingest, args=(str(path), f"{tmp}/store", queue))
        child.start()
        elapsed, cpu, rows, warnings = queue.get()
        child.join()
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"ingest day: {samples:,} samples ({size_mb:.0f} MB text) -> {rows:,} link rows, {warnings} warnings; "
          f"{elapsed:.2f} s wall, {cpu:.2f} s CPU (budget {BUDGET_S:.0f} s), load {os.getloadavg()[0]:.1f}, "
          f"peak RSS {peak_mb:.0f} MB (budget {BUDGET_MB:.0f} MB)")
    if elapsed > BUDGET_S or peak_mb > BUDGET_MB:
        sys.exit("over budget")


if __name__ == "__main__":
    main()
