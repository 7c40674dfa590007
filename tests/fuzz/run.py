"""The long fuzz run (`make fuzz`): draws cases from the suite's strategies, checks each with the oracle, counts
what went wrong by kind and keeps every failing input in the corpus.

    python -m tests.fuzz.run --cases 10000 [--seed N] [--no-keep]

It prints the cases run and, for each kind, how many went wrong; it exits 1 when any did. A fifth as many
snapshot files of any values are read too (a failing one is printed: it has no seed file to keep it by).
Hypothesis is the generator here, not the judge: a failure is counted and kept, and the run goes on.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections import Counter
from typing import Any

from hypothesis import HealthCheck, Phase, given, seed, settings

from . import kept, oracle, silent, strategies
from .mutate import Mutation
from .seeds import ROOT, seeds

# The oracle's kinds, in the three counts the issue asks for.
GROUPS = {
    "tracebacks": ("traceback",),
    "hangs": ("hang",),
    "silent wrong numbers": ("not finite", "negative", "not whole", "not in the input", "cut value kept",
                             "cut line not told", "wrapping changed the reading", *silent.WRONG),
    "silent row losses": silent.LOSSES,
}


def run(cases: int, rng_seed: int, keep: bool) -> tuple[int, Counter[str], list[str]]:
    tally: Counter[str] = Counter()
    found: list[str] = []
    done = 0

    @seed(rng_seed)
    @settings(max_examples=cases, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(strategies.seed(), strategies.any_case())
    def one(source: tuple[str, bytes], mutations: list[Mutation]) -> None:
        nonlocal done
        done += 1
        name, data = source
        problems = oracle.check_many(data, name, mutations)
        kinds = {kind for kind, _ in problems.items}
        tally.update(kinds)
        if problems and keep:
            found.append(f"kept {kept.keep(name, data, mutations, str(problems)).relative_to(ROOT)}")
        elif problems:
            found.append(f"{name} {[m.describe() for m in mutations]}: {problems}")

    @seed(rng_seed)
    @settings(max_examples=max(1, cases // 5), deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(strategies.snapshot_object())
    def snapshot(raw: dict[str, Any]) -> None:
        nonlocal done
        done += 1
        problems = oracle.Problems()
        text = json.dumps(raw, allow_nan=True)  # NaN and Infinity spelled as Python writes them
        oracle.read_and_check(text.encode(), "snapshot.json", problems, fmt="snapshot")
        tally.update({kind for kind, _ in problems.items})
        if problems:
            found.append(f"snapshot {text[:200]}: {problems}")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a library's warning about a damaged input is no finding
        one()
        snapshot()
    return done, tally, found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--no-keep", action="store_true", help="print failing inputs instead of keeping them")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    done, tally, found = run(args.cases, args.seed, not args.no_keep)
    elapsed = time.perf_counter() - started
    print(f"fuzz: {done:,} cases in {elapsed:.0f} s (seed {args.seed}): mutants of {len(seeds())} seed files and "
          f"{max(1, args.cases // 5):,} snapshot files")
    for group, kinds in GROUPS.items():
        print(f"  {group}: {sum(tally[k] for k in kinds)}")
    for kind, count in sorted(tally.items()):
        print(f"    {kind}: {count}")
    for line in found[:20]:
        print(f"  {line[:400]}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
