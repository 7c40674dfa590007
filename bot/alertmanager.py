"""Alertmanager in: each webhook alert that names a node is answered in the alert channel with that node's diagnosis
(the service's, as `/fabric NODE` gives it). Alerts for the same node and part share one message; a resolved alert
updates it once every alert under it has resolved. A node under planned work is not posted (the rules Prometheus
runs know none): its alert is recorded as held, and Alertmanager's repeat once the work is over is posted. An alert
for a node the store does not know, or naming none, is said once as such. The endpoint (`/alertmanager`, HTTP mode)
takes only requests bearing FABRICBOT_ALERTMANAGER_TOKEN."""

from __future__ import annotations

import hmac
import json
import logging
import threading
from typing import Any

from slack_sdk import WebClient
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from diagnostics import FabricbotError
from diagnostics import format as fmt
from diagnostics.ingest import NodeAlert, known_node, node_alerts
from diagnostics.store import AlertmanagerBook, AlertMessage

from . import blocks, fitting
from .mrkdwn import esc
from .posting import open_tickets, post_diagnosis
from .replies import CONTENT_CODES, SLACK_FAILURES, error_code, refusal
from .services import Services

log = logging.getLogger("fabricbot")

PATH = "/alertmanager"
UNKNOWN = "unknown node"  # the part of an alert's message whose node the store does not know
NAMELESS = "no node"  # the part of an alert's message that names no node


def authorized(header: str | None, token: str | None) -> bool:
    """A bearer token equal to the configured one (compared in constant time); never without one configured."""
    if not token or not header or not header.startswith("Bearer "):
        return False
    return hmac.compare_digest(header.removeprefix("Bearer ").encode(), token.encode())


class Enricher:
    """Posts each alerted node's diagnosis once per node and part; a resolved alert updates that message.

    The messages and the fingerprints firing under each are kept in the store's SQLite (`AlertmanagerBook`), so a
    restarted bot updates what it posted before; Alertmanager repeats a firing alert every `repeat_interval`, and
    a repeat is known by its fingerprint without diagnosing the node again."""

    def __init__(self, services: Services, client: WebClient, channel: str) -> None:
        self.services, self.client, self.channel = services, client, channel
        self.book = AlertmanagerBook(services.audit.db)
        self._lock = threading.Lock()

    def receive(self, payload: Any) -> dict[str, Any]:
        alerts, skipped = node_alerts(payload)
        posted = updated = 0
        nodes = self.services.source.node_ids()
        for given in alerts:
            alert = (known_node(given, nodes) if given.node_id else None) or given
            with self._lock:
                if alert.resolved:
                    key = self.book.key_of(alert.fingerprint)
                    message = self.book.message(*key) if key is not None else None
                    if message is None:
                        skipped.append(f"{alert.name} on {alert.where}: resolved, but never fired here")
                        continue
                    last = message.firing == (alert.fingerprint,)  # else the message stands for the others
                    if last:
                        self._update(message, alert)  # before the book: a refused update is retried whole
                        updated += 1
                    self.book.resolve(alert.fingerprint, at=self.services.clock())
                    self._record(alert, message.part, "resolved" if last else "resolved, others still firing")
                    continue
                if self.book.key_of(alert.fingerprint) is not None:
                    continue  # Alertmanager's repeat of an alert already answered
                if not alert.node_id:
                    skipped.append(f"{alert.name}: no node label (Hostname, node, instance, ...): said in the channel")
                    posted += self._unknown(alert)
                    continue
                if alert.node_id not in nodes:
                    skipped.append(f"{alert.name} on {alert.node_id}: no such node here (said in the channel)")
                    posted += self._unknown(alert)
                    continue
                try:
                    diagnosis = self.services.source.diagnose(alert.node_id)
                except FabricbotError as exc:
                    skipped.append(f"{alert.name} on {alert.node_id}: {exc}")
                    self._record(alert, "node", f"not diagnosed: {exc}")
                    continue
                part = diagnosis.localization.ref.slug if diagnosis.localization else "node"
                if diagnosis.maintenance:  # planned work pages no one: a repeat once it has ended is posted
                    skipped.append(f"{alert.name} on {alert.node_id}: {diagnosis.maintenance}: not posted")
                    self._record(alert, part, "held: planned work")
                    continue
                at = self.services.clock()
                message = self.book.message(alert.node_id, part)
                if message is None or message.resolved_at is not None:  # none yet, or firing again: a new one
                    ts = post_diagnosis(self.client, self.services, diagnosis, channel=self.channel,
                                        title=_title(alert))
                    self.book.posted(alert.node_id, part, channel=self.channel, ts=ts, at=at)
                    posted += 1
                self.book.firing(alert.fingerprint, node_id=alert.node_id, part=part, alertname=alert.name, at=at)
                self._record(alert, part, "enriched" if message is None or message.resolved_at else "grouped")
        return {"posted": posted, "updated": updated, "skipped": skipped}

    def _unknown(self, alert: NodeAlert) -> int:
        """An alert for a node the store does not know, or naming none: said once per fingerprint (a resolved one
        updates it), so an exporter's name that matches no node, or a rule that keeps no node label, is seen, not
        dropped."""
        part = f"{UNKNOWN if alert.node_id else NAMELESS} {alert.fingerprint}"
        at = self.services.clock()
        labels = ", ".join(f"{k}={v}" for k, v in alert.labels) or "none"
        if alert.node_id:
            said = (f"is an alert for a node I do not know: `{esc(alert.node_id)}` (labels {esc(labels)}). No node "
                    f"of the store has that name or its first label, so nothing was diagnosed: {esc(alert.summary)}")
        else:
            said = (f"names no node (labels {esc(labels)}), so nothing was diagnosed: {esc(alert.summary)}. I diagnose "
                    "the node an alert names by its node label (`Hostname`, `node`, ... as `dcgm.toml` maps them) or "
                    "its `instance`: keep one in the rule's aggregation (`sum by (Hostname) (...)`)")
        said = fitting.clip_mrkdwn(f":grey_question: *Alertmanager: {esc(alert.name)}* {said}", fitting.MAX_TEXT)
        answer = self.client.chat_postMessage(channel=self.channel, text=said, blocks=[fitting.section(said).to_dict()])
        self.book.posted(alert.node_id, part, channel=self.channel, ts=str(answer["ts"]), at=at)
        self.book.firing(alert.fingerprint, node_id=alert.node_id, part=part, alertname=alert.name, at=at)
        self._record(alert, part, "node not known" if alert.node_id else "no node named")
        return 1

    def _update(self, message: AlertMessage, alert: NodeAlert) -> None:
        """The message's resolved line over the summary it showed (its analysis, as remembered with it)."""
        said = _resolved(alert, message)
        known = self.services.posted.analysis_of(message.channel, message.ts, wait_s=0)
        diagnosis = self.services.state.analysis(known) if known is not None else None
        if diagnosis is not None and known is not None:
            tickets, ticketed = open_tickets(self.services, diagnosis)  # as the message showed them, and since
            shown = blocks.diagnosis_blocks(diagnosis, known, title=_title(alert), lead=said, tickets=tickets,
                                            ticketed=ticketed)
        else:
            shown = [fitting.section(said)]
        self.client.chat_update(channel=message.channel, ts=message.ts, text=said,
                                blocks=[b.to_dict() for b in shown])

    def _record(self, alert: NodeAlert, part: str, step: str) -> None:
        self.services.record("alert", actor="alertmanager", subject=f"{alert.where} / {part}", step=step,
                             alertname=alert.name, fingerprint=alert.fingerprint)


def _title(alert: NodeAlert) -> str:
    return fitting.clip(f"Alertmanager: {alert.name} on {alert.where}", fitting.MAX_HEADER)


def _resolved(alert: NodeAlert, message: AlertMessage) -> str:
    since = f" (firing since {fmt.when(alert.starts_at or message.opened_at)})"
    on = f"on `{esc(alert.node_id)}`" if alert.node_id else "(naming no node)"
    return fitting.clip_mrkdwn(f":white_check_mark: *Resolved* (Alertmanager): {esc(alert.name)} {on}{since}: "
                               f"{esc(alert.summary)}", fitting.MAX_TEXT)


def _payload(body: bytes) -> Any:
    """The body's JSON, read as the UTF-8 Alertmanager sends: other bytes, or nesting too deep to read, refused as
    such (ValueError), not guessed at."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"the body is not UTF-8 (byte 0x{body[exc.start]:02x} at position {exc.start})") from None
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("the body's JSON is nested too deep to read") from None


def route(enricher: Enricher, token: str | None) -> Route:
    """The webhook's route: 401 without the bearer token, 400 for a body that is not version 4, else what was done."""

    async def receive(request: Request) -> Response:
        if not authorized(request.headers.get("authorization"), token):
            return PlainTextResponse("missing or wrong bearer token (FABRICBOT_ALERTMANAGER_TOKEN)", status_code=401)
        try:
            payload = _payload(await request.body())
            done = await run_in_threadpool(enricher.receive, payload)
        except (ValueError, FabricbotError) as exc:
            return PlainTextResponse(f"not an Alertmanager webhook body: {exc}", status_code=400)
        except SLACK_FAILURES as exc:  # Alertmanager retries a 5xx: what was not posted is posted then
            log.warning("fabricbot: Slack refused an Alertmanager notification's message: %s", refusal(exc))
            if error_code(exc) in CONTENT_CODES:  # the message itself: refused again at every retry, so none is asked
                return PlainTextResponse(f"Slack refused the message's content: {refusal(exc)}", status_code=422)
            return PlainTextResponse(f"Slack refused the message: {refusal(exc)}", status_code=502)
        return JSONResponse(done)

    return Route(PATH, receive, methods=["POST"])
