"""The history side of `fabricbot analyze`: a node of the store or of telemetry files, asked of the service."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from diagnostics import InputError, Thresholds
from diagnostics.service import (
    FILES_MORE,
    UNNAMED_NODE,
    Answer,
    Request,
    Source,
    StoreSource,
    diagnose,
    files_source,
    shown_said,
    tables_source,
)

from ..options import END_OPTION, end_of


def history_source(args: argparse.Namespace) -> tuple[Source, str | None, list[str]]:
    """The store (`--store`) or the files given, the node asked about (none for a job alone) and what reading the
    files said."""
    if args.store:
        if args.inputs:
            raise InputError("give either --store DIR or input files, not both")
        return StoreSource(args.store), args.node, []
    if not args.inputs:
        raise InputError("give files or folders of telemetry, or --store DIR", field="--node")
    if args.job and not args.node:
        tables, warnings = tables_source(args.inputs, fmt=args.format, until=end_of(args))
        return tables, None, warnings
    source, node, warnings = files_source(args.inputs, node=args.node, fmt=args.format, until=end_of(args),
                                          unnamed=UNNAMED_NODE)
    return source, node, warnings


def diagnose_history(args: argparse.Namespace, thresholds: Thresholds) -> Answer:
    """The service's answer to the node (or job) asked, with what reading the files said first among its warnings."""
    if args.store and not args.node and not args.job and len(args.inputs) == 1 and isinstance(args.inputs[0], str) \
            and not Path(args.inputs[0]).exists():  # `analyze --store DIR NODE`, as `ticket` and `render` name it
        args.node, args.inputs = args.inputs[0], []
    for option, given in (("--node", args.node), ("--job", args.job)):
        if given is not None and not given.strip():  # `--node "$NODE"` with the variable unset
            raise InputError("an empty name: give the node's (or the job's) name", field=option, value=given)
    if not args.node and not args.job and args.store:
        raise InputError("--node (or --job) is required with --store", field="--node")
    source, node, warnings = history_source(args)
    end = end_of(args)
    request = Request(node=node, job=args.job, window=args.window, end=end, thresholds=thresholds,
                      platform=args.platform, end_option=END_OPTION)
    answer = diagnose(source, request)
    if not warnings:
        return answer
    diagnosis = answer.diagnosis
    shown = shown_said(warnings, FILES_MORE)  # as the store's answer shows what its files said at ingest
    return replace(answer, diagnosis=diagnosis.model_copy(update={"warnings": [*shown, *diagnosis.warnings]}))
