"""The clickable topology: the node picture as SVG, each degraded link tied to the block action that drafts it.

The diagnosis is the one the bot stored when it posted the summary (its draft buttons carry the analysis id),
so the view shows exactly what the person saw; a click on a link sends the same action as that link's
"Draft ticket" button, or the same pick in the component's select menu.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from diagnostics import Diagnosis, Severity
from diagnostics.render import Drawable, build_scene, wants_rack_view

from .. import blocks
from ..state import ANALYSES, BotState
from ..transport.mock_slack import BOT_USER, Message, MockSlack


@dataclass(frozen=True)
class Target:
    """The summary message whose action element drafts one finding, and the pick for a select menu."""

    message_ts: str
    thread_ts: str | None
    action_id: str
    option: str | None = None

    def json(self) -> dict[str, Any]:
        return {"message_ts": self.message_ts, "action_id": self.action_id, "option": self.option}


def _draft_picks(message: Message) -> list[tuple[blocks.DraftTarget, Target]]:
    """Each thing a summary drafts, with the element (a button, or an option of a select) that drafts it."""
    picks: list[tuple[blocks.DraftTarget, Target]] = []
    for block in message.blocks:
        if block.get("type") != "actions":
            continue
        for element in block.get("elements", []):
            action_id = str(element.get("action_id", ""))
            if not action_id.startswith((blocks.DRAFT_ACTION + ":", blocks.DRAFT_LINK_ACTION + ":")):
                continue
            values = [(str(o["value"]), str(o["value"])) for o in element.get("options", [])]
            if "value" in element:
                values.append((str(element["value"]), ""))
            for value, option in values:
                try:
                    target = blocks.DraftTarget.parse(value)
                except ValueError:
                    continue
                picks.append((target, Target(message.ts, message.thread_ts, action_id, option or None)))
    return picks


def draft_targets(message: Message) -> dict[int, Target]:
    """Finding index -> the element of the summary that drafts it (a button, or an option of the select)."""
    found: dict[int, Target] = {}
    for target, element in _draft_picks(message):
        if target.finding is not None:
            found.setdefault(target.finding, element)
    return found


def suspect_targets(message: Message) -> dict[int | None, Target]:
    """Suspect (its index in Diagnosis.localizations; None: the headline) -> the element that drafts it, for a
    suspect the summary drafts as a component rather than as one of its findings."""
    found: dict[int | None, Target] = {}
    for target, element in _draft_picks(message):
        if target.finding is None:
            found.setdefault(target.localization, element)
    return found


def analysis_of(message: Message) -> int | None:
    """The analysis a summary's draft elements point at (every element of one summary carries the same id)."""
    for block in message.blocks:
        for element in block.get("elements", []) if block.get("type") == "actions" else []:
            if not str(element.get("action_id", "")).startswith((blocks.DRAFT_ACTION, blocks.DRAFT_LINK_ACTION)):
                continue
            for value in [element.get("value"), *(o.get("value") for o in element.get("options", []))]:
                if value:
                    return blocks.DraftTarget.parse(str(value)).analysis_id
    return None


def summary_for_file(slack: MockSlack, file_message: Message) -> Message | None:
    """The summary a picture belongs to: the newest bot message with draft elements before it, in its thread."""
    root = file_message.thread_ts or file_message.ts
    before = [m for m in list(slack.messages) if m.channel == file_message.channel and m.user == BOT_USER
              and (m.ts == root or m.thread_ts == root) and m.ts < file_message.ts and m.ephemeral_to is None]
    return next((m for m in reversed(before) if analysis_of(m) is not None), None)


def latest_analysis(state: BotState, node_id: str) -> int | None:
    with state.lock:
        rows = list(state.db[ANALYSES].rows_where("node_id = ?", [node_id], order_by="id desc", limit=1))
    return int(rows[0]["id"]) if rows else None


def _rates(finding: Any) -> dict[str, float]:
    return {k: round(float(v), 1) for k, v in finding.rates_per_hour.items() if v}


def link_json(diagnosis: Diagnosis, index: int, gid: str, target: Target | None) -> dict[str, Any]:
    f = diagnosis.findings[index]
    port = f"{f.switch} port {f.switch_port} ({f.port_source.value})" if f.switch and f.switch_port is not None \
        else None
    return {"gid": gid, "finding": index, "component": f.component, "severity": f.severity.value,
            "state": f.link_state.value, "peer": f.peer, "port": port, "rates": _rates(f),
            "counts": {k: v for k, v in f.counts.items() if v}, "crossed": [c.message for c in f.crossed],
            "evidence": list(f.evidence), "lanes": list(f.lanes),
            "action": target.json() if target is not None else None}


def rack_units(diagnosis: Diagnosis) -> dict[str, int]:
    """The rack view's clickable units, each tied to the first failing finding it holds: the suspect's outline, and
    each compute tray row and switch chip column with a degraded link (gid -> finding index)."""
    units: dict[str, int] = {}
    loc = diagnosis.localization
    for index, f in enumerate(diagnosis.findings):
        if f.severity is Severity.OK:
            continue
        if loc is not None and (f.component in loc.links or f.component == loc.component):
            units.setdefault("suspect", index)
        ref = f.ref
        if ref.tray is not None and str(ref.tray).isdigit():
            units.setdefault(f"unit-tray{ref.tray}", index)
        if ref.switch_tray is not None and ref.chip is not None:
            units.setdefault(f"unit-switch-tray{ref.switch_tray}-chip{ref.chip}", index)
    return units


def part_json(component: str, kind: str, severity: str, evidence: list[str], finding: int | None,
              target: Target | None) -> dict[str, Any]:
    return {"component": component, "kind": kind, "severity": severity, "evidence": evidence, "finding": finding,
            "action": target.json() if target is not None else None}


def suspect_parts(diagnosis: Diagnosis, drawn: set[int], summary: Message | None) -> list[dict[str, Any]]:
    """What the node's fault names that no drawn link carries: each suspect (a GPU off the bus, an NVSwitch, Fabric
    Manager), then each failing finding of no suspect, with the summary's element that drafts it. Without them a
    node whose fault is not on a link showed nothing to click beside an urgent summary."""
    findings = draft_targets(summary) if summary is not None else {}
    suspects = suspect_targets(summary) if summary is not None else {}
    seen = {diagnosis.findings[i].ref.slug for i in drawn}
    failing = {f.ref.slug: i for i, f in enumerate(diagnosis.findings) if f.severity is not Severity.OK}
    out: list[dict[str, Any]] = []
    locs = diagnosis.localizations or ([diagnosis.localization] if diagnosis.localization else [])
    for n, loc in enumerate(locs):
        if loc.ref.slug in seen:
            continue
        seen.add(loc.ref.slug)
        own = failing.get(loc.ref.slug)
        target = suspects.get(n if diagnosis.localizations else None)
        if target is None and own is not None:  # drafted as its own finding (a GPU's Xid beside the GPU)
            target = findings.get(own)
        out.append(part_json(loc.component, loc.kind.value, loc.severity.value, list(loc.evidence), own, target))
    for slug, index in failing.items():
        if slug in seen or index in drawn:
            continue
        seen.add(slug)
        f = diagnosis.findings[index]
        out.append(part_json(f.component, f.ref.kind.value, f.severity.value, list(f.evidence), index,
                             findings.get(index)))
    return out


def topology_view(drawable: Drawable, analysis_id: int, summary: Message | None) -> dict[str, Any]:
    """The SVG (the same picture as the PNG, on the same graph) and, per degraded link drawn, its details and its
    draft action; for a rack, the rack view with its units clickable; and the suspects no drawn link carries, each
    with its draft action."""
    diagnosis = drawable.diagnosis
    assert diagnosis is not None
    targets = draft_targets(summary) if summary is not None else {}
    links = []
    svg = drawable.picture("svg")[0].decode("utf-8")
    if wants_rack_view(diagnosis):
        links = [link_json(diagnosis, index, gid, targets.get(index)) for gid, index in rack_units(diagnosis).items()]
    else:
        for h in build_scene(drawable.graph, diagnosis).highlights:
            if h.finding is None or h.finding not in diagnosis.findings:
                continue
            index = diagnosis.findings.index(h.finding)
            links.append(link_json(diagnosis, index, h.gid, targets.get(index)))
    parts = suspect_parts(diagnosis, {link["finding"] for link in links}, summary)
    return {"node": diagnosis.node_id, "analysis": analysis_id, "svg": svg, "links": links, "parts": parts,
            "fault": diagnosis.fault_detected,
            "summary_ts": summary.ts if summary else None,
            "thread_ts": (summary.thread_ts or summary.ts) if summary else None,
            "suspect": diagnosis.localization.component if diagnosis.localization else None}
