"""dcgm-exporter parse speed: one scrape of an 8-GPU node with every per-link field (budget: < 20 ms)."""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from diagnostics.ingest.base import Source
from diagnostics.ingest.dcgm import READER
from tests.ingest.dcgm_helpers import scrape

BUDGET_MS = 20.0


def main() -> None:
    lines = list(scrape(ts_ms=1_772_323_200_000, value=3))
    series = sum(1 for line in lines if not line.startswith("#"))
    source = Source.from_text("\n".join(lines) + "\n", name="bench.prom")
    READER.read(source)  # warm the mapping table and imports
    times, cpu = [], []
    for _ in range(50):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = READER.read(source)
        times.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
    times.sort()
    rows = len(result["link_samples"])
    print(f"dcgm parse: {series} series -> {rows} link rows; median {statistics.median(times):.2f} ms, "
          f"p90 {times[int(len(times) * 0.9)]:.2f} ms, best {times[0]:.2f} ms, median CPU "
          f"{statistics.median(cpu):.2f} ms (budget {BUDGET_MS:.0f} ms; load {os.getloadavg()[0]:.1f})")
    if statistics.median(times) > BUDGET_MS:
        sys.exit(f"over budget: median {statistics.median(times):.2f} ms > {BUDGET_MS} ms")


if __name__ == "__main__":
    main()
