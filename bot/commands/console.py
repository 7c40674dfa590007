"""`fabricbot console`: the ops channel and a clickable topology in the browser, with no Slack workspace.

It starts, on loopback, the mock Slack server, the bot (served over HTTP and verifying signatures) and the
console's web app, then prints the console's URL. Tickets go to a fresh tracker unless `--db` keeps them.
"""

from __future__ import annotations

import argparse
import ipaddress
import sys
import tempfile
import threading
from dataclasses import replace
from pathlib import Path

from diagnostics import ConfigError
from diagnostics.store import DB_NAME, TelemetryStore
from diagnostics.tickets import check_model

from ..alerts import AlertLoop
from ..console.web import Console, console_app
from ..drafting import render_png
from ..nodes import NodeSource, StoreNodeSource
from ..runtime import build_runtime, node_source
from ..settings import Settings
from ..transport.local import LocalSlack
from ..transport.loopback import LoopbackServer
from ..transport.mock_slack import MockSlack
from . import SUMMARIES

NODES_SHOWN = 8  # nodes named when the console starts; the rest counted

DEFAULT_PORT = 8765
CHANNEL, CHANNEL_NAME = "COPS", "ops"


def _source(settings: Settings, snapshots: list[Path]) -> NodeSource:
    """Snapshot files when given; the telemetry store when it holds nodes; the demo's bundled fleet otherwise."""
    if snapshots or ((settings.store / DB_NAME).exists() and TelemetryStore(settings.store).nodes()):
        return node_source(settings, snapshots)
    from ..demo import bundled_fleet

    print("fabricbot: building the bundled fleet (a few seconds)…", file=sys.stderr, flush=True)
    return bundled_fleet()


def _loopback(host: str) -> bool:
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _server(app: object, host: str, port: int) -> LoopbackServer:
    try:
        return LoopbackServer(app, host=host, port=port)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}:{port} ({exc.strerror}); pass --port 0 for a free port") from None


def serve_until(seconds: float | None) -> None:
    """Block while the servers run: until Ctrl-C, or `seconds`."""
    threading.Event().wait(seconds)


def cmd_console(args: argparse.Namespace) -> int:
    # The console always talks to the local mock: Slack tokens in the environment are not used here.
    settings = replace(Settings.from_env(), bot_token=None, app_token=None, signing_secret=None)
    if args.store:
        settings = replace(settings, store=Path(args.store))
    source = _source(settings, [Path(p) for p in args.snapshots])
    if not _loopback(args.host):
        print(f"fabricbot: warning: serving on {args.host}: anyone who reaches it can act as {args.user}",
              file=sys.stderr)
    user_id = "U" + "".join(ch for ch in args.user.upper() if ch.isalnum())[:10]
    with tempfile.TemporaryDirectory(prefix="fabricbot-console-") as tmp:
        rt = build_runtime(settings, source=source, db_path=Path(args.db) if args.db else Path(tmp),
                           model_check=check_model)
        for note in rt.notes:
            print(f"fabricbot: {note}", file=sys.stderr)
        slack = MockSlack(users={user_id: args.user})
        with LocalSlack(settings=settings, slack=slack, **rt.deps(render_png)) as local:
            console = Console(local, user=user_id, channel=CHANNEL, channel_name=CHANNEL_NAME,
                              nodes=source.node_ids())
            alerts = None
            if settings.alert_channel and local.app is not None:  # the console shows one channel: alerts go there
                alerts = AlertLoop(local.app.services, local.app.client, channel=CHANNEL,
                                   every_s=settings.alert_every_s, oncall=settings.oncall_usergroup).start()
            with _server(console_app(console), args.host, args.port) as server:
                host = f"[{server.host}]" if ":" in server.host else server.host
                print(f"fabricbot console: http://{host}:{server.port}/  (Ctrl-C stops it)", flush=True)
                names = source.node_ids()
                more = f" and {len(names) - NODES_SHOWN} more" if len(names) > NODES_SHOWN else ""
                print(f"fabricbot: nodes: {', '.join(names[:NODES_SHOWN])}{more}", file=sys.stderr)
                if not args.db:  # filed here, a ticket is not the store's: `fabricbot tickets` would not list it
                    print("fabricbot: tickets, drafts and the audit trail are kept in a temporary folder, removed on "
                          "exit: give --db DIR (the store's folder, for `fabricbot tickets` to list them) to keep "
                          "them", file=sys.stderr)
                if isinstance(source, StoreNodeSource):  # planned work is the store's, whatever --db says
                    print(f"fabricbot: planned work set here (/fabric maintenance) is kept in the store, "
                          f"{settings.store}, where the bot, `fabricbot sweep` and the alert loop read it: it holds "
                          "that node's pages and tickets there too", file=sys.stderr)
                try:
                    serve_until(args.seconds)
                finally:
                    if alerts is not None:
                        alerts.stop()
                    console.close()
        rt.db.conn.close()
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("console", help=SUMMARIES["console"])
    p.add_argument("--host", default="127.0.0.1", help="address to serve on (default 127.0.0.1, loopback only)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0 picks a free one)")
    p.add_argument("--user", default="oncall", help="your name in the channel (default oncall)")
    p.add_argument("--store", metavar="DIR", help="the telemetry store (default FABRICBOT_STORE or ./.store)")
    p.add_argument("--snapshots", nargs="*", default=[], metavar="FILE",
                   help="diagnose nodes from snapshot JSON files (default: the store, else the bundled fleet)")
    p.add_argument("--db", metavar="DIR", help="keep tickets, drafts and the audit trail here (default: a fresh "
                   "temporary folder, removed on exit)")
    p.add_argument("--seconds", type=float, default=None, help=argparse.SUPPRESS)  # stop after (tests)
    p.set_defaults(func=cmd_console)
