"""`fabricbot ticket`: draft the repair ticket for a snapshot's (or a stored node's) isolated component or a link."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from bot.audit import AuditLog
from diagnostics import Diagnosis, InputError, matched_note
from diagnostics.analysis import events_said
from diagnostics.config import platform_name
from diagnostics.ingest import STDIN, detect, input_text, looks_like_json, open_input, read_cases, with_platform
from diagnostics.service import Request, SnapshotSource, Source, StoreSource, diagnose, files_source
from diagnostics.tickets import (
    ClaudeDrafter,
    Drafter,
    Judged,
    ModelCall,
    NoFaultError,
    NoPartError,
    RulesDrafter,
    drafter_from_env,
    escalate,
    hardware_of,
    inspection_markdown,
    owners_view,
    rules_inspection,
    select,
)
from diagnostics.topology import Inventory, NodeGraph, load_inventory

from ..options import END_OPTION, add_end_option, add_threshold_options, end_of, thresholds_from, window_type
from ..storage import ENV_STORE, open_db
from ..workflow.cover import covering, standing, with_narrower
from ..workflow.history import part_history
from ..workflow.tracker import SqliteTracker, Tracker
from . import SUMMARIES
from .output import NO_PART, print_json, said_incomplete


def _store_folder(args: argparse.Namespace) -> str | None:
    folder: str | None = args.store or os.environ.get(ENV_STORE)
    return folder


def _target(args: argparse.Namespace, folder: str | None) -> str:
    """The file to read, or the stored node: `--node` names it as `analyze --store DIR --node NODE` does."""
    if args.target is not None:
        return str(args.target)
    if args.node and folder:
        return str(args.node)
    raise InputError("give a FILE to read, or a node of the store (`ticket --store DIR NODE`, or `--node NODE` as "
                     "`analyze` takes it)", field="FILE|NODE")


Asker = Callable[[str], Judged]  # the same source and window asked about another node (a part's owner)
Answered = tuple[str, Diagnosis, NodeGraph | None, list[str], Asker]


def _answered(label: str, source: Source, node: str, args: argparse.Namespace,
              warnings: list[str] | None = None) -> Answered:
    """The node's answer from the service: its diagnosis (a tray's as its rack sees it), the graph it was judged on
    (its own topology rows over its platform's template) and why the answer is not the whole one, if it is not."""
    request = Request(node=node, window=args.window, end=end_of(args), thresholds=thresholds_from(args),
                      platform=args.platform, end_option=END_OPTION)

    def judged(asked: Request) -> tuple[Judged, list[str]]:
        answer = diagnose(source, asked)
        diagnosis = answer.diagnosis
        if warnings:
            diagnosis = diagnosis.model_copy(update={"warnings": [*warnings[:10], *diagnosis.warnings]})
        return (diagnosis, answer.graph), answer.incomplete

    (diagnosis, graph), incomplete = judged(request)
    typed = matched_note(node, diagnosis.node_id)
    if label == node and typed in diagnosis.warnings:  # a name typed otherwise (letter case, NFKC): said, and answered
        print(f"fabricbot: {typed}", file=sys.stderr)  # under the node's own name
        label = diagnosis.node_id
    return label, diagnosis, graph, incomplete, lambda owner: judged(replace(request, node=owner, platform=None))[0]


def _diagnoses(target: str, args: argparse.Namespace) -> tuple[list[Answered], int]:
    """The answers to draft from, and how many cases of a snapshot file could not be read (each said)."""
    if target != STDIN and not Path(target).exists():
        folder = _store_folder(args)
        if folder is None:
            raise InputError("no such file; to read a node by name give --store DIR (or set FABRICBOT_STORE)",
                             source=target)
        return [_answered(target, StoreSource(folder), target, args)], 0
    forced = args.format if args.format != "snapshot" else None
    given = open_input(target) if target == STDIN else target  # read once, sniffed like a file

    def telemetry() -> list[Answered]:
        # a paste of shell output (`lspci -vvv`, `nvidia-smi nvlink -e`, ...) or a telemetry file, read as `ingest`
        # reads it (or as --format says), and the node it names (or --node) asked about
        files, node, warnings = files_source([given], node=args.node, fmt=forced, until=end_of(args))
        return [_answered(node, files, node, args, warnings)]

    sniff = args.format is None  # `--format snapshot` reads a snapshot or says why it is none
    read = None if forced else detect.snapshot_text(given) if sniff else input_text(given)
    if read is None:
        return telemetry(), 0
    text, source = read
    if sniff and not looks_like_json(text):
        return telemetry(), 0
    try:
        cases = read_cases(text, source)
    except InputError:
        if sniff and detect.telemetry_not_snapshot(given):
            return telemetry(), 0
        raise
    out: list[Answered] = []
    unread = 0
    for case in cases:
        for err in case.errors:
            print(f"error: {err}", file=sys.stderr)
        if case.snapshot is None:
            unread += 1
            continue
        snapshot = with_platform(case.snapshot, args.platform)
        out.append(_answered(case.label, SnapshotSource([snapshot], label=source), snapshot.node_id, args))
    return out, unread


def _audit(folder: str | None) -> AuditLog | None:
    if not folder:
        return None
    return AuditLog(open_db(Path(folder)))


def _already_open(label: str, tracker: Tracker, diagnosis: Diagnosis, graph: NodeGraph | None,
                  link: str | None) -> bool:
    """Whether the store's tracker has an open ticket standing for the part asked (its own, or a wider part's that
    includes it); if so it is said, and nothing is drafted."""
    part, _ = select(diagnosis, link, graph)
    known = tracker.open_ticket(diagnosis.owner_of(part.id), part.id, wider=diagnosis.wider_owner(part.id))
    if known is None:
        return False
    print(f"{label}: a ticket for {part.component} on {known.node_id} {standing(known)}: {known.id}"
          f"{covering(known, part.id, part.component)} (filed by {known.filed_by}); no second ticket drafted",
          file=sys.stderr)
    return True


def cmd_ticket(args: argparse.Namespace) -> int:
    folder = _store_folder(args)
    inventory: Inventory | None = load_inventory(args.inventory) if args.inventory else None
    audit: AuditLog | None = None

    def record(call: ModelCall) -> None:
        if audit is not None:
            audit.record("model_call", actor="fabricbot ticket", subject=call.model, detail=call.model_dump())

    drafter: Drafter = RulesDrafter() if args.rules else drafter_from_env(on_model_call=record)
    diagnoses, unread = _diagnoses(_target(args, folder), args)  # an input error is said first, and alone
    policy = thresholds_from(args)  # what the diagnoses were judged by: each ticket's priority
    audit = _audit(folder)  # only now: a node asked of a folder that holds no store leaves none behind
    tracker = SqliteTracker(audit.db) if audit is not None else None
    if drafter.name == "rules" and not args.rules:
        print("fabricbot: ANTHROPIC_API_KEY is not set: drafting with the rules drafter (offline default)",
              file=sys.stderr)
    tickets: list[dict[str, Any]] = []
    unknown: list[str] = []  # why an answer without a ticket is not an all-clear: its health unknown, not healthy
    no_part = False  # a fault found that names no part: not "nothing to repair"
    for label, diagnosis, graph, incomplete, ask in diagnoses:
        if diagnosis.maintenance and not args.inspect:
            print(f"{label}: {diagnosis.maintenance}: no ticket from planned work "
                  "(`fabricbot maintenance NODE --end --by NAME` when it is over)", file=sys.stderr)
            continue
        try:
            if args.inspect:
                inspection = (drafter.inspect(diagnosis, graph=graph) if isinstance(drafter, ClaudeDrafter)
                              else rules_inspection(diagnosis, graph))
                tickets.append(inspection.model_dump(mode="json"))
                text = inspection_markdown(inspection)
            else:
                diagnosis, graph, link = owners_view(diagnosis, graph, args.link, ask)
                if tracker is not None and _already_open(label, tracker, diagnosis, graph, link):
                    continue
                ticket = drafter.draft(diagnosis, component=link, graph=graph, inventory=inventory,
                                       thresholds=policy)
                gpu = hardware_of(ticket.identity)
                if tracker is not None and gpu is not None:  # the GPU's earlier tickets in the store's tracker
                    ticket = escalate(ticket, part_history(tracker, gpu, node_id=diagnosis.node_id,
                                                           slug=ticket.candidate_id), diagnosis, graph=graph)
                if tracker is not None:
                    slug = ticket.candidate_id
                    ticket = with_narrower(ticket, tracker, diagnosis, slug)
                tickets.append(ticket.model_dump(mode="json"))
                text = ticket.to_markdown()
        except NoPartError as exc:  # said even where the node's links are unread: the fabric was asked of, or failing
            print(f"{label}: {exc.reason}", file=sys.stderr)
            unknown += incomplete
            no_part = no_part or exc.failing
            continue
        except NoFaultError as exc:
            for note in events_said(diagnosis.warnings):  # what it read and did not judge: said, as `analyze` says it
                print(f"{label}: {note}", file=sys.stderr)
            if incomplete:  # not "nothing to repair": the window held too little of the node to judge its links
                unknown += incomplete
            else:
                print(f"{label}: {exc.reason}", file=sys.stderr)
            continue
        if not args.json:
            print(text)
    if args.json:
        print_json(tickets[0] if len(tickets) == 1 else tickets)
    if unread:  # an input error, though the file's other cases were drafted: not "nothing to repair"
        return 2
    if unknown:
        return said_incomplete(unknown)
    return 0 if tickets else NO_PART if no_part else 1


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("ticket", help=SUMMARIES["ticket"],
                       description="Exit status: 0 a ticket drafted, 1 nothing to repair (or planned work), 2 a "
                                   "usage or input error (a case of a snapshot file that could not be read, the "
                                   "others drafted), 3 incomplete: the window holds none of the node's "
                                   "readings (or they could not be read, or it holds one reading per link, with no "
                                   "rate, or no link reading at all) and no fault, so its health is unknown, as "
                                   "`analyze` says it; 4 a fault that names no "
                                   "part (a collective's results corrupted): what finds the link is said instead.")
    p.add_argument("target", metavar="FILE|NODE", nargs="?",
                   help="snapshot JSON, a paste of shell output, a telemetry file or folder (as `analyze` reads it; "
                        "'-' reads stdin), or a node in --store")
    p.add_argument("--node", help="the node a paste that names none is from; with --store and no FILE, the stored "
                                  "node to draft for")
    p.add_argument("--format", help="force a reader for FILE instead of detecting it (as `ingest --format`; "
                                    "`snapshot` reads it as a snapshot)")
    p.add_argument("--link", help="a candidate id, component name or link id (default: the isolated component)")
    p.add_argument("--json", action="store_true", help="the ticket as JSON")
    p.add_argument("--store", metavar="DIR", help=f"telemetry store: where NODE is read from, model calls are "
                                                  f"recorded and the GPU's earlier tickets are found (default "
                                                  f"${ENV_STORE})")
    p.add_argument("--platform", type=platform_name,
                   help="the node's platform (e.g. hgx-h100-8gpu) when the input does not say")
    p.add_argument("--window", type=window_type,
                   help="rate window, e.g. 1h, 30m, 6h (default: a snapshot's own, else 1h)")
    add_end_option(p)
    p.add_argument("--inventory", metavar="FILE", help="inventory file (slots, serials, UUIDs, versions)")
    p.add_argument("--inspect", action="store_true",
                   help="rank the hypotheses (link, NVSwitch, GPU, PCIe, software) instead of drafting")
    p.add_argument("--rules", action="store_true", help="use the deterministic drafter even when a key is set")
    add_threshold_options(p)
    p.set_defaults(func=cmd_ticket)
