"""The history side of `fabricbot analyze`: load a node's tables from the store or from files, then analyze."""

from __future__ import annotations

import argparse

import pandas as pd

from diagnostics import Diagnosis, InputError, Thresholds, resolve_name
from diagnostics.analysis import analyze_tables, read_node, stored_diagnosis
from diagnostics.store import load_inputs, open_store

from ..nodes import named
from ..options import parse_time


def diagnose_history(args: argparse.Namespace, thresholds: Thresholds) -> Diagnosis:
    if not args.node:
        raise InputError("--node is required with --store or history files", field="--node")
    end = parse_time(args.end, field="--end") if args.end else None
    platform = args.platform
    if args.store:
        if args.inputs:
            raise InputError("give either --store DIR or input files, not both")
        store = open_store(args.store, create=False)
        known = store.nodes()
        node = resolve_name(args.node, known) or args.node  # matched once Unicode-normalised
        got = read_node(store, node, end=end, window=args.window, thresholds=thresholds)
        diagnosis = analyze_tables(got.tables, node_id=node, window=args.window, end=got.end,
                                   thresholds=thresholds, job_id=args.job,
                                   platform=platform or got.platforms.get(node))  # --platform wins
        return named(stored_diagnosis(diagnosis, got, args.window), known, args.node)
    if not args.inputs:
        raise InputError("give files or folders of telemetry, or --store DIR", field="--node")
    tables, inventory, warnings = load_inputs(args.inputs)
    tables = unnamed_as(tables, args.node)
    platform = platform or inventory.get(args.node)
    links = tables.get("link_samples")
    known = [str(n) for n in links["node_id"].dropna().unique()] if links is not None and len(links) else []
    node = resolve_name(args.node, known) or args.node
    diagnosis = named(analyze_tables(tables, node_id=node, window=args.window, end=end, thresholds=thresholds,
                                     platform=platform, job_id=args.job), known, args.node)
    if warnings:
        diagnosis = diagnosis.model_copy(update={"warnings": [*warnings[:10], *diagnosis.warnings]})
    return diagnosis


def unnamed_as(tables: dict[str, pd.DataFrame], node: str) -> dict[str, pd.DataFrame]:
    """Rows whose input names no node (an `nvidia-smi` paste) are the node the user asked about."""
    out = {}
    for name, frame in tables.items():
        if "node_id" in frame.columns and frame["node_id"].isna().any():
            ids = frame["node_id"].astype("string").fillna(node)
            frame = frame.assign(node_id=ids.astype(frame["node_id"].dtype) if str(frame["node_id"].dtype) != "category"
                                 else pd.Categorical(ids))
        out[name] = frame
    return out
