"""The watch loop: every FABRICBOT_ALERT_EVERY the fleet is swept through the diagnosis service and the alert channel is
told what changed, without anyone asking.

A part newly failing gets one message (the node's summary, its pictures in the thread, its Draft ticket button;
an urgent one mentions the on-call group, a held one too, saying its inventory is what needs the person); that
message is updated, never reposted, when the part gets worse, a ticket is filed for it, or it stays clean for the
soak. Many parts at once are one incident message naming what they share, and their own alerts wait until a person
acknowledges it. A pass that could not judge every node (a node silent, its readings unreadable) says so once, in a
message updated while that lasts; a silent node's alerts stay open, marked as not reporting, never recovered. The
decisions are `diagnostics`'; the memory is the store's SQLite (`AlertBook`), so a restart neither repeats nor
forgets an alert.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from slack_sdk import WebClient
from slack_sdk.models.blocks import ActionsBlock, ButtonElement

from diagnostics import Diagnosis, FabricbotError, SweepResult
from diagnostics import format as fmt
from diagnostics.analysis import Decision, FailingPart, Pass, Step
from diagnostics.config import AlertPolicy, load_alerts
from diagnostics.store import Alert, StormRecord

from . import blocks, fitting
from .mrkdwn import esc
from .posting import post_picture, send_fitted
from .replies import SLACK_FAILURES, error_code
from .services import Services

log = logging.getLogger("fabricbot")
ACK_ACTION = "storm_ack"
SHOWN_NODES = 40
PASS_FAILURES: tuple[type[Exception], ...] = (*SLACK_FAILURES, FabricbotError)  # a pass may meet these: logged

_SAID = {Step.NEW: ":rotating_light: *New failing part*", Step.WORSE: ":small_red_triangle: *Worse*",
         Step.TICKETED: ":ticket: *Ticket filed*", Step.RECOVERED: ":white_check_mark: *Recovered*",
         Step.SILENT: ":grey_question: *Not reporting*", Step.REPORTING: ":arrows_counterclockwise: *Reporting again*",
         Step.RESTATED: ":arrows_counterclockwise: *Priority restated*", Step.PLANNED: ":construction: *Planned work*",
         Step.PLANNED_ENDED: ":arrows_counterclockwise: *Planned work ended*"}
_TOLD = (Step.NEW, Step.WORSE, Step.RESTATED)  # the steps that say the part's priority and why it is held


def _status(step: Step, alert: Alert, part: FailingPart | None, at: datetime, oncall: str | None,
            planned: str | None = None) -> str:
    """The alert's status line; `planned`: its node's planned work, as its answer says it."""
    where = f"`{esc(alert.node_id)}` {esc(alert.component)}"
    ping = f"<!subteam^{oncall}> " if oncall and part is not None and part.urgent and step in (Step.NEW, Step.WORSE) \
        else ""
    said = f"{ping}{_SAID[step]}: {where}"
    if part is not None and step in (*_TOLD, Step.REPORTING):
        said += f" ({part.severity.value}, {esc(part.priority_said())}): {esc(part.why)}"
    if part is not None and part.held is not None and part.node_held and step in _TOLD:
        said += (f"\n:warning: Held: {esc(part.held)}. Do not drain `{esc(alert.node_id)}` or touch its hardware until "
                 "the input and the platform agree: what needs a person now is the inventory (the node's stated "
                 "platform, or the readings' source if they are another node's), not the part; the recommended "
                 "action below says how to confirm the platform.")
    elif part is not None and part.held is not None and step in _TOLD:  # another part's stands
        said += (f"\n:warning: Held: {esc(part.held)}. Do not act on {esc(alert.component)} until the input and the "
                 "platform agree: what it needs now is the inventory (the node's stated platform, or the readings' "
                 f"source if they are another node's). The other failing parts of `{esc(alert.node_id)}` are not "
                 "held: their tickets stand.")
    if part is not None and part.held is None and step is Step.RESTATED:
        said += "\nReleased: the input and the platform now agree, so its ticket is no longer held."
    if step is Step.RECOVERED:
        said += " — clean for the soak; this alert is closed (a new failure alerts again)."
    if step is Step.SILENT or (alert.silent_since is not None and step is Step.TICKETED):
        since = alert.silent_since or at
        said += (f" — its node has sent no reading since the pass of {since:%Y-%m-%d %H:%M} UTC. Silence is not "
                 "health: this alert stays open until the node reports again and the part is clean for the soak.")
    if step is Step.PLANNED:
        said += (f" — its node is {esc(planned or 'under planned work')}. Planned work does not page and keeps its "
                 "parts out of the view: this alert stays open, and closes once the part is clean for the soak after "
                 "the work.")
    if step is Step.PLANNED_ENDED:
        said += (f" ({part.severity.value}, {esc(part.priority_said())}): {esc(part.why)} — its node's planned work "
                 "is over and the part still fails." if part is not None else
                 " — its node's planned work is over and the part is clean; this alert closes once it stays clean "
                 "for the soak.")
    if step is Step.REPORTING and part is None:
        said += " — its node reports again and the part is clean; this alert closes once it stays clean for the soak."
    if alert.ticket:  # after the step's own clause, which continues the status line
        said += f"\nTicket *{esc(alert.ticket)}* is filed for it."
    return said + f"\n_{at:%Y-%m-%d %H:%M} UTC_"


class AlertLoop:
    """Sweeps and posts every `every_s` seconds on its own thread; `run_once` is one pass (tests call it)."""

    def __init__(self, services: Services, client: WebClient, *, channel: str, every_s: float,
                 oncall: str | None = None, policy: AlertPolicy | None = None,
                 clock: Callable[[], datetime] | None = None) -> None:
        self.services, self.client, self.channel, self.every_s = services, client, channel, every_s
        self.oncall = oncall
        self.clock = clock or services.clock  # a pass's time: when its alerts say they were seen
        self.policy = policy or load_alerts()
        self.book = services.alerts
        self._stop = threading.Event()
        self._broken = False  # an unexpected failure was said in the channel: said again only after a good pass
        self._thread = threading.Thread(target=self._loop, name="fabricbot-alerts", daemon=True)

    def start(self) -> AlertLoop:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.pass_safely()
            if self._stop.wait(self.every_s):
                return

    def pass_safely(self) -> None:
        """One pass that never ends the loop: a known failure (Slack, the network, the service) is logged and the
        next pass tries again; an unexpected one is logged with its traceback and said once in the channel."""
        try:
            self.run_once()
        except PASS_FAILURES as exc:
            log.warning("the alert pass did not finish: %s", exc)
            return
        except Exception as exc:  # the watch must outlive any one pass
            log.exception("the alert pass failed unexpectedly")
            self._say_broken(exc)
            return
        self._broken = False

    def _say_broken(self, exc: Exception) -> None:
        if self._broken:
            return
        text = (f":warning: *The alert pass failed*: {esc(type(exc).__name__)}: {esc(str(exc)[:300])}. The watch "
                f"goes on and tries again every {fmt.period(self.every_s)}; until a pass succeeds, a quiet channel is "
                "not an all-clear. The traceback is in the bot's log.")
        try:
            self.client.chat_postMessage(channel=self.channel, text=fitting.clip_mrkdwn(text, fitting.MAX_TEXT))
        except SLACK_FAILURES as failed:
            log.warning("the failed alert pass was not said: %s", error_code(failed))
            return
        self._broken = True

    # -- one pass ------------------------------------------------------------------------------------------------
    def run_once(self) -> Pass:
        source = self.services.source
        at = self.clock()
        waiting = self.book.waiting_storm()
        first = self.book.watch_began() is None
        swept, done = source.alert_pass(alerts=self.book.active(), at=at, ticket_of=self._ticket,
                                        open_storm=waiting.id if waiting else None, policy=self.policy,
                                        baseline=first and self.policy.first_pass == "summary")
        diagnoses = swept.diagnoses
        decisions = done.decisions
        if first:
            self._begin(done, len(swept.swept), at)
        held = [d for d in decisions if d.step is Step.HELD]
        if done.storm is not None:
            record = self.book.open_storm(at=at, factor=done.storm.factor, nodes=done.storm.nodes,
                                          reason=done.storm.reason, held=len(held))
            decisions = [Decision(d.step, _with_storm(d.alert, record.id), d.part) if d.step is Step.HELD else d
                         for d in decisions]
            self.services.record("storm", actor="fabricbot", subject=done.storm.factor, storm=record.id,
                                 decision="one incident; per-node alerts held until acknowledged",
                                 nodes=len(done.storm.nodes), parts=done.storm.parts, held=len(held),
                                 reason=done.storm.reason)
            self._post_storm(record)
        elif waiting is not None:
            if held:
                self.book.grow_storm(waiting.id, sorted({d.alert.node_id for d in held}), len(held))
                self.services.record("storm", actor="fabricbot", subject=waiting.factor, storm=waiting.id,
                                     decision="joined the waiting incident, held", held=len(held))
                waiting = self.book.storm(waiting.id) or waiting
                self._update_storm(waiting)
            if not waiting.ts:  # its incident's post failed: the held alerts wait for a message people can see
                self._post_storm(waiting)
        self.book.save([d.alert for d in decisions], done.failing, at)
        if not first:
            self._begin_owed(len(swept.swept))
        self._say_blind(swept, at)
        for d in decisions:
            if d.step not in (Step.HELD, Step.KNOWN):
                shown = d.part.seen_on if d.part is not None and d.part.seen_on else d.alert.node_id
                self._tell(d, diagnoses.get(shown), at, done.planned)
        done.decisions = decisions
        return done

    def _begin(self, done: Pass, nodes: int, at: datetime) -> None:
        """The watch's first pass on this store: recorded, and what it found already failing said in one message
        (each known part alerts later only if it gets worse)."""
        known = [d.part for d in done.decisions if d.step is Step.KNOWN and d.part is not None]
        if not self.book.begin_watch(at=at, known=len(known)):
            return
        self.services.record("watch", actor="fabricbot", subject="the alert channel", decision="watch began",
                             nodes=nodes, known=len(known), first_pass=self.policy.first_pass)
        if known:
            self._post_began(known, nodes)

    def _begin_owed(self, nodes: int) -> None:
        """The first pass's message where it was never posted (its post failed, or the bot stopped before it): said
        by a later pass, once, of the parts taken as known then and still open."""
        began = self.book.watch_owed()
        if began is None:
            return
        known = [a for a in sorted(self.book.active().values(), key=lambda a: a.key)
                 if a.opened_at == began and a.ts is None and not a.owed and a.storm is None]
        if known:
            self._post_began(known, nodes)
        else:  # each has recovered or been told since: nothing is left to say
            self.book.watch_posted(channel=self.channel, ts="")

    def _post_began(self, known: Sequence[FailingPart | Alert], nodes: int) -> None:
        text = watch_began_message(known, nodes, self.every_s)
        try:
            said = fitting.clip_mrkdwn(text, fitting.MAX_TEXT)
            posted = self.client.chat_postMessage(channel=self.channel, text=said,
                                                  blocks=[fitting.section(said).to_dict()])
        except SLACK_FAILURES as exc:
            log.warning("the watch's first message was not posted: %s", error_code(exc))
            return
        self.book.watch_posted(channel=self.channel, ts=str(posted["ts"]))

    def _say_blind(self, swept: SweepResult, at: datetime) -> None:
        """An incomplete fleet view said once: one message when it begins, updated (never reposted) when what is
        missing changes and when every node reports again."""
        blind = self.book.blind()
        if swept.complete and blind is None:
            return
        try:
            if swept.complete:
                assert blind is not None
                self.book.end_blind(blind.id, at=at)
                if blind.ts and blind.channel:
                    text = complete_again_message(blind.said, blind.since, at)
                    self.client.chat_update(channel=blind.channel, ts=blind.ts, text=text,
                                            blocks=[fitting.section(text).to_dict()])
                self.services.record("watch", actor="fabricbot", subject="the fleet view", decision="complete again")
                return
            key = blind_key(swept)
            text = incomplete_message(swept, blind.since if blind is not None else at, self.every_s)
            if blind is None:
                blind = self.book.begin_blind(at=at, key=key, said=text)
                if blind is None:
                    return  # another bot's pass says it
            elif key != blind.key:
                self.book.blind_said(blind.id, key=key, said=text)
                if blind.ts and blind.channel:
                    self.client.chat_update(channel=blind.channel, ts=blind.ts, text=text,
                                            blocks=[fitting.section(text).to_dict()])
            if not blind.ts:  # begun now, or its post failed before: posted (the stretch is recorded first)
                posted = self.client.chat_postMessage(channel=self.channel, text=text,
                                                      blocks=[fitting.section(text).to_dict()])
                self.book.blind_said(blind.id, channel=self.channel, ts=str(posted["ts"]))
                self.services.record("watch", actor="fabricbot", subject="the fleet view", decision="incomplete",
                                     silent=len(swept.silent), reasons=len(swept.incomplete_reasons))
        except SLACK_FAILURES as exc:
            log.warning("the incomplete fleet view was not said: %s", error_code(exc))

    def _ticket(self, node: str, slug: str) -> str | None:
        ticket = self.services.tracker.open_ticket(node, slug)
        return None if ticket is None else ticket.id

    def _tell(self, d: Decision, diagnosis: Diagnosis | None, at: datetime, planned: Mapping[str, str]) -> None:
        alert = d.alert
        text = _status(d.step, alert, d.part, at, self.oncall, planned.get(alert.node_id) or None)
        subject = f"{alert.node_id} / {alert.component}"
        try:
            if (d.step is Step.NEW or (d.step is Step.WORSE and not alert.ts)) and diagnosis is not None:
                # a known part that got worse has no message yet: this is its first
                ts = self._post(diagnosis, text)
                self.book.posted(alert.node_id, alert.slug, channel=self.channel, ts=ts)
            elif alert.ts and alert.channel:
                self._update(alert, text, diagnosis if d.part is not None else None)
            else:
                return
        except SLACK_FAILURES as exc:
            log.warning("alert for %s not posted: %s", subject, error_code(exc))
            self.services.record("alert", actor="fabricbot", subject=subject, step=d.step.value,
                                 error=error_code(exc))
            return
        self.services.record("alert", actor="fabricbot", subject=subject, step=d.step.value, channel=self.channel,
                             ticket=alert.ticket)

    def _blocks(self, diagnosis: Diagnosis, analysis_id: int, text: str) -> list[dict[str, Any]]:
        return [b.to_dict() for b in blocks.diagnosis_blocks(diagnosis, analysis_id, lead=text)]

    def _post(self, diagnosis: Diagnosis, text: str) -> str:
        """The alert's message: the status line over the node's summary and buttons; the pictures in its thread."""
        services = self.services
        analysis_id = services.state.save_analysis(diagnosis, self.clock().isoformat(timespec="seconds"))
        with services.posted.posting(self.channel):
            layouts = blocks.diagnosis_layouts(diagnosis, analysis_id, lead=text)
            posted = send_fitted(self.client.chat_postMessage, layouts, channel=self.channel,
                                 text=fitting.clip_mrkdwn(text, fitting.MAX_TEXT))
            ts = str(posted["ts"])
            services.posted.remember(self.channel, ts, analysis_id)
        if services.renderer is not None:
            services.work.later(post_picture, self.client, services, diagnosis, self.channel, ts, None)
        return ts

    def _update(self, alert: Alert, text: str, diagnosis: Diagnosis | None) -> None:
        """The same message, its status line changed (and its summary, when the part was read again)."""
        assert alert.channel is not None and alert.ts is not None
        services = self.services
        if diagnosis is not None:
            analysis_id = services.state.save_analysis(diagnosis, self.clock().isoformat(timespec="seconds"))
            services.posted.remember(alert.channel, alert.ts, analysis_id)
        else:
            known = services.posted.analysis_of(alert.channel, alert.ts, wait_s=0)
            diagnosis = services.state.analysis(known) if known is not None else None
            analysis_id = known or 0
        shown = self._blocks(diagnosis, analysis_id, text) if diagnosis is not None else \
            [fitting.section(text).to_dict()]
        self.client.chat_update(channel=alert.channel, ts=alert.ts, text=fitting.clip_mrkdwn(text, fitting.MAX_TEXT),
                                blocks=shown)

    def _post_storm(self, storm: StormRecord) -> None:
        text, shown = storm_message(storm, self.oncall)
        try:
            posted = self.client.chat_postMessage(channel=self.channel, text=text, blocks=shown)
        except SLACK_FAILURES as exc:
            log.warning("storm incident not posted: %s", error_code(exc))
            return
        self.book.storm_posted(storm.id, channel=self.channel, ts=str(posted["ts"]))

    def _update_storm(self, storm: StormRecord) -> None:
        if storm.ts and storm.channel:
            text, shown = storm_message(storm, self.oncall)
            try:
                self.client.chat_update(channel=storm.channel, ts=storm.ts, text=text, blocks=shown)
            except SLACK_FAILURES as exc:  # the next change updates it again, whole
                log.warning("storm incident not updated: %s", error_code(exc))


def watch_began_message(known: Sequence[FailingPart | Alert], nodes: int, every_s: float) -> str:
    """The first pass's one message: the parts already failing, by node, taken as known rather than paged."""
    by_node: dict[str, list[str]] = {}
    for part in known:
        by_node.setdefault(part.node_id, []).append(part.component)
    shown = "\n".join(f"• `{esc(n)}`: {esc(', '.join(c))}" for n, c in sorted(by_node.items())[:SHOWN_NODES])
    more = f"\n… and {fmt.count(len(by_node) - SHOWN_NODES, 'more node')}" if len(by_node) > SHOWN_NODES else ""
    return (f":eyes: *Watching {fmt.count(nodes, 'node')} every {fmt.period(every_s)}.* "
            f"{fmt.count(len(known), 'part')} on {fmt.count(len(by_node), 'node')} "
            f"{'was' if len(known) == 1 else 'were'} already failing when the watch began: standing faults, not "
            "paged one by one and not taken for one storm. Each alerts again only if it gets worse; `/fabric NODE` "
            f"shows it with its Draft ticket button. Parts failing from now on alert one by one.\n{shown}{more}")


def blind_key(swept: SweepResult) -> str:
    """What an incomplete view misses, as far as a change of it is news: the silent nodes and how many other
    reasons (their wording names the pass's time, which changes every pass)."""
    return ",".join(sorted(swept.silent)) + f"|{len(swept.incomplete_reasons)}"


def incomplete_message(swept: SweepResult, since: datetime, every_s: float) -> str:
    """The one message of an incomplete stretch: what the passes could not judge, and that it is no all-clear."""
    reasons = "\n".join(f"• {esc(r)}" for r in swept.incomplete_reasons) or "• the view is incomplete"
    silent = (f" Alerts on the {fmt.count(len(swept.silent), 'silent node')} stay open, marked as not reporting, and "
              "none recovers while its node is silent." if swept.silent else "")
    said = (f":warning: *Fleet view incomplete* since {since:%Y-%m-%d %H:%M} UTC: the watch (every "
            f"{fmt.period(every_s)}) cannot judge every node, so a quiet channel is not an all-clear.{silent} This "
            f"message is updated when that changes, not repeated each pass.\n{reasons}")
    return fitting.clip_mrkdwn(said, fitting.MAX_TEXT)


def complete_again_message(said: str, since: datetime, at: datetime) -> str:
    """The stretch's message once every node reports again."""
    return fitting.clip_mrkdwn(f":white_check_mark: *Fleet view complete again* at {at:%Y-%m-%d %H:%M} UTC: every "
                               f"node reports. It was incomplete from {since:%Y-%m-%d %H:%M} UTC; it said:\n>"
                               + said.replace("\n", "\n>"), fitting.MAX_TEXT)


def _with_storm(alert: Alert, storm: int) -> Alert:
    return replace(alert, storm=storm)


def storm_message(storm: StormRecord, oncall: str | None) -> tuple[str, list[dict[str, Any]]]:
    """The incident's text and blocks: the common factor, the nodes, and the button while none has acknowledged it."""
    nodes = ", ".join(f"`{esc(n)}`" for n in storm.nodes[:SHOWN_NODES])
    more = f" … and {len(storm.nodes) - SHOWN_NODES} more" if len(storm.nodes) > SHOWN_NODES else ""
    ping = f"<!subteam^{oncall}> " if oncall else ""
    head = (f"{ping}:thunder_cloud_and_rain: *Incident: {len(storm.nodes)} nodes newly failing at once*\n"
            f"Common factor: *{esc(storm.factor)}* ({esc(storm.reason)}).\n"
            "A storm is usually one cause (a driver rollout, an exporter change, a switch), not many hardware "
            f"faults: {fmt.count(storm.held, 'per-node alert')} {'is' if storm.held == 1 else 'are'} held until "
            "someone acknowledges this.")
    if storm.acknowledged_by:
        head += (f"\n:white_check_mark: Acknowledged by <@{esc(storm.acknowledged_by)}>: the parts still failing "
                 "alert one by one from the next pass.")
    shown: list[dict[str, Any]] = [fitting.section(head).to_dict(),
                                   fitting.section(f"*Nodes*\n{nodes}{more}").to_dict()]
    if not storm.acknowledged_by:
        shown.append(ActionsBlock(block_id=f"storm:{storm.id}", elements=[ButtonElement(
            text="Acknowledge incident", action_id=ACK_ACTION, value=str(storm.id), style="primary")]).to_dict())
    return fitting.clip_mrkdwn(head, fitting.MAX_TEXT), shown


def acknowledge(services: Services, client: WebClient, *, storm_id: int, user: str,
                oncall: str | None) -> StormRecord | None:
    """A person acknowledged the incident: recorded, its message updated; the held alerts go out next pass."""
    storm = services.alerts.acknowledge(storm_id, by=user, at=services.clock())
    if storm is None:
        return None
    services.record("storm", actor=user, subject=storm.factor, storm=storm.id, decision="acknowledged",
                    nodes=len(storm.nodes), held=storm.held)
    if storm.ts and storm.channel:
        text, shown = storm_message(storm, oncall)
        client.chat_update(channel=storm.channel, ts=storm.ts, text=text, blocks=shown)
    return storm
