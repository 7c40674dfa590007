"""The fleet views: the offending nodes of a sweep of the store (`/fabric fleet`) and of Prometheus, most urgent
first, in the order `fabricbot sweep` lists them; an incomplete view says so and is never an all-clear. Kept apart
from `blocks` (one node's summary, its drafts and previews), whose link lines they reuse."""

from __future__ import annotations

from collections.abc import Iterator

from slack_sdk.models.blocks import Block, ContextBlock, HeaderBlock, MarkdownTextObject

from diagnostics import (
    COUNT_RULES,
    LINKS_SHOWN,
    NOT_ALL_CLEAR,
    Offender,
    SweepResult,
    counted_as,
    offending_parts,
)
from diagnostics import format as fmt

from .blocks import finding_line
from .fitting import MAX_BLOCKS, MAX_HEADER, MAX_TEXT, clip, clip_mrkdwn, fitted, section, sections
from .mrkdwn import esc
from .storage import ENV_STORE


def _fewer(limit: int) -> Iterator[int]:
    """A list's lengths to try, longest first: `limit`, half of it, ... 1."""
    while limit > 1:
        yield limit
        limit //= 2
    yield 1


def fleet_blocks(result: SweepResult, limit: int = 15) -> list[Block]:
    """The offending nodes, most urgent first (`SweepResult.ranked`: the order `fabricbot sweep --store` lists them
    in), each with its verdict, how many offending parts it has (named as the sweep names them) and its most urgent
    few, in the sweep's order; a list cut short says how many nodes it leaves out. From the sweep `fabricbot sweep
    --store` makes of the same source: a node it could not judge (one reading per link, a part that cannot be read,
    no reading in the span) makes the view incomplete, said as the sweep says it, and is never counted healthy."""
    return next(fleet_layouts(result, limit))


def fleet_layouts(result: SweepResult, limit: int = 15) -> Iterator[list[Block]]:
    """The fleet view's layouts that fit, most shown first (`fitting.fitted`)."""
    layouts = [(limit, LINKS_SHOWN), *((n, 1) for n in _fewer(limit))]
    return fitted(_fleet(result, n, links) for n, links in layouts)




def _node_lines(result: SweepResult, rank: int, node: str, links: int) -> tuple[list[str], list[str]]:
    """One node of the fleet view: its rank, name, verdict and count, then its `links` most urgent parts, in the
    order `fabricbot sweep` lists them; and what each of its parts is (`counted_as`)."""
    if node in result.diagnoses:
        parts = result.findings_of(node)
        found, kinds = [finding_line(f)[2:] for f in parts], [counted_as(f.ref) for f in parts]
    else:  # a node not read back: its rows are all there is
        rows = [o for o in result.offenders if o.node_id == node]
        found, kinds = [esc(offender_line(o)) for o in rows], [o.counted_as for o in rows]
    lines = [f"*{rank}. `{esc(node)}`*{_verdict(result, node)} · {offending_parts(kinds)}",
             *(f"      • {line}" for line in found[:links])]
    if len(found) > links:
        lines.append(f"      …and {offending_parts(kinds[links:], more=True)} of this node")
    return lines, kinds


def _verdict(result: SweepResult, node: str) -> str:
    said = result.verdict(node)
    return f" — {esc(said)}" if said else ""


def _not_all_clear(result: SweepResult) -> Block:
    why, reasons = result.not_all_clear()
    return section(f"*{NOT_ALL_CLEAR}* {esc(why)}\n" + "\n".join(f"• {esc(r)}" for r in reasons))


def _entry_lines(result: SweepResult, rank: int, entry: list[str], links: int) -> tuple[list[str], list[str]]:
    """One entry of the fleet view: its lead node's lines, and the hosts whose part is on the same ticket named
    after them; what each of their parts is."""
    lines, kinds = _node_lines(result, rank, entry[0], links)
    others = [_node_lines(result, rank, node, 0)[1] for node in entry[1:]]
    if others:
        owner = result.diagnoses[entry[0]].ticket_owner
        named = ", ".join(f"`{esc(n)}`" for n in entry[1:6]) + (" …" if len(entry) > 6 else "")
        lines.append(f"      …and {fmt.count(len(others), 'more host')} under {esc(owner)}'s ticket for the same part "
                     f"({offending_parts([k for mine in others for k in mine])}): {named}")
    return lines, [*kinds, *(k for mine in others for k in mine)]


def _fleet(result: SweepResult, limit: int, links: int) -> list[Block]:
    ranked = result.ranked()
    entries = result.entries()
    listed = [_entry_lines(result, i, entry, links) for i, entry in enumerate(entries, 1)]
    kinds = result.parts_counted()  # as `fabricbot sweep` counts them: a rack's shared port once, not per host
    held = {n for n, d in result.diagnoses.items() if d.maintenance}
    # read once, or not read in the span (the sweep's silent nodes, "not healthy"): neither is among the clear; a
    # node in maintenance is counted there, its planned work what explains its silence
    unjudged = [n for n in dict.fromkeys([*result.unjudged, *result.silent]) if n not in ranked and n not in held]
    clear = sum(1 for n in result.swept if n not in ranked and n not in held and n not in unjudged)
    title = f"Fleet: {offending_parts(kinds)} on {len(ranked)} of {fmt.count(len(result.swept), 'node')}" \
        if result.complete else \
        f"Fleet view INCOMPLETE: {offending_parts(kinds)} on {fmt.count(len(ranked), 'node')} found so far"
    blocks: list[Block] = [HeaderBlock(text=clip(title, MAX_HEADER))]
    if not result.complete:
        blocks.append(_not_all_clear(result))
    if listed:
        lines = [line for shown, _ in listed[:limit] for line in shown]
        if len(listed) > limit:
            rest = [kind for _, mine in listed[limit:] for kind in mine]
            left = sum(len(entry) for entry in entries[limit:])
            lines.append(f"…and {fmt.count(left, 'more node')} ({offending_parts(rest)}), less urgent: "
                         f"`fabricbot sweep --store ${ENV_STORE}` lists every one, in this order")
        blocks.extend(sections("\n".join(lines)))
    window = f"{esc(fmt.window(result.window_hours, result.at, asked=result.window_asked_hours))}; " \
        if result.swept else ""
    count = fmt.count(clear, "healthy node") if result.complete else \
        f"{fmt.count(clear, 'node')} with no offending part found"
    if unjudged:
        count += f", {len(unjudged)} not judged"
    if held:
        count += f", {len(held)} in maintenance"
    notes = "".join(f"{esc(n)}; " for n in result.warnings[:3])
    blocks.append(ContextBlock(elements=[MarkdownTextObject(text=clip_mrkdwn(
        f"{window}{count}; {notes}`/fabric &lt;node&gt;` diagnoses one and offers the tickets", MAX_TEXT))]))
    return blocks


def offender_line(o: Offender) -> str:
    """One offending link as the sweep found it: rule, the value against its threshold, and what was said (plain
    text: escape it for mrkdwn)."""
    measure = ""
    if o.rate_per_hour is not None and o.above is not None and o.rule not in COUNT_RULES:
        measure = f"{fmt.value(o.rate_per_hour, o.unit)} {o.against()}"  # a count is in `detail`
    said = "; ".join(p for p in (measure, o.detail) if p)
    return f"{o.component}: {', '.join(o.rules)} ({o.severity.value})" + (f", {said}" if said else "")


def sweep_blocks(result: SweepResult, limit: int = 40) -> list[Block]:
    """A Prometheus fleet sweep: offending links per node and GPU; an incomplete view says so, never "healthy"."""
    return next(sweep_layouts(result, limit))


def sweep_layouts(result: SweepResult, limit: int = 40) -> Iterator[list[Block]]:
    """The Prometheus sweep's layouts that fit, most shown first (`fitting.fitted`)."""
    return fitted(_sweep(result, n) for n in _fewer(limit))


def _sweep(result: SweepResult, limit: int) -> list[Block]:
    if not result.complete:
        title = f"Fleet view INCOMPLETE: {result.found()} found so far"
    else:
        title = f"Fleet: {result.found()} on {fmt.count(len(result.nodes), 'node')}"
    blocks: list[Block] = [HeaderBlock(text=clip(title, MAX_HEADER))]
    if not result.complete:
        blocks.append(_not_all_clear(result))
    lines: list[str] = []
    for node in result.ranked():  # most urgent first, as `fabricbot sweep` and `/fabric fleet` from a store list them
        mine = [o for o in result.offenders if o.node_id == node]
        lines.append(f"*`{esc(node)}`*{_verdict(result, node)}")
        lines.extend(f"  • {esc(offender_line(o))}" for o in mine)
    if lines:
        shown = lines[:limit]
        more = f"\n…and {len(lines) - len(shown)} more lines" if len(lines) > len(shown) else ""
        blocks.extend(sections("\n".join(shown) + more)[: MAX_BLOCKS - 4])
    elif result.complete:
        blocks.append(section(esc(result.headline())))
    notes = [f"window {result.window_hours:g} h, {result.queries} PromQL rules evaluated on the server"]
    if result.not_pushed_down:
        notes.append("evaluated locally only (on offending nodes): " + esc(", ".join(result.not_pushed_down)))
    notes.extend(esc(w) for w in result.warnings[:3])
    notes.append("`/fabric &lt;node&gt;` diagnoses one and offers the tickets")
    blocks.append(ContextBlock(elements=[MarkdownTextObject(text=clip_mrkdwn("; ".join(notes), MAX_TEXT))]))
    return blocks
