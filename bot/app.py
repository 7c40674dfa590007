"""`build_app`: the Bolt app with its dependencies passed in, so serve, the demo and the tests build the same app."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from slack_bolt import App
from slack_sdk import WebClient

from diagnostics.tickets import Answerer, Drafter, RulesAnswerer

from . import listeners
from .audit import AuditLog
from .drafting import Renderer
from .nodes import NodeSource
from .services import Services, utc_now
from .settings import Settings
from .tracker import Tracker

log = logging.getLogger("fabricbot")


def build_app(*, settings: Settings, source: NodeSource, drafter: Drafter | None, tracker: Tracker,
              audit: AuditLog, client: WebClient | None = None, renderer: Renderer | None = None,
              clock: Callable[[], datetime] = utc_now, socket_mode: bool = False,
              answerer: Answerer | None = None) -> App:
    """The app. `client` points the Web API elsewhere (the local mock); HTTP mode verifies signatures."""
    if client is None:
        client = WebClient(token=settings.bot_token, base_url=settings.slack_api_url or WebClient.BASE_URL)
    services = Services(settings, source, drafter, tracker, audit, renderer, clock, answerer or RulesAnswerer())
    app = App(
        client=client,
        signing_secret=settings.signing_secret,
        # Socket Mode has no HTTP request to sign; every HTTP request must carry a valid signature.
        request_verification_enabled=not socket_mode,
        process_before_response=False,
        logger=log,
    )
    listeners.register(app, services)
    return app
