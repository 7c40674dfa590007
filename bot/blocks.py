"""Block Kit for the messages the bot posts (the fleet views are in `fleet_blocks`), built with
slack_sdk.models.blocks within Slack's limits.

Slack's limits, and the fitting of text and layouts to them, are in `fitting`; besides those, a button's value
is at most 2000 characters, an option's value 150, and action ids are unique. Every text in a mrkdwn
object that is not the bot's own template (node and link names, verdicts, warnings, drafted text) is escaped
(`mrkdwn.esc`).

Every message's blocks pass through `fit`, which keeps them within `MESSAGE_BUDGET`: a builder offers its layouts,
most shown first (a summary: fewer links in each part's menu, then fewer parts, then fewer links listed), and the
first within the budget is posted; the headline and the verdict are in every layout.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ContextBlock,
    DividerBlock,
    HeaderBlock,
    MarkdownTextObject,
    Option,
    PlainTextObject,
    SectionBlock,
    StaticSelectElement,
)

from diagnostics import (
    ComponentKind,
    ComponentRef,
    Diagnosis,
    Finding,
    Severity,
    counted_as,
    headline_name,
    offending_parts,
)
from diagnostics.analysis import urgent_first
from diagnostics.tickets import link_crossed, link_measures

from .fitting import (
    MAX_ACTIONS,
    MAX_HEADER,
    MAX_LABEL,
    MAX_OPTIONS,
    MAX_TEXT,
    clip,
    clip_mrkdwn,
    fit,
    fitted,
    headed,
    label,
    section,
    sections,
)
from .mrkdwn import esc, mention
from .preview import PREVIEW_CHARS, preview
from .storage import ENV_STORE

BUTTONS_SHOWN = 5  # draft buttons a summary shows; the rest are options of a menu
MAX_MORE_OPTIONS = 200  # options past the buttons, in menus of MAX_OPTIONS
LINES_SHOWN = 20  # degraded links a summary lists; the rest are counted

DRAFT_ACTION = "draft"          # a button: draft the ticket for one component or link
DRAFT_LINK_ACTION = "draft_link"  # a select menu: draft for one link of a shared component
FILE_ACTION = "file_ticket"
DISCARD_ACTION = "discard_draft"
REPAIR_ACTION = "report_repair"  # a filed ticket's button: the repair is done, watch the part


@dataclass(frozen=True)
class DraftTarget:
    """What a draft button or option points at: an analysis the bot stored and a component or finding in it."""

    analysis_id: int
    finding: int | None = None  # index into Diagnosis.findings
    localization: int | None = None  # index into Diagnosis.localizations; neither: the headline component

    def value(self, component: str | None = None) -> str:
        data: dict[str, Any] = {"a": self.analysis_id}
        if self.finding is not None:
            data["f"] = self.finding
        if self.localization is not None:
            data["l"] = self.localization
        if component is not None:
            data["c"] = clip(component, 200)
        return json.dumps(data, separators=(",", ":"))

    @staticmethod
    def named(value: str) -> str | None:
        """The part a button's value names (a button's label may say more: its open ticket, a shortened name);
        None for a value that names none."""
        try:
            named = json.loads(value).get("c")
        except (ValueError, AttributeError):
            return None
        return named if isinstance(named, str) and named else None

    @classmethod
    def parse(cls, value: str) -> DraftTarget:
        """The target a value names; ValueError for any value `value()` did not make."""
        try:
            data = json.loads(value)
            finding, loc = data.get("f"), data.get("l")
            return cls(int(data["a"]), int(finding) if finding is not None else None,
                       int(loc) if loc is not None else None)
        except (ValueError, TypeError, KeyError, AttributeError):
            raise ValueError("not a value of a draft button") from None

    def ref(self, diagnosis: Diagnosis) -> ComponentRef | None:
        """The component in the stored diagnosis this target names (None: a node with nothing isolated); ValueError
        when its index points past the diagnosis (an edited value)."""
        if self.finding is not None:
            if not 0 <= self.finding < len(diagnosis.findings):
                raise ValueError(f"finding {self.finding} is not in the analysis")
            return diagnosis.findings[self.finding].ref
        if self.localization is not None:
            if not 0 <= self.localization < len(diagnosis.localizations):
                raise ValueError(f"suspect {self.localization} is not in the analysis")
            return diagnosis.localizations[self.localization].ref
        return diagnosis.localization.ref if diagnosis.localization is not None else None


def degraded(diagnosis: Diagnosis) -> list[tuple[int, Finding]]:
    """The links worth a ticket, most urgent first (`urgent_first`: the order the fleet doors list a node's parts
    in), with their index in the diagnosis."""
    return urgent_first(diagnosis)


def finding_line(f: Finding) -> str:
    crossed = esc(link_crossed(f))
    return f"• *{esc(f.component)}* ({f.severity.value}): {esc(link_measures(f))}" + (f" — {crossed}" if crossed
                                                                                       else "")


def _button(text: str, action_id: str, value: str, primary: bool, ticket: str | None = None) -> ButtonElement:
    """'Draft ticket: <part>', or 'Draft: <part>' with its words shortened when that is past Slack's label limit:
    the part's numbers are never cut. A part with a `ticket` open says it: a click adds this analysis to that
    ticket's evidence, so the button is no longer the message's primary one."""
    said, short = (f"Draft ticket: {text}", "Draft: ") if ticket is None else (f"Add to {ticket}: {text}",
                                                                               f"{ticket}: ")
    if len(said) > MAX_LABEL:
        said = short + label(text, MAX_LABEL - len(short))
    return ButtonElement(text=said, action_id=action_id, value=value, style="primary" if primary else None)


@dataclass(frozen=True)
class _Draftable:
    """One thing a summary offers to draft: a component or a link, with the menu of its own links if it has one."""

    name: str
    action_id: str
    target: DraftTarget
    links: tuple[tuple[int, str], ...] = ()  # (finding index, link name) of a component's links
    slug: str | None = None  # the part's identity, as its ticket keeps it


def _draftables(diagnosis: Diagnosis, analysis_id: int) -> list[_Draftable]:
    """Each suspected component in the analysis's ranked order (the headline first), with its links worst first, then
    each degraded link no component explains. A finding of the suspect itself (a GPU's Xid beside the GPU) is the
    suspect's draft, not one more; while the fabric software is the suspect, the links down with it are its, not
    each a part to draft."""
    links = [(i, f) for i, f in degraded(diagnosis) if f.ref.kind is not ComponentKind.GPU_FABRIC]  # names no part
    index = {f.component: i for i, f in links}
    rank = {i: r for r, (i, _) in enumerate(links)}
    out: list[_Draftable] = []
    covered: set[int] = set()
    if diagnosis.software_suspect() is not None:
        covered.update(i for i, f in links if f.severity is Severity.DOWN and f.ref.kind is ComponentKind.NVLINK)
    for n, loc in enumerate(diagnosis.localizations or ([diagnosis.localization] if diagnosis.localization else [])):
        if loc.ref.kind is ComponentKind.GPU_FABRIC:
            continue
        every = sorted(((index[name], name) for name in loc.links if name in index), key=lambda p: rank[p[0]])
        covered.update(i for i, _ in every)
        own = [p for p in every if p[1] != loc.component] or every  # its own finding (a GPU's Xid) is its button
        covered.update(i for i, f in links if f.ref.slug == loc.ref.slug)
        if len(own) == 1 and own[0][1] == loc.component:  # a lone link: its own button
            out.append(_Draftable(own[0][1], f"{DRAFT_ACTION}:{own[0][0]}", DraftTarget(analysis_id, own[0][0]),
                                  slug=loc.ref.slug))
            continue
        target = DraftTarget(analysis_id, localization=n if diagnosis.localizations else None)
        out.append(_Draftable(loc.component, f"{DRAFT_ACTION}:loc{n}", target, tuple(own), slug=loc.ref.slug))
    out.extend(_Draftable(f.component, f"{DRAFT_ACTION}:{i}", DraftTarget(analysis_id, i), slug=f.ref.slug)
               for i, f in links if i not in covered)
    return out


def _menu(action_id: str, placeholder: str, options: Sequence[tuple[str, str]]) -> StaticSelectElement:
    return StaticSelectElement(placeholder=PlainTextObject(text=label(placeholder)), action_id=action_id,
                               options=[Option(value=v, text=label(said)) for said, v in options])


@dataclass(frozen=True)
class Shown:
    """How much of a summary one layout shows: links in each part's menu, options past the buttons, parts with a
    button, degraded links listed."""

    options: int = MAX_OPTIONS
    more: int = MAX_MORE_OPTIONS
    buttons: int = BUTTONS_SHOWN
    lines: int = LINES_SHOWN


# A summary's layouts, most shown first; the first whose text is within MESSAGE_BUDGET is posted: fewer links in each
# part's menu (its worst kept), then fewer parts with a button, then fewer degraded links listed.
SUMMARY_LAYOUTS = (*(Shown(n, 2 * n) for n in (MAX_OPTIONS, 75, 50, 35, 25, 15, 10, 5, 0)), Shown(0, 0, 3, 10),
                   Shown(0, 0, 1, 5))


@dataclass(frozen=True)
class Drafts:
    """A summary's draft buttons and menus, and what they leave out."""

    elements: list[ButtonElement | StaticSelectElement]
    parts_left: int = 0  # things to draft with neither a button nor an option
    links_left: int = 0  # links of a part in no menu


def draft_elements(diagnosis: Diagnosis, analysis_id: int, shown: Shown = Shown(),
                   ticketed: Mapping[str, str] | None = None) -> Drafts:
    """A button for each of the first `shown.buttons` things to draft (a component that explains other links gets
    a menu of its worst `shown.options` too), then menus of the rest, `MAX_OPTIONS` each, up to `shown.more` in all
    (the parts first, then their worst links): Slack caps the text of a whole message, and a summary of a node whose
    every link is down must still post. `ticketed`: the parts with a ticket open (their slug or name -> ticket id),
    whose buttons say it; the first part without one is the primary button, where a fault is found: warnings alone
    are drafted only if asked (as `fabricbot ticket` drafts them only for a link named)."""
    items = _draftables(diagnosis, analysis_id)
    elements: list[ButtonElement | StaticSelectElement] = []
    links_left = 0
    primary = diagnosis.fault_detected
    for n, item in enumerate(items[:shown.buttons]):
        ticket = (ticketed or {}).get(item.slug or item.name) or (ticketed or {}).get(item.name)
        elements.append(_button(item.name, item.action_id, item.target.value(item.name), primary and ticket is None,
                                ticket))
        primary = primary and ticket is not None
        listed = item.links[:shown.options]
        links_left += len(item.links) - len(listed)
        if listed:
            said = f"…or one of its {len(item.links)} links" if len(item.links) > 1 else "…or its link alone"
            if len(listed) < len(item.links):
                said = f"…or one of its worst {len(listed)} of {len(item.links)} links"
            elements.append(_menu(f"{DRAFT_LINK_ACTION}:loc{n}", said,
                                  [(name, DraftTarget(analysis_id, i).value()) for i, name in listed]))
    others = items[shown.buttons:]
    listed_others = others[:shown.more]
    room = shown.more - len(listed_others)
    kept: list[tuple[str, str]] = []
    for item in listed_others:
        kept.append((item.name, item.target.value()))
        own = item.links[:max(0, min(shown.options, room))]
        room -= len(own)
        kept.extend((f"{name} ({item.name})", DraftTarget(analysis_id, i).value()) for i, name in own)
    total = len(others) + sum(len(item.links) for item in others)
    for n, chunk in enumerate(_chunks(kept, MAX_OPTIONS)):
        first = n * MAX_OPTIONS + 1
        heading = f"…or draft another ({total} more)" if len(kept) == total <= MAX_OPTIONS else \
            f"…or draft another ({first}-{first + len(chunk) - 1} of {total} more)"
        elements.append(_menu(f"{DRAFT_LINK_ACTION}:more{n}", heading, chunk))
    parts_left = len(others) - len(listed_others)
    return Drafts(elements, parts_left, links_left + total - len(kept) - parts_left)


def _unrated_short(d: Diagnosis) -> str:
    """What an unrated summary leaves unknown, in two words: its rates, or what followed a cut."""
    return "no rate" if d.unrated_unknown() == "no error rate is known" else "the rest unread"


def _chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def summary_fields(d: Diagnosis) -> list[str]:
    degradation = "n/a" if d.degradation_pct is None else f"{d.degradation_pct:+.1f}% step time"
    if d.degradation_pct is not None and d.job_id:
        degradation += f" (job {esc(d.job_id)})"
    correlation = esc(d.verdict) if d.verdict else "no job logs its step time on this node: nothing to correlate"
    return [
        f"*Fault detected*\n{d.fault_said()}" + (
            " (no link read)" if d.health_unknown() else
            f" ({esc(d.unrated_said())}: {_unrated_short(d)})" if d.unrated() else ""),
        f"*Isolated component*\n{esc(d.localization.component if d.localization else d.isolated_said())}"
        + (f"\nticket on `{esc(d.ticket_owner)}`" if d.fault_detected and d.ticket_owner != d.node_id else ""),
        f"*Degradation*\n{degradation}",
        f"*Priority*\n{d.priority_said()}" + (f"\n{esc(stopped)}" if (stopped := d.stopped_said()) else ""),
        f"*Correlation*\n{correlation}",
        f"*Window*\n{esc(d.window_said().removeprefix('window '))}",
    ]


def diagnosis_blocks(d: Diagnosis, analysis_id: int, *, title: str | None = None, lead: str | None = None,
                     tickets: Sequence[str] = (), ticketed: Mapping[str, str] | None = None) -> list[Block]:
    """The summary message: what is wrong, where, how bad, what to do, and a draft button per finding, under a
    `lead` line when one is given (an alert's status), in the first of `SUMMARY_LAYOUTS` that fits; `tickets` and
    `ticketed` as `diagnosis_layouts` takes them."""
    return next(diagnosis_layouts(d, analysis_id, title=title, lead=lead, tickets=tickets, ticketed=ticketed))


def diagnosis_layouts(d: Diagnosis, analysis_id: int, *, title: str | None = None, lead: str | None = None,
                      tickets: Sequence[str] = (), ticketed: Mapping[str, str] | None = None) -> Iterator[list[Block]]:
    """The summary's layouts that fit, most shown first (`fitting.fitted`); `tickets`: the node's open tickets, each
    a line (`workflow.cover.open_line`), so the next engineer sees the fault is in hand before drafting it again;
    `ticketed`: their parts (part -> ticket id), whose buttons say so."""
    return fitted(_summary(d, analysis_id, shown, title=title, lead=lead, tickets=tickets, ticketed=ticketed)
                  for shown in SUMMARY_LAYOUTS)


def _measured_only(d: Diagnosis) -> str | None:
    """A node whose one verdict is its bus bandwidth, no link read: the run's verdict, and that the links are
    unread (not "health unknown" above the run's degraded fabric)."""
    fabric = next((f for f in d.findings if f.ref.kind is ComponentKind.GPU_FABRIC), None)
    if fabric is None or not d.health_unknown():
        return None
    said = "as expected" if fabric.severity is Severity.OK else "below its platform's"
    return f"bus bandwidth {said}, links unread"


def _summary(d: Diagnosis, analysis_id: int, shown: Shown, *, title: str | None, lead: str | None,
             tickets: Sequence[str] = (), ticketed: Mapping[str, str] | None = None) -> list[Block]:
    status = "fault detected" if d.fault_detected else _measured_only(d) or "fabric health unknown" \
        if d.health_unknown() or d.unrated() else "no fault of its own, drained with its rack" if d.stopped_by \
        else "no fabric fault"
    blocks: list[Block] = [section(lead)] if lead else []
    blocks.append(HeaderBlock(text=clip(title, MAX_HEADER) if title else headed(headline_name(d.node_id),
                                                                                 f": {status}")))
    blocks.append(SectionBlock(fields=[MarkdownTextObject(text=clip_mrkdwn(t, 2000)) for t in summary_fields(d)]))
    blocks.append(section(f"*Recommended action*\n{esc(d.repair_action)}"))
    if tickets:
        heading = f"*Open {'ticket' if len(tickets) == 1 else 'tickets'}*"
        blocks.append(section(whole_lines(heading, tickets, len(tickets), lambda left: f"{left} more open")))
    bad = degraded(d)
    if bad:
        kinds = [counted_as(f.ref) for _, f in bad]  # named as the fleet doors count them
        heading = "Degraded links" if set(kinds) == {"link"} else "Degraded parts"
        blocks.append(section(whole_lines(f"*{heading}*", [finding_line(f) for _, f in bad], shown.lines,
                                          lambda left: offending_parts(kinds[len(kinds) - left:], more=True))))
    notes = [esc(w) for w in d.warnings]
    if d.localization is not None:
        notes.append(f"localization confidence {d.localization.confidence:.0%}")
    if notes:
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text=clip_mrkdwn("; ".join(notes), MAX_TEXT))]))
    drafts = Drafts([]) if d.maintenance else draft_elements(d, analysis_id, shown, ticketed)  # planned: none
    for n, chunk in enumerate(_chunks(drafts.elements, MAX_ACTIONS)):
        blocks.append(ActionsBlock(block_id=f"drafts:{n}", elements=list(chunk)))
    if drafts.parts_left or drafts.links_left:
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text=left_out(d, drafts, shown))]))
    return blocks


def whole_lines(heading: str, lines: Sequence[str], most: int, rest: Callable[[int], str]) -> str:
    """A section's text: its heading, at most `most` of its lines, whole, as many as fit Slack's text limit, and
    "…and `rest(n)`" for the n left out: a cut inside a line loses the count of the rest (and can land inside an
    escape or an open bold)."""
    def text(shown: int) -> str:
        more = f"\n…and {rest(len(lines) - shown)}" if len(lines) > shown else ""
        return heading + "\n" + "\n".join(lines[:shown]) + more

    shown = min(most, len(lines))
    while shown > 1 and len(text(shown)) > MAX_TEXT:
        shown -= 1
    return text(shown)


def left_out(d: Diagnosis, drafts: Drafts, shown: Shown) -> str:
    """What a summary's buttons and menus leave out to keep the message within Slack's size, and where it all is."""
    said = []
    if drafts.parts_left:
        said.append(f"…and {drafts.parts_left} more parts and links to draft, with no button or option")
    if drafts.links_left and shown.options:
        said.append(f"menus hold each part's worst {shown.options} links at most: {drafts.links_left} more are "
                    "in none")
    elif drafts.links_left:
        said.append(f"{drafts.links_left} links of the parts are in no menu")
    rack = d.rack is not None and d.rack.rack_id == d.node_id
    where = f"fabricbot analyze --store ${ENV_STORE} --{'rack' if rack else 'node'} {d.node_id}"  # the bot's store
    text = "; ".join(said)
    return (f"{text[0].upper()}{text[1:]}, to keep this message within Slack's size. A part's ticket covers all of "
            f"its links; `{esc(where)}` lists every one.")


def fallback_text(d: Diagnosis) -> str:
    """The plain text of a summary (notifications and screen readers)."""
    if d.health_unknown():  # nothing read: not an all-clear
        return f"{headline_name(d.node_id)}: fabric health unknown, no link read ({d.priority_said()})"
    if d.unrated():  # one reading (or links read once, a counter pinned): no rate, so nothing judged by them
        return (f"{headline_name(d.node_id)}: fabric health unknown, {d.unrated_said()}, {_unrated_short(d)} "
                f"({d.priority_said()})")
    if not d.fault_detected:
        return f"{headline_name(d.node_id)}: no fabric fault ({d.priority_said()})"
    state = d.localization.severity.value if d.localization is not None else "failing"  # a link down is down
    return f"{headline_name(d.node_id)}: {d.isolated_component} {state}, {d.priority_said()} priority"


def preview_cut(markdown: str, limit: int = PREVIEW_CHARS) -> tuple[str, bool]:
    """The ticket's preview text (mrkdwn) and whether anything was left to the snippet (`preview.preview`)."""
    shown = preview(markdown, limit)
    return shown.text, shown.cut


def snippet_name(node_id: str, slug: str) -> str:
    """The file name of a ticket's full text, uploaded beside its preview."""
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in f"{node_id}-{slug}")
    return f"ticket-{safe[:120]}.md"


def preview_blocks(*, draft_id: int, node_id: str, component: str, markdown: str, drafted_by: str,
                   requester: str, snippet: str | None = None) -> list[Block]:
    """The ticket preview in the thread, with File and Discard: within `PREVIEW_CHARS` characters, the steps and
    facts a reviewer approves first (`preview`), and, when that is not all of it, what only the whole ticket holds
    and where it is (`snippet`, uploaded in the thread)."""
    blocks: list[Block] = [HeaderBlock(text=headed(f"Ticket draft: {node_id}", f" / {component}"))]
    shown = preview(markdown)
    blocks.extend(sections(shown.text))
    notes = [f"Drafted by {esc(drafted_by)} for {mention(requester)}. A person reviews it before it is filed."]
    if shown.cut:
        where = f"the snippet `{esc(snippet)}` below" if snippet else "the tracker once it is filed"
        named = [t for t in shown.left_out if t]
        listed = ", ".join(esc(t) for t in named[:-1]) + (" and " if len(named) > 1 else "") + esc(named[-1]) \
            if named else ""
        left = (f"{listed} {'is' if len(named) == 1 else 'are'} only in {where}" if named
                else f"the whole ticket is in {where}")
        notes.insert(0, f"{len(shown.text):,} of {shown.whole:,} characters shown; {left}.")
    blocks.append(ContextBlock(elements=[MarkdownTextObject(text=" ".join(notes))]))
    blocks.append(ActionsBlock(block_id=f"draft:{draft_id}", elements=[
        ButtonElement(text="File ticket", action_id=FILE_ACTION, value=str(draft_id), style="primary"),
        ButtonElement(text="Discard", action_id=DISCARD_ACTION, value=str(draft_id), style="danger"),
    ]))
    return fit([blocks])


def decided_blocks(previous: list[dict[str, Any]], outcome: str,
                   ticket_id: str | None = None) -> list[dict[str, Any]]:
    """The preview after a decision: its buttons replaced by the outcome line (and, for a ticket, the button that
    reports its repair done)."""
    kept = [b for b in previous if b.get("type") != "actions" and b.get("block_id") != REPAIR_ACTION]
    out = [*kept, section(outcome).to_dict()]
    if ticket_id is not None:
        out.append(ActionsBlock(block_id=REPAIR_ACTION, elements=[
            ButtonElement(text="Report repair", action_id=REPAIR_ACTION, value=ticket_id)]).to_dict())
    return out


def closed_blocks(previous: list[dict[str, Any]], note: str) -> list[dict[str, Any]]:
    """A filed ticket's message once the ticket is closed: its "Report repair" button gone (a closed ticket takes
    no repair report) and `note` in its place."""
    return [*(b for b in previous if b.get("block_id") != REPAIR_ACTION), section(note).to_dict()]


def help_blocks() -> list[Block]:
    text = "\n".join([
        "*fabricbot* diagnoses NVLink, NVSwitch and PCIe faults and drafts repair tickets for review.",
        "• `/fabric &lt;node&gt; [--window 6h]`: what is wrong with one node, its picture, and ticket buttons",
        "• `/fabric job &lt;job_id&gt;`: which node and link explain a job's slowdown",
        "• `/fabric rack &lt;rack&gt;`: a GB200 NVL72 rack as one: the unit behind its trays' failing links, "
        "its rack view",
        "• `/fabric fleet`: the worst links across the fleet (swept on Prometheus when one is configured)",
        "• `/fabric maintenance &lt;node&gt; 2h \"why\"` (or `... end`; alone: the list): planned work pages nobody",
        "• `/fabric watch [&lt;node&gt;]`: links climbing toward a failing threshold, with when they will cross",
        "• `/fabric verify`: judge every repaired ticket on the readings since its repair (close or reopen)",
        "• `/fabric digest`: new failing parts, the watch list, repairs verifying, nodes in maintenance",
        "• `/fabric help`: this text",
        "Mention me with a question (`@fabricbot why is job 4411 slow?`), or paste `nvidia-smi nvlink -e` "
        "output in a thread.",
    ])
    return [section(text), DividerBlock()]
