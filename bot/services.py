"""`Services`: what every listener shares (settings, data, drafter, tracker, audit, the bot's small state).

It lives apart from `app.py`, so listeners import it without importing the app that registers them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from diagnostics import Diagnosis
from diagnostics.store import AlertBook
from diagnostics.tickets import Answerer, Drafter, RulesAnswerer

from .audit import AuditLog
from .drafting import Renderer
from .nodes import NodeSource
from .posted import PostedAnalyses
from .settings import Settings
from .state import BotState, RateLimiter
from .storage import db_lock
from .work import WorkQueue
from .workflow import filing
from .workflow.tracker import Tracker

log = logging.getLogger("fabricbot")


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
    posted: PostedAnalyses = field(init=False)
    alerts: AlertBook = field(init=False)  # the alert channel's memory (the watch loop's)
    work: WorkQueue = field(init=False)  # analysis, pictures, filing, answers
    drafts: WorkQueue = field(init=False)  # drafts (seconds on the model each)
    notices: WorkQueue = field(init=False)  # a short post that must not wait behind the others ("Drafting...")

    def __post_init__(self) -> None:
        self.state = BotState(self.audit.db)
        self.limiter = RateLimiter(self.settings.drafts_per_minute)
        self.posted = PostedAnalyses(self.audit.db)
        self.alerts = AlertBook(self.audit.db)
        s = self.settings
        self.work = WorkQueue("work", workers=s.workers, limit=s.queue_limit)
        self.drafts = WorkQueue("drafts", workers=s.draft_workers, limit=s.queue_limit)
        self.notices = WorkQueue("notices", workers=2, limit=s.queue_limit)
        self.source.start_workers(s.analysis_processes)
        mended = filing.recover(state=self.state, tracker=self.tracker, audit=self.audit, record=self.record)
        if mended:
            log.warning("mended what an earlier run left between states: %s", mended)

    def shutdown(self) -> None:
        """Stop taking work and let what runs finish."""
        for queue in (self.work, self.drafts, self.notices):
            queue.shutdown()
        self.source.stop_workers()

    def answer(self, diagnosis: Diagnosis, question: str) -> str:
        """The answer to a question about a diagnosis, saying who wrote it when a model did."""
        answer = self.answerer.answer(diagnosis, question)
        return answer.text if answer.by == "rules" else f"{answer.text}\n_(answered by {answer.by} from the analysis)_"

    def record(self, kind: str, *, actor: str, subject: str = "", **detail: Any) -> int:
        """One audit entry, under the database lock (listeners run on several threads)."""
        with db_lock(self.audit.db):
            return self.audit.record(kind, actor=actor, subject=subject, detail=detail, at=self.clock())

    def record_analysis(self, diagnosis: Diagnosis, *, job: str | None = None) -> int:
        """A node's (or job's) analysis as every door records it; a node with no fault has no component to name."""
        return self.record("analysis", actor="fabricbot", subject=diagnosis.node_id, fault=diagnosis.fault_detected,
                           component=diagnosis.isolated_component if diagnosis.fault_detected else None,
                           priority=diagnosis.ticket_priority.value, degradation_pct=diagnosis.degradation_pct,
                           job=diagnosis.job_id or job)
