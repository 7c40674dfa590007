"""`fabricbot watch`: links climbing toward a failing threshold, with the time the trend says they will cross."""

from __future__ import annotations

import argparse
import json
import os
import sys

from diagnostics import InputError
from diagnostics.config import load_watch
from diagnostics.service import StoreSource, known, watch

from ..options import add_threshold_options, hours_type, parse_time, thresholds_from


def cmd_watch(args: argparse.Namespace) -> int:
    folder = args.store or os.environ.get("FABRICBOT_STORE")
    if not folder:
        raise InputError("the watch list reads the store's history: give --store DIR (or set FABRICBOT_STORE)")
    policy = load_watch(args.policy, horizon_hours=args.horizon, lookback_hours=args.lookback)
    source = StoreSource(folder)
    held = source.nodes()
    for node in args.node:
        known("node", node, held, where=source.name, field="--node")
    unjudged: dict[str, str] = {}
    watches = watch(source, nodes=args.node or None, policy=policy, thresholds=thresholds_from(args),
                    end=parse_time(args.at, field="--at") if args.at else None, unjudged=unjudged)
    if args.json:
        print(json.dumps([{**w.model_dump(mode="json"), "component": w.component} for w in watches], indent=2))
    else:
        judged = len(args.node or held) - len(unjudged)
        if not watches and not judged:  # no evidence is not an all-clear
            print(f"cannot judge yet: the {source.name} holds no readings" if not held else
                  f"cannot judge yet: no node holds enough readings for a trend (last {policy.lookback_hours:g} h)")
        elif not watches:
            print(f"nothing climbing toward a failing threshold within {policy.horizon_hours:g} h "
                  f"(last {policy.lookback_hours:g} h of readings)"
                  + (f" among the {judged} node(s) judged" if unjudged else ""))
        for w in watches:
            print(f"watch  {w.node_id}  {w.summary}")
    if not held:
        print(f"fabricbot: watch list INCOMPLETE: the {source.name} holds no readings", file=sys.stderr)
    for node, why in sorted(unjudged.items()):  # the list is not the fleet's: said, and the exit code says it
        print(f"fabricbot: watch list INCOMPLETE: {node} not judged: {why}", file=sys.stderr)
    return 3 if unjudged or not held else 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("watch", help="links trending toward a failing threshold, with the projected time")
    p.add_argument("--store", metavar="DIR", help="telemetry store folder (default $FABRICBOT_STORE)")
    p.add_argument("--node", action="append", default=[], metavar="ID", help="only this node (repeatable)")
    p.add_argument("--at", metavar="TIME", help="judge as of this time (ISO 8601; default the newest reading)")
    p.add_argument("--horizon", type=hours_type, metavar="HOURS", help="how far ahead to project (e.g. 7d, 48h)")
    p.add_argument("--lookback", type=hours_type, metavar="HOURS", help="how much history the trend is fit on")
    p.add_argument("--policy", metavar="FILE", help="a watch policy TOML file (default $FABRICBOT_WATCH)")
    p.add_argument("--json", action="store_true")
    add_threshold_options(p)
    p.set_defaults(func=cmd_watch)
