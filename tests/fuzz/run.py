"""The long fuzz run (`make fuzz`): draws cases from the suite's strategies, checks each with the oracle, counts
what went wrong by kind and by format and keeps every failing input in the corpus.

    python -m tests.fuzz.run --cases 10000 [--seed N] [--no-keep]

It prints the cases run, for each kind how many went wrong, and a table by format (the reader of the seed file
mutated) with the CPU seconds each took, the wall time and the load average; it exits 1 when any case went wrong.
A fifth as many snapshot files of any values are read too (a failing one is printed: it has no seed file to keep
it by). Hypothesis is the generator here, not the judge: a failure is counted and kept, and the run goes on.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, seed, settings

from . import kept, oracle, silent, strategies
from .mutate import Mutation
from .seeds import ROOT, seeds

# The oracle's kinds, in four counts.
GROUPS = {
    "tracebacks": ("traceback",),
    "hangs": ("hang",),
    "silent wrong numbers": ("not finite", "negative", "not whole", "not in the input", "cut value kept",
                             "cut line not told", "wrapping changed the reading", *silent.WRONG),
    "silent row losses": silent.LOSSES,
}


SNAPSHOTS = "snapshot (any values)"


@dataclass
class Tally:
    """What went wrong, by kind (cases with at least one of it) and by format (cases, CPU seconds, each group)."""

    kinds: Counter[str] = field(default_factory=Counter)
    cases: Counter[str] = field(default_factory=Counter)
    cpu: dict[str, float] = field(default_factory=dict)
    groups: dict[str, Counter[str]] = field(default_factory=dict)
    found: list[str] = field(default_factory=list)

    def add(self, fmt: str, problems: oracle.Problems, cpu_s: float) -> None:
        kinds = {kind for kind, _ in problems.items}
        self.kinds.update(kinds)
        self.cases[fmt] += 1
        self.cpu[fmt] = self.cpu.get(fmt, 0.0) + cpu_s
        counts = self.groups.setdefault(fmt, Counter())
        counts.update(group for group, members in GROUPS.items() if kinds & set(members))

    @property
    def done(self) -> int:
        return sum(self.cases.values())

    def table(self) -> list[str]:
        """The counts by format as a Markdown table (the README's), a total row last."""
        head = ["format", "cases", "CPU s", *GROUPS]
        rows = [head, ["---"] * len(head)]
        for fmt in sorted(self.cases, key=lambda f: (f == SNAPSHOTS, f)):
            rows.append([fmt, f"{self.cases[fmt]:,}", f"{self.cpu[fmt]:.1f}",
                         *(str(self.groups[fmt][g]) for g in GROUPS)])
        rows.append(["**all**", f"{self.done:,}", f"{sum(self.cpu.values()):.1f}",
                     *(str(sum(c[g] for c in self.groups.values())) for g in GROUPS)])
        return ["| " + " | ".join(row) + " |" for row in rows]


@cache
def _format(name: str) -> str:
    """The reader of the unmutated seed file `name` (as the oracle reads it: under its suffix only)."""
    outcome = oracle.read_bytes(dict(seeds())[name], "input" + Path(name).suffix)
    return outcome.reader or f"none ({name} is refused)"


def run(cases: int, rng_seed: int, keep: bool) -> Tally:
    tally = Tally()

    @seed(rng_seed)
    @settings(max_examples=cases, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(strategies.seed(), strategies.any_case())
    def one(source: tuple[str, bytes], mutations: list[Mutation]) -> None:
        name, data = source
        fmt = _format(name)
        started = time.process_time()
        problems = oracle.check_many(data, name, mutations)
        tally.add(fmt, problems, time.process_time() - started)
        if problems and keep:
            tally.found.append(f"kept {kept.keep(name, data, mutations, str(problems)).relative_to(ROOT)}")
        elif problems:
            tally.found.append(f"{name} {[m.describe() for m in mutations]}: {problems}")

    @seed(rng_seed)
    @settings(max_examples=max(1, cases // 5), deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(strategies.snapshot_object())
    def snapshot(raw: dict[str, Any]) -> None:
        problems = oracle.Problems()
        text = json.dumps(raw, allow_nan=True)  # NaN and Infinity spelled as Python writes them
        started = time.process_time()
        oracle.read_and_check(text.encode(), "snapshot.json", problems, fmt="snapshot")
        tally.add(SNAPSHOTS, problems, time.process_time() - started)
        if problems:
            tally.found.append(f"snapshot {text[:200]}: {problems}")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a library's warning about a damaged input is no finding
        one()
        snapshot()
    return tally


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--no-keep", action="store_true", help="print failing inputs instead of keeping them")
    args = parser.parse_args(argv)
    started, load = time.perf_counter(), os.getloadavg()[0]
    tally = run(args.cases, args.seed, not args.no_keep)
    elapsed, load = time.perf_counter() - started, (load + os.getloadavg()[0]) / 2
    print(f"fuzz: {tally.done:,} cases in {elapsed:.0f} s (seed {args.seed}, load average {load:.1f}): mutants of "
          f"{len(seeds())} seed files and {max(1, args.cases // 5):,} snapshot files")
    for group, kinds in GROUPS.items():
        print(f"  {group}: {sum(tally.kinds[k] for k in kinds)}")
    for kind, count in sorted(tally.kinds.items()):
        print(f"    {kind}: {count}")
    print()
    print("\n".join(tally.table()))
    for line in tally.found[:20]:
        print(f"  {line[:400]}")
    return 1 if tally.found else 0


if __name__ == "__main__":
    sys.exit(main())
