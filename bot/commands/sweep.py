"""`fabricbot sweep`: the fleet's offending links, from the local store or found by a Prometheus server itself.

Both give the same result (offenders, the offending nodes' diagnoses, whether the view is complete, timings), the
same `--json` and the same exit codes."""

from __future__ import annotations

import argparse
import os
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import TextIO

from diagnostics import LINKS_SHOWN, ConfigError, InputError, Offender, offending_parts
from diagnostics import format as fmt
from diagnostics.prometheus import ENV_URL, PrometheusClient, PrometheusError, SweepResult, load_config
from diagnostics.service import PrometheusSource, Request, StoreSource, diagnose, sweep
from diagnostics.store import DB_NAME

from ..age import source_readings
from ..options import add_threshold_options, hours_type, parse_time, thresholds_from
from ..storage import ENV_STORE
from . import SUMMARIES
from .output import INCOMPLETE, print_json, said_incomplete


def _worst(found: list[Offender]) -> list[Offender]:
    """A node's rows of its `LINKS_SHOWN` most urgent offending parts (each with every rule it broke), in the
    sweep's order: most urgent first (`worst_first`), as `/fabric fleet` and the digest list them."""
    keys = list(dict.fromkeys(o.link_key for o in found))[:LINKS_SHOWN]
    return [o for o in found if o.link_key in keys]


def _table(result: SweepResult, out: TextIO, every: bool = False) -> None:
    """The offenders grouped by node, most urgent node first (`SweepResult.ranked`, as `/fabric fleet` lists them),
    each node's worst `LINKS_SHOWN` and how many more (`every`: all of them), then each offending node's diagnosis in
    the same order. A node with a hundred links down is one entry, as in `/fabric fleet`, not a page of rows."""
    print(result.headline(), file=out)
    ranked = result.ranked()
    order = {node: i for i, node in enumerate(ranked)}
    by_node: dict[str, list[Offender]] = {}
    for o in sorted(result.offenders, key=lambda o: order[o.node_id]):  # stable: each node's own order kept
        by_node.setdefault(o.node_id, []).append(o)
    # a host whose part is on a ticket filed elsewhere (a rack's), with the others that share it: under the first
    shared = {} if every else {e[0]: e[1:] for e in result.entries() if len(e) > 1}
    under = {n for others in shared.values() for n in others}
    shown = {node: found if every else _worst(found) for node, found in by_node.items() if node not in under}
    rows = [o for found in shown.values() for o in found]
    wide = max([22, *(len(o.component) for o in rows)])  # a GPU named by its PCI address is longer
    rules = max([22, *(len(", ".join(o.rules)) for o in rows)])  # a gone GPU's row names each rule
    for node, found in shown.items():
        for o in found:
            rate = "" if o.rate_per_hour is None else fmt.value(o.rate_per_hour, o.unit)
            limit = o.against()
            broke = ", ".join(o.rules)
            print(f"  {o.node_id:<16} {o.component:<{wide}} {o.severity.value:<8} {broke:<{rules}} {rate:>12} "
                  f"{limit:<12} {o.detail}".rstrip(), file=out)
        left = {o.link_key: o.counted_as for o in by_node[node] if o not in found}
        if left:
            more = offending_parts(list(left.values()), more=True)
            print(f"  {node:<16} ...and {more} (--all lists every one)", file=out)
        if shared.get(node):
            others = shared[node]
            owner = result.diagnoses[node].ticket_owner
            kinds = list({(o.node_id, o.link_key): o.counted_as for n in others for o in by_node[n]}.values())
            print(f"  {node:<16} ...and {fmt.count(len(others), 'more host')} under {owner}'s ticket for the same "
                  f"part ({offending_parts(kinds)}): {', '.join(others[:5])}{' ...' if len(others) > 5 else ''} "
                  "(--all lists every one)", file=out)

    for node, found in sorted(result.confirmed.items(), key=lambda p: (order.get(p[0], len(order)), p[0])):
        what = "its window in the store shows" if result.source == "store" else "its read-back series confirm"
        print(f"  {node}: {what} {fmt.count(len(found), 'finding')}", file=out)
        diagnosis, verdict = result.diagnoses.get(node), result.verdict(node)
        if diagnosis is not None and verdict is not None:
            print(f"    diagnosis: {verdict}; {diagnosis.repair_action}", file=out)
    if result.not_pushed_down:
        print(f"  not evaluated on the server (local analysis only): {'; '.join(result.not_pushed_down)}",
              file=out)
    for warning in result.warnings:
        print(f"  warning: {warning}", file=out)
    window = fmt.window(result.window_hours, result.at, asked=result.window_asked_hours)
    if result.source == "store":
        print(f"  the store, {window}: read {result.timings.fetch_s:.2f} s, "
              f"analysis {result.timings.analyze_s:.2f} s", file=out)
        return
    if result.young:
        names = sorted(result.young)
        more = f" and {len(names) - 10} more" if len(names) > 10 else ""
        early = [hours for hours in result.young.values() if hours > result.window_hours]
        said = [f"{len(names) - len(early)} with series begun inside the window"] if len(early) < len(names) else []
        if early:
            said.append(f"{len(early)} with series begun before it, inside the {fmt.hours(max(early))} the "
                        "persistent rules read: for those rules only")
        print(f"  rated {fmt.count(len(names), 'node')} again over the span their series cover ({'; '.join(said)}): "
              f"{', '.join(names[:10])}{more}", file=out)
    if result.recorded:
        print(f"  read {fmt.count(len(result.recorded), 'recorded rate')} of `fabricbot rules`: "
              f"{', '.join(result.recorded)}", file=out)
    print(f"  the server, {window}: {result.queries} queries, {result.requests} requests "
          f"({result.retries} retries), {result.bytes_received:,} bytes; sweep {result.timings.sweep_s:.2f} s, "
          f"read-back {result.timings.fetch_s:.2f} s, analysis {result.timings.analyze_s:.2f} s", file=out)


def _report(result: SweepResult, as_json: bool, png: str | None = None, every: bool = False) -> int:
    if png:
        from diagnostics.render import fleet_grid, render_fleet  # the picture stack only when a picture is asked for

        data = render_fleet(result)
        try:
            Path(png).write_bytes(data)
        except OSError as exc:
            raise InputError(f"cannot write the heat map: {exc.strerror}", source=png) from None
        print(f"wrote {png} (png, {len(data) / 1024:.0f} KB): the heat map of "
              f"{fmt.count(len(fleet_grid(result).nodes), 'node')}", file=sys.stderr if as_json else sys.stdout)
    if as_json:
        print_json(result)
    else:
        _table(result, sys.stdout, every)
    if not result.complete:  # said whatever the status: an offender found still pages (1), unknown alone is 3
        print(f"fabricbot: {result.headline()}", file=sys.stderr)
    if result.offenders:
        return 1
    return 0 if result.complete else INCOMPLETE


def cmd_sweep(args: argparse.Namespace) -> int:
    thresholds = thresholds_from(args)
    at = parse_time(args.at, field="--at") if args.at else None
    if args.store and args.prometheus:
        raise InputError("give --store DIR (sweep the local store) or --prometheus URL (sweep the server), not both; a "
                         f"server's sweep reads its planned work from the store {ENV_STORE} names",
                         field="--prometheus", value=args.prometheus)
    if args.store:
        if args.node:
            raise InputError("--node reads one node from Prometheus; for a stored node run "
                             "`fabricbot analyze --store DIR --node NODE`", field="--node", value=args.node)
        request = Request(window=timedelta(hours=args.window), end=at, thresholds=thresholds)
        source = StoreSource(args.store)
        result = sweep(source, request)
        old = None if at is not None else source_readings(result.at, source, asked=None, option="--at")
        if old is not None:  # among the result's warnings (a script reading --json sees it) and said at once
            result.warnings.append(old)
            if args.json:
                print(f"fabricbot: {old}", file=sys.stderr)
        return _report(result, args.json, args.png, args.all)
    if not (args.prometheus or os.environ.get(ENV_URL)):
        raise ConfigError(f"nothing to sweep: give --store DIR (the local telemetry store) or --prometheus URL "
                          f"(or set {ENV_URL})")
    config = load_config(args.prometheus, path=args.config)
    if args.node:
        with PrometheusClient(config) as client:
            request = Request(node=args.node, window=timedelta(hours=args.window), end=at, thresholds=thresholds)
            try:
                answer = diagnose(_server(client, at), request)
            except PrometheusError as exc:  # the server could not answer: the node's health unknown, as the fleet's
                print(f"fabricbot: {args.node} not read ({exc}): its health is unknown, not healthy", file=sys.stderr)
                return INCOMPLETE
        diagnosis = answer.diagnosis
        if args.json:
            print_json(diagnosis)
        else:
            print(f"{diagnosis.node_id}  platform={diagnosis.platform or 'unknown'}  "
                  f"fault={diagnosis.fault_said()}  "
                  f"priority={diagnosis.priority_said()}  {diagnosis.window_said()}\n"
                  f"  isolated: {diagnosis.isolated_said()}\n"
                  f"  action:   {diagnosis.repair_action}")
            for finding in diagnosis.findings:
                if finding.severity.value != "ok":
                    print(f"  {finding.component}: {finding.severity.value}: "
                          f"{'; '.join(c.message for c in finding.crossed)}")
            for warning in diagnosis.warnings:
                print(f"  warning: {warning}")
        # none of its readings in the span a sweep reads: incomplete, as `analyze --store --node` answers it
        return said_incomplete(answer.incomplete) or (1 if diagnosis.fault_detected else 0)
    with PrometheusClient(config) as client:
        request = Request(window=timedelta(hours=args.window), end=at, thresholds=thresholds)
        result = sweep(_server(client, at), request, read_back=not args.no_analyze)
    return _report(result, args.json, args.png, args.all)


def _server(client: PrometheusClient, at: datetime | None) -> PrometheusSource:
    """The server as a source, with the planned work `maintenance` keeps in $FABRICBOT_STORE (the store the bot and
    `fabricbot maintenance` share): the server knows none, and a node under it pages no one through any door."""
    source = PrometheusSource(client, at=at)
    store = os.environ.get(ENV_STORE)
    if store and (Path(store) / DB_NAME).exists():
        source.hold(StoreSource(store).maintenance())
    elif store:
        print(f"fabricbot: {ENV_STORE}={store} holds no store: no planned work is read for this sweep",
              file=sys.stderr)
    return source


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("sweep", help=SUMMARIES["sweep"],
                       description="Exit status: 0 all within thresholds, 1 offenders found (even where the "
                                   "view is incomplete: said on stderr), 3 the view is incomplete and none found "
                                   "(with --node: none of the node's readings is in "
                                   "the span a sweep reads, or the server could not answer), 2 a usage or "
                                   "configuration error.")
    p.add_argument("--store", metavar="DIR", help="sweep the local telemetry store instead of a Prometheus server")
    p.add_argument("--prometheus", metavar="URL", help="Prometheus base URL (default $FABRICBOT_PROMETHEUS_URL)")
    p.add_argument("--config", metavar="FILE", help="label map and limits (default $FABRICBOT_PROMETHEUS_CONFIG)")
    p.add_argument("--window", type=hours_type, default=1.0, metavar="WINDOW",
                   help="rate window: 1h, 30m, 6h, or hours as a number (default 1 h)")
    p.add_argument("--at", metavar="TIME", help="the window's end, a UTC instant (default: the newest reading with "
                   "--store, now on Prometheus)")
    p.add_argument("--node", help="read and diagnose this one node's series instead of sweeping the fleet")
    p.add_argument("--no-analyze", action="store_true", help="list offenders only; skip reading their nodes back")
    p.add_argument("--all", action="store_true",
                   help=f"list every offending part of each node (default: its worst {LINKS_SHOWN} and how many more)")
    p.add_argument("--json", action="store_true", help="machine-readable output (every offending part)")
    p.add_argument("--png", metavar="FILE", help="also write the fleet heat map (nodes x GPUs) as a PNG")
    add_threshold_options(p)
    p.set_defaults(func=cmd_sweep)
