"""Bounds of the text readers on inputs far larger than a person pastes: the mixed-paste reader must stay linear
in lines, and a big `nvidia-smi topo -m` must stream (peak memory a fraction of what the rows it holds would
take as Python objects).

- a paste of a few outputs, 25k, 50k and 100k lines (`nvlink -e`, `-q`, a long `dmesg`): seconds, ms per 1k lines
- a paste of thousands of small outputs (the sample paste over and over): the [paste] max_outputs cap, its warning
- a 10 MB `topo -m` file (the DGX-1 matrix, one node after another): seconds and tracemalloc peak
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from diagnostics.ingest import detect
from diagnostics.ingest.base import Source
from diagnostics.values import limits

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def few_outputs(lines: int) -> str:
    """A prompt's 8 GPU x 18 link `nvlink -e`, a `-q`, then a `dmesg` of the rest of `lines` (one Xid in 500).
    (Detection sees the head: a paste whose first 64 KB is one output is read by that output's reader.)"""
    out = ["root@gpu-node-07:~# nvidia-smi nvlink -e"]
    for g in range(8):
        out.append(f"GPU {g}: NVIDIA H100 80GB HBM3 (UUID: GPU-{g:08d}-0000-0000-0000-000000000000)")
        out += [f"\t Link {k}: {name} Errors: {g}" for k in range(18) for name in ("Replay", "Recovery", "CRC")]
    out.append("root@gpu-node-07:~# nvidia-smi -q")
    out += (FIXTURES / "samples" / "nvidia_smi_q_fabric_h100.txt").read_text().splitlines()[1:]
    out.append("root@gpu-node-07:~# dmesg")
    for i in range(lines - len(out)):
        if i % 500 == 0:
            out.append(f"[{i}.000001] NVRM: Xid (PCI:0000:3b:00): 74, pid=1, name=python3, NVLink: fatal error "
                       "detected on link 5(0x0)")
        else:
            out.append(f"[{i}.000002] usb 1-1: new high-speed USB device number {i % 128} using xhci_hcd")
    return "\n".join(out) + "\n"


def many_outputs(lines: int) -> str:
    sample = (FIXTURES / "samples" / "mixed_paste.md").read_text()
    return sample * (lines // sample.count("\n") + 1)


def timed(text: str) -> tuple[float, dict[str, int], list[str]]:
    start = time.perf_counter()
    result = detect.read(Source.from_text(text, name="paste.md"))
    return time.perf_counter() - start, result.rows, [str(w) for w in result.warnings]


def main() -> None:
    detect.read(Source.from_text(few_outputs(1000)))  # imports and caches warmed
    for lines in (25_000, 50_000, 100_000):
        text = few_outputs(lines)
        elapsed, rows, _ = timed(text)
        print(f"paste, 3 outputs, {text.count(chr(10)):,} lines ({len(text) / 1e6:.1f} MB): {elapsed:.2f} s, "
              f"{elapsed / lines * 1e6:.0f} ms per 1k lines ({rows['events']} events, {rows['link_samples']} "
              f"link rows)")
    text = many_outputs(100_000)
    elapsed, rows, warnings = timed(text)
    cap = next((w for w in warnings if "max_outputs" in w), "no cap warning")
    print(f"paste, the sample over and over, {text.count(chr(10)):,} lines: {elapsed:.2f} s, "
          f"{limits().paste_max_outputs} outputs read ({rows['link_samples']} link rows); {cap[:150]}")

    with tempfile.TemporaryDirectory() as tmp:
        one = (FIXTURES / "real" / "topo_m_dgx1_v100_1.txt").read_bytes()
        path = Path(tmp) / "topo.txt"
        path.write_bytes(one * (10_000_000 // len(one) + 1))
        start = time.perf_counter()
        result = detect.read(Source.from_path(path))
        elapsed = time.perf_counter() - start
        tracemalloc.start()  # a second pass for memory: tracing slows the reader down
        detect.read(Source.from_path(path))
        peak = tracemalloc.get_traced_memory()[1] / 1e6
        tracemalloc.stop()
        print(f"topo -m, {path.stat().st_size / 1e6:.0f} MB ({result.rows['topology']:,} rows): {elapsed:.2f} s, "
              f"peak Python memory {peak:.0f} MB")
    print(f"machine load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
