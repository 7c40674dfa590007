"""`fabricbot digest`: the daily digest (new failing parts, the watch list, repairs waiting for verification, nodes
in maintenance) printed from the store and the tracker; the bot posts the same to the ops channel on a schedule."""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict

from diagnostics import InputError
from diagnostics.service import StoreSource

from ..digest import build_digest, digest_lines
from ..options import add_threshold_options, parse_time, thresholds_from
from ..storage import ENV_STORE, open_db
from ..workflow.tracker import SqliteTracker
from . import SUMMARIES
from .output import INCOMPLETE


def cmd_digest(args: argparse.Namespace) -> int:
    folder = args.store or os.environ.get(ENV_STORE)
    if not folder:
        raise InputError("the digest reads the store and its tickets: give --store DIR (or set FABRICBOT_STORE)")
    source = StoreSource(folder)
    tracker = SqliteTracker(open_db(source.root))
    digest = build_digest(source, tracker, thresholds=thresholds_from(args),
                          at=parse_time(args.at, field="--at") if args.at else None)
    if args.json:
        print(json.dumps({"at": digest.at.isoformat(), "new": [asdict(o) for o in digest.new],
                          "ticketed": digest.ticketed,
                          "watches": [{**w.model_dump(mode="json"), "component": w.component} for w in digest.watches],
                          "verifying": [asdict(t) for t in digest.verifying],
                          "maintenance": [{**asdict(w), "note": w.note} for w in digest.maintenance],
                          "incomplete": digest.incomplete, "not_watched": digest.not_watched,
                          "not_watched_nodes": digest.unwatched,
                          "complete": digest.complete}, indent=2,
                         default=str))
    else:
        print("\n".join(digest_lines(digest)))
    if digest.complete:
        return 0
    print("fabricbot: digest INCOMPLETE (its Incomplete and Watch lines say why; this is not an all-clear)",
          file=sys.stderr)
    return INCOMPLETE


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("digest", help=SUMMARIES["digest"],
                       description="Exit status: 0 the digest of the whole fleet, 2 a usage or input error, "
                                   "3 incomplete: nodes it could not read or judge (its Incomplete lines say "
                                   "which), as `sweep` and `watch` say of theirs.")
    p.add_argument("--store", metavar="DIR", help="telemetry store folder (default $FABRICBOT_STORE)")
    p.add_argument("--at", metavar="TIME", help="as of this time (ISO 8601; default the newest reading)")
    p.add_argument("--json", action="store_true")
    add_threshold_options(p)
    p.set_defaults(func=cmd_digest)
