"""Mentions and thread pastes: answer triage questions from the analysis; read pasted tool output.

`@fabricbot why is job 4411 slow?` explains the job; a mention naming a node diagnoses it. Output of
`nvidia-smi nvlink -e` (or topo, or a snippet file) pasted in a thread is read with the ingest readers:
one reading of lifetime counters gives totals and asks for a second paste, two give rates.
"""

from __future__ import annotations

import re
from typing import Any

from slack_bolt import Ack, App
from slack_sdk import WebClient

from diagnostics import FabricbotError

from ..nodes import UnknownName, close_matches
from ..pastes import PasteReader
from ..services import Services
from .commands import post_diagnosis

_MENTION = re.compile(r"<@[A-Z0-9]+>")
_JOB = re.compile(r"\bjob\s+#?([A-Za-z0-9_.:-]+)", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*[A-Za-z0-9]")


EVENTS = ("app_mention", "message")


def register(app: App, services: Services) -> None:
    pastes = PasteReader(services)

    def ack_only(ack: Ack) -> None:
        ack()

    def _reply(client: WebClient, event: dict[str, Any], text: str) -> None:
        client.chat_postMessage(channel=event["channel"], thread_ts=event.get("thread_ts") or event["ts"],
                                text=text)

    def mention(event: dict[str, Any], client: WebClient) -> None:
        text = _MENTION.sub("", event.get("text", "")).strip()
        user, channel = event.get("user", ""), event["channel"]
        thread = event.get("thread_ts") or event["ts"]
        services.record("mention", actor=user, subject=channel, text=text[:300])
        if pastes.handle(client, event, text):
            return
        try:
            job = _JOB.search(text)
            if job:
                diagnosis = services.source.explain_job(job[1])
                services.record("analysis", actor="fabricbot", subject=diagnosis.node_id, job=job[1],
                                fault=diagnosis.fault_detected, component=diagnosis.isolated_component)
                _reply(client, event, services.answer(diagnosis, text))
                return
            nodes = services.source.node_ids()
            named = [w for w in _WORD.findall(text) if w in nodes]
            if named:
                diagnosis = services.source.diagnose(named[0])
                services.record("analysis", actor="fabricbot", subject=diagnosis.node_id,
                                fault=diagnosis.fault_detected, component=diagnosis.isolated_component)
                _reply(client, event, services.answer(diagnosis, text))
                post_diagnosis(client, services, diagnosis, channel=channel, thread_ts=thread)
                return
            near = [m for w in _WORD.findall(text) if "-" in w for m in close_matches(w, nodes, n=1)]
            hint = f" Did you mean `{near[0]}`?" if near else ""
            _reply(client, event, "Ask me about a node or a job: `@fabricbot what is wrong with <node>?`, "
                   f"`@fabricbot why is job <id> slow?`, or paste `nvidia-smi nvlink -e` output here.{hint}")
        except UnknownName as exc:
            _reply(client, event, str(exc))
        except FabricbotError as exc:
            _reply(client, event, f"I could not analyse that: {exc}")

    def message(event: dict[str, Any], client: WebClient) -> None:
        # Only people's messages in threads (or with a snippet) can be pastes; the bot's own are skipped.
        if event.get("bot_id") or event.get("subtype") not in (None, "file_share"):
            return
        if not event.get("thread_ts") and not event.get("files"):
            return
        if _MENTION.search(event.get("text", "")):
            return  # the app_mention listener answers it
        pastes.handle(client, event, event.get("text", ""))

    app.event("app_mention")(ack=ack_only, lazy=[mention])
    app.event("message")(ack=ack_only, lazy=[message])


