"""`fabricbot ticket`: draft the repair ticket for a snapshot's (or a stored node's) isolated component or a link."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import sqlite_utils

from bot.audit import AuditLog
from bot.commands.analyze import _read_text
from diagnostics import Diagnosis, analyze_snapshot, load_thresholds
from diagnostics.errors import InputError
from diagnostics.ingest.snapshot import read_cases
from diagnostics.tickets import Drafter, ModelCall, NoFaultError, RulesDrafter, drafter_from_env

DB_NAME = "fabricbot.db"
ENV_STORE = "FABRICBOT_STORE"


def _diagnoses(target: str) -> list[tuple[str, Diagnosis]]:
    if target != "-" and not Path(target).exists():
        raise InputError("no such snapshot file; reading a node by name needs a telemetry store with its "
                         "analysis, which this build lacks", source=target)
    text, source = _read_text(target)
    thresholds = load_thresholds()
    out = []
    for case in read_cases(text, source):
        for err in case.errors:
            print(f"error: {err}", file=sys.stderr)
        if case.snapshot is not None:
            out.append((case.label, analyze_snapshot(case.snapshot, thresholds)))
    return out


def _audit(store: str | None) -> AuditLog | None:
    folder = store or os.environ.get(ENV_STORE)
    if not folder:
        return None
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    return AuditLog(sqlite_utils.Database(path / DB_NAME))


def cmd_ticket(args: argparse.Namespace) -> int:
    audit = _audit(args.store)

    def record(call: ModelCall) -> None:
        if audit is not None:
            audit.record("model_call", actor="fabricbot ticket", subject=call.model, detail=call.model_dump())

    drafter: Drafter = RulesDrafter() if args.rules else drafter_from_env(on_model_call=record)
    tickets: list[dict[str, Any]] = []
    for label, diagnosis in _diagnoses(args.target):
        try:
            ticket = drafter.draft(diagnosis, component=args.link)
        except NoFaultError:
            print(f"{label}: no unhealthy link: nothing to repair", file=sys.stderr)
            continue
        tickets.append(ticket.model_dump(mode="json"))
        if not args.json:
            print(ticket.to_markdown())
    if args.json:
        json.dump(tickets[0] if len(tickets) == 1 else tickets, sys.stdout, indent=2)
        print()
    return 0 if tickets else 1


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("ticket", help="draft the repair ticket for the isolated component (or one link)")
    p.add_argument("target", metavar="FILE|NODE", help="snapshot JSON ('-' reads stdin)")
    p.add_argument("--link", help="a candidate id, component name or link id (default: the isolated component)")
    p.add_argument("--json", action="store_true", help="the ticket as JSON")
    p.add_argument("--store", metavar="DIR", help=f"store folder whose database records model calls "
                                                  f"(default ${ENV_STORE})")
    p.add_argument("--rules", action="store_true", help="use the deterministic drafter even when a key is set")
    p.set_defaults(func=cmd_ticket)
