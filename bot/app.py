"""`build_app`: the Bolt app with its dependencies passed in, so serve, the demo and the tests build the same app.

Acknowledgements never wait: with `process_before_response=True` Bolt runs each listener's ack function on the
request's own thread (it acknowledges and queues the work), instead of sharing a five-thread pool with the lazy
listeners, where a few slow drafts kept a slash command from being acknowledged within Slack's three seconds.
Rate-limited Web API calls are retried after Slack's Retry-After by slack_sdk's `RateLimitErrorRetryHandler`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from slack_bolt import App
from slack_sdk import WebClient
from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler

from diagnostics import RedactingFilter
from diagnostics.tickets import Answerer, Drafter, RulesAnswerer

from . import listeners, payloads
from .audit import AuditLog
from .dedupe import EVENT_TTL_S, Seen
from .drafting import Renderer
from .nodes import NodeSource
from .services import Services, utc_now
from .settings import Settings
from .workflow.tracker import Tracker

log = logging.getLogger("fabricbot")
log.addFilter(RedactingFilter())
RATE_LIMIT_RETRIES = 2


class FabricApp(App):
    """The Bolt app, holding the services its listeners share (so a server can stop their queues)."""

    def __init__(self, services: Services, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.services = services


def web_client(settings: Settings, client: WebClient | None = None) -> WebClient:
    """The Web API client, retrying a rate-limited call (HTTP 429) after the Retry-After Slack gives."""
    if client is None:
        client = WebClient(token=settings.bot_token, base_url=settings.slack_api_url or WebClient.BASE_URL)
    if not any(isinstance(h, RateLimitErrorRetryHandler) for h in client.retry_handlers):
        client.retry_handlers.append(RateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES))
    return client


def build_app(*, settings: Settings, source: NodeSource, drafter: Drafter | None, tracker: Tracker,
              audit: AuditLog, client: WebClient | None = None, renderer: Renderer | None = None,
              clock: Callable[[], datetime] = utc_now, socket_mode: bool = False,
              answerer: Answerer | None = None) -> FabricApp:
    """The app. `client` points the Web API elsewhere (the local mock); HTTP mode verifies signatures."""
    services = Services(settings, source, drafter, tracker, audit, renderer, clock, answerer or RulesAnswerer())
    app = FabricApp(
        services,
        client=web_client(settings, client),
        signing_secret=settings.signing_secret,
        # Socket Mode has no HTTP request to sign; every HTTP request must carry a valid signature.
        request_verification_enabled=not socket_mode,
        process_before_response=True,
        logger=log,
    )
    payloads.install(app, events=Seen(services.audit.db, "event", EVENT_TTL_S))
    listeners.register(app, services)
    return app
