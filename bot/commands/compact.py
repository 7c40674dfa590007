"""`fabricbot compact`: a store's days held in many small parts merged into one part each.

An ingest merges the days it writes once they hold more than 16 parts (a cron job ingesting every scrape leaves a
node's day in hundreds of files, and every read pays for each); this does it for every day of a store, an older one
included. The parts it replaces are deleted by a later run once no read can still be using them (10 minutes). A day
it cannot merge (a part damaged or deleted by hand) is named on stderr and stays as it is; the exit status is then 3.

    fabricbot compact --store ./store
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from diagnostics import InputError
from diagnostics import format as fmt
from diagnostics.store import Compacted, open_store

from ..storage import ENV_STORE
from . import SUMMARIES
from .output import INCOMPLETE


def cmd_compact(args: argparse.Namespace) -> int:
    folder = args.store or os.environ.get(ENV_STORE)
    if not folder:
        raise InputError("give the store to compact: --store DIR (or set FABRICBOT_STORE)")
    store = open_store(folder, create=False)
    done = Compacted()
    for table in ("link_samples", "step_samples"):
        done.add(store.compact(table))
    if args.json:
        print(json.dumps({"days": done.days, "parts": done.parts, "deleted": done.deleted, "failed": done.failed}))
    else:
        print(f"{fmt.count(done.days, 'day')} held in {fmt.count(done.parts, 'part')} merged into one part each; "
              f"{fmt.count(done.deleted, 'replaced part')} deleted")
    for day, why in sorted(done.failed.items()):
        print(f"fabricbot: {day} not merged (its parts are read as they are): {why}", file=sys.stderr)
    return INCOMPLETE if done.failed else 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("compact", help=SUMMARIES["compact"],
                       description=__doc__.split("\n\n")[1] if __doc__ else None)
    p.add_argument("--store", metavar="DIR", help="the telemetry store (default: FABRICBOT_STORE)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_compact)
