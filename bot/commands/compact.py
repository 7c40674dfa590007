"""`fabricbot compact`: a store's days held in many small parts merged into one part each.

An ingest merges the days it writes once they hold more than 16 parts (a cron job ingesting every scrape leaves a
node's day in hundreds of files, and every read pays for each); this does it for every day of a store, an older one
included. The parts it replaces are deleted by a later run once no read can still be using them (10 minutes).

    fabricbot compact --store ./store
"""

from __future__ import annotations

import argparse
import json
import os

from diagnostics import InputError
from diagnostics.store import open_store


def cmd_compact(args: argparse.Namespace) -> int:
    folder = args.store or os.environ.get("FABRICBOT_STORE")
    if not folder:
        raise InputError("give the store to compact: --store DIR (or set FABRICBOT_STORE)")
    store = open_store(folder, create=False)
    done = [store.compact(table) for table in ("link_samples", "step_samples")]
    days, parts, deleted = (sum(d.days for d in done), sum(d.parts for d in done), sum(d.deleted for d in done))
    if args.json:
        print(json.dumps({"days": days, "parts": parts, "deleted": deleted}))
    else:
        print(f"{days} day(s) held in {parts} parts merged into one part each; {deleted} replaced part(s) deleted")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("compact", help="merge a store's days held in many small parts (a store fed scrape by "
                                       "scrape) into one part each",
                       description=__doc__.split("\n\n")[1] if __doc__ else None)
    p.add_argument("--store", metavar="DIR", help="the telemetry store (default: FABRICBOT_STORE)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_compact)
