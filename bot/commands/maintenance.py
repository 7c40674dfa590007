"""`fabricbot maintenance`: put a node in planned work for a while (no page, no ticket from it), end it, list it.

    fabricbot maintenance NODE 2h "swap GPU 3" --by alice     # for two hours (from its newest reading, if older)
    fabricbot maintenance NODE --end --by alice               # it is over
    fabricbot maintenance                                     # every window, past and present
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import UTC, datetime

from diagnostics import InputError
from diagnostics import format as fmt
from diagnostics.service import known
from diagnostics.store import Maintenance, open_store

from ..options import parse_duration, parse_time
from ..storage import ENV_STORE
from . import SUMMARIES


def _row(w: Maintenance, now: datetime) -> str:
    state = "now" if w.covers(now) else "over" if w.until is not None and w.until <= now else "planned"
    return f"{w.node_id:<20} {state:<8} {w.note}"


def cmd_maintenance(args: argparse.Namespace) -> int:
    folder = args.store or os.environ.get(ENV_STORE)
    if not folder:
        raise InputError("maintenance windows live in the store: give --store DIR (or set FABRICBOT_STORE)")
    store = open_store(folder, create=False)
    log = store.maintenance
    now = parse_time(args.at, field="--at") if args.at else datetime.now(UTC)
    if args.node is None:
        windows = log.windows()
        if args.json:
            print(json.dumps([{**w.__dict__, "note": w.note} for w in windows], default=str, indent=2))
        else:
            print("\n".join(_row(w, now) for w in windows) if windows else "no maintenance windows")
        return 0
    args.node = known("node", args.node, store.nodes(), where="store", field="NODE")  # as every command reads it
    if not args.by:
        raise InputError("say who sets it: --by NAME (it is shown on every answer for the node)")
    if args.end:
        ended = log.end(args.node, at=now, by=args.by)
        print(f"{args.node}: ended {fmt.count(len(ended), 'maintenance window')}" if ended
              else f"{args.node} is not in maintenance")
        return 0
    if args.duration is None:
        raise InputError("give how long (e.g. 2h, 90m, 1d), or --end")
    try:
        span = parse_duration(args.duration)
    except ValueError as exc:
        raise InputError(str(exc), field="DURATION", value=args.duration) from None
    newest = store.newest([args.node])
    before = log.windows(args.node)
    window = (log.set(args.node, start=now, span=span, reason=args.reason or "", set_by=args.by) if args.at else
              log.begin(args.node, now=now, newest=newest, span=span, reason=args.reason or "", set_by=args.by))
    print(f"{args.node} {window.note}: its findings are shown, not paged or ticketed")
    beside = window.beside(before)
    if beside:
        print(f"fabricbot: {args.node}: {beside}", file=sys.stderr)
    after = None if args.at else window.after_readings(newest)  # a time given places the work where it was asked
    if after:
        print(f"fabricbot: {args.node}: {after}", file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("maintenance", help=SUMMARIES["maintenance"])
    p.add_argument("node", metavar="NODE", nargs="?", help="the node (none: list every window)")
    p.add_argument("duration", metavar="DURATION", nargs="?", help="how long, from now or --at (2h, 90m, 1d)")
    p.add_argument("reason", metavar="REASON", nargs="?", help="what the work is")
    p.add_argument("--by", metavar="NAME", help="who sets or ends it")
    p.add_argument("--end", action="store_true", help="end the node's open windows now (or at --at)")
    p.add_argument("--at", metavar="TIME", help="start (or end) at this time instead of now (ISO 8601)")
    p.add_argument("--store", metavar="DIR", help="telemetry store folder (default $FABRICBOT_STORE)")
    p.add_argument("--json", action="store_true", help="the list as JSON")
    p.set_defaults(func=cmd_maintenance)
