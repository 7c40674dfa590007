"""Bolt listeners by concern: the slash command, draft buttons, filing buttons, the repair button, the storm
incident's acknowledgement, mentions and thread messages, and any other click (acknowledged and said).

Every listener acknowledges on the request's own thread and leaves its work to the work queues (`Services`).

`register` is the one place that wires them to an app, so no listener imports the app. `COMMANDS` and `EVENTS`
name what the app answers; the Slack app manifest must subscribe to the same (a test reads both).
"""

from __future__ import annotations

from slack_bolt import App

from ..services import Services
from . import alerts, commands, drafts, filing, mentions, repairs, unknown

COMMANDS = (commands.COMMAND,)
EVENTS = mentions.EVENTS


def register(app: App, services: Services) -> None:
    commands.register(app, services)
    drafts.register(app, services)
    filing.register(app, services)
    mentions.register(app, services)
    repairs.register(app, services)
    alerts.register(app, services)
    unknown.register(app, services)  # last: it answers any click the listeners above do not
