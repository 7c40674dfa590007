"""Shell-output readers: time for a whole 8-GPU `nvlink -e` paste, and throughput and peak memory on a large
kernel log (mostly unrelated lines), which must stream."""

from __future__ import annotations

import os
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path

from diagnostics.ingest import detect
from diagnostics.ingest.base import Source


def nvlink_e(gpus: int = 8, links: int = 18) -> str:
    out = ["$ nvidia-smi nvlink -e"]
    for g in range(gpus):
        out.append(f"GPU {g}: NVIDIA H100 80GB HBM3 (UUID: GPU-{g:08d}-0000-0000-0000-000000000000)")
        for link in range(links):
            out += [f"\t Link {link}: Replay Errors: {link}", f"\t Link {link}: Recovery Errors: 0",
                    f"\t Link {link}: CRC Errors: {g}"]
    return "\n".join(out) + "\n"


def kernel_log(path: Path, lines: int) -> None:
    with path.open("w") as fh:
        for i in range(lines):
            if i % 1000 == 0:
                fh.write(f"[{i}.000001] NVRM: Xid (PCI:0000:3b:00): 74, pid=1, name=python3, NVLink: error on link 5\n")
            else:
                fh.write(f"[{i}.000002] usb 1-1: new high-speed USB device number {i} using xhci_hcd\n")


def main() -> None:
    text = nvlink_e()
    detect.read(Source.from_text(text))
    times, cpu = [], []
    for _ in range(20):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = detect.read(Source.from_text(text))
        times.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
    print(f"nvlink -e, 8 GPUs x 18 links ({result.rows['link_samples']} rows): "
          f"p50 {statistics.median(times):.1f} ms, best {min(times):.1f} ms, CPU p50 {statistics.median(cpu):.1f} ms "
          f"(20 runs)")

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kern.log"
        lines = 200_000
        kernel_log(path, lines)
        size_mb = path.stat().st_size / 1e6
        start, start_cpu = time.perf_counter(), time.process_time()
        result = detect.read(path)
        elapsed, cpu_s = time.perf_counter() - start, time.process_time() - start_cpu
        tracemalloc.start()  # a second pass for memory: tracing slows the reader down
        detect.read(path)
        peak = tracemalloc.get_traced_memory()[1] / 1e6
        tracemalloc.stop()
    print(f"kernel log, {lines:,} lines ({size_mb:.0f} MB, {result.rows['events']} Xid events): "
          f"{elapsed:.2f} s ({cpu_s:.2f} s CPU), {lines / elapsed / 1e3:.0f} k lines/s, "
          f"peak Python memory {peak:.1f} MB")
    print(f"machine load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")

if __name__ == "__main__":
    main()
