"""The history side of `fabricbot analyze`: load a node's tables from the store or from files, then analyze."""

from __future__ import annotations

import argparse
import re
from datetime import timedelta

import pandas as pd

from diagnostics import Diagnosis, InputError, Thresholds
from diagnostics.analyze import analyze_tables
from diagnostics.history_io import load_inputs, load_store

_WINDOW = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|min|h|d)\s*$", re.IGNORECASE)
_UNITS = {"s": "seconds", "m": "minutes", "min": "minutes", "h": "hours", "d": "days"}


def parse_window(text: str) -> timedelta:
    """`1h`, `30m`, `6h`, `1d` -> a timedelta (argparse type)."""
    match = _WINDOW.match(text)
    if not match or float(match[1]) <= 0:
        raise argparse.ArgumentTypeError(f"not a window like 1h, 30m or 6h: {text!r}")
    return timedelta(**{_UNITS[match[2].lower()]: float(match[1])})


def _end(text: str | None) -> pd.Timestamp | None:
    if not text:
        return None
    try:
        ts = pd.Timestamp(text)
    except ValueError:
        raise InputError("not a time", field="--end", value=text) from None
    return ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")


def diagnose_history(args: argparse.Namespace, thresholds: Thresholds) -> Diagnosis:
    if not args.node:
        raise InputError("--node is required with --store or history files", field="--node")
    end = _end(args.end)
    warnings: list[str] = []
    platform = args.platform
    if args.store:
        if args.inputs:
            raise InputError("give either --store DIR or input files, not both")
        tables = load_store(args.store, args.node, end=end, window=args.window)
    else:
        if not args.inputs:
            raise InputError("give files or folders of telemetry, or --store DIR", field="--node")
        tables, inventory, warnings = load_inputs(args.inputs)
        platform = platform or inventory.get(args.node)
    diagnosis = analyze_tables(tables, node_id=args.node, window=args.window, end=end, thresholds=thresholds,
                               platform=platform, job_id=args.job)
    if warnings:
        diagnosis = diagnosis.model_copy(update={"warnings": [*warnings[:10], *diagnosis.warnings]})
    return diagnosis
