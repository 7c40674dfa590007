"""`build_app`: the Bolt app with its dependencies passed in, so serve, the demo and the tests build the same app."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from slack_bolt import App
from slack_sdk import WebClient

from diagnostics import Diagnosis, RedactingFilter

from . import filing
from .answers import Answerer, RulesAnswerer
from .audit import AuditLog
from .drafting import Drafter, Renderer
from .nodes import NodeSource
from .settings import Settings
from .state import BotState, RateLimiter
from .storage import db_lock
from .tracker import Tracker

log = logging.getLogger("fabricbot")
log.addFilter(RedactingFilter())


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class Services:
    """What the listeners share: settings, data, drafter, tracker, audit, and the bot's small state."""

    settings: Settings
    source: NodeSource
    drafter: Drafter | None
    tracker: Tracker
    audit: AuditLog
    renderer: Renderer | None = None
    clock: Callable[[], datetime] = utc_now
    answerer: Answerer = field(default_factory=RulesAnswerer)
    state: BotState = field(init=False)
    limiter: RateLimiter = field(init=False)

    def __post_init__(self) -> None:
        self.state = BotState(self.audit.db)
        self.limiter = RateLimiter(self.settings.drafts_per_minute)
        mended = filing.recover(state=self.state, tracker=self.tracker, audit=self.audit, record=self.record)
        if mended:
            log.warning("mended what an earlier run left between states: %s", mended)

    def answer(self, diagnosis: Diagnosis, question: str) -> str:
        """The answer to a question about a diagnosis, saying who wrote it when a model did."""
        answer = self.answerer.answer(diagnosis, question)
        return answer.text if answer.by == "rules" else f"{answer.text}\n_(answered by {answer.by} from the analysis)_"

    def record(self, kind: str, *, actor: str, subject: str = "", **detail: Any) -> int:
        """One audit entry, under the database lock (listeners run on several threads)."""
        with db_lock(self.audit.db):
            return self.audit.record(kind, actor=actor, subject=subject, detail=detail, at=self.clock())


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
    from .listeners import actions, commands, mentions

    commands.register(app, services)
    actions.register(app, services)
    mentions.register(app, services)
    return app
