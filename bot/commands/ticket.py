"""`fabricbot ticket`: draft the repair ticket for a snapshot's (or a stored node's) isolated component or a link."""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

from bot.audit import AuditLog
from bot.commands.analyze import _read_text
from bot.commands.analyze_history import unnamed_as
from bot.storage import open_db
from diagnostics import Diagnosis, InputError, analyze_snapshot, load_thresholds
from diagnostics.analysis import analyze_tables, read_node, stored_diagnosis
from diagnostics.ingest import read_cases, with_platform
from diagnostics.store import load_inputs, open_store
from diagnostics.tickets import (
    ClaudeDrafter,
    Drafter,
    ModelCall,
    NoFaultError,
    RulesDrafter,
    drafter_from_env,
    inspection_markdown,
    rules_inspection,
)
from diagnostics.topology import Inventory, NodeGraph, graph_from_topology, load_inventory

ENV_STORE = "FABRICBOT_STORE"


def _store_folder(args: argparse.Namespace) -> str | None:
    folder: str | None = args.store or os.environ.get(ENV_STORE)
    return folder


def _from_store(node_id: str, folder: str, platform: str | None) -> tuple[Diagnosis, NodeGraph | None]:
    """Analyze a stored node's window with the nodes sharing its jobs (a peer's link may explain the slowdown
    better); its `topology` rows, if any, give the graph (ports observed where known). `platform` (--platform)
    wins over the stored one."""
    got = read_node(open_store(folder, create=False), node_id, end=None, window=timedelta(hours=1))
    platform = platform or got.platforms.get(node_id)
    topology = got.tables["topology"]
    topology = topology[(topology["node_id"] == node_id).to_numpy(bool, na_value=False)]
    graph = None
    if len(topology):
        graph = graph_from_topology(topology, node_id=node_id, platform=platform).with_observed_ports(topology)
    platform = platform or (graph.platform if graph is not None else None)
    diagnosis = analyze_tables(got.tables, node_id=node_id, end=got.end, graph=graph, platform=platform)
    return stored_diagnosis(diagnosis, got, timedelta(hours=1)), graph


def _from_paste(target: str, args: argparse.Namespace) -> tuple[str, Diagnosis, NodeGraph | None]:
    """A paste of shell output (`lspci -vvv`, `nvidia-smi nvlink -e`, ...) or a telemetry file: read as `ingest`
    reads it, and the node it names (or --node) analyzed."""
    tables, inventory, warnings = load_inputs([target])
    named = sorted({str(n) for frame in tables.values() if "node_id" in frame.columns
                    for n in frame["node_id"].dropna().unique()})
    if args.node and named and args.node not in named:
        raise InputError(f"the input names {', '.join(named)}, not {args.node}", source=target, field="--node")
    node = args.node or (named[0] if len(named) == 1 else None)
    if node is None:
        raise InputError("the input names " + (f"{len(named)} nodes ({', '.join(named)})" if named else "no node")
                         + ": give --node NODE", source=target, field="--node")
    tables = unnamed_as(tables, node)
    diagnosis = analyze_tables(tables, node_id=node, platform=args.platform or inventory.get(node))
    if warnings:
        diagnosis = diagnosis.model_copy(update={"warnings": [*warnings[:10], *diagnosis.warnings]})
    return node, diagnosis, None


def _diagnoses(target: str, args: argparse.Namespace) -> list[tuple[str, Diagnosis, NodeGraph | None]]:
    if target != "-" and not Path(target).exists():
        folder = _store_folder(args)
        if folder is None:
            raise InputError("no such file; to read a node by name give --store DIR (or set FABRICBOT_STORE)",
                             source=target)
        diagnosis, graph = _from_store(target, folder, args.platform)
        return [(target, diagnosis, graph)]
    text, source = _read_text(target)
    if target != "-" and not text.lstrip().startswith(("{", "[")):
        return [_from_paste(target, args)]
    thresholds = load_thresholds()
    out: list[tuple[str, Diagnosis, NodeGraph | None]] = []
    for case in read_cases(text, source):
        for err in case.errors:
            print(f"error: {err}", file=sys.stderr)
        if case.snapshot is not None:
            snapshot = with_platform(case.snapshot, args.platform)
            out.append((case.label, analyze_snapshot(snapshot, thresholds), None))
    return out


def _audit(folder: str | None) -> AuditLog | None:
    if not folder:
        return None
    return AuditLog(open_db(Path(folder)))


def cmd_ticket(args: argparse.Namespace) -> int:
    audit = _audit(_store_folder(args))
    inventory: Inventory | None = load_inventory(args.inventory) if args.inventory else None

    def record(call: ModelCall) -> None:
        if audit is not None:
            audit.record("model_call", actor="fabricbot ticket", subject=call.model, detail=call.model_dump())

    drafter: Drafter = RulesDrafter() if args.rules else drafter_from_env(on_model_call=record)
    diagnoses = _diagnoses(args.target, args)  # an input error is said first, and alone
    if drafter.name == "rules" and not args.rules:
        print("fabricbot: ANTHROPIC_API_KEY is not set: drafting with the rules drafter (offline default)",
              file=sys.stderr)
    tickets: list[dict[str, Any]] = []
    for label, diagnosis, graph in diagnoses:
        if diagnosis.maintenance and not args.inspect:
            print(f"{label}: {diagnosis.maintenance}: no ticket from planned work "
                  "(`fabricbot maintenance NODE --end` when it is over)", file=sys.stderr)
            continue
        try:
            if args.inspect:
                inspection = (drafter.inspect(diagnosis, graph=graph) if isinstance(drafter, ClaudeDrafter)
                              else rules_inspection(diagnosis, graph))
                tickets.append(inspection.model_dump(mode="json"))
                text = inspection_markdown(inspection)
            else:
                ticket = drafter.draft(diagnosis, component=args.link, graph=graph, inventory=inventory)
                tickets.append(ticket.model_dump(mode="json"))
                text = ticket.to_markdown()
        except NoFaultError as exc:
            print(f"{label}: {exc.reason}", file=sys.stderr)
            continue
        if not args.json:
            print(text)
    if args.json:
        json.dump(tickets[0] if len(tickets) == 1 else tickets, sys.stdout, indent=2)
        print()
    return 0 if tickets else 1


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("ticket", help="draft the repair ticket for the isolated component (or one link)")
    p.add_argument("target", metavar="FILE|NODE", help="snapshot JSON ('-' reads stdin), a paste of shell output or "
                                                       "a telemetry file (as `ingest` reads it), or a node in --store")
    p.add_argument("--node", help="the node a paste that names none is from")
    p.add_argument("--link", help="a candidate id, component name or link id (default: the isolated component)")
    p.add_argument("--json", action="store_true", help="the ticket as JSON")
    p.add_argument("--store", metavar="DIR", help=f"telemetry store: where NODE is read from and model calls are "
                                                  f"recorded (default ${ENV_STORE})")
    p.add_argument("--platform", help="the node's platform (e.g. hgx-h100-8gpu) when the input does not say")
    p.add_argument("--inventory", metavar="FILE", help="inventory file (slots, serials, UUIDs, versions)")
    p.add_argument("--inspect", action="store_true",
                   help="rank the hypotheses (link, NVSwitch, GPU, PCIe, software) instead of drafting")
    p.add_argument("--rules", action="store_true", help="use the deterministic drafter even when a key is set")
    p.set_defaults(func=cmd_ticket)
