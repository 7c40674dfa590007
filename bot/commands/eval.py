"""`fabricbot eval`: score the analysis on a synthetic fleet against its ground truth."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from diagnostics.synth import evaluate


def cmd_eval(args: argparse.Namespace) -> int:
    report = evaluate(Path(args.fleet))
    if args.json:
        data = report.model_dump(mode="json")
        data["overall"] = {k: {"f1": report.overall(k).f1, "precision": report.overall(k).precision,
                               "recall": report.overall(k).recall} for k in ("detection", "localization")}
        json.dump(data, sys.stdout, indent=2)
        print()
    else:
        print(report.render())
    f1 = report.overall("localization").f1
    if args.min_f1 is not None and (f1 is None or f1 < args.min_f1):
        print(f"localization F1 below {args.min_f1}", file=sys.stderr)
        return 1
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ev = sub.add_parser("eval", help="detection and localization precision/recall/F1 on a synthetic fleet")
    ev.add_argument("fleet", metavar="DIR", help="a folder written by `fabricbot synth`")
    ev.add_argument("--json", action="store_true", help="machine-readable output")
    ev.add_argument("--min-f1", type=float, default=None, help="exit 1 if localization F1 is below this")
    ev.set_defaults(func=cmd_eval)
