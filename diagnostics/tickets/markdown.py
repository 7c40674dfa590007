"""A ticket as Markdown, for a tracker or a Slack thread.

The body is stored as the tracker will render it, so any link in it (the model writes the summary, the reasoning
and the hypotheses; telemetry writes names and warnings) is made text there (`inert_links`), not only when posted
to Slack.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import format as fmt
from ..enums import ComponentKind, FaultKind, LinkEnd, PortSource, ResetScope
from ..links import inert_links
from .catalog import Part

if TYPE_CHECKING:
    from .ticket import RepairTicket


def _cell(value: object) -> str:
    """A table cell: telemetry text may hold pipes or newlines that would break the table."""
    return str(value).replace("|", "\\|").replace("\n", " ")


def _link(t: RepairTicket) -> str:
    """The link as the input names it; an NVLink fault whose input names no link says so (not the counter's id)."""
    if t.link_named is not None:
        return _cell(t.link_named)
    if t.link is None and t.fault in (FaultKind.NVLINK, FaultKind.NVLINK_AGGREGATE):
        # the plan's own read names it: the link states for a link down (it counts no errors), else the counters
        read = next((s.command for s in t.repair_steps if (s.command or "").startswith("nvidia-smi nvlink -")),
                    "nvidia-smi nvlink -e")
        return f"unknown: the input names none (read `{read}` to find it)"
    if t.link is not None and not any(c.isdigit() for c in t.link_id or ""):
        return str(t.link)  # an event's counter id (an Xid's) names no link: the line's link number does
    return _cell(t.link_id or "-")


def _port(t: RepairTicket) -> str:
    if t.switch is None and t.switch_port is None:
        how = f" (find it with `{t.port_find_with}`)" if t.port_find_with else ""
        return f"unknown{how}"
    switch = t.switch or "unknown switch"
    how = f"; confirm with `{t.port_find_with}`" if t.port_find_with else ""
    if t.switch_port is None:  # the switch alone is named (an SXid line naming no link, a template's chip)
        source = "" if t.port_source is PortSource.UNKNOWN else f"; {t.port_source.value}"
        return f"{switch} (port unknown{source}{how})"
    return f"{switch} port {t.switch_port} ({t.port_source.value}{how})"


def _part(p: Part | None, note: str | None = None) -> str:
    if p is None:
        return f"none ({note})" if note else "none"
    number = f", part number {p.part_number}" if p.part_number else ""
    text = f"{p.description} (`{p.id}`{number})"
    if p.candidates:
        text += ": " + "; ".join(f"{c.fru} on {c.board}" for c in p.candidates)
    if p.decided_by:
        text += f"; `{p.decided_by}` decides" + (f" ({p.decide})" if p.decide else "")
    return text


_RESET = {ResetScope.GPU: "this GPU alone", ResetScope.NVLINK_PEERS: "GPUs {gpus} together (NVLink peers, pre-Ampere)",
          ResetScope.NODE: "none: reboot or restart the node", ResetScope.FABRIC_SERVICE: "the Fabric Manager service",
          ResetScope.NONE: "none until the input and the platform agree"}


_SHARED = (FaultKind.NVSWITCH_SHARED, FaultKind.NVLINK_SHARED)  # what every link shares: no one switch or GPU


def _reset(t: RepairTicket) -> str:
    if t.reset.scope is ResetScope.NODE and t.identity.on_rack:  # a rack's unit: no one host's reboot resets it
        return ("none from a host: a switch tray reboots from NVOS, with the rack drained" if t.reset.stops == "rack"
                else "none from a host: the repair's steps name the compute trays to reset or reboot")
    if t.reset.scope is ResetScope.NODE and t.fault in _SHARED:
        return "a cold power cycle of the drained node, from its BMC (every GPU stops)"
    text = _RESET[t.reset.scope].format(gpus=", ".join(map(str, t.reset.gpus)))
    text += f" (`{t.reset.command}`{f' on {t.gpu_on}' if t.gpu_on else ''})" if t.reset.command else ""
    if t.reset.scope is ResetScope.GPU and t.switched is None:  # the board unknown: so is whether it resets alone
        text += " on an Ampere or later board; a pre-Ampere GPU only with every GPU its NVLinks join"
    if t.escalation and t.reset.command and all(s.command != t.reset.command for s in t.repair_steps):
        text += "; not a step of this repeat offender's ticket: its part is replaced"
    return text


def ticket_markdown(t: RepairTicket) -> str:
    lines = [f"# Repair ticket: {_cell(t.component)} on {_cell(t.node_id)}", "",
             f"**Priority:** {t.priority_line} · **Human review required** · drafted by {t.drafted_by}", "",
             t.summary, ""]
    if t.escalation:
        lines += ["## Repeat offender", "", f"**{t.escalation}**", ""]
    if t.warnings:
        lines += ["## Warnings", ""] + [f"- {_cell(w)}" for w in t.warnings] + [""]
    lines += ["## Component", "",
             "| field | value |", "| --- | --- |",
             f"| kind | {t.component_kind.value} |",
             f"| fault | {t.fault.value} |",
             f"| GPU | {'-' if t.gpu_index is None else t.gpu_index}{f' on {t.gpu_on}' if t.gpu_on else ''} |",
             f"| peer | {_cell(t.peer or '-')} |",
             f"| link | {_link(t)} |",
             f"| lanes | {', '.join(map(str, t.lanes)) if t.lanes else 'not reported'} |",
             *([f"| end | {_end(t)} |"] if t.component_kind in (ComponentKind.NVLINK, ComponentKind.PCIE) else []),
             *([f"| switch port | {_port(t)} |"] if t.component_kind is not ComponentKind.FABRIC_SOFTWARE
               and t.fault not in _SHARED  # no one switch, so no one port
               and (t.switched is not False or t.switch is not None) else []),
             f"| replacement part | {_cell(_part(t.replacement_part, t.part_note))} |",
             *([f"| then | {_cell(_part(t.next_part))} |"] if t.next_part else []),
             f"| reset | {_cell(_reset(t))} |",
             "", "## Physical identity", "", "| field | value |", "| --- | --- |"]
    ident = t.identity
    for name, value in ident.model_dump(exclude={"where"}).items():
        where = ident.where.get(name)
        lines.append(f"| {name.replace('_', ' ')} | {_cell(value)}{f' (read: `{where}`)' if where else ''} |")
    if t.history is not None:
        lines += ["", "## The GPU's history (by serial or UUID, on any node)", ""]
        lines += [f"- {_cell(line)}" for line in t.history.lines()]
    lines += ["", "## Capture first (before anyone touches the node)", ""]
    lines += [f"- `{c.command}`: {c.why}" for c in t.capture_first]
    lines += ["", "## Isolate", ""] + [f"{s.order}. {s.text}" for s in t.isolation_steps]
    lines += ["", "## Repair, in order", ""]
    # a step's command after it, unless its text already gives it in code (`dcgmi diag -r 3` twice in a line)
    lines += [f"{s.order}. {s.text}" + (f" — `{s.command}`" if s.command and f"`{s.command}`" not in s.text else "")
              for s in t.repair_steps]
    e = t.evidence
    lines += ["", "## Evidence", ""]
    if e.window:
        lines.append(f"- judged over the {e.window}")
    if e.degradation_pct is not None:
        lines.append(f"- step time {e.step_time_ms:g} ms against {e.baseline_step_time_ms:g} ms baseline "
                     f"({e.degradation_pct:+.1f}%)" if e.step_time_ms and e.baseline_step_time_ms
                     else f"- degradation {e.degradation_pct:+.1f}%")
    lines += [f"- {c}" for c in e.thresholds_crossed]
    for comp, rates in e.rates_per_hour.items():
        said = fmt.metrics(rates, skip_zero=False)
        crossed = [c for c in e.thresholds_crossed if c.startswith(f"{comp}: ")]
        if crossed and all(any(part in c for c in crossed) for part in said.split(", ")):
            continue  # every rate of it is in its crossed lines above
        lines.append(f"- {comp}: {said}")
    if e.correlation_score is not None:
        lines.append(f"- correlation with step time: {e.correlation_score:.2f}")
    if e.localization:
        conf = f" (confidence {e.localization_confidence:.2f})" if e.localization_confidence is not None else ""
        lines.append(f"- analysis localized: {e.localization}{conf}")
    lines += [f"- {n}" for n in e.notes if n not in e.thresholds_crossed]  # a total's crossed line said once
    c = t.estimated_cost
    lines += ["", "## Estimated cost", ""]
    if c.not_charged is not None:
        lines.append(f"- none charged to this part: {c.not_charged}")
    elif c.lost_fraction is None or c.slowdown_fraction is None:
        lines.append("- not estimated")
    elif c.gpu_hours_per_day is None:
        lines.append(f"- {c.lost_fraction:.1%} of each GPU's time lost (a step {c.slowdown_fraction:.1%} slower); "
                     "the job's GPU count: unknown")
    else:
        lines.append(f"- {c.gpu_hours_per_day:,.1f} GPU-hours lost per day ({c.lost_fraction:.1%} of the GPU time "
                     f"lost, a step {c.slowdown_fraction:.1%} slower, × {c.job_gpus} GPUs × 24 h)")
    lines += [f"- assumed: {a}" for a in c.assumptions]
    if t.hypotheses:
        lines += ["", "## Hypotheses, ranked", ""]
        for h in t.hypotheses:
            mark = " (the analysis's choice)" if h.agrees_with_analysis else ""
            lines.append(f"{h.rank}. {h.component} [{h.kind.value}]{mark}: {'; '.join(h.evidence) or '-'}")
    if t.reasoning:
        lines += ["", "## Reasoning", "", t.reasoning]
    if t.choice:
        ch = t.choice
        lines += ["", "## The model's choice and the rules'", "", f"- rules: {ch.rules}", f"- model: {ch.model} "
                  f"(citing {', '.join(ch.cited) or 'no rows'})", f"- carried: {ch.carried}; {ch.why}"]
    if t.disagreement:
        lines += ["", "## Drafter and analysis disagree", "", t.disagreement]
    if t.fallback_notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in t.fallback_notes]
    return inert_links("\n".join(lines) + "\n")


_ENDS = {LinkEnd.GPU: "the GPU's", LinkEnd.UPSTREAM: "the PCIe switch or root port above the GPU",
         LinkEnd.NVSWITCH: "the NVSwitch port's"}


def _end(t: RepairTicket) -> str:
    """Which end's receiver saw the errors, as the ticket's end row says it."""
    if t.end is None:
        return "not determined (no reading of both ends says which received the errors)"
    where = _ENDS[t.end]
    return f"errors received at {where}" + ("" if t.end is LinkEnd.UPSTREAM else " end")
