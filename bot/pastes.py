"""Tool output pasted into a Slack thread (or attached as a snippet), read with the ingest readers.

A single reading of cumulative counters is a total since reset, never a rate: the bot shows the totals
and asks for a second paste a few minutes later; with two readings in a thread, the analysis computes
rates over the time between them. Readings are stamped with the Slack message time when they carry none.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import httpx
from slack_sdk import WebClient

from diagnostics import Diagnosis, FabricbotError, InputError
from diagnostics import format as fmt
from diagnostics.analysis import Reading, rates_between
from diagnostics.ingest import IngestResult, Source, detect
from diagnostics.tickets import rules_answer

from .storage import db_lock

if TYPE_CHECKING:
    from .services import Services

PASTES = "bot_pastes"
MIN_LINES = 2


def _strip_fences(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if not ln.strip().startswith("```")]
    return "\n".join(lines)


def _message_time(ts: str) -> datetime:
    return datetime.fromtimestamp(float(ts), UTC)


def totals_text(diagnosis: Diagnosis, limit: int = 12) -> str:
    """Per-link totals of one reading: the links with errors, most first, then how many are clean."""
    dirty = sorted((f for f in diagnosis.findings if any(f.counts.values())),
                   key=lambda f: -sum(f.counts.values()))
    lines = [f"• {f.component}: {fmt.totals(f.counts)}" for f in dirty[:limit]]
    if len(dirty) > limit:
        lines.append(f"…and {len(dirty) - limit} more links with errors")
    lines.append(f"{len(diagnosis.findings) - len(dirty)} of {len(diagnosis.findings)} links show no errors")
    return "\n".join(lines)


class PasteReader:
    def __init__(self, services: Services) -> None:
        self.services = services
        db = services.audit.db
        with db_lock(db):
            db[PASTES].create({"id": int, "channel": str, "thread_ts": str, "message_ts": str,  # type: ignore[union-attr]
                               "node_id": str, "link_samples": str}, pk="id", if_not_exists=True)

    def _sources(self, client: WebClient, event: dict[str, Any], text: str) -> list[Source]:
        out = []
        body = _strip_fences(text)
        if len(body.splitlines()) >= MIN_LINES:
            out.append(Source.from_text(body, name=f"slack message {event.get('ts')}"))
        for f in event.get("files") or []:
            url = f.get("url_private_download") or f.get("url_private")
            if url:
                response = httpx.get(url, headers={"Authorization": f"Bearer {client.token}"}, timeout=10.0)
                if response.status_code == 200:
                    out.append(Source.from_text(response.text, name=f.get("name") or "snippet"))
        return out

    def handle(self, client: WebClient, event: dict[str, Any], text: str) -> bool:
        """Read a paste; True when it held telemetry the readers recognize (and the bot answered)."""
        results = []
        for source in self._sources(client, event, text):
            try:
                results.append(detect.read(source))
            except InputError:
                continue
        if not results:
            return False
        result = IngestResult.combine(results)
        channel, thread = event["channel"], event.get("thread_ts") or event["ts"]
        reply = self._answer(result, channel, thread, event["ts"])
        self.services.record("analysis", actor=event.get("user", ""), subject=f"paste in {channel}",
                             rows=result.rows, warnings=len(result.warnings))
        client.chat_postMessage(channel=channel, thread_ts=thread, text=reply)
        return True

    def _answer(self, result: IngestResult, channel: str, thread: str, ts: str) -> str:
        notes = "".join(f"\n_warning: {w}_" for w in result.warnings[:5])
        reading = Reading.of(result["link_samples"], _message_time(ts))
        if reading is None:
            rows = ", ".join(f"{n} {name}" for name, n in result.rows.items() if n)
            return f"I read that ({rows}) but it holds no link counters, so there is nothing to rate.{notes}"
        db = self.services.audit.db
        with db_lock(db):
            earlier = list(db[PASTES].rows_where("channel = ? and thread_ts = ?", [channel, thread],
                                                 order_by="id desc", limit=1))
            db[PASTES].insert({"channel": channel, "thread_ts": thread, "message_ts": ts,  # type: ignore[union-attr]
                               "node_id": reading.node_id, "link_samples": reading.to_json()})
        if not earlier:
            return (f"These are lifetime totals since the counters were last reset on `{reading.node_id}`, not "
                    f"rates:\n{totals_text(reading.totals())}\nPaste the same command's output again in a few "
                    f"minutes and I will compute the error rates between the two readings.{notes}")
        before = Reading.from_json(earlier[0]["node_id"], earlier[0]["link_samples"])
        try:
            diagnosis, minutes = rates_between(before, reading)
        except FabricbotError as exc:
            return f"I could not compute rates from the two readings: {exc}{notes}"
        return f"Rates over the {minutes:.0f} minutes between your two readings: " + rules_answer(diagnosis) + notes
