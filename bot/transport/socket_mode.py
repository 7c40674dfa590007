"""Socket Mode: slack_sdk's built-in WebSocket client; no public URL, no request signatures."""

from __future__ import annotations

from slack_bolt import App
from slack_bolt.adapter.socket_mode import SocketModeHandler


def run(app: App, app_token: str) -> None:
    """Connect with the app-level token (`xapp-...`) and serve until interrupted."""
    SocketModeHandler(app, app_token).start()
