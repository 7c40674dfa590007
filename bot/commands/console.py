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

from diagnostics.errors import ConfigError

from ..audit import AuditLog
from ..console.web import Console, console_app
from ..drafting import default_drafter, render_png
from ..nodes import NodeSource, SnapshotNodeSource, TableNodeSource
from ..settings import Settings
from ..storage import open_db
from ..tracker import SqliteTracker
from ..transport.local import LocalSlack
from ..transport.loopback import LoopbackServer
from ..transport.mock_slack import MockSlack

DEFAULT_PORT = 8765
CHANNEL, CHANNEL_NAME = "COPS", "ops"
SEEDS = Path(__file__).resolve().parents[2] / "fixtures" / "seed_examples.json"


def _source(settings: Settings, snapshots: list[Path]) -> NodeSource:
    """Snapshot files when given; the telemetry store when it holds nodes; the bundled seed examples otherwise."""
    if snapshots:
        return SnapshotNodeSource.from_files(snapshots)
    from diagnostics.store import DB_NAME, TelemetryStore

    if (settings.store / DB_NAME).exists() and TelemetryStore(settings.store).nodes():
        return TableNodeSource.from_store(settings.store)
    if not SEEDS.exists():
        raise ConfigError(f"no nodes to show: {settings.store} holds no telemetry and {SEEDS.name} is missing; "
                          "pass --snapshots FILE or --store DIR")
    return SnapshotNodeSource.from_files([SEEDS])


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
    if not ipaddress.ip_address(args.host).is_loopback:
        print(f"fabricbot: warning: serving on {args.host}: anyone who reaches it can act as {args.user}",
              file=sys.stderr)
    user_id = "U" + "".join(ch for ch in args.user.upper() if ch.isalnum())[:10]
    with tempfile.TemporaryDirectory(prefix="fabricbot-console-") as tmp:
        db = open_db(Path(args.db) if args.db else Path(tmp))
        audit = AuditLog(db)
        slack = MockSlack(users={user_id: args.user})
        local = LocalSlack(settings=settings, source=source, drafter=default_drafter(), tracker=SqliteTracker(db),
                           audit=audit, renderer=render_png, slack=slack)
        with local:
            console = Console(local, user=user_id, channel=CHANNEL, channel_name=CHANNEL_NAME,
                              nodes=source.node_ids())
            with _server(console_app(console), args.host, args.port) as server:
                host = f"[{server.host}]" if ":" in server.host else server.host
                print(f"fabricbot console: http://{host}:{server.port}/  (Ctrl-C stops it)", flush=True)
                print(f"fabricbot: nodes: {', '.join(source.node_ids()[:8])}", file=sys.stderr)
                serve_until(args.seconds)
        db.conn.close()
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("console", help="the ops channel and a clickable topology in the browser (no Slack needed)")
    p.add_argument("--host", default="127.0.0.1", help="address to serve on (default 127.0.0.1, loopback only)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0 picks a free one)")
    p.add_argument("--user", default="oncall", help="your name in the channel (default oncall)")
    p.add_argument("--store", metavar="DIR", help="the telemetry store (default FABRICBOT_STORE or ./.store)")
    p.add_argument("--snapshots", nargs="*", default=[], metavar="FILE",
                   help="diagnose nodes from snapshot JSON files instead of the store")
    p.add_argument("--db", metavar="DIR", help="keep tickets, drafts and the audit trail here (default: a fresh "
                   "temporary folder, removed on exit)")
    p.add_argument("--seconds", type=float, default=None, help=argparse.SUPPRESS)  # stop after (tests)
    p.set_defaults(func=cmd_console)
