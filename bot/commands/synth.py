"""`fabricbot synth`: write a synthetic fleet with labelled faults and its ground truth."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from diagnostics import InputError
from diagnostics.config import all_racks
from diagnostics.synth import DEFAULT_NODES, DEFAULT_RACKS, generate, generate_racks, generate_steps

from ..progress import progress_bar
from . import SUMMARIES

MIN_HOURS = 6.0  # the scenarios' histories (a baseline, the onset, the analysis window) need six hours


def _at_least_one(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"at least 1 (got {text!r})")
    return n


def _number(text: str, unit: str, least: float, inclusive: bool) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of {unit}: {text!r}") from None
    if not (math.isfinite(value) and (value >= least if inclusive else value > least)):
        bound = "at least" if inclusive else "more than"
        raise argparse.ArgumentTypeError(f"{bound} {least:g} {unit} (got {text!r})")
    return value


def _hours(text: str) -> float:
    return _number(text, "hours", MIN_HOURS, inclusive=True)


def _minutes(text: str) -> float:
    return _number(text, "minutes", 0.0, inclusive=False)


def cmd_synth(args: argparse.Namespace) -> int:
    if args.platform is None and args.racks is not None:
        raise InputError("--racks counts the racks of a rack platform: give --platform too (gb200-nvl72, "
                         "gb200-nvl36x2), or --nodes for 8-GPU nodes", field="--racks", value=str(args.racks))
    if args.platform is not None:
        if args.platform not in all_racks():
            raise InputError(f"--platform takes a rack platform ({', '.join(sorted(all_racks()))}); without it the "
                             "fleet mixes the 8-GPU platforms", field="--platform", value=args.platform)
        racks = DEFAULT_RACKS if args.racks is None else args.racks
        truth_path = generate_racks(out=Path(args.out), seed=args.seed, racks=racks, hours=args.hours,
                                    interval_min=args.interval, platform=args.platform, fmt=args.format,
                                    life=not args.no_life)
        truth = json.loads(truth_path.read_text(encoding="utf-8"))
        faults = sum(len(r["faults"]) for r in truth["racks"].values())
        print(f"wrote {len(truth['racks'])} {args.platform} racks x {args.hours:g} h ({faults} faults, "
              f"{len(truth['jobs'])} jobs) to {args.out}; rack inventory: {Path(args.out) / 'nodes.csv'}; "
              f"ground truth: {truth_path}{_beside(args)}")
        return 0
    with progress_bar(generate_steps(args.nodes, life=not args.no_life), "synth", unit="step") as progress:
        truth_path = generate(out=Path(args.out), seed=args.seed, nodes=args.nodes, hours=args.hours,
                              interval_min=args.interval, fmt=args.format, scrapes=args.scrapes,
                              life=not args.no_life, progress=progress)
    truth = json.loads(truth_path.read_text(encoding="utf-8"))
    faults = sum(len(n["faults"]) for n in truth["nodes"].values())
    print(f"wrote {len(truth['nodes'])} nodes x {args.hours:g} h ({faults} faults, {len(truth['jobs'])} jobs) "
          f"to {args.out}; ground truth: {truth_path}{_beside(args)}")
    return 0


def _beside(args: argparse.Namespace) -> str:
    return "" if args.no_life else "; restarts, slow failures and repairs in life/, a driver-rollout storm in storm/"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    synth = sub.add_parser("synth", help=SUMMARIES["synth"])
    synth.add_argument("--out", required=True, metavar="DIR", help="folder to write")
    synth.add_argument("--seed", type=int, default=0, help="random seed (same seed, same fleet; default 0)")
    synth.add_argument("--nodes", type=_at_least_one, default=DEFAULT_NODES,
                       help=f"number of 8-GPU nodes (default {DEFAULT_NODES}: every scenario at least once)")
    synth.add_argument("--platform", default=None, metavar="RACK",
                       help="write racks of this rack platform instead (gb200-nvl72, gb200-nvl36x2)")
    synth.add_argument("--racks", type=_at_least_one, default=None,
                       help=f"with --platform: number of racks (default {DEFAULT_RACKS}: every rack scenario once)")
    synth.add_argument("--hours", type=_hours, default=8.0, help="hours of history (default 8, at least 6)")
    synth.add_argument("--interval", type=_minutes, default=5.0, metavar="MIN", help="minutes between samples")
    synth.add_argument("--format", choices=("parquet", "csv"), default="parquet", help="table file format")
    synth.add_argument("--scrapes", type=int, default=2, metavar="N",
                       help="also write the last hour of N nodes as dcgm-exporter scrapes (default 2)")
    synth.add_argument("--no-life", action="store_true",
                       help="leave out what the alert loop is scored on: the life nodes (four days of planned "
                            "restarts, slow failures and repairs) and the storm (a driver rollout on 40 nodes)")
    synth.set_defaults(func=cmd_synth)
