"""Mentions and thread pastes: answer triage questions from the analysis; read pasted tool output.

`@fabricbot why is job 4411 slow?` explains the job; a mention naming a node diagnoses it. Output of
`nvidia-smi nvlink -e` (or topo, or a snippet file) pasted in a thread is read with the ingest readers, also when
the message mentions someone else or is also sent to the channel: one reading of lifetime counters gives totals
and asks for a second paste, two give rates. Each event is acknowledged at once and answered from the work queue;
a thread message is queued only when a cheap look finds tool output or a text file in it, so people chatting in a
thread are never queued behind pastes, nor told the bot is busy.
"""

from __future__ import annotations

import re
from typing import Any

from slack_bolt import App, BoltContext
from slack_sdk import WebClient

from diagnostics import FabricbotError

from ..mrkdwn import esc
from ..nodes import NodeSource, UnknownName, close_matches, unknown_reply
from ..pastes import PasteReader
from ..posting import post_diagnosis
from ..replies import SLACK_FAILURES, Replier
from ..services import Services
from ..work import BUSY, Busy

EVENTS = ("app_mention", "message")
# A person's message as the `message` event delivers it: plain, with a file, or a thread reply also sent to the
# channel (https://docs.slack.dev/reference/events/message/thread_broadcast).
PERSON_SUBTYPES = (None, "file_share", "thread_broadcast")
_MENTION = re.compile(r"<@[A-Z0-9]+>")
_JOB = re.compile(r"\bjob\s+#?([A-Za-z0-9_.:-]+)", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*[A-Za-z0-9]")
HOW = ("Ask me about a node or a job: `@fabricbot what is wrong with &lt;node&gt;?`, "
       "`@fabricbot why is job &lt;id&gt; slow?`, or paste `nvidia-smi nvlink -e` output here.")


def _thread(event: dict[str, Any]) -> str:
    return str(event.get("thread_ts") or event["ts"])


def _replier(client: WebClient, event: dict[str, Any]) -> Replier:
    return Replier(client, str(event.get("user", "")), str(event["channel"]), _thread(event))


def _post(client: WebClient, event: dict[str, Any], text: str) -> None:
    client.chat_postMessage(channel=event["channel"], thread_ts=_thread(event), text=text)


def _named(words: list[str], names: list[str]) -> str | None:
    """The first word the source knows, else the first shaped like a name (a digit or a hyphen in it) and close to
    one it knows: that one is asked of the source as `/fabric` asks it, so the reply offers the close matches."""
    held = [w for w in words if w in names]
    if held:
        return held[0]
    near = [w for w in words if any(c.isdigit() or c == "-" for c in w) and close_matches(w, names, n=1)]
    return near[0] if near else None


def _node_named(text: str, source: NodeSource) -> str | None:
    """The node (or rack) a mention asks about; a word no node's name is near (`x-1`, `GB200-NVL72`) names none."""
    words = _WORD.findall(text)
    return _named(words, source.node_ids()) or _named(words, source.rack_ids())


def _job_named(text: str, source: NodeSource) -> str | None:
    """The job a mention asks about: the word after "job" when the source knows it, it is close to a job the source
    knows, or it holds a digit as job ids do (`job 9999` is asked, so the reply says the source has no such job);
    in "is the x-1 job slow?" no job is named."""
    asked = [m[1] for m in _JOB.finditer(text)]
    return _named(asked, source.job_ids()) or next((a for a in asked if any(c.isdigit() for c in a)), None)


def answer_mention(services: Services, pastes: PasteReader, client: WebClient, event: dict[str, Any]) -> None:
    """The work behind one mention: a paste, a job, a node, or how to ask; a post Slack refuses is explained to
    who asked."""
    text = _MENTION.sub("", event.get("text", "")).strip()
    services.record("mention", actor=event.get("user", ""), subject=event["channel"], text=text[:300])
    try:
        _answer(services, pastes, client, event, text)
    except SLACK_FAILURES as exc:
        _replier(client, event).slack_failed(exc, "answering a mention")


def _answer(services: Services, pastes: PasteReader, client: WebClient, event: dict[str, Any], text: str) -> None:
    channel = event["channel"]
    try:
        if pastes.handle(client, event, text):
            return
        job = _job_named(text, services.source)
        if job:
            diagnosis = services.source.explain_job(job)
            services.record_analysis(diagnosis, job=job)
            _post(client, event, esc(services.answer(diagnosis, text)))
            return
        named = _node_named(text, services.source)
        if named:
            diagnosis = services.source.diagnose(named)
            services.record_analysis(diagnosis)
            _post(client, event, esc(services.answer(diagnosis, text)))
            post_diagnosis(client, services, diagnosis, channel=channel, thread_ts=_thread(event),
                           failed=_replier(client, event).slack_failed)
            return
        _post(client, event, HOW)
    except UnknownName as exc:
        _post(client, event, unknown_reply(exc, services.source))
    except FabricbotError as exc:
        _post(client, event, f"I could not analyse that: {esc(exc)}")


def read_paste(services: Services, pastes: PasteReader, client: WebClient, event: dict[str, Any]) -> None:
    """The work behind one thread message: read it if it holds tool output."""
    try:
        pastes.handle(client, event, event.get("text", ""))
    except SLACK_FAILURES as exc:
        _replier(client, event).slack_failed(exc, "answering a paste")


def register(app: App, services: Services) -> None:
    pastes = PasteReader(services)

    def queue(job: Any, client: WebClient, event: dict[str, Any]) -> None:
        try:
            services.work.submit(job, services, pastes, client, event)
        except Busy:
            services.notices.offer(_replier(client, event).tell, BUSY)

    def mention(event: dict[str, Any], client: WebClient) -> None:
        queue(answer_mention, client, event)

    def message(event: dict[str, Any], client: WebClient, context: BoltContext) -> None:
        # Only people's messages in threads (or with a snippet) can be pastes; the bot's own are skipped.
        if event.get("bot_id") or event.get("subtype") not in PERSON_SUBTYPES:
            return
        if not event.get("thread_ts") and not event.get("files"):
            return
        if context.bot_user_id and f"<@{context.bot_user_id}>" in event.get("text", ""):
            return  # the app_mention listener answers it
        if pastes.may_hold_output(client, event):  # chat is never queued, so never told the bot is busy
            queue(read_paste, client, event)

    app.event("app_mention")(mention)
    app.event("message")(message)
