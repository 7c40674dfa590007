"""`fabricbot analyze`: diagnose snapshots."""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

from diagnostics import ComponentKind, Diagnosis, InputError, Localization, Thresholds, headline_name
from diagnostics import format as fmt
from diagnostics.analysis import part_priority
from diagnostics.config import platform_name, unread_outputs
from diagnostics.ingest import STDIN, Case, detect, looks_like_json, open_input, read_cases, with_platform
from diagnostics.service import Answer, Request, SnapshotSource, StoreSource, diagnose, named

from ..age import is_old, source_readings
from ..options import END_OPTION, add_end_option, add_threshold_options, end_of, thresholds_from, window_type
from . import SUMMARIES
from .analyze_history import diagnose_history
from .output import print_json, said_incomplete

DEGRADATION_TOLERANCE = 0.1


def expectation_report(diagnosis: Diagnosis, expected: dict[str, Any]) -> dict[str, bool]:
    """Which of the expected keys the diagnosis reproduces (degradation within 0.1)."""
    actual = diagnosis.seed_view()
    report = {}
    for key, want in expected.items():
        got = actual.get(key)
        if key == "degradation_pct" and isinstance(want, int | float) and isinstance(got, int | float):
            report[key] = abs(got - want) <= DEGRADATION_TOLERANCE + 1e-9
        else:
            report[key] = got == want
    return report


def _part_said(d: Diagnosis, loc: Localization, thresholds: Thresholds | None) -> str:
    """A suspect's priority as its own ticket says it: held where that part's plan does not fit the platform, even
    when another part heads the node (whose line says the headline's)."""
    level = part_priority(d, loc.links, headline=loc == d.localization, thresholds=thresholds)
    return fmt.priority(level.value, held=loc.held is not None)


def _table(diagnosis: Diagnosis, out: TextIO, *, only_flagged: bool = False,
           thresholds: Thresholds | None = None) -> None:
    d = diagnosis
    print(f"{headline_name(d.node_id)}  priority={d.priority_said()}  "
          f"fault={d.fault_said()}  "
          f"degradation={fmt.percent(d.degradation_pct)}  {d.window_said()}", file=out)
    print(f"  isolated: {d.isolated_said()}", file=out)
    if (stopped := d.stopped_said()) is not None:
        print(f"  rack:     {stopped}", file=out)
    if d.ticket_owner != d.node_id:
        switch_host = d.rack is not None and d.node_id in d.rack.switch.values()  # its part may well be on it
        why = (f"the part is in {d.ticket_owner}'s tray: its host's ticket"
               if d.rack is not None and d.node_id == d.rack.rack_id else
               "a part outside every compute tray is the rack's" if switch_host
               else f"the part is outside {d.node_id}'s tray")
        print(f"  ticket:   {d.ticket_owner} ({why})", file=out)
    print(f"  action:   {d.repair_action}", file=out)
    rows: list[tuple[str, ...]] = [("component", "state", "replay/h", "crc/h", "recov/h", "severity", "crossed")]
    shown = [f for f in d.findings if f.severity.value != "ok"] if only_flagged else d.findings
    for f in shown:
        r = f.rates_per_hour
        cells = [fmt.number(r[k]) if k in r else "-" for k in ("replay", "crc", "recovery")]
        state = "-" if f.ref.kind is ComponentKind.GPU_FABRIC else f.link_state.value  # a collective reads no state
        rows.append((f.component, state, *cells, f.severity.value,
                     "; ".join(c.message for c in f.crossed) or "-"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows if len(rows) > 1 else []:  # nothing to list: the warnings say so, not an empty table
        head, *rest = row[:-1]
        cells = [head.ljust(widths[0])] + [cell.rjust(w) for cell, w in zip(rest, widths[1:], strict=True)]
        print("  " + "  ".join(cells) + "  " + row[-1], file=out)
    if only_flagged:
        links = [f for f in d.findings if f.ref.kind is not ComponentKind.GPU_FABRIC]  # a collective's: no link
        if len(links) > len([f for f in shown if f in links]):  # every link flagged (an Xid's GPU): none to count
            print(f"  ({_rest(d, len(links) - len([f for f in shown if f in links]))})", file=out)
        _totals(d, out)
        if d.localization is not None:
            for loc in d.localizations:
                print(f"  suspect:  {loc.component} ({loc.fault or loc.kind.value}, {loc.severity.value}, "
                      f"confidence {loc.confidence:.2f}), priority {_part_said(d, loc, thresholds)}", file=out)
                if loc.action:
                    print(f"            action: {loc.action}", file=out)
                for line in loc.evidence:
                    print(f"            - {line}", file=out)
    if d.verdict:  # a snapshot's answer says it too, as the store's does
        print(f"  verdict:  {d.verdict}", file=out)
    for w in d.warnings:
        print(f"  warning: {w}", file=out)
    for f in d.findings:  # a bus bandwidth as expected: a note, not a warning
        if f.ref.kind is ComponentKind.GPU_FABRIC and f.severity.value == "ok":
            print(f"  note: {'; '.join(f.evidence)}", file=out)


def _rest(d: Diagnosis, left: int) -> str:
    """The `left` links within thresholds a flagged table leaves out, said as what was read of them: a lone reading
    of counters holds totals, no rates; one of `nvlink -s` holds link states, no counter at all; a counter pinned at
    its maximum, no rate."""
    lone = [f for f in d.findings if f.severity.value == "ok" and any("one reading" in e for e in f.evidence)]
    pinned = sum(1 for f in d.findings if f.severity.value == "ok" and f not in lone
                 and any(fmt.PINNED in e for e in f.evidence))  # read twice, its counter stuck: no rate
    dropped = sum(1 for f in d.findings if f.severity.value == "ok" and f not in lone
                  and any(fmt.DROPPED in e for e in f.evidence))  # a count read lower with no restart: no rate
    unread = sum(1 for f in d.findings if f.severity.value == "ok" and f not in lone
                 and any(fmt.UNREAD in e for e in f.evidence))  # a reading without a value its others hold
    kinds = [(left - len(lone) - pinned - dropped - unread, "within thresholds"),
             (pinned, "with a counter pinned at its maximum: its rate unknown"),
             (dropped, "with a counter read lower than before, no restart: its rate unknown"),
             (unread, "with a counter missing from a reading: its rate unknown"),
             (sum(1 for f in lone if f.counts), "read once: totals only, no rates"),
             (sum(1 for f in lone if not f.counts), "read once: link states only, no error counters")]
    said = [(n, what) for n, what in kinds if n]
    if len(said) == 1:
        return f"{fmt.count(left, 'more link')} {said[0][1]}"
    return f"{fmt.count(left, 'more link')}: " + ", ".join(f"{n} {what}" for n, what in said)


TOTALS_SHOWN = 10


def _totals(d: Diagnosis, out: TextIO) -> None:
    """The lone readings that counted errors since reset, most first: within no threshold (no rate is known), but
    what a person reads the output for; a pinned counter's lower bound said with it."""
    counted = sorted((f for f in d.findings if f.severity.value == "ok" and f.counts and any(f.counts.values())
                      and any("one reading" in e for e in f.evidence)), key=lambda f: -sum(f.counts.values()))
    for f in counted[:TOTALS_SHOWN]:
        print(f"  total:    {f.component}: {fmt.totals_noted(f.counts, f.evidence)}", file=out)
    if len(counted) > TOTALS_SHOWN:
        print(f"  total:    ... and {fmt.count(len(counted) - TOTALS_SHOWN, 'more link')} that counted errors (--json "
              "lists them)", file=out)


def _said(answer: Answer) -> int:
    """The exit code of a history's answer: incomplete (3) when readings it needs could not be read, none of the
    node's is in the span a sweep reads, or none of its links was judged and no fault found, said on stderr."""
    return said_incomplete(answer.incomplete)


def history(args: argparse.Namespace, thresholds: Thresholds) -> int:
    answer = diagnose_history(args, thresholds)
    if args.json:
        print_json(answer.diagnosis)
    else:
        _table(answer.diagnosis, sys.stdout, only_flagged=True, thresholds=thresholds)
    code = _said(answer)
    end, asked = answer.diagnosis.window_end, None if args.job else answer.diagnosis.node_id
    if not args.end and is_old(end):  # a fault of months ago is not paged as today's (the store opened only then)
        source = StoreSource(args.store) if args.store else None
        if (old := source_readings(end, source, asked=asked, option="--end")) is not None:
            print(f"fabricbot: {old}", file=sys.stderr)
    return code


def rack(args: argparse.Namespace, thresholds: Thresholds) -> int:
    """A rack from the store: all its trays' findings, localized over the rack, as one diagnosis."""
    if not args.store:
        raise InputError("--rack reads the telemetry store: give --store DIR", field="--rack", value=args.rack)
    request = Request(rack=args.rack, job=args.job, window=args.window, end=end_of(args), thresholds=thresholds,
                      end_option=END_OPTION)
    answer = diagnose(StoreSource(args.store), request)
    diagnosis = answer.diagnosis
    if args.json:
        print_json(diagnosis)
    else:
        _table(diagnosis, sys.stdout, only_flagged=True, thresholds=thresholds)
        for loc in diagnosis.localizations[:4]:
            kind = loc.fault.value if loc.fault else "fault"
            why = loc.evidence[0] if loc.evidence else ""
            print(f"  {loc.component} ({kind}, confidence {loc.confidence:.2f}), priority "
                  f"{_part_said(diagnosis, loc, thresholds)}: {why}")
    return _said(answer)


def _rack_host(args: argparse.Namespace) -> None:
    """`--rack R --node T`: T answered as its rack sees it (what `--node T` answers of a rack's host, the rack's
    suspect included), once the store places T in R; a T elsewhere is refused, never answered as R."""
    if not args.store:
        raise InputError("--rack reads the telemetry store: give --store DIR", field="--rack", value=args.rack)
    slot = StoreSource(args.store).racks().get(args.node)
    if slot is None or slot.rack != args.rack:
        where = f"is in rack {slot.rack}" if slot is not None else "is in no rack of the store's rack inventory"
        raise InputError(f"node {args.node!r} {where}, not in rack {args.rack!r}: ask --rack {args.rack} for the rack "
                         "as one, or --node alone for the node", field="--node", value=args.node)
    args.rack = None


def cmd_analyze(args: argparse.Namespace) -> int:
    thresholds = thresholds_from(args)
    args.inputs = [open_input(i) if i == STDIN else i for i in args.inputs]  # read once, sniffed like a file
    if args.rack and args.node:
        _rack_host(args)
    if args.rack:
        return rack(args, thresholds)
    if args.store or args.node or args.job or (args.format and args.format != "snapshot"):
        return history(args, thresholds)
    if len(args.inputs) != 1:  # several files: histories of the node they name (one, else --node is asked for)
        return history(args, thresholds)
    read = detect.snapshot_text(args.inputs[0])
    if read is None:
        return history(args, thresholds)  # a Parquet table: the node it names, as a history
    text, source = read
    try:
        cases: list[Case] = read_cases(text, source)
    except InputError as exc:
        if detect.telemetry_not_snapshot(args.inputs[0]):
            return history(args, thresholds)  # a kernel log, a CSV: the node it names, as a history
        if looks_like_json(text):
            raise
        if not text.strip():  # as the readers say it of an empty file in a folder, or with --node
            raise InputError("the input is empty", source=source) from None
        if (known := unread_outputs().said(text[:8192])) is not None:
            raise InputError(known, source=source) from None
        first = text.lstrip()[:1]  # a prompt in brackets: JSON's complaint about its second character says nothing
        why = f"it starts with `{first}` but is no JSON" if first in ("[", "{") else f"JSON: {exc.reason}"
        raise InputError(f"neither a snapshot ({why}) nor telemetry a reader recognizes (a cut paste "
                         "may hold too little to tell): force a reader with --format "
                         f"{'|'.join(sorted(detect.readers()))} and the node with --node NODE", source=source) from None
    is_list = text.lstrip().startswith("[")
    results: list[dict[str, Any]] = []
    failed = 0
    names = [c.snapshot.node_id for c in cases if c.snapshot is not None]  # each case alone, named among all
    for case in cases:
        for err in case.errors:
            print(f"error: {err}", file=sys.stderr)
        if case.snapshot is None:
            failed += 1
            results.append({"error": [str(e) for e in case.errors], "case": case.label})
            continue
        snapshot = with_platform(case.snapshot, args.platform)
        request = Request(node=snapshot.node_id, window=args.window, thresholds=thresholds)
        diagnosis = named(diagnose(SnapshotSource([snapshot], label=source), request).diagnosis, names)
        item: dict[str, Any] = diagnosis.model_dump(mode="json")
        if case.expected is not None:
            item["expectations"] = expectation_report(diagnosis, case.expected)
        results.append(item)
        if not args.json:
            _table(diagnosis, sys.stdout)
            if case.expected is not None:
                report = item["expectations"]
                missed = [k for k, ok in report.items() if not ok]
                print(f"  expected output: {len(report) - len(missed)}/{len(report)} match"
                      + (f" (differs: {', '.join(missed)})" if missed else ""), file=sys.stdout)
            print(file=sys.stdout)
    if args.json:
        print_json(results if is_list else results[0])
    return 1 if failed else 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    analyze = sub.add_parser("analyze", help=SUMMARIES["analyze"],
                             description="Exit status: 0 answered, 1 a case of a snapshot file could not be read "
                                         "(the others are answered), 2 a usage or input error, 3 incomplete: stored "
                                         "readings the answer needs could not be read (a damaged part), the "
                                         "node's readings are all outside the span a sweep reads before the "
                                         "window's end, or no link of the node was judged (one reading per link, "
                                         "or none) and no fault found, so its health is unknown, as `sweep` calls "
                                         "its view incomplete and `ticket` its answer.")
    analyze.add_argument("inputs", nargs="*", metavar="FILE",
                         help="snapshot JSON (one object, a list, or seed cases), or telemetry in any ingestable "
                              "format (files, folders; '-' reads stdin and detects its format as a file's)")
    analyze.add_argument("--store", metavar="DIR", help="read the node's history from this telemetry store")
    analyze.add_argument("--node", help="the node whose history to analyze")
    analyze.add_argument("--rack", help="with --store: the rack (of a rack inventory) to analyze as one")
    analyze.add_argument("--window", type=window_type,
                         help="rate window, e.g. 1h, 30m, 6h (default: a snapshot's own, else 1h)")
    add_end_option(analyze)
    analyze.add_argument("--platform", type=platform_name,
                         help="the node's platform (else from nodes.csv among the inputs)")
    analyze.add_argument("--job", help="the job whose step time to correlate (default: the node's latest job); "
                                       "alone, the job explained over its nodes, answered as the node to blame")
    analyze.add_argument("--format", help="force a reader for the files instead of detecting it (as `ingest "
                                          "--format`)")
    analyze.add_argument("--json", action="store_true", help="machine-readable output")
    add_threshold_options(analyze)
    analyze.set_defaults(func=cmd_analyze)
