"""The daily digest on a schedule: a thread that sleeps until the set time of day (UTC), posts the digest to the
set channel, and sleeps again. Off unless both FABRICBOT_DIGEST_AT and FABRICBOT_DIGEST_CHANNEL are set."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime

from slack_sdk import WebClient

from diagnostics import FabricbotError

from .digest import next_run
from .lifecycle import digest_text, post_text
from .replies import SLACK_FAILURES
from .services import Services

log = logging.getLogger("fabricbot")
_FAILURES: tuple[type[Exception], ...] = (*SLACK_FAILURES, FabricbotError)


class DigestSchedule:
    """Posts the digest once a day; `stop` ends it between posts."""

    def __init__(self, services: Services, client: WebClient, *, at: str, channel: str,
                 now: Callable[[], datetime] | None = None) -> None:
        self.services, self.client, self.at, self.channel = services, client, at, channel
        self.now = now or services.clock
        next_run(self.now(), at)  # a bad time of day is refused at start-up, not at 08:00
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="fabricbot-digest", daemon=True)

    def start(self) -> DigestSchedule:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def post_once(self) -> str | None:
        """Post today's digest; the message's ts, or None when it could not be posted (said in the log)."""
        try:
            ts = post_text(self.client, self.channel, digest_text(self.services))
        except _FAILURES as exc:
            log.warning("the daily digest was not posted: %s", exc)
            return None
        self.services.record("command", actor="fabricbot", subject="digest", command="daily digest",
                             channel=self.channel)
        return ts

    def _loop(self) -> None:
        while not self._stop.is_set():
            wait = (next_run(self.now(), self.at) - self.now()).total_seconds()
            if self._stop.wait(max(wait, 0.0)):
                return
            self.post_once()
