"""`fabricbot ingest`: read telemetry files into normalized tables, and into a store with `--store`.

Each file is read, and stored, on its own: one that cannot be read is refused and named with its reason, and the
others are kept. The exit code: 0 every file read, 3 some refused (the rest kept), 1 none read."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from diagnostics import InputError
from diagnostics import format as fmt
from diagnostics.ingest import STDIN, open_input
from diagnostics.store import DB_NAME, At, IngestReport, expand, open_store, read_sources

from ..options import parse_time
from ..progress import progress_bar
from . import SUMMARIES
from .output import INCOMPLETE


def _parse_at(value: str | None) -> At:
    if value is None or value == "mtime":
        return value  # type: ignore[return-value]
    if value == "now":  # a reading piped in as it is taken
        return datetime.now(UTC)
    return parse_time(value, field="--at")


def _links_read(per_node: Mapping[str, Mapping[Any, int]]) -> dict[str, list[str]]:
    """The nodes by how many NVLinks each GPU's readings hold ('18 on each of GPUs 0-7'; '18 on GPUs 0-6, 17 on
    GPU 7'): one line per board read alike, not one per node."""
    alike: dict[str, list[str]] = {}
    for node, gpus in per_node.items():
        by_count: dict[int, list[int]] = {}
        for gpu, n in gpus.items():
            by_count.setdefault(int(n), []).append(int(gpu))
        if len(by_count) == 1:
            ((n, on),) = by_count.items()
            said = f"{n} on {'each of ' if len(on) > 1 else ''}{fmt.noun(len(on), 'GPU')} {fmt.spans(on)}"
        else:
            said = ", ".join(f"{n} on {fmt.noun(len(on), 'GPU')} {fmt.spans(on)}"
                             for n, on in sorted(by_count.items(), reverse=True))
        alike.setdefault(said, []).append(node)
    return alike


def _print_text(report: IngestReport, stored: bool) -> None:
    summary = report.as_dict()
    for f in report.files:
        rows = ", ".join(f"{n} {t}" for t, n in f.rows.items() if n) or "nothing"
        state = {"ingested": "stored", "read": "read", "duplicate": "already in the store", "error": "refused"}
        why = f" ({f.error})" if f.status == "error" and f.error else ""
        print(f"{f.name}: {state[f.status]}{why}" + (f" as {f.format}: {rows}" if f.format else ""))
    print(f"rows: {', '.join(f'{t}={n}' for t, n in summary['rows'].items())}")  # a refused file's not counted
    print(f"nodes: {', '.join(summary['nodes']) or '-'}")
    if summary["platforms"]:
        print("platforms: " + ", ".join(f"{n} {p}" for n, p in sorted(summary["platforms"].items())[:10])
              + (f" (and {len(summary['platforms']) - 10} more)" if len(summary["platforms"]) > 10 else ""))
    for said, nodes in _links_read(summary["links_per_gpu"]).items():
        shown = ", ".join(nodes[:3]) + (f" and {fmt.count(len(nodes) - 3, 'more node')}" if len(nodes) > 3 else "")
        print(f"  NVLinks read: {said}: {shown}")
    for w in report.warnings:
        print(f"warning: {w}", file=sys.stderr)
    if not stored:
        print("(not stored: give --store DIR to keep these samples)")


def _unmade(folder: Path, made_folder: bool) -> None:
    """A store this ingest made and kept nothing in, removed: a refused first file left an empty store behind, which
    later commands took for a store that holds no node."""
    for name in (DB_NAME, f"{DB_NAME}-wal", f"{DB_NAME}-shm"):
        (folder / name).unlink(missing_ok=True)
    if made_folder:
        with contextlib.suppress(OSError):  # something else was put there meanwhile: left as it is
            folder.rmdir()


def cmd_ingest(args: argparse.Namespace) -> int:
    at = _parse_at(args.at)
    if at == "mtime" and STDIN in args.files:
        raise InputError("stdin has no modification time: give --at now (or a time) for a reading piped in",
                         field="--at", value="mtime")
    args.files = [open_input(f) if f == STDIN else f for f in args.files]  # a pipe from cron: read once
    files = len(expand(args.files))
    if not files:  # folders that hold no file: said before a store is made for nothing
        raise InputError("no file to read in the folder" + ("s" if len(args.files) > 1 else ""),
                         source=", ".join(map(str, args.files[:3])))
    steps = files * 2 if args.store else files  # each file read, then (into a store) kept
    with progress_bar(steps, "ingest", unit="step", quiet=args.json or files < 2) as progress:
        if args.store:
            folder = Path(args.store)
            made = not (folder / DB_NAME).exists()
            made_folder = not folder.exists()
            store = open_store(folder)
            report = store.ingest(args.files, fmt=args.format, node_id=args.node, at=at, progress=progress)
            if made and not report.read_anything:
                store.db.close()
                _unmade(folder, made_folder)
        else:
            report = IngestReport.of(read_sources(args.files, fmt=args.format, node_id=args.node, at=at,
                                                  progress=progress, refuse_unread=True))
    if args.json:
        json.dump(report.as_dict(), sys.stdout, indent=2, default=str)
        print()
    else:
        _print_text(report, bool(args.store))
    refused = [f for f in report.files if f.status == "error"]
    reasons = "; ".join(f"{f.name}: {f.error}" for f in refused if f.error)
    if not report.read_anything:
        print(f"fabricbot: nothing could be read ({reasons})", file=sys.stderr)
        return 1
    if refused:
        kept = "stored" if args.store else "read"
        print(f"fabricbot: {len(refused)} of {len(report.files)} files refused, the others {kept} ({reasons})",
              file=sys.stderr)
        return INCOMPLETE  # some files refused, the others read (and stored)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("ingest", help=SUMMARIES["ingest"])
    parser.add_argument("files", nargs="+", metavar="FILE|DIR",
                        help="files, or folders read recursively (hidden files and ground_truth.json skipped; "
                             "'-' reads stdin); nodes.csv (node_id,platform) and inventory CSV/TOML/JSON files give "
                             "node platforms")
    parser.add_argument("--store", metavar="DIR", help="keep the samples in this store (Parquet + SQLite)")
    parser.add_argument("--format", help="force a reader instead of detecting it ('inventory' for a nodes file)")
    parser.add_argument("--node", help="the node id for every sample (overrides labels such as Hostname)")
    parser.add_argument("--at", metavar="TIME|mtime|now",
                        help="time for readings without their own (a scrape saved without timestamps); "
                             "'mtime' uses each file's modification time, 'now' the time of the command")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(func=cmd_ingest)
