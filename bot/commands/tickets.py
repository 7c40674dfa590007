"""`fabricbot tickets`: the mock tracker's tickets, a GPU's history by serial or UUID, a repair reported, and the
repaired parts verified.

A ticket reported repaired waits in `verifying`; `fabricbot tickets verify` judges each such part on the store's
readings since its repair and closes the ticket when the soak held, or reopens it, escalated to replacement, when
the errors came back. Nothing here touches hardware: the tracker is the local mock in the store's database.
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import asdict
from pathlib import Path

from diagnostics import InputError
from diagnostics.config import load_verification
from diagnostics.service import known
from diagnostics.store import DB_NAME, open_store
from diagnostics.tickets import Hardware

from ..audit import AuditLog
from ..nodes import StoreNodeSource
from ..options import parse_time
from ..storage import ENV_STORE, open_db
from ..workflow.history import part_history
from ..workflow.states import TicketState
from ..workflow.tracker import RepairTimeError, SqliteTracker, Ticket, ticket_time
from ..workflow.verification import reported_diagnostics, source_check, verify_repairs
from . import SUMMARIES


def _folder(args: argparse.Namespace) -> Path:
    store = Path(args.store or os.environ.get(ENV_STORE) or ".store")
    if not (store / DB_NAME).exists():
        raise InputError("no fabricbot database here (run the bot or `fabricbot ingest` first)", source=str(store))
    return store


def _line(t: Ticket) -> str:
    flags = " escalated" if t.escalated else ""
    repaired = f", repaired {ticket_time(t.repaired_at)} by {t.repaired_by}" if t.repaired_at else ""
    return f"{t.id}  {t.status:<9} {t.priority:<7} {t.node_id} / {t.component}{flags}{repaired}"


def _named(tracker: SqliteTracker, ticket_id: str) -> str:
    """The ticket `ticket_id` names, or UnknownName with the close matches."""
    return known("ticket", ticket_id, [t.id for t in tracker.tickets()], field="ticket")


def cmd_tickets(args: argparse.Namespace) -> int:
    folder = _folder(args)
    db = open_db(folder)
    tracker, audit = SqliteTracker(db), AuditLog(db)
    action = args.action or "list"
    if action == "list":
        tickets = [t for t in tracker.tickets() if args.status in (None, t.status)]
        if args.json:
            print(json.dumps([asdict(t) for t in tickets], indent=2))
        else:
            print("\n".join(map(_line, tickets)) if tickets else "no tickets")
        return 0
    if action == "show":
        ticket = tracker.get(_named(tracker, args.ticket))
        assert ticket is not None
        print(_line(ticket))
        for h in tracker.history(ticket.id):
            print(f"  {ticket_time(h['at'])}  {h['status']:<15} {h['actor']}: {h['note']}")
        return 0
    if action == "history":
        key = args.gpu.strip()
        gpu = Hardware(uuid=key) if key.upper().startswith("GPU-") else Hardware(serial=key)
        history = part_history(tracker, gpu, node_id="", slug="")
        if args.json:
            print(history.model_dump_json(indent=2))
        else:
            print("\n".join(history.lines(drafting=False)))
        return 0
    if action == "repaired":
        at = parse_time(args.at, field="--at").isoformat(timespec="seconds") if args.at else None
        diag_at = parse_time(args.diag_at, field="--diag-at").isoformat(timespec="seconds") if args.diag_at else None
        if args.diag_at and not args.diag:
            raise InputError("--diag-at needs --diag pass|fail", field="--diag-at", value=args.diag_at)
        try:
            ticket = tracker.report_repair(_named(tracker, args.ticket), actor=args.by, at=at, note=args.note or "")
        except RepairTimeError as exc:
            raise InputError(str(exc), field="--at", value=args.at) from None
        except ValueError as exc:
            raise InputError(str(exc), field="ticket", value=args.ticket) from None
        audit.record("repair", actor=args.by, subject=f"{ticket.node_id} / {ticket.component}", detail={
            "ticket": ticket.id, "repaired_at": ticket.repaired_at, "note": args.note,
            **({"diag": args.diag, "diag_at": diag_at or ticket.repaired_at} if args.diag else {})})
        soak = load_verification().soak_hours
        print(f"{ticket.id} is verifying: its part is watched for {soak:g} h of readings from "
              f"{ticket_time(ticket.repaired_at)} (`fabricbot tickets verify` checks it)")
        return 0
    named = [_named(tracker, t) for t in args.ticket or ()]
    source = StoreNodeSource(open_store(folder, create=False).root)  # a folder that is no store is said here

    def record(kind: str, *, actor: str, subject: str = "", **detail: object) -> int:
        return audit.record(kind, actor=actor, subject=subject, detail=detail)

    results = verify_repairs(tracker=tracker, check=source_check(source, reported_diagnostics(audit.entries("repair"))),
                             record=record,
                             ticket_ids=set(named) if named else None)
    if args.json:
        print(json.dumps([{"ticket": r.ticket.id, "status": r.ticket.status, **r.check.model_dump(mode="json")}
                          for r in results], indent=2))
    else:
        for r in results:
            print(f"{r.ticket.id} {r.ticket.status}: {r.check.summary}")
        judged = {r.ticket.id for r in results}
        for ticket_id in dict.fromkeys(named):
            if ticket_id not in judged:
                ticket = tracker.get(ticket_id)
                print(f"{ticket_id} is {ticket.status if ticket else 'gone'}, not verifying: nothing to judge")
        if not results and not named:
            print("no ticket is verifying")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("tickets", help=SUMMARIES["tickets"])
    p.add_argument("--store", metavar="DIR", help="the store folder (default FABRICBOT_STORE or ./.store)")
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    listing = actions.add_parser("list", help="every ticket (the default)")
    listing.add_argument("--status", choices=[str(s) for s in TicketState], help="only tickets in this state")
    listing.add_argument("--json", action="store_true")
    show = actions.add_parser("show", help="one ticket with its history")
    show.add_argument("ticket", metavar="ID")
    history = actions.add_parser("history", help="a GPU's tickets on any node, by its serial or UUID: repairs, "
                                                 "recurrences and the time between them")
    history.add_argument("gpu", metavar="SERIAL|UUID", help="the board serial (nvidia-smi -q 'Serial Number') or "
                                                            "the UUID (GPU-...)")
    history.add_argument("--json", action="store_true")
    repaired = actions.add_parser("repaired", help="report a ticket's repair done: it waits in verifying")
    repaired.add_argument("ticket", metavar="ID")
    repaired.add_argument("--by", required=True, help="who did the repair")
    repaired.add_argument("--at", help="when (ISO 8601; default now)")
    repaired.add_argument("--note", help="what was done (e.g. 'reseated NVSwitch tray')")
    repaired.add_argument("--diag", choices=("pass", "fail"),
                          help="the result of `dcgmi diag -r 3` run after the repair: a pass proves the part as "
                               "traffic does (a drained idle node proves nothing); a fail reopens the ticket")
    repaired.add_argument("--diag-at", help="when the diagnostic ran (ISO 8601; default the repair's time)")
    verify = actions.add_parser("verify", help="judge each verifying ticket's part on the readings since its repair")
    verify.add_argument("ticket", metavar="ID", nargs="*", help="only these tickets")
    verify.add_argument("--json", action="store_true")
    for action in (listing, show, history, repaired, verify):  # `tickets history X --store DIR`, as elsewhere
        action.add_argument("--store", metavar="DIR", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_tickets, status=None, json=False)
