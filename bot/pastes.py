"""Tool output pasted into a Slack thread (or attached as a snippet), read with the ingest readers.

A single reading of cumulative counters is a total since reset, never a rate: the bot shows the totals
and asks for a second paste a few minutes later; with two readings in a thread, the analysis computes
rates over the time between them. Readings are stamped with the Slack message time when they carry none.
"""

from __future__ import annotations

import io
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import httpx
import pandas as pd
from slack_sdk import WebClient

from diagnostics import LINK_SAMPLES, Diagnosis, FabricbotError, InputError, analyze_tables
from diagnostics import format as fmt
from diagnostics.ingest import IngestResult, Source, detect

from .answers import rules_answer
from .storage import db_lock

if TYPE_CHECKING:
    from .app import Services

PASTES = "bot_pastes"
MIN_LINES = 2


def _strip_fences(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if not ln.strip().startswith("```")]
    return "\n".join(lines)


def _message_time(ts: str) -> pd.Timestamp:
    return pd.Timestamp(datetime.fromtimestamp(float(ts), UTC))


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
        links = result["link_samples"].copy()
        notes = "".join(f"\n_warning: {w}_" for w in result.warnings[:5])
        if links.empty:
            rows = ", ".join(f"{n} {name}" for name, n in result.rows.items() if n)
            return f"I read that ({rows}) but it holds no link counters, so there is nothing to rate.{notes}"
        links["timestamp"] = links["timestamp"].fillna(_message_time(ts))
        node = str(links["node_id"].dropna().iloc[0]) if links["node_id"].notna().any() else "pasted node"
        links["node_id"] = links["node_id"].astype(object).fillna(node)
        db = self.services.audit.db
        with db_lock(db):
            earlier = list(db[PASTES].rows_where("channel = ? and thread_ts = ?", [channel, thread],
                                                 order_by="id desc", limit=1))
            db[PASTES].insert({"channel": channel, "thread_ts": thread, "message_ts": ts,  # type: ignore[union-attr]
                               "node_id": node, "link_samples": links.to_json(orient="split", date_format="iso")})
        if not earlier:
            totals = analyze_tables(IngestResult.of(link_samples=LINK_SAMPLES.conform(links)).tables, node_id=node)
            return (f"These are lifetime totals since the counters were last reset on `{node}`, not rates:\n"
                    f"{totals_text(totals)}\nPaste the same command's output again in a few minutes and I will "
                    f"compute the error rates between the two readings.{notes}")
        before = pd.read_json(io.StringIO(earlier[0]["link_samples"]), orient="split")
        both = LINK_SAMPLES.conform(pd.concat([before, links], ignore_index=True))
        return self._rates(both, node) + notes

    def _rates(self, links: pd.DataFrame, node: str) -> str:
        tables = IngestResult.of(link_samples=links).tables
        try:
            diagnosis = analyze_tables(tables, node_id=node)
        except FabricbotError as exc:
            return f"I could not compute rates from the two readings: {exc}"
        minutes = (links["timestamp"].max() - links["timestamp"].min()).total_seconds() / 60
        return f"Rates over the {minutes:.0f} minutes between your two readings: " + rules_answer(diagnosis)
