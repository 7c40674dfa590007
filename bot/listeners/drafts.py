""""Draft ticket": a preview of the ticket for one finding, posted in the summary's thread.

The click is acknowledged at once; the button is checked and "Drafting…" posted right away (on the notices queue,
never behind a slow draft), then replaced by the preview when the drafter is done (on the drafts queue). A second
click on the same button while its draft runs is told so, not drafted again. A button drafts only from the analysis
its message shows; a value that is not one the bot made, or points past that analysis, gets a reply and drafts
nothing. A refused post gives back the person's draft slot, and a draft whose preview never showed can never be
filed.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from slack_bolt import Ack, App, Respond
from slack_sdk import WebClient

from diagnostics import Diagnosis, FabricbotError
from diagnostics.tickets import escalate, evidence_lines, hardware_of, owners_view

from .. import blocks, replies
from ..drafting import ticket_priority
from ..mrkdwn import esc, mention
from ..posting import post_correlation
from ..replies import CONTENT_CODES, SLACK_FAILURES, error_code
from ..services import Services
from ..work import BUSY, Busy
from ..workflow.cover import covering, standing, with_narrower
from ..workflow.history import part_history
from ..workflow.states import DraftState
from .clicks import Click, click

WAIT_FOR_PLACEHOLDER_S = 60.0
log = logging.getLogger("fabricbot")
BAD_VALUE = "That button's value is not one I made, so I drafted nothing; run `/fabric` again for fresh buttons."


class Refused(Exception):
    """A click the bot will not draft for; the message replaces "Drafting…"."""


def _label(action: dict[str, Any]) -> str:
    """The part a click drafts, as the "Drafting..." notice names it: a menu option's text, else the part the
    button's value names (its label may say its open ticket, or be shortened), else its label less "Draft ticket: "."""
    option = action.get("selected_option")
    if option:
        return str((option.get("text") or {}).get("text") or "") or "this finding"
    named = blocks.DraftTarget.named(str(action.get("value") or ""))
    return named or str((action.get("text") or {}).get("text") or "").removeprefix("Draft ticket: ") or "this finding"


class Slot:
    """One click's hold on its button (another click while it drafts is told so) and on the person's draft slot.
    Each is let go once, and before the person hears how the click ended, so a click right after that is free."""

    def __init__(self, services: Services, user: str, *, free: Callable[[], None] = lambda: None) -> None:
        self.services = services
        self.user = user
        self._free = free
        self._lock = threading.Lock()
        self._freed = self._refunded = False

    def free(self) -> None:
        """The button may be clicked again."""
        with self._lock:
            if self._freed:
                return
            self._freed = True
        self._free()

    def refund(self) -> None:
        """The person's draft slot back: no draft was shown."""
        with self._lock:
            if self._refunded:
                return
            self._refunded = True
        self.services.limiter.refund(self.user)

    def release(self) -> None:
        self.refund()
        self.free()


class Drafting:
    """One click's draft, from "Drafting…" to the preview (or to why not)."""

    def __init__(self, services: Services, at: Click, target: blocks.DraftTarget, slot: Slot) -> None:
        self.services = services
        self.at = at
        self.target = target
        self.slot = slot  # let go before the outcome shows
        self.settled = False  # "Drafting…" replaced, by the preview or by why not

    def settle(self, client: WebClient, placeholder: str, text: str) -> None:
        """Replace "Drafting…" with `text`, best effort: when Slack cannot be reached the person was told already."""
        try:
            client.chat_update(channel=self.at.channel, ts=placeholder, text=text, blocks=[])
            self.settled = True
        except SLACK_FAILURES as exc:
            log.warning("fabricbot: could not replace a drafting message: %s", error_code(exc))

    def check(self) -> tuple[Diagnosis, str, str]:
        """The analysis, component and slug this click drafts; `Refused` (said to the person alone) when the
        button does not belong to its message's analysis or points past it."""
        diagnosis = self._analysis()
        try:
            ref = self.target.ref(diagnosis)
        except ValueError:
            self.services.record("denied", actor=self.at.user, subject=f"analysis {self.target.analysis_id}",
                                 reason="draft button points past its analysis")
            raise Refused(BAD_VALUE) from None
        component = ref.name if ref is not None else diagnosis.isolated_component
        return diagnosis, component, ref.slug if ref is not None else component

    def _analysis(self) -> Diagnosis:
        shown = self.services.posted.analysis_of(self.at.channel, self.at.ts)
        if shown != self.target.analysis_id:
            self.services.record("denied", actor=self.at.user, subject=f"analysis {self.target.analysis_id}",
                                 reason="button value names another message's analysis", message=self.at.ts)
            raise Refused("That button does not match the analysis this message shows, so I drafted nothing; run "
                          "`/fabric` again for fresh buttons.")
        diagnosis = self.services.state.analysis(self.target.analysis_id)
        if diagnosis is None:
            raise Refused("That analysis is gone; run `/fabric` again.")
        return diagnosis

    def run(self, client: WebClient, placeholder: str) -> bool:
        """Draft and show the preview in place of `placeholder`; True when a draft was made and shown."""
        s, at = self.services, self.at
        diagnosis, component, slug = self.check()
        owner = diagnosis.owner_of(slug)  # a rack's part outside this tray is the rack's ticket
        try:
            subject = f"{owner} / {component}"
            when = s.state.analysis_at(self.target.analysis_id) or s.clock().isoformat(timespec="seconds")
            existing = s.tracker.open_ticket(owner, slug, wider=diagnosis.wider_owner(slug))
            if existing is not None:
                known = s.tracker.add_evidence(existing.id, evidence_lines(diagnosis, component, when,
                                                                           self.target.analysis_id), actor=at.user)
                s.record("draft", actor=at.user, subject=subject, outcome="points to open ticket", ticket=known.id)
                raise Refused(f"A ticket for {esc(component)} on `{esc(known.node_id)}` {standing(known, mention)}: "
                              f"*{esc(known.id)}*{esc(covering(known, slug, component))} (filed by "
                              f"{mention(known.filed_by)}). I added this analysis to its evidence.")
            waiting = s.state.pending_draft(self.target.analysis_id, slug, at.channel)
            if waiting is not None:  # a click after its draft was shown: one preview a part, decided once
                s.record("draft", actor=at.user, subject=subject, outcome="points to waiting draft",
                         draft=waiting.id)
                who = mention(waiting.requested_by) if waiting.requested_by else "someone"
                raise Refused(f"A draft of {esc(component)} from this analysis is already waiting in this thread "
                              f"(asked for by {who}): file or discard it there.")
            assert s.drafter is not None
            try:  # drafted from the part's owner's view, as `fabricbot ticket` drafts it: one ticket from any door
                theirs, graph, named = owners_view(diagnosis, s.source.graph(diagnosis), component,
                                                   lambda node: s.source.judged_like(node, diagnosis))
                ticket = s.drafter.draft(theirs, component=named, graph=graph,
                                         thresholds=s.source.thresholds)  # the policy it was judged by
            except FabricbotError as exc:
                raise Refused(f"I could not draft that ticket: {esc(exc)}") from None
            gpu = hardware_of(ticket.identity)
            if gpu is not None:  # the GPU's earlier tickets, on any node; a repeat offender's escalates
                ticket = escalate(ticket, part_history(s.tracker, gpu, node_id=theirs.node_id, slug=slug),
                                  theirs, graph=graph)
            ticket = with_narrower(ticket, s.tracker, theirs, slug)
        except Refused as why:
            self.slot.release()
            client.chat_update(channel=at.channel, ts=placeholder, text=str(why), blocks=[])
            self.settled = True
            return False
        markdown = ticket.to_markdown()
        draft_id = s.state.save_draft(
            analysis_id=self.target.analysis_id, node_id=owner, component=component, slug=slug,
            markdown=markdown, priority=ticket_priority(ticket), drafted_by=ticket.drafted_by, channel=at.channel,
            requested_by=at.user, message_ts=placeholder, gpu_serial=gpu.serial if gpu else None,
            gpu_uuid=gpu.uuid if gpu else None)
        s.record("draft", actor=at.user, subject=subject, draft=draft_id, drafted_by=ticket.drafted_by,
                 priority=ticket_priority(ticket),
                 **({"repeat_offender": ticket.escalation} if ticket.escalation else {}))
        self.slot.free()
        _, cut = blocks.preview_cut(markdown)
        snippet = blocks.snippet_name(owner, slug) if cut else None

        def shown(snippet: str | None) -> dict[str, Any]:
            return {"channel": at.channel, "ts": placeholder, "text": f"Ticket draft for {esc(component)} on "
                    f"{esc(owner)}", "blocks": blocks.preview_blocks(draft_id=draft_id, node_id=owner,
                                                                     component=component, markdown=markdown,
                                                                     drafted_by=ticket.drafted_by,
                                                                     requester=at.user, snippet=snippet)}

        try:
            client.chat_update(**shown(snippet))
        except SLACK_FAILURES as exc:
            s.state.update_draft(draft_id, status=DraftState.UNPOSTED)  # never shown, so never to be filed
            self.slot.refund()
            s.record("draft", actor=at.user, subject=subject, draft=draft_id, outcome="not shown",
                     error=error_code(exc))
            # "Drafting…" must not stay for ever; if even this is refused, the person still hears why
            again = "" if error_code(exc) in CONTENT_CODES else "; click Draft ticket again"
            self.settle(client, placeholder, f":warning: The draft for {esc(component)} could not be shown "
                                             f"(`{esc(error_code(exc))}`), so it cannot be filed{again}.")
            raise
        self.settled = True
        if snippet is not None and not self._upload_whole(client, markdown, snippet, subject):
            self._unpointed(client, draft_id, shown(None))
        if s.renderer is not None and diagnosis.evidence is not None:  # the draft's evidence, as a picture
            s.work.later(self._attach, client, diagnosis, component)
        return True

    def _upload_whole(self, client: WebClient, markdown: str, name: str, subject: str) -> bool:
        """The whole ticket as a snippet in the thread, beside its preview; a refusal is said, the draft stands."""
        try:
            client.files_upload_v2(channel=self.at.channel, thread_ts=self.at.thread, content=markdown,
                                   filename=name, title=f"Ticket draft: {subject}", snippet_type="markdown",
                                   initial_comment=f"The whole ticket draft for {esc(subject)}")
        except SLACK_FAILURES as exc:
            self.at.reply.tell(f"{replies.whole_ticket_not_attached(name)} {replies.explain(exc)}")
            return False
        return True

    def _unpointed(self, client: WebClient, draft_id: int, preview: dict[str, Any]) -> None:
        """The preview, its snippet never attached, said again without pointing at it (what it leaves out is in the
        tracker once filed), so whoever approves it is not sent to a file that is not there; left as it is once
        someone decided on it."""
        draft = self.services.state.draft(draft_id)
        if draft is None or draft.status != DraftState.PENDING:
            return
        try:
            client.chat_update(**preview)
        except SLACK_FAILURES as exc:
            self.at.reply.slack_failed(exc, "correcting the draft's preview")

    def _attach(self, client: WebClient, diagnosis: Diagnosis, component: str) -> None:
        try:
            post_correlation(client, diagnosis, self.at.channel, self.at.thread,
                             comment=f"The evidence for the {esc(component)} draft: its job's step time against "
                                     "the links' errors")
        except SLACK_FAILURES as exc:
            self.at.reply.slack_failed(exc, "attaching the draft's evidence picture")


def register(app: App, services: Services) -> None:
    running: dict[str, str] = {}  # a button (channel, message, value) whose draft runs -> who asked
    lock = threading.Lock()

    def post_placeholder(client: WebClient, at: Click, target: blocks.DraftTarget, label: str, slot: Slot,
                         ready: Future[str]) -> None:
        try:
            Drafting(services, at, target, slot).check()
        except Refused as why:
            slot.release()
            ready.set_exception(why)
            at.reply.tell(str(why))
            return
        try:
            posted = client.chat_postMessage(channel=at.channel, thread_ts=at.thread,
                                             text=f":hourglass_flowing_sand: Drafting the ticket for {esc(label)}… "
                                                  f"(asked by {mention(at.user)})")
            ready.set_result(str(posted["ts"]))
        except Exception as exc:  # the draft job hears of it and tells the person
            ready.set_exception(exc)

    def draft_job(client: WebClient, at: Click, target: blocks.DraftTarget, slot: Slot, ready: Future[str]) -> None:
        drafting = Drafting(services, at, target, slot)
        drafted = False
        placeholder: str | None = None
        try:
            try:
                placeholder = ready.result(timeout=WAIT_FOR_PLACEHOLDER_S)
            except (Busy, TimeoutError):
                if isinstance(ready.exception(timeout=0) if ready.done() else None, SLACK_FAILURES):
                    raise  # the "Drafting…" post itself failed: said below
                slot.release()  # before the person hears, so a click right after is free
                at.reply.tell(BUSY)  # the notices queue was full, or too slow to post "Drafting…"
                return
            drafted = drafting.run(client, placeholder)
        except Refused:
            slot.release()  # the person was told when the click was checked
        except SLACK_FAILURES as exc:
            slot.release()
            at.reply.slack_failed(exc, "posting a ticket draft")
        except Exception as exc:  # the drafter, the tracker or the store: said, never a silent "Drafting…"
            log.exception("fabricbot: a draft failed")
            slot.release()
            at.reply.tell(f"I could not draft that ticket (`{esc(type(exc).__name__)}`: {esc(str(exc)[:200])}); "
                          "try again, and tell the bot's admins if it goes on.")
        finally:
            if not drafted:
                slot.refund()
                if placeholder is not None and not drafting.settled:
                    drafting.settle(client, placeholder, ":warning: This draft stopped before it was shown, so "
                                                         "there is nothing to file; I told the person who asked why.")
            slot.free()

    def on_draft(ack: Ack, body: dict[str, Any], action: dict[str, Any], client: WebClient,
                 respond: Respond) -> None:
        ack()
        at = click(body, client, respond)
        value = str(action.get("value") or (action.get("selected_option") or {}).get("value") or "")
        try:
            target = blocks.DraftTarget.parse(value)
        except ValueError:
            services.record("denied", actor=at.user, subject=f"message {at.ts}", reason="bad draft button value")
            services.notices.offer(at.reply.tell, BAD_VALUE)
            return
        key = f"{at.channel}:{at.ts}:{value}"
        with lock:
            asked = running.get(key)
            if asked is None:
                running[key] = at.user
        if asked is not None:  # a double click, or a second person, while the draft runs
            who = "You" if asked == at.user else mention(asked)
            services.notices.offer(at.reply.tell, f"{who} asked for this draft a moment ago; it is being drafted and "
                                    "will appear in the thread.")
            return

        def free() -> None:
            with lock:
                running.pop(key, None)

        slot = Slot(services, at.user, free=free)
        if services.drafter is None:
            slot.free()
            services.notices.offer(at.reply.tell, "No ticket drafter is installed with this bot.")
            return
        if not services.limiter.allow(at.user):
            services.record("denied", actor=at.user, subject=f"analysis {target.analysis_id}",
                            reason="draft rate limit")
            slot.free()  # no slot was taken
            services.notices.offer(at.reply.tell, f"You have drafted {services.settings.drafts_per_minute} tickets "
                                   "in the last minute; try again shortly.")
            return
        ready: Future[str] = Future()
        try:
            services.drafts.submit(draft_job, client, at, target, slot, ready)
        except Busy:
            slot.release()
            services.notices.offer(at.reply.tell, BUSY)
            return
        try:
            services.notices.submit(post_placeholder, client, at, target, _label(action), slot, ready)
        except Busy as exc:
            ready.set_exception(exc)  # the draft job gives the slot back and tells the person

    app.action(re.compile(rf"^{blocks.DRAFT_ACTION}:"))(on_draft)
    app.action(re.compile(rf"^{blocks.DRAFT_LINK_ACTION}:"))(on_draft)
