"""Posting what the analysis found: a node's summary with its picture in the thread, and the fleet.

Each summary's message is remembered with the analysis it shows (`services.posted`), so a button clicked on it
can only draft from that analysis, whatever its value says.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.models.blocks import Block
from slack_sdk.web import SlackResponse

from diagnostics import Diagnosis, FabricbotError
from diagnostics.prometheus import SweepResult
from diagnostics.render import render_correlation, render_fleet

from . import blocks, fitting, fleet_blocks
from .mrkdwn import esc, mention
from .replies import CONTENT_CODES, SLACK_FAILURES, error_code, refusal
from .services import Services
from .workflow.cover import open_line

log = logging.getLogger("fabricbot")
Failed = Callable[[BaseException, str], None]  # tell the person why Slack refused (what was being done)


def send_fitted(send: Callable[..., SlackResponse], layouts: Iterator[list[Block]], **message: Any) -> SlackResponse:
    """`send` (chat.postMessage, chat.update) with the first of a message's layouts; when Slack refuses it for its
    size or layout (`CONTENT_CODES`: a limit it counts otherwise than the fitter), once more with the next smaller
    one. A second refusal, or none smaller to try, is raised for the caller to say what was not posted."""
    try:
        return send(blocks=next(layouts), **message)
    except SlackApiError as exc:
        smaller = next(layouts, None) if error_code(exc) in CONTENT_CODES else None
        if smaller is None:
            raise
        log.warning("fabricbot: Slack refused a message in %s (%s); trying its smaller layout",
                    message.get("channel"), refusal(exc))
        return send(blocks=smaller, **message)


def open_tickets(services: Services, diagnosis: Diagnosis) -> tuple[list[str], dict[str, str]]:
    """The node's open tickets (a tray's rack's too) as a summary lists them, and their parts (slug or name ->
    ticket id, a part's oldest) for its buttons."""
    owners = dict.fromkeys([diagnosis.node_id, *filter(None, [diagnosis.wider_owner()])])
    held = [t for owner in owners for t in services.tracker.open_on(owner)]
    return ([f"• {open_line(t, text=esc, who=mention)}" for t in held],
            {key: t.id for t in reversed(held) for key in (t.component, t.slug)})


def post_diagnosis(client: WebClient, services: Services, diagnosis: Diagnosis, *, channel: str,
                   title: str | None = None, thread_ts: str | None = None, failed: Failed | None = None,
                   job: str | None = None) -> str:
    """Post the summary, then queue the node picture for its thread; returns the summary's ts. `job`: the job the
    person asked of, where the answer is a job's.

    The picture (a render and an upload: the slow part) runs as its own job after the work already queued, so under
    load every summary is posted before the pictures; a refused upload goes to `failed`."""
    now = services.clock()
    asked = None if job else diagnosis.node_id
    if (old := services.source.readings_age(diagnosis.window_end, now=now, asked=asked)) is not None:
        diagnosis = diagnosis.model_copy(update={"warnings": [old, *diagnosis.warnings]})  # as the CLI's stderr
    analysis_id = services.state.save_analysis(diagnosis, now.isoformat(timespec="seconds"))
    tickets, ticketed = open_tickets(services, diagnosis)
    with services.posted.posting(channel):
        posted = send_fitted(client.chat_postMessage,
                             blocks.diagnosis_layouts(diagnosis, analysis_id, title=title, tickets=tickets,
                                                      ticketed=ticketed),
                             channel=channel, text=esc(blocks.fallback_text(diagnosis)), thread_ts=thread_ts)
        ts = str(posted["ts"])
        services.posted.remember(channel, ts, analysis_id)
    if services.renderer is not None:
        services.work.later(post_picture, client, services, diagnosis, channel, thread_ts or ts, failed)
    return ts


def post_picture(client: WebClient, services: Services, diagnosis: Diagnosis, channel: str, thread_ts: str,
                 failed: Failed | None) -> None:
    """The node picture, uploaded into the summary's thread, then the step time against the links' errors when
    the node's job has a history."""
    assert services.renderer is not None
    png = services.renderer(services.source.drawable(diagnosis))
    try:
        client.files_upload_v2(channel=channel, thread_ts=thread_ts, content=png,
                               filename=f"{diagnosis.node_id}.png", title=f"{diagnosis.node_id} topology",
                               alt_txt=fitting.alt_text(blocks.fallback_text(diagnosis)),
                               initial_comment=f"Topology of {esc(diagnosis.node_id)}: {picture_note(diagnosis)}")
        post_correlation(client, diagnosis, channel, thread_ts)
    except SLACK_FAILURES as exc:
        if failed is None:
            raise
        failed(exc, "uploading the node picture")


def picture_note(diagnosis: Diagnosis) -> str:
    """What the node picture shows, in a few words: a node with no link read is drawn with every link "not read in
    the input", and its summary calls its health unknown; one with some links read has the others drawn as not
    read, so what is healthy is every link read, never "all links"."""
    if blocks.degraded(diagnosis):
        return "degraded links in colour"
    if diagnosis.unrated():  # one reading: no link is down, but no rate judged the others
        return "no link down in one reading, with no error rate yet: health unknown"
    return "every link read is healthy" if diagnosis.findings else \
        "no link reading, so no link is coloured: health unknown"


def post_correlation(client: WebClient, diagnosis: Diagnosis, channel: str, thread_ts: str,
                     comment: str | None = None) -> bool:
    """The job's step time against the links' errors, uploaded into a thread, when the node's job has a history;
    whether there was one to post."""
    evidence = diagnosis.evidence
    if evidence is None:
        return False
    client.files_upload_v2(channel=channel, thread_ts=thread_ts, content=render_correlation(diagnosis),
                           filename=f"{diagnosis.node_id}-correlation.png",
                           title=f"{diagnosis.node_id} step time against link errors",
                           alt_txt=fitting.alt_text(diagnosis.verdict or blocks.fallback_text(diagnosis)),
                           initial_comment=comment or f"Job {esc(evidence.job_id)}'s step time against " + (
                               "the links that explain it" if evidence.explained
                               else f"the worst links of {esc(diagnosis.node_id)}"))
    return True


def post_heat_map(client: WebClient, services: Services, result: SweepResult, channel: str, ts: str,
                  failed: Failed | None = None) -> None:
    """The fleet's heat map in the thread of its list (when the bot draws pictures); a refused upload goes to
    `failed`, as a node picture's does."""
    if services.renderer is None:
        return
    try:
        client.files_upload_v2(channel=channel, thread_ts=ts, content=render_fleet(result), filename="fleet.png",
                               title="fleet heat map", alt_txt=fitting.alt_text(result.headline()),
                               initial_comment="The fleet: nodes by GPUs, coloured by the worst finding, the "
                                               "suspected parts outlined")
    except SLACK_FAILURES as exc:
        if failed is None:
            raise
        failed(exc, "uploading the fleet heat map")


def post_fleet(client: WebClient, services: Services, *, channel: str, failed: Failed | None = None) -> None:
    """The fleet: swept on the Prometheus server when one is configured, else ranked from the local store; a
    refused heat map upload goes to `failed`."""
    url = services.settings.prometheus_url
    if url is None:  # swept as `fabricbot sweep --store` sweeps it: the nodes it could not judge are said
        result = services.source.sweep()
        if (old := services.source.readings_age(result.at, now=services.clock())) is not None:
            result.warnings.insert(0, old)  # the fleet view's notes: as `fabricbot sweep` says it
        services.record("analysis", actor="fabricbot", subject="fleet", source="store", nodes=len(result.swept),
                        complete=result.complete, incomplete_reasons=result.incomplete_reasons[:10])
        posted = send_fitted(client.chat_postMessage, fleet_blocks.fleet_layouts(result), channel=channel,
                             text=esc(fitting.clip("Fleet summary" if result.complete else result.headline(),
                                                   fitting.MAX_TEXT)))
        services.work.later(post_heat_map, client, services, result, channel, str(posted["ts"]), failed)
        return
    try:
        result = services.source.sweep_server(url, at=services.clock())
    except FabricbotError as exc:  # a bad setting or a refused window: no fleet view at all
        services.record("analysis", actor="fabricbot", subject="fleet", source="prometheus", complete=False,
                        error=str(exc))
        client.chat_postMessage(channel=channel,
                                text=f"Fleet sweep failed, no fleet view (not an all-clear): {esc(exc)}")
        return
    services.record("analysis", actor="fabricbot", subject="fleet", source="prometheus", complete=result.complete,
                    nodes=len(result.nodes), offenders=len(result.offenders),
                    incomplete_reasons=result.incomplete_reasons[:10])
    posted = send_fitted(client.chat_postMessage, fleet_blocks.sweep_layouts(result), channel=channel,
                         text=esc(fitting.clip(result.headline(), fitting.MAX_TEXT)))
    services.work.later(post_heat_map, client, services, result, channel, str(posted["ts"]), failed)
