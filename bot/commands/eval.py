"""`fabricbot eval`: score the analysis on a synthetic fleet against its ground truth, per scenario."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from diagnostics.synth import EVAL_STEPS, EXPECTED_FILE, evaluate

from ..progress import progress_bar
from . import SUMMARIES
from .output import print_json


def cmd_eval_drafter(args: argparse.Namespace) -> int:
    """`--drafter claude`: Claude's tickets for the fleet's failing nodes against the ground truth; needs a key."""
    from diagnostics.synth import score_drafter
    from diagnostics.tickets import ENV_KEY, ClaudeDrafter

    if not os.environ.get(ENV_KEY):
        print(f"{ENV_KEY} is not set: `fabricbot eval --drafter claude` asks Claude for a ticket per failing node "
              "and needs a key (the analysis's own scores need none: drop --drafter)", file=sys.stderr)
        return 2
    report = score_drafter(Path(args.fleet), ClaudeDrafter())
    if args.json:
        print_json(report)
    else:
        print(report.render())
    return 0


def cmd_eval_samples(args: argparse.Namespace) -> int:
    """A folder of real outputs with its `expected.toml`: each answered as its source says, or the eval fails."""
    from diagnostics.synth import evaluate_samples

    report = evaluate_samples(Path(args.fleet))
    if args.json:
        print_json(report)
    else:
        print(report.render())
    score = report.score()
    return 1 if args.min_score is not None and (score is None or score < args.min_score) else 0


def cmd_eval(args: argparse.Namespace) -> int:
    if args.drafter == "claude":
        return cmd_eval_drafter(args)
    if (Path(args.fleet) / EXPECTED_FILE).is_file():
        return cmd_eval_samples(args)
    with progress_bar(EVAL_STEPS, "eval", quiet=args.json) as progress:
        report = evaluate(Path(args.fleet), progress=progress)
    if args.json:
        print_json(report.summary())
    else:
        print(report.render())
    lowest = report.lowest()
    if args.min_score is not None and (lowest is None or lowest < args.min_score or report.false_urgent_high):
        print(f"a scenario scores below {args.min_score} (lowest {lowest}), or a benign node is urgent/high "
              f"({report.false_urgent_high})", file=sys.stderr)
        return 1
    if args.min_score is not None and report.life is not None and not report.life.ok:
        print("the life nodes fail: a restart ticketed, a false warning, a lead under 24 h or a repair misjudged",
              file=sys.stderr)
        return 1
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ev = sub.add_parser("eval", help=SUMMARIES["eval"])
    ev.add_argument("fleet", metavar="DIR", help="a folder written by `fabricbot synth`, or of real outputs with an "
                    f"{EXPECTED_FILE} of what their sources say (fixtures/real)")
    ev.add_argument("--json", action="store_true", help="machine-readable output (the same scores, and per node)")
    ev.add_argument("--min-score", type=float, default=None,
                    help="exit 1 if any scenario's score is below this, a benign node is urgent or high, or "
                         "the life nodes fail (a restart ticketed, a false warning, a lead under 24 h, a repair "
                         "misjudged)")
    ev.add_argument("--drafter", choices=["claude"], default=None,
                    help="score Claude's tickets for the failing nodes instead (component, lane, end, part "
                         "against the ground truth); needs ANTHROPIC_API_KEY, else exits 2")
    ev.set_defaults(func=cmd_eval)
