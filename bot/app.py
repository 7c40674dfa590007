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


def _configure(client: WebClient, settings: Settings) -> None:
    """Bolt's client, pointed at `slack_api_url` when one is set, retrying a rate-limited call (HTTP 429) after the
    Retry-After Slack gives (Bolt copies both into the client each request's listeners get)."""
    if settings.slack_api_url:
        client.base_url = settings.slack_api_url
    if not any(isinstance(h, RateLimitErrorRetryHandler) for h in client.retry_handlers):
        client.retry_handlers.append(RateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES))


def build_app(*, settings: Settings, source: NodeSource, drafter: Drafter | None, tracker: Tracker,
              audit: AuditLog, renderer: Renderer | None = None, clock: Callable[[], datetime] = utc_now,
              socket_mode: bool = False, answerer: Answerer | None = None) -> FabricApp:
    """The app, with Slack's Web API at `settings.slack_api_url` when set (the local mock); HTTP mode verifies
    signatures."""
    services = Services(settings, source, drafter, tracker, audit, renderer, clock, answerer or RulesAnswerer())
    app = FabricApp(
        services,
        name="fabricbot",  # else Bolt reads the whole call stack (inspect.stack) for its caller's file name
        # Bolt builds its client from the token, as it intends: a client passed in besides SLACK_BOT_TOKEN in the
        # environment makes it warn that the token goes unused. It checks the token (auth.test) at the first
        # request, on the client configured below; `fabricbot serve` has checked it before starting.
        token=settings.bot_token,
        token_verification_enabled=False,
        signing_secret=settings.signing_secret,
        # Socket Mode has no HTTP request to sign; every HTTP request must carry a valid signature.
        request_verification_enabled=not socket_mode,
        process_before_response=True,
        logger=log,
    )
    _configure(app.client, settings)
    payloads.install(app, events=Seen(services.audit.db, "event", EVENT_TTL_S))
    listeners.register(app, services)
    return app
