"""`fabricbot serve`: run the bot (Socket Mode, HTTP, or against the local mock Slack server)."""

from __future__ import annotations

import argparse
import os
import sys
import threading
from dataclasses import replace
from pathlib import Path

import uvicorn

from diagnostics.config import load_alerts, load_verification, load_watch
from diagnostics.tickets import check_model

from ..alertmanager import Enricher, route
from ..alerts import AlertLoop
from ..app import FabricApp, build_app
from ..drafting import render_png
from ..runtime import build_runtime, node_source
from ..schedule import DigestSchedule
from ..settings import Settings
from ..transport.preflight import check_slack
from . import SUMMARIES

ALERTMANAGER_TOKEN = "FABRICBOT_ALERTMANAGER_TOKEN"


def _digest(settings: Settings, app: FabricApp) -> DigestSchedule | None:
    """The daily digest's schedule, when both of its settings are given."""
    if not (settings.digest_at and settings.digest_channel):
        return None
    return DigestSchedule(app.services, app.client, at=settings.digest_at, channel=settings.digest_channel).start()


def _alerts(settings: Settings, app: FabricApp) -> AlertLoop | None:
    """The watch loop, when an alert channel is set."""
    if not settings.alert_channel:
        return None
    return AlertLoop(app.services, app.client, channel=settings.alert_channel, every_s=settings.alert_every_s,
                     oncall=settings.oncall_usergroup).start()


def check_policies() -> None:
    """The alert, watch and verification policies read once before anything starts: a file their variable names
    that is missing or wrong is said at start-up, not at the first alert pass, `/fabric watch` or filing."""
    load_alerts()
    load_watch()
    load_verification()


def cmd_serve(args: argparse.Namespace) -> int:
    settings = Settings.from_env()  # a setting that cannot be used is said here, before anything starts
    if args.store:
        settings = replace(settings, store=Path(args.store))
    check_policies()
    check_slack(settings)  # one line and exit 2 when a setting is missing or Slack refuses a token
    for note in settings.startup_notes():
        print(f"fabricbot: {note}", file=sys.stderr)
    rt = build_runtime(settings, source=node_source(settings, [Path(p) for p in args.snapshots]),
                       model_check=check_model)
    for note in rt.notes:
        print(f"fabricbot: {note}", file=sys.stderr)
    if settings.mode == "socket":
        from ..transport.socket_mode import run

        assert settings.app_token is not None
        app = build_app(settings=settings, socket_mode=True, **rt.deps(render_png))
        _digest(settings, app)
        _alerts(settings, app)
        run(app, settings.app_token)
        return 0
    if settings.mode == "http":
        from ..transport.http import asgi_app

        app = build_app(settings=settings, **rt.deps(render_png))
        _digest(settings, app)
        _alerts(settings, app)
        extra = []
        if settings.alert_channel and os.environ.get(ALERTMANAGER_TOKEN):  # Alertmanager in, into the alert channel
            extra.append(route(Enricher(app.services, app.client, settings.alert_channel),
                               os.environ.get(ALERTMANAGER_TOKEN)))
        uvicorn.run(asgi_app(app, settings.signing_secret, extra=extra), host=args.host, port=args.port,
                    log_level="warning")
        return 0
    from ..transport.local import LocalSlack

    with LocalSlack(settings=settings, **rt.deps(render_png)) as local:
        print(f"fabricbot: mock Slack Web API at {local.slack.api_url}", file=sys.stderr)
        print(f"fabricbot: app events at {local.injector.url} (signed requests only)", file=sys.stderr)
        print("fabricbot: nodes: " + ", ".join(rt.source.node_ids()[:10]), file=sys.stderr)
        assert local.app is not None
        schedule = _digest(settings, local.app)
        alerts = _alerts(settings, local.app)
        try:
            threading.Event().wait(args.seconds)  # Ctrl-C ends it; leaving the block stops both servers
        finally:
            if schedule is not None:
                schedule.stop()
            if alerts is not None:
                alerts.stop()
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = sub.add_parser("serve", help=SUMMARIES["serve"])
    serve.add_argument("--host", default="0.0.0.0", help="HTTP mode: address to listen on (default 0.0.0.0)")
    serve.add_argument("--port", type=int, default=3000, help="HTTP mode: port (default 3000)")
    serve.add_argument("--store", metavar="DIR", help="the telemetry store (default FABRICBOT_STORE or ./.store)")
    serve.add_argument("--snapshots", nargs="*", default=[], metavar="FILE",
                       help="diagnose nodes from snapshot JSON files instead of the store")
    serve.add_argument("--seconds", type=float, default=None, help=argparse.SUPPRESS)  # local mode: stop after
    serve.set_defaults(func=cmd_serve)
