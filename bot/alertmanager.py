"""Alertmanager in: each webhook alert that names a node is answered in the alert channel with that node's diagnosis
(the service's, as `/fabric NODE` gives it). Alerts for the same node and part share one message; a resolved alert
updates it. The endpoint (`/alertmanager`, HTTP mode) takes only requests bearing FABRICBOT_ALERTMANAGER_TOKEN."""

from __future__ import annotations

import hmac
import json
import threading
from typing import Any

from slack_sdk import WebClient
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from diagnostics import FabricbotError
from diagnostics.ingest import NodeAlert, node_alerts

from . import blocks
from .mrkdwn import esc
from .posting import post_diagnosis
from .services import Services

PATH = "/alertmanager"


def authorized(header: str | None, token: str | None) -> bool:
    """A bearer token equal to the configured one (compared in constant time); never without one configured."""
    if not token or not header or not header.startswith("Bearer "):
        return False
    return hmac.compare_digest(header.removeprefix("Bearer ").encode(), token.encode())


class Enricher:
    """Posts each alerted node's diagnosis once per node and part; remembers the message to update on resolve."""

    def __init__(self, services: Services, client: WebClient, channel: str) -> None:
        self.services, self.client, self.channel = services, client, channel
        self.messages: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()

    def receive(self, payload: Any) -> dict[str, Any]:
        alerts, skipped = node_alerts(payload)
        posted = updated = 0
        for alert in alerts:
            try:
                diagnosis = self.services.source.diagnose(alert.node_id)
            except FabricbotError as exc:
                skipped.append(f"{alert.name} on {alert.node_id}: {exc}")
                continue
            part = diagnosis.localization.ref.slug if diagnosis.localization else "node"
            key = (alert.node_id, part)
            with self._lock:
                ts = self.messages.get(key)
                if alert.resolved:
                    if ts is not None:
                        self.client.chat_update(channel=self.channel, ts=ts, text=self._said(alert, diagnosis.
                                                                                              isolated_component),
                                                blocks=[blocks.section(self._said(alert, diagnosis.isolated_component))
                                                        .to_dict()])
                        updated += 1
                    continue
                if ts is not None:
                    continue  # grouped: this node and part already has its message
                ts = post_diagnosis(self.client, self.services, diagnosis, channel=self.channel,
                                    title=blocks.clip(f"Alertmanager: {alert.name} on {alert.node_id}",
                                                      blocks.MAX_HEADER))
                self.messages[key] = ts
                posted += 1
            self.services.record("alert", actor="alertmanager", subject=f"{alert.node_id} / {part}",
                                 step="resolved" if alert.resolved else "enriched", alertname=alert.name,
                                 fingerprint=alert.fingerprint)
        return {"posted": posted, "updated": updated, "skipped": skipped}

    @staticmethod
    def _said(alert: NodeAlert, component: str) -> str:
        return (f":white_check_mark: *Resolved* (Alertmanager): {esc(alert.name)} on `{esc(alert.node_id)}` "
                f"({esc(component)}): {esc(alert.summary)}")


def route(enricher: Enricher, token: str | None) -> Route:
    """The webhook's route: 401 without the bearer token, 400 for a body that is not version 4, else what was done."""

    async def receive(request: Request) -> Response:
        if not authorized(request.headers.get("authorization"), token):
            return PlainTextResponse("missing or wrong bearer token (FABRICBOT_ALERTMANAGER_TOKEN)", status_code=401)
        try:
            payload = json.loads(await request.body())
            done = await run_in_threadpool(enricher.receive, payload)
        except (ValueError, FabricbotError) as exc:
            return PlainTextResponse(f"not an Alertmanager webhook body: {exc}", status_code=400)
        return JSONResponse(done)

    return Route(PATH, receive, methods=["POST"])
