"""Node and rack pictures: how long one HGX H100 render (144 NVLinks, 30 nodes, three degraded links) and one GB200
NVL72 rack render (1,296 GPU links, a switch tray suspected) take after import.

Prints wall and CPU time per render. On a shared machine wall time follows the load; CPU time is the steadier
figure. The first render pays for font loading; the budget applies to every render after it.
"""

from __future__ import annotations

import os
import statistics
import time

from diagnostics import ComponentRef
from diagnostics.enums import LinkType, Severity
from diagnostics.model import Diagnosis, Finding
from diagnostics.render import render_node, render_rack
from diagnostics.topology import platform_graph

BUDGET_MS = 300.0
RUNS = 15


def diagnosis() -> Diagnosis:
    def finding(gpu: int, link: int, severity: Severity, replay: float) -> Finding:
        return Finding(ref=ComponentRef.nvlink(gpu, link), link_type=LinkType.NVLINK, link_id=f"nvlink-{link}",
                       link=link, gpu=gpu, severity=severity, rates_per_hour={"replay": replay})

    return Diagnosis(node_id="bench-node", platform="hgx-h100-8gpu", window_hours=1.0, fault_detected=True,
                     isolated_component="GPU 2 NVLink 1", degradation_pct=89.2, repair_action="reseat",
                     ticket_priority="urgent",  # type: ignore[arg-type]
                     findings=[finding(2, 1, Severity.FAILING, 8900.0), finding(5, 10, Severity.WARNING, 120.0),
                               finding(6, 16, Severity.DOWN, 0.0)])


def main() -> None:
    graph = platform_graph("hgx-h100-8gpu")
    diag = diagnosis()
    start = time.perf_counter()
    png = render_node(graph, diag)
    first = (time.perf_counter() - start) * 1000
    wall, cpu = [], []
    for _ in range(RUNS):
        start, start_cpu = time.perf_counter(), time.process_time()
        png = render_node(graph, diag)
        wall.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
    print(f"render_node, HGX H100 (144 NVLinks), 1200x900 PNG {len(png) / 1024:.0f} KB: "
          f"first {first:.0f} ms; then wall p50 {statistics.median(wall):.0f} ms, min {min(wall):.0f} ms; "
          f"CPU p50 {statistics.median(cpu):.0f} ms (budget {BUDGET_MS:.0f} ms; {RUNS} runs; "
          f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")


def rack_diagnosis() -> Diagnosis:
    """A synthetic NVL72 rack with a switch tray failing, as the one engine diagnoses it."""
    from datetime import timedelta

    import pandas as pd

    from diagnostics.analysis import analyze_fleet
    from diagnostics.synth import build_racks

    tables, truth, slots, platforms = build_racks(seed=3, racks=1, hours=6, scenarios=["switch_tray"])
    fleet = analyze_fleet(tables, window=timedelta(hours=1), end=pd.Timestamp(truth["end"]), platforms=platforms,
                          racks=slots)
    return next(iter(fleet.racks.values()))


def rack() -> None:
    diag = rack_diagnosis()
    start = time.perf_counter()
    render_rack(diag)
    first = (time.perf_counter() - start) * 1000
    wall, cpu, png, svg = [], [], b"", b""
    for _ in range(RUNS):
        start, start_cpu = time.perf_counter(), time.process_time()
        png = render_rack(diag)
        wall.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
    svg = render_rack(diag, fmt="svg")
    print(f"render_rack, GB200 NVL72 (1,296 GPU links; suspected {diag.isolated_component}), 1200x900 PNG "
          f"{len(png) / 1024:.0f} KB (SVG {len(svg) / 1024:.0f} KB): first {first:.0f} ms; then wall p50 "
          f"{statistics.median(wall):.0f} ms, min {min(wall):.0f} ms; CPU p50 {statistics.median(cpu):.0f} ms "
          f"(budget {BUDGET_MS:.0f} ms; {RUNS} runs; load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
    rack()
