"""The pictures: how long each takes after import, and its size.

- the node picture: one HGX H100 render (144 NVLinks, 30 nodes, three degraded links), budget 300 ms;
- the correlation picture: a day of 5-minute buckets, the step time against three links (the most it draws),
  budget 300 ms and 150 KB;
- the fleet heat map: 1,024 nodes x 8 GPUs with 60 offenders and 20 suspected parts, budget 1 s;
- the rack picture: one GB200 NVL72 rack render (1,296 GPU links, a switch tray suspected), budget 300 ms, 300 KB.

Prints wall and CPU time per render. On a shared machine wall time follows the load; CPU time is the steadier
figure. The first render pays for font loading; the budget applies to every render after it.
"""

from __future__ import annotations

import os
import random
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from diagnostics import ComponentRef
from diagnostics.enums import LinkType, Severity
from diagnostics.model import Diagnosis, Finding, LinkSeries, Localization, StepEvidence
from diagnostics.offenders import Offender, SweepResult
from diagnostics.render import render_correlation, render_fleet, render_node, render_rack
from diagnostics.topology import platform_graph

BUDGET_MS = 300.0
CORRELATION_KB = 150
FLEET_BUDGET_MS = 1000.0
RUNS = 15
START = datetime(2026, 9, 17, tzinfo=UTC)


def diagnosis() -> Diagnosis:
    def finding(gpu: int, link: int, severity: Severity, replay: float) -> Finding:
        return Finding(ref=ComponentRef.nvlink(gpu, link), link_type=LinkType.NVLINK, link_id=f"nvlink-{link}",
                       link=link, gpu=gpu, severity=severity, rates_per_hour={"replay": replay})

    return Diagnosis(node_id="bench-node", platform="hgx-h100-8gpu", window_hours=1.0, fault_detected=True,
                     isolated_component="GPU 2 NVLink 1", degradation_pct=89.2, repair_action="reseat",
                     ticket_priority="urgent",  # type: ignore[arg-type]
                     findings=[finding(2, 1, Severity.FAILING, 8900.0), finding(5, 10, Severity.WARNING, 120.0),
                               finding(6, 16, Severity.DOWN, 0.0)])


def with_evidence(d: Diagnosis) -> Diagnosis:
    """A day of 5-minute buckets: the step time doubles at noon, one link's replays rise with it, two stay flat."""
    n = 288
    rng = random.Random(0)
    steps: list[float | None] = [180 + rng.random() * 6 if i < n // 2 else 340 + rng.random() * 10 for i in range(n)]
    storm = [rng.random() * 20 if i < n // 2 else 8900 + rng.random() * 600 for i in range(n)]
    links = [LinkSeries(node_id=d.node_id, ref=ComponentRef.nvlink(2, 1), counter="replay", rate_per_hour=storm,
                        above=1000.0, rule="nvlink_replay", severity=Severity.FAILING, explains_slowdown=True,
                        score=0.86, onset=START + timedelta(hours=12)),
             *(LinkSeries(node_id=d.node_id, ref=ComponentRef.nvlink(g, 3), counter="replay", rule="nvlink_replay",
                          rate_per_hour=[rng.random() * 30 for _ in range(n)], above=1000.0) for g in (4, 6))]
    evidence = StepEvidence(job_id="4411", start=START, bucket_minutes=5, step_time_ms=steps, links=links,
                            explained=True)
    return d.model_copy(update={"evidence": evidence, "window_end": START + timedelta(days=1), "job_id": "4411",
                                "slowdown_onset": START + timedelta(hours=12), "baseline_step_time_ms": 183.0})


def fleet(nodes: int = 1024) -> SweepResult:
    rng = random.Random(1)
    names = [f"gpu-node-{i:04d}" for i in range(nodes)]
    offenders = [Offender(node_id=rng.choice(names), link_type=LinkType.NVLINK, gpu=rng.randrange(8), link=1,
                          rule="nvlink_replay", severity=rng.choice(list(Severity)[1:]), rate_per_hour=5e3, above=1e3)
                 for _ in range(60)]
    diagnoses = {}
    for o in offenders[:20]:
        loc = Localization(ref=ComponentRef.nvlink(o.gpu, 1), gpu=o.gpu, confidence=0.9)
        diagnoses[o.node_id] = Diagnosis(node_id=o.node_id, platform="hgx-h100-8gpu", window_hours=1.0,
                                         fault_detected=True, isolated_component=loc.component, degradation_pct=None,
                                         repair_action="reseat", ticket_priority="medium",  # type: ignore[arg-type]
                                         findings=[], localization=loc, localizations=[loc])
    return SweepResult(at=START, window_hours=1.0, source="store", offenders=offenders, diagnoses=diagnoses,
                       swept=names)


def timed(render: Callable[[], bytes], runs: int = RUNS) -> tuple[bytes, float, list[float], list[float]]:
    """The picture, its first render's wall ms, then each later render's wall and CPU ms."""
    start = time.perf_counter()
    png = render()
    first = (time.perf_counter() - start) * 1000
    wall, cpu = [], []
    for _ in range(runs):
        start, start_cpu = time.perf_counter(), time.process_time()
        png = render()
        wall.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
    return png, first, wall, cpu


def report(what: str, png: bytes, first: float, wall: list[float], cpu: list[float], budget: float) -> None:
    print(f"{what}, PNG {len(png) / 1024:.0f} KB: first {first:.0f} ms; then wall p50 {statistics.median(wall):.0f} "
          f"ms, min {min(wall):.0f} ms; CPU p50 {statistics.median(cpu):.0f} ms (budget {budget:.0f} ms; "
          f"{len(wall)} runs)")


def main() -> None:
    graph = platform_graph("hgx-h100-8gpu")
    diag = diagnosis()
    report("render_node, HGX H100 (144 NVLinks), 1200x900", *timed(lambda: render_node(graph, diag)), BUDGET_MS)
    evidence = with_evidence(diag)
    png, *times = timed(lambda: render_correlation(evidence))
    report(f"render_correlation, 288 buckets x 3 links, 1200x560 (budget {CORRELATION_KB} KB)", png, *times,
           BUDGET_MS)
    result = fleet()
    report("render_fleet, 1,024 nodes x 8 GPUs", *timed(lambda: render_fleet(result), runs=5), FLEET_BUDGET_MS)
    print(f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


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
