"""One node, 24 h of 1-minute samples (~219k link samples): the history analysis end to end (rates, rules,
missing links, events, localization), and the rates alone. Budget: under 50 ms for the analysis."""

from __future__ import annotations

import os
import statistics
import time
from datetime import timedelta

from diagnostics.analysis import analyze_tables
from diagnostics.analysis.prepared import prepare
from diagnostics.analysis.rates import windowed_increase
from diagnostics.config.thresholds import load_thresholds
from diagnostics.synth.fleet import build


def timed(fn, repeat: int = 20, warmup: int = 3) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """Median and best of `repeat` calls after `warmup` calls (the first calls of a process grow its heap)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), min(times)


def first_call(fn) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    print(f"machine: {os.cpu_count()} cores, load average {load()} (1, 5, 15 min)")
    for seed in range(7, 100):  # an HGX H100/H200 node (144 NVLinks + 8 PCIe links) with a replay storm; not timed
        tables, truth = build(seed=seed, nodes=1, hours=24, interval_min=1, scenarios=["replay_storm"])
        node = next(iter(truth["nodes"]))
        platform = truth["nodes"][node]["platform"]
        if platform in ("hgx-h100-8gpu", "hgx-h200-8gpu"):
            break
    links = tables["link_samples"]
    node_tables = {"link_samples": links, "events": tables["events"]}
    print(f"one node ({platform}), 24 h at 1 min: {len(links):,} link samples, "
          f"{links.groupby(['gpu', 'link_type', 'link'], observed=True, dropna=False).ngroups} links")
    cold = first_call(lambda: analyze_tables(node_tables, node_id=node, platform=platform))
    med, best = timed(lambda: windowed_increase(links, window=timedelta(hours=1)))
    print(f"  rates only (prepare + 1 h increase, all counters): median {med:.1f} ms, best {best:.1f} ms")
    p = prepare(links)
    med, best = timed(lambda: windowed_increase(links, window=timedelta(hours=1), prepared=p))
    print(f"  rates on a prepared history:                        median {med:.1f} ms, best {best:.1f} ms")
    med, best = timed(lambda: analyze_tables(node_tables, node_id=node, platform=platform))
    print(f"  analyze_tables (rates, rules, localization):        median {med:.1f} ms, best {best:.1f} ms"
          f"  [budget 50 ms]")
    thresholds = load_thresholds()
    med, best = timed(lambda: analyze_tables(node_tables, node_id=node, platform=platform, thresholds=thresholds))
    print(f"  ... with the thresholds file already loaded:        median {med:.1f} ms, best {best:.1f} ms")
    print(f"  ... the process's first call (cold heap, imports):  {cold:.1f} ms")
    med, best = timed(lambda: analyze_tables(tables, node_id=node, platform=platform), repeat=5, warmup=1)
    print(f"  ... plus step-time correlation of its job:          median {med:.1f} ms, best {best:.1f} ms")
    print(f"load average after: {load()}")


if __name__ == "__main__":
    main()
