"""HTTP mode: Slack's requests at /slack/events, verified, checked, and dispatched off the event loop.

Bolt's Starlette adapter runs the synchronous `App.dispatch` on the server's event loop, so one slow request stalls
every other; here dispatch runs in the thread pool, and the acknowledgement is made on that request's thread. Before
dispatch: an unsigned or stale request gets 401, a signed one Slack would never send (not JSON, not an object) 400,
and a replay of a request already seen (the same signature inside Slack's five minutes) an empty 200 and no work.
Slack's certificate check of a slash command's URL (`ssl_check=1`) gets an empty 200 before any of that, as Bolt's
own `SslCheck` middleware answers it ahead of its signature check: it asks for nothing to be done.
Plain HTTP: put a TLS-terminating proxy in front (Slack calls only https:// request URLs).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from urllib.parse import parse_qs

from slack_bolt.adapter.starlette.handler import to_bolt_request, to_starlette_response
from slack_bolt.request.internals import parse_body
from slack_sdk.signature import SignatureVerifier
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from ..app import FabricApp
from ..dedupe import REPLAY_TTL_S, Seen

EVENTS_PATH = "/slack/events"
log = logging.getLogger("fabricbot")


def _signed(verifier: SignatureVerifier, body: bytes, timestamp: str, signature: str) -> bool:
    try:
        return verifier.is_valid(body, timestamp, signature)
    except ValueError:  # a timestamp that is not a number
        return False


def _ssl_check(body: bytes, content_type: str | None) -> bool:
    """Whether the request is Slack's certificate check (a form with `ssl_check=1`), as Bolt's SslCheck tells it."""
    if not (content_type or "").startswith("application/x-www-form-urlencoded") or b"ssl_check" not in body:
        return False
    return parse_qs(body.decode("utf-8", "replace")).get("ssl_check") == ["1"]


def asgi_app(app: FabricApp, signing_secret: str | None, *, extra: Sequence[Route] = ()) -> Starlette:
    """The ASGI app that serves `app` to Slack: commands, interactions and events all arrive at one URL.

    `signing_secret` None (Socket Mode behind a local proxy, never Slack) skips the signature and replay checks.
    Replays are told apart in the app's store, so replicas sharing it refuse one another's."""
    verifier = SignatureVerifier(signing_secret) if signing_secret else None
    seen = Seen(app.services.audit.db, "request", REPLAY_TTL_S)

    async def events(request: Request) -> Response:
        body = await request.body()
        if _ssl_check(body, request.headers.get("content-type")):
            return Response(status_code=200)
        if verifier is not None:
            signature = request.headers.get("x-slack-signature", "")
            if not _signed(verifier, body, request.headers.get("x-slack-request-timestamp", ""), signature):
                return PlainTextResponse("invalid request signature", status_code=401)
            if not await run_in_threadpool(seen.first, signature):  # a database write: off the event loop
                log.warning("fabricbot: a signed request was sent again inside its five minutes; ignored")
                return Response(status_code=200)
        try:
            parsed = parse_body(body.decode("utf-8"), request.headers.get("content-type"))
        except ValueError as exc:  # not UTF-8, or a body that says JSON and is not
            return PlainTextResponse(f"malformed payload: {type(exc).__name__}", status_code=400)
        if not isinstance(parsed, dict):  # Bolt itself would fail on it with a 500
            return PlainTextResponse("malformed payload: not an object", status_code=400)
        bolt_request = to_bolt_request(request, body)
        return to_starlette_response(await run_in_threadpool(app.dispatch, bolt_request))

    async def health(_: Request) -> Response:
        return PlainTextResponse("ok")

    return Starlette(routes=[Route(EVENTS_PATH, events, methods=["POST"]), Route("/healthz", health), *extra])
