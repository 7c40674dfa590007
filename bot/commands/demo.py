"""`fabricbot demo`: the scripted on-call conversation on loopback; writes the transcript and ACTION_LOG.md."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..demo import bundled, run_demo
from . import SUMMARIES


def cmd_demo(args: argparse.Namespace) -> int:
    fleet, life = bundled(Path(args.fleet) if args.fleet else None)
    result = run_demo(Path(args.out), Path(args.action_log), fleet=fleet, life=life)
    print(f"wrote {result.transcript} with {len(result.images)} pictures, and {result.action_log}")
    for ticket in result.tickets:
        print(f"  ticket {ticket}")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    demo = sub.add_parser("demo", help=SUMMARIES["demo"])
    demo.add_argument("--out", default="transcripts", metavar="DIR", help="transcript folder (default transcripts)")
    demo.add_argument("--action-log", default="ACTION_LOG.md", metavar="FILE", help="default ACTION_LOG.md")
    demo.add_argument("--fleet", metavar="DIR", help="a fleet written by `fabricbot synth` (default: seed 0)")
    demo.set_defaults(func=cmd_demo)
