"""`fabricbot watch`: links climbing toward a failing threshold, with the time the trend says they will cross."""

from __future__ import annotations

import argparse
import json
import os
import sys

from diagnostics import InputError
from diagnostics.config import load_watch
from diagnostics.service import StoreSource, known, watched

from ..options import add_threshold_options, hours_type, parse_time, thresholds_from
from ..storage import ENV_STORE
from . import SUMMARIES
from .output import INCOMPLETE


def cmd_watch(args: argparse.Namespace) -> int:
    folder = args.store or os.environ.get(ENV_STORE)
    if not folder:
        raise InputError("the watch list reads the store's history: give --store DIR (or set FABRICBOT_STORE)")
    policy = load_watch(args.policy, horizon_hours=args.horizon, lookback_hours=args.lookback)
    source = StoreSource(folder)
    held = source.nodes()
    for node in args.node:
        known("node", node, held, where=source.name, field="--node")
    answer = watched(source, nodes=args.node or None, policy=policy, thresholds=thresholds_from(args),
                     end=parse_time(args.at, field="--at") if args.at else None)
    if args.json:
        print(json.dumps([{**w.model_dump(mode="json"), "component": w.component} for w in answer.watches], indent=2))
    else:
        if not answer.watches:  # no evidence is not an all-clear: the answer says which it is
            print(answer.quiet())
        for w in answer.watches:
            print(f"watch  {w.node_id}  {w.summary}")
    for line in answer.not_judged():  # the list is not the fleet's: said, and the exit code says it
        print(f"fabricbot: watch list INCOMPLETE: {line}", file=sys.stderr)
    return 0 if answer.complete else INCOMPLETE


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("watch", help=SUMMARIES["watch"])
    p.add_argument("--store", metavar="DIR", help="telemetry store folder (default $FABRICBOT_STORE)")
    p.add_argument("--node", action="append", default=[], metavar="ID", help="only this node (repeatable)")
    p.add_argument("--at", metavar="TIME", help="judge as of this time (ISO 8601; default the newest reading)")
    p.add_argument("--horizon", type=hours_type, metavar="HOURS", help="how far ahead to project (e.g. 7d, 48h)")
    p.add_argument("--lookback", type=hours_type, metavar="HOURS", help="how much history the trend is fit on")
    p.add_argument("--policy", metavar="FILE", help="a watch policy TOML file (default $FABRICBOT_WATCH)")
    p.add_argument("--json", action="store_true")
    add_threshold_options(p)
    p.set_defaults(func=cmd_watch)
