"""`/fabric`: diagnose a node, explain a job, rank the fleet, or say how."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

from slack_bolt import Ack, App, Respond
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from diagnostics import Diagnosis, FabricbotError, load_thresholds
from diagnostics.prometheus import sweep_url

from .. import blocks
from ..app import Services
from ..nodes import UnknownName
from ..options import parse_duration

COMMAND = "/fabric"


class UsageError(ValueError):
    """Arguments `/fabric` cannot use; the message is shown to the user."""


@dataclass(frozen=True)
class Request:
    verb: str  # node | job | fleet | help
    target: str = ""
    window_hours: float | None = None


def parse(text: str) -> Request:
    try:
        words = shlex.split(text or "")
    except ValueError as exc:
        raise UsageError(f"cannot read the arguments: {exc}") from None
    if not words or words[0] in ("help", "-h", "--help"):
        return Request("help")
    if words[0] == "fleet":
        if len(words) > 1:
            raise UsageError("`/fabric fleet` takes no arguments")
        return Request("fleet")
    if words[0] == "job":
        if len(words) != 2:
            raise UsageError("usage: `/fabric job <job_id>`")
        return Request("job", words[1])
    if words[0] == "rack":  # a rack of the rack inventory: diagnosed as one, drawn as the rack view
        if len(words) != 2:
            raise UsageError("usage: `/fabric rack <rack>`")
        return Request("node", words[1])
    node, rest = words[0], words[1:]
    window = None
    while rest:
        flag = rest.pop(0)
        if flag == "--window" and rest:
            value = rest.pop(0)
            try:
                window = parse_duration(value).total_seconds() / 3600
            except ValueError:
                raise UsageError(f"`--window` wants a duration like `6h`, `90m` or `2d`, not `{value}`") from None
        else:
            raise UsageError(f"unexpected `{flag}`; usage: `/fabric <node> [--window 6h]`")
    return Request("node", node, window)


def post_diagnosis(client: WebClient, services: Services, diagnosis: Diagnosis, *, channel: str,
                   title: str | None = None, thread_ts: str | None = None) -> str:
    """Post the summary, then the node picture into its thread; returns the summary's ts."""
    analysis_id = services.state.save_analysis(diagnosis, services.clock().isoformat(timespec="seconds"))
    posted = client.chat_postMessage(channel=channel, text=blocks.fallback_text(diagnosis), thread_ts=thread_ts,
                                     blocks=blocks.diagnosis_blocks(diagnosis, analysis_id, title=title))
    ts = str(posted["ts"])
    if services.renderer is not None:
        png = services.renderer(diagnosis)
        client.files_upload_v2(channel=channel, thread_ts=thread_ts or ts, content=png,
                               filename=f"{diagnosis.node_id}.png", title=f"{diagnosis.node_id} topology",
                               alt_txt=blocks.fallback_text(diagnosis),
                               initial_comment=f"Topology of {diagnosis.node_id}: " + (
                                   "degraded links in colour" if blocks.degraded(diagnosis) else "all links healthy"))
    return ts


def post_fleet(client: WebClient, services: Services, *, channel: str) -> None:
    """The fleet: swept on the Prometheus server when one is configured, else ranked from the local store."""
    url = services.settings.prometheus_url
    if url is None:
        diagnoses = services.source.fleet()
        services.record("analysis", actor="fabricbot", subject="fleet", source="store", nodes=len(diagnoses))
        client.chat_postMessage(channel=channel, text="Fleet summary", blocks=blocks.fleet_blocks(diagnoses))
        return
    thresholds = getattr(services.source, "thresholds", None) or load_thresholds()
    try:
        result = sweep_url(thresholds, url, at=services.clock())
    except FabricbotError as exc:  # a bad setting or a refused window: no fleet view at all
        services.record("analysis", actor="fabricbot", subject="fleet", source="prometheus", complete=False,
                        error=str(exc))
        client.chat_postMessage(channel=channel, text=f"Fleet sweep failed, no fleet view (not an all-clear): {exc}")
        return
    services.record("analysis", actor="fabricbot", subject="fleet", source="prometheus", complete=result.complete,
                    nodes=len(result.nodes), offenders=len(result.offenders),
                    incomplete_reasons=result.incomplete_reasons[:10])
    client.chat_postMessage(channel=channel, text=blocks.clip(result.headline(), blocks.MAX_TEXT),
                            blocks=blocks.sweep_blocks(result))


def _unknown_reply(exc: UnknownName, services: Services) -> str:
    if exc.matches:
        names = ", ".join(f"`{m}`" for m in exc.matches)
        return f"I don't know a {exc.kind} called `{exc.name}`. Did you mean {names}?"
    known = services.source.node_ids() if exc.kind == "node" else services.source.job_ids()
    sample = ", ".join(f"`{k}`" for k in known[:5]) or "none yet"
    return f"I don't know a {exc.kind} called `{exc.name}`. Known {exc.kind}s: {sample}."


def register(app: App, services: Services) -> None:
    def ack_command(ack: Ack, command: dict[str, Any]) -> None:
        try:
            request = parse(command.get("text", ""))
        except UsageError as exc:
            ack(text=f"{exc}. Try `/fabric help`.")
            return
        if request.verb == "help":
            ack(blocks=blocks.help_blocks(), text="fabricbot help")
            return
        what = {"node": f"`{request.target}`", "job": f"job `{request.target}`", "fleet": "the fleet"}
        ack(text=f"Looking at {what[request.verb]}…")

    def work(command: dict[str, Any], client: WebClient, respond: Respond) -> None:
        user, channel = command["user_id"], command["channel_id"]
        try:
            request = parse(command.get("text", ""))
        except UsageError:
            return  # the ack already answered
        if request.verb == "help":
            return
        services.record("command", actor=user, subject=request.target or request.verb,
                        command=f"{COMMAND} {command.get('text', '')}".strip(), channel=channel)
        try:
            if request.verb == "fleet":
                post_fleet(client, services, channel=channel)
                return
            if request.verb == "job":
                diagnosis = services.source.explain_job(request.target)
                title = f"Job {request.target}: {diagnosis.node_id}"
            else:
                diagnosis = services.source.diagnose(request.target, window_hours=request.window_hours)
                title = None
            services.record("analysis", actor="fabricbot", subject=diagnosis.node_id,
                            fault=diagnosis.fault_detected,
                            component=diagnosis.isolated_component if diagnosis.fault_detected else None,
                            priority=diagnosis.ticket_priority.value, degradation_pct=diagnosis.degradation_pct,
                            job=request.target if request.verb == "job" else None)
            post_diagnosis(client, services, diagnosis, channel=channel, title=title)
        except UnknownName as exc:
            respond(text=_unknown_reply(exc, services), response_type="ephemeral")
        except FabricbotError as exc:
            respond(text=f"I could not analyse that: {exc}", response_type="ephemeral")
        except SlackApiError as exc:
            respond(text=f"Slack refused the post ({exc.response.get('error')}); invite me to this channel.",
                    response_type="ephemeral")

    app.command(COMMAND)(ack=ack_command, lazy=[work])
