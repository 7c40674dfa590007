"""HTTP mode: Bolt's Starlette adapter at /slack/events (Slack signs every request; Bolt verifies it)."""

from __future__ import annotations

from slack_bolt import App
from slack_bolt.adapter.starlette.handler import SlackRequestHandler
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

EVENTS_PATH = "/slack/events"


def asgi_app(app: App) -> Starlette:
    """The ASGI app that serves `app` to Slack: commands, interactions and events all arrive at one URL."""
    handler = SlackRequestHandler(app)

    async def events(request: Request) -> Response:
        return await handler.handle(request)

    async def health(_: Request) -> Response:
        return PlainTextResponse("ok")

    return Starlette(routes=[Route(EVENTS_PATH, events, methods=["POST"]), Route("/healthz", health)])
