"""What happens around an alert, in the channel: planned work, the watch list, repairs verified, the digest.

`/fabric maintenance NODE 2h "reason"` (and `... end`, and the list), `/fabric watch [NODE]`, `/fabric verify`
and `/fabric digest` post from here; the "Report repair" button on a filed ticket moves it to verifying. Each
reads the node source (the store, or the run's own data) and the tracker; none touches hardware.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from typing import Any

from slack_sdk import WebClient

from diagnostics import InputError
from diagnostics import format as fmt
from diagnostics.analysis import RepairVerdict
from diagnostics.config import load_verification
from diagnostics.service import known

from . import blocks, fitting
from .digest import Digest, digest_from, digest_lines, more_line
from .mrkdwn import esc
from .options import parse_duration
from .replies import SLACK_FAILURES
from .services import Services
from .storage import db_lock
from .workflow.states import TicketState
from .workflow.tracker import Ticket, ticket_time
from .workflow.verification import reported_diagnostics, source_check, verify_repairs

SHOWN = 15
log = logging.getLogger("fabricbot")


def set_maintenance(services: Services, *, user: str, args: Sequence[str]) -> str:
    """`NODE DURATION [reason...]` or `NODE end`: the reply's text."""
    rest = list(args[1:])
    # as `/fabric NODE` reads a name (another case, a full-width paste), else with the close matches
    node = known("node", args[0], services.source.node_ids())
    log = services.source.maintenance()
    now = services.clock()
    if rest == ["end"]:
        with db_lock(log.db):  # one connection, many listener threads: one transaction at a time
            ended = log.end(node, at=now, by=user)
        services.record("maintenance", actor=user, subject=node, action="end", ended=len(ended))
        return f"`{esc(node)}`: maintenance ended." if ended else f"`{esc(node)}` is not in maintenance."
    if not rest:
        raise InputError("give how long (e.g. `2h`, `90m`, `1d`) and why, or `end`", field="duration")
    try:
        span = parse_duration(rest[0])
    except ValueError:
        raise InputError("a duration is like `2h`, `90m` or `1d`", field="duration", value=rest[0]) from None
    reason = " ".join(rest[1:]) or "planned work"
    newest = services.source.newest(node)
    with db_lock(log.db):
        before = log.windows(node)
        window = log.begin(node, now=now, newest=newest, span=span, reason=reason, set_by=user, source="slack")
    beside = window.beside(before)
    services.record("maintenance", actor=user, subject=node, action="set", until=window.until.isoformat()
                    if window.until else None, reason=reason)
    after = window.after_readings(newest)
    return (f":construction: `{esc(node)}` {esc(window.note)}. Its findings are still shown; nothing pages and "
            "no ticket is drafted from it until then." + "".join(f"\n:warning: {esc(w)}" for w in (beside, after) if w))


def maintenance_list(services: Services) -> str:
    now = services.clock()
    windows = [w for w in services.source.maintenance().windows() if w.covers(now) or
               (w.until is not None and w.start > now)]
    if not windows:
        return "No node is in maintenance, and none is planned."
    return "\n".join(["*Maintenance*"] + [f"• `{esc(w.node_id)}` {esc(w.note)}" for w in windows[:SHOWN]]
                     + more_line(windows, SHOWN, "fabricbot maintenance"))


def watch_text(services: Services, node: str | None) -> str:
    answer = services.source.watch(node)
    watches = answer.watches
    where = f"`{esc(node)}`" if node else "the fleet"
    if not watches:
        lines = [f":eyes: *Watch of {where}*: {esc(answer.quiet())}"]
    else:
        lines = [f":eyes: *Watch: {fmt.count(len(watches), 'link')} of {where} climbing toward a failing threshold*"]
        lines += [f"• `{esc(w.node_id)}` {esc(w.summary)}" for w in watches[:SHOWN]]
        lines += more_line(watches, SHOWN, "fabricbot watch")
    if not answer.complete:  # the list is not the fleet's: which nodes it leaves out, and why
        missed = answer.not_judged()
        lines += [":warning: *Incomplete*"] + [f"• {esc(line)}" for line in missed[:SHOWN]]
        lines += more_line(missed, SHOWN, "fabricbot watch")
    return "\n".join(lines)


def verify_text(services: Services, client: WebClient | None = None) -> str:
    """Every verifying ticket checked now; each close or reopen is in the tracker and the audit trail, and each
    closed ticket's messages lose their "Report repair" button (through `client`)."""
    with db_lock(services.audit.db):  # the post-repair diagnostics reported (`fabricbot tickets repaired --diag`)
        reported = reported_diagnostics(list(services.audit.entries("repair")))
    results = verify_repairs(tracker=services.tracker, record=services.record,
                             check=source_check(services.source, reported))
    if not results:
        return "No ticket is waiting for its repair to be verified."
    for r in results:
        if client is not None and r.check.verdict is RepairVerdict.HELD:
            retire_repair_button(services, client, r.ticket)
    icon = {RepairVerdict.HELD: ":white_check_mark:", RepairVerdict.FAILED: ":rotating_light:",
            RepairVerdict.HOLDING: ":hourglass_flowing_sand:"}
    said = {RepairVerdict.HELD: "closed", RepairVerdict.FAILED: "reopened, escalated to replacement",
            RepairVerdict.HOLDING: "still verifying"}
    first = [RepairVerdict.FAILED, RepairVerdict.HELD, RepairVerdict.HOLDING]  # the reopened ones matter most
    results = sorted(results, key=lambda r: first.index(r.check.verdict))
    lines = ["*Repairs verified*"] + [
        f"{icon[r.check.verdict]} *{esc(r.ticket.id)}* `{esc(r.ticket.node_id)}` {esc(r.ticket.component)}: "
        f"{said[r.check.verdict]}: {esc(r.check.summary)}" for r in results[:SHOWN]]
    if len(results) > SHOWN:
        counts = Counter(said[r.check.verdict].split(",")[0] for r in results[SHOWN:])
        lines.append(f"… and {len(results) - SHOWN} more ({', '.join(f'{n} {v}' for v, n in counts.items())}; "
                     "`fabricbot tickets list` shows each)")
    return "\n".join(lines)


def digest_of(services: Services) -> Digest:
    """The digest from the service's sweep and watch list, as `fabricbot digest` builds it: the same new parts and
    the same incomplete lines (nodes whose parts cannot be read, nodes of one reading per link)."""
    source = services.source
    return digest_from(source.sweep(), source.watch(None), tracker=services.tracker,
                       maintenance=source.maintenance().windows(), thresholds=source.thresholds)


def digest_text(services: Services) -> str:
    lines = digest_lines(digest_of(services))
    return "\n".join([f"*{esc(lines[0])}*", *(esc(line) for line in lines[1:])])


def report_repair(services: Services, *, ticket_id: str, user: str) -> tuple[str, bool]:
    """The repair is done: the ticket waits in verifying while its part is watched. What to say, and whether the
    press changed anything (a ticket already verifying is left as it is: only the person who pressed is told)."""
    ticket = services.tracker.get(ticket_id)
    if ticket is None:
        raise InputError("no such ticket", field="ticket", value=ticket_id)
    if ticket.status == TicketState.VERIFYING:
        return f"*{esc(ticket.id)}* is already verifying (repair reported {ticket_time(ticket.repaired_at)}).", False
    at = services.clock().isoformat(timespec="seconds")
    try:
        ticket = services.tracker.report_repair(ticket_id, actor=user, at=at, note="reported from Slack")
    except ValueError as exc:
        raise InputError(str(exc), field="ticket", value=ticket_id) from None
    services.record("repair", actor=user, subject=f"{ticket.node_id} / {ticket.component}", ticket=ticket.id,
                    repaired_at=ticket.repaired_at)
    soak = load_verification().soak_hours
    return (f":wrench: *{esc(ticket.id)}* is verifying: {esc(ticket.component)} on `{esc(ticket.node_id)}` is "
            f"watched for {soak:g} h of readings from {ticket_time(ticket.repaired_at)}; `/fabric verify` closes it "
            "when the soak holds, or reopens it, escalated, when the errors come back."), True


def retire_repair_button(services: Services, client: WebClient, ticket: Ticket) -> None:
    """A closed ticket's messages, read back as they stand, updated without their "Report repair" button: pressing
    it could only be refused. A message that cannot be read or updated keeps it (the press is refused, saying
    why), logged, not raised: the close stands either way."""
    note = f":white_check_mark: *{esc(ticket.id)}* is closed: its repair was verified."
    for channel, ts in services.state.ticket_messages(ticket.id):
        try:
            found = client.conversations_replies(channel=channel, ts=ts)
            message: dict[str, Any] = next((m for m in found.get("messages") or [] if m.get("ts") == ts), {})
            shown = list(message.get("blocks") or [])
            if not any(b.get("block_id") == blocks.REPAIR_ACTION for b in shown):
                continue  # gone, or already without the button
            client.chat_update(channel=channel, ts=ts, text=str(message.get("text") or note),
                               blocks=blocks.closed_blocks(shown, note))
        except SLACK_FAILURES as exc:
            log.warning("could not take the repair button off %s's message %s: %s", ticket.id, ts, exc)


def post_text(client: WebClient, channel: str, text: str, *, thread_ts: str | None = None) -> str:
    posted = client.chat_postMessage(channel=channel, text=text, thread_ts=thread_ts,
                                     blocks=[b.to_dict() for b in fitting.text_blocks(text)])
    return str(posted["ts"])

