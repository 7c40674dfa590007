"""The local transport: the mock Slack server, the real app served over HTTP, and a signed injector.

`LocalSlack` starts both on loopback free ports and stops them on exit; tests, the demo, the benchmark
and `fabricbot serve` without a token all use it, so they exercise the same path Slack would.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from types import TracebackType

from diagnostics.tickets import Answerer, Drafter

from ..app import FabricApp, build_app
from ..audit import AuditLog
from ..drafting import Renderer
from ..nodes import NodeSource
from ..services import utc_now
from ..settings import Settings
from ..workflow.tracker import Tracker
from .http import EVENTS_PATH, asgi_app
from .injector import Injector
from .loopback import LoopbackServer
from .mock_slack import MockSlack


class LocalSlack:
    """`with LocalSlack(...) as local:` then `local.injector.command(...)` and read `local.slack`."""

    def __init__(self, *, settings: Settings, source: NodeSource, drafter: Drafter | None, tracker: Tracker,
                 audit: AuditLog, renderer: Renderer | None = None, slack: MockSlack | None = None,
                 clock: Callable[[], datetime] = utc_now, answerer: Answerer | None = None) -> None:
        self.slack = slack or MockSlack()
        self.settings = replace(settings, bot_token=self.slack.token,
                                signing_secret=settings.signing_secret or secrets.token_hex(16))
        self.audit = audit
        self.tracker = tracker
        self._deps = dict(source=source, drafter=drafter, tracker=tracker, audit=audit, renderer=renderer,
                          clock=clock, answerer=answerer)
        self.slack_server = LoopbackServer(self.slack.app)
        self.slack.base_url = self.slack_server.url
        self.settings = replace(self.settings, slack_api_url=self.slack.api_url)
        self.app: FabricApp | None = None
        self.app_server: LoopbackServer | None = None
        self.injector: Injector

    def start(self) -> LocalSlack:
        self.slack_server.start()
        self.app = build_app(settings=self.settings, **self._deps)  # type: ignore[arg-type]
        self.app_server = LoopbackServer(asgi_app(self.app, self.settings.signing_secret)).start()
        self.injector = Injector(self.app_server.url + EVENTS_PATH, str(self.settings.signing_secret), self.slack)
        return self

    def stop(self) -> None:
        if self.app_server is not None:
            self.injector.close()
            self.app_server.stop()
        if self.app is not None:
            self.app.services.shutdown()  # let queued work finish while the mock still answers
        self.slack_server.stop()

    def __enter__(self) -> LocalSlack:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
