"""`fabricbot audit`: the audit trail (commands, analyses, model calls, drafts, approvals, discards, filings)."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from diagnostics import InputError
from diagnostics.service import close_matches
from diagnostics.store import DB_NAME

from ..audit import KINDS, AuditLog
from ..storage import ENV_STORE, open_db
from . import SUMMARIES


def _kind(kind: str | None) -> str | None:
    """`--kind` when the trail has such entries, else InputError naming the kinds there are."""
    if kind is None or kind in KINDS:
        return kind
    near = close_matches(kind, KINDS, n=1)
    hint = f"; did you mean {near[0]}?" if near else ""
    raise InputError(f"no such audit kind (the kinds: {', '.join(KINDS)}){hint}", field="--kind", value=kind)


def cmd_audit(args: argparse.Namespace) -> int:
    kind = _kind(args.kind)
    store = Path(args.store or os.environ.get(ENV_STORE) or ".store")
    if not (store / DB_NAME).exists():
        raise InputError("no fabricbot database here (run the bot or `fabricbot ingest` first)", source=str(store))
    audit = AuditLog(open_db(store))
    text = audit.to_markdown() if args.markdown else "".join(
        json.dumps(e, sort_keys=True) + "\n" for e in audit.entries(kind))
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        print(text, end="")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    audit = sub.add_parser("audit", help=SUMMARIES["audit"])
    audit.add_argument("--store", metavar="DIR", help="the store folder (default FABRICBOT_STORE or ./.store)")
    audit.add_argument("--markdown", action="store_true", help="a Markdown table (as in ACTION_LOG.md)")
    audit.add_argument("--kind", help="only entries of this kind (JSON output)")
    audit.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    audit.set_defaults(func=cmd_audit)
