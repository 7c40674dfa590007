"""Bolt listeners by concern: slash commands, interactive actions, mentions and thread messages.

`register` is the one place that wires them to an app, so no listener imports the app. `COMMANDS` and `EVENTS`
name what the app answers; the Slack app manifest must subscribe to the same (a test reads both).
"""

from __future__ import annotations

from slack_bolt import App

from ..services import Services
from . import actions, commands, mentions

COMMANDS = (commands.COMMAND,)
EVENTS = mentions.EVENTS


def register(app: App, services: Services) -> None:
    commands.register(app, services)
    actions.register(app, services)
    mentions.register(app, services)
