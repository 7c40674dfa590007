"""A node the source holds link readings of, none of them in the window asked: its answer says where its readings
run (a window ending before the first is not a node never measured), and is incomplete, as a sweep over that window
calls its view incomplete for the same node."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta

import numpy as np

from .. import format as fmt
from ..analysis.diagnosis import STATES_ONLY_ACTION
from ..analysis.racks import SILENT_FROM, silent_note
from ..analysis.rules import worst
from ..config.thresholds import OFF_BUS_RULE
from ..enums import priority_rank
from ..model import Diagnosis
from ..repair import silent_action
from ..store.sources import UNTIMED_ADVICE
from ..tables import rows_of
from ..times import ns, utc_ns
from .source import Window

NO_TIME = np.iinfo(np.int64).min


def starts_after_end(node: str, got: Window) -> datetime | None:
    """The node's first link reading, when it comes after the window's end (none of its readings is before it)."""
    oldest = got.oldest.get(node)
    return oldest if oldest is not None and got.end is not None and oldest > got.end else None


def before_readings(diagnosis: Diagnosis, got: Window, *, why: str) -> Diagnosis:
    """A diagnosis of a window that ends before the node's first link reading: said as that, with where its readings
    run and a window that holds them as what to do, not as a node whose counters were never collected."""
    node = diagnosis.node_id
    first = starts_after_end(node, got)
    if first is None or got.end is None:
        return diagnosis
    note = (f"{node} has {_span(first, got.newest.get(node, first))}, none before the window's end at "
            f"{fmt.when(got.end)} ({why}): its fabric health then is unknown, not healthy")
    update: dict[str, object] = {"warnings": [note, *_not_blind(diagnosis)]}
    if not diagnosis.fault_detected and not diagnosis.findings:
        update["repair_action"] = (f"Ask for a window that holds its readings: an end at or after {fmt.when(first)} "
                                   "(`--end`), or none for its newest")
    return diagnosis.model_copy(update=update)


def _not_blind(diagnosis: Diagnosis) -> list[str]:
    """Its warnings less the one that calls its counters never collected (a window that says why it holds none of
    them says so instead)."""
    blind = f"no link telemetry for {diagnosis.node_id}:"
    return [w for w in diagnosis.warnings if not w.startswith(blind)]


def last_showed(then: Diagnosis, whose: str = "its") -> str | None:
    """What a silent node's last readings showed, where they showed a fault (`then`: its diagnosis of the window
    ending at its newest link reading), said as `whose` they are (a rack's answer names its host): a node gone silent
    on a failing link or a fatal Xid is more urgent than one gone silent healthy. None when they showed none."""
    top = worst(then.failing)
    if not then.fault_detected or top is None:
        return None
    why = f": {top.crossed[0].message}" if top.crossed else ""
    many = len(then.failing)
    said = f"{top.component} failing{why}" if many == 1 else \
        f"{fmt.count(many, 'failing finding')}, the worst {top.component}{why}"
    return f"{whose} last readings ({then.window_said()}) showed {said}"


def gone_silent(diagnosis: Diagnosis, then: Diagnosis | None, since: datetime) -> Diagnosis:
    """The priority and action of a node gone silent (no link reading in its window, its newest at `since`), the one
    rule every door's answer of it takes: where its last readings (`then`, `last_window`) showed a failing link or a
    fatal Xid, or its window holds a fault (a fatal Xid stands until a reset is seen), it is at least as urgent as
    that fault (its GPUs may have fallen off the bus, the job on it stalled), and its action first finds why it
    stopped reporting, by checks that only read, then repairs the fault (its window's own, where one is found in it,
    else the last readings'). A node gone silent healthy keeps its own; planned work keeps it low (nothing pages).
    A sweep, which judges no last readings, takes it for a node whose window holds the fault."""
    faults = [d for d in (diagnosis, then) if d is not None and d.fault_detected]
    if not faults or diagnosis.maintenance:
        return diagnosis
    level = max((d.ticket_priority for d in [diagnosis, *faults]), key=priority_rank)
    repair = faults[0].repair_action
    return diagnosis.model_copy(update={"ticket_priority": level,
                                        "repair_action": silent_action(diagnosis.node_id, fmt.when(since), repair)})


def untimed_note(node: str, held: int, events: int = 0, *, alone: bool = True) -> str:
    """A node's stored link readings (`held`) and `events` that have no time (ingested without `--at`): no window
    holds them; `alone`: they are all it holds, so its health is unknown."""
    unknown = ", so its fabric health is unknown" if alone else ""
    what = [fmt.count(n, word) for n, word in ((held, "link reading"), (events, "event")) if n]
    return (f"{' and '.join(what)} of {node} in the store {'has' if held + events == 1 else 'have'} no time "
            f"({'a log printed without dates, ' if events else ''}ingested without --at){unknown}: {UNTIMED_ADVICE}")


def untimed_held(node: str, got: Window) -> tuple[int, int]:
    """The node's stored link readings and events with no time, which no window places."""
    return got.undated.get(node, 0), got.undated_events.get(node, 0)


def untimed_alone(node: str, got: Window) -> bool:
    """Whether all the node holds is without a time: no dated link reading, and no event in or after the window."""
    if not any(untimed_held(node, got)) or node in got.newest or node in got.later:
        return False
    events = got.tables.get("events")
    return events is None or not len(events) or "node_id" not in events.columns or \
        not rows_of(events["node_id"], node).any()


def untimed_only(diagnosis: Diagnosis, got: Window) -> Diagnosis:
    """A diagnosis of a node whose stored link readings and events all lack a time: said as that, with ingesting
    them again with one as what to do, not as a node whose counters were never collected."""
    node = diagnosis.node_id
    if not untimed_alone(node, got):
        return diagnosis
    update: dict[str, object] = {"warnings": [untimed_note(node, *untimed_held(node, got)),
                                              *_not_blind(diagnosis)]}
    if not diagnosis.fault_detected and not diagnosis.findings:
        readings, _ = untimed_held(node, got)
        what = "readings again with the time they were taken" if readings else "log again with the time it was printed"
        update["repair_action"] = (f"Ingest {node}'s {what} (`fabricbot ingest FILE --store DIR --node {node} --at "
                                   "TIME`, or `--at mtime` for the file's modification time), then ask again")
    return diagnosis.model_copy(update=update)


def unjudged(diagnosis: Diagnosis) -> str | None:
    """Why a node's answer judged none of its links, where it found no fault either: one reading per link (no rate is
    known) or no link read at all (events that only warn, a Fabric Manager state); None when its links were judged.
    Every door calls such an answer incomplete, as a sweep calls such a node unjudged: its health is unknown."""
    if diagnosis.unrated():
        read = "link states only, no error counter" if diagnosis.repair_action == STATES_ONLY_ACTION else \
            diagnosis.unrated_said()
        return f"{diagnosis.node_id}: {read}, so {diagnosis.unrated_unknown()}: {diagnosis.repair_action}"
    if diagnosis.health_unknown():
        return f"{diagnosis.node_id}: no link reading, so its fabric health is unknown: {diagnosis.repair_action}"
    return None


def unheard(node: str, got: Window, span: timedelta, last: str | None = None) -> str | None:
    """Why the node's answer is incomplete: the source holds its link readings, none in the `span` before the window's
    end (the span a sweep reads, whose view calls such a node silent), with what its `last` readings showed (a
    fault, `last_showed`), or none with a time at all; None when one is there, none is held, or they could not be
    read (said as that)."""
    newest = got.newest.get(node)
    if untimed_alone(node, got) and node not in got.unreadable:
        return untimed_note(node, *untimed_held(node, got))  # held, but no window can place any of them
    if newest is None or got.end is None or node in got.unreadable:
        return None
    end_ns = utc_ns(got.end)
    start_ns = end_ns - int(span.total_seconds() * 1e9)
    links = got.tables.get("link_samples")
    if links is not None and len(links) and "node_id" in links.columns:
        mine = rows_of(links["node_id"], node)
        t = ns(links["timestamp"][mine])
        if ((t == NO_TIME) | ((t > start_ns) & (t <= end_ns))).any():
            return None
    first = starts_after_end(node, got)
    where = f"its readings start at {fmt.when(first)}" if first is not None else \
        f"it has {_span(got.oldest.get(node, newest), newest)}"
    return f"{node} has no link reading in the {fmt.hours(span.total_seconds() / 3600)} before {fmt.when(got.end)}: " \
        + where + (f"; {last}" if last else "")


def rack_before_readings(rack: Diagnosis, hosts: list[str], said: Mapping[str, Diagnosis], got: Window, *,
                         why: str) -> Diagnosis:
    """A rack's diagnosis of a window that ends before some hosts' first link reading: said as that, with where
    their readings run, as each tray's answer says it (`said`: the hosts' diagnoses as their doors give them), not
    as hosts whose counters were never collected; the hosts with no reading at all stay said as that."""
    late = [h for h in hosts if starts_after_end(h, got)]
    if not late or got.end is None:
        return rack
    first = min(got.oldest[h] for h in late)
    last = max(got.newest.get(h, got.oldest[h]) for h in late)
    who = late[0] if len(late) == 1 else \
        f"{len(late)} of the rack's {len(hosts)} hosts ({', '.join(late[:8])}{' ...' if len(late) > 8 else ''})"
    note = (f"{who} {'has' if len(late) == 1 else 'have'} {_span(first, last)}, none before the window's end at "
            f"{fmt.when(got.end)} ({why}): {'its' if len(late) == 1 else 'their'} fabric health then is unknown, "
            "not healthy")
    blind = [h for h in hosts if h not in late and (h not in said or any(
        w.startswith("no link telemetry") for w in said[h].warnings))]
    kept = [w for w in rack.warnings if not w.startswith(SILENT_FROM)]
    update: dict[str, object] = {"warnings": [note, *kept, *([silent_note(blind)] if blind else [])]}
    if not rack.fault_detected and not rack.findings and len(late) + len(blind) == len(hosts):
        update["repair_action"] = (f"Ask for a window that holds its hosts' readings: an end at or after "
                                   f"{fmt.when(first)} (`--end`), or none for their newest")
    return rack.model_copy(update=update)


SILENT_READ_BACK = 10  # silent nodes whose last readings an answer judges: as many as it names


def last_faults(hosts: list[str], got: Window, span: timedelta,
                last_of: Callable[[str], Diagnosis | None]) -> dict[str, Diagnosis]:
    """The hosts with no link reading in the `span` before the window's end (the first `SILENT_READ_BACK`) whose last
    readings showed a fault (`last_of` a host: its window ending at its newest link reading), the most urgent
    first."""
    silent = [h for h in hosts if unheard(h, got, span) is not None][:SILENT_READ_BACK]
    lasts = {h: then for h in silent if (then := last_of(h)) is not None and then.fault_detected}
    return {h: lasts[h] for h in sorted(lasts, key=lambda h: (-priority_rank(lasts[h].ticket_priority), h))}


def hosts_showed(lasts: Mapping[str, Diagnosis]) -> list[str]:
    """What each silent host's last readings showed (`last_faults`), named as a rack's answer names it."""
    return [said for h, then in lasts.items() if (said := last_showed(then, f"{h}'s"))]


def unheard_hosts(rack: str, hosts: list[str], got: Window, span: timedelta,
                  lasts: Mapping[str, Diagnosis] | None = None) -> list[str]:
    """Why a rack's answer is incomplete: hosts the source holds link readings of, none in the `span` before the
    window's end, as `unheard` says it of one (one line for them all), with what the `lasts` of them showed
    (`last_faults`), as each host's own answer says it."""
    lasts = lasts or {}
    silent = [h for h in hosts if unheard(h, got, span) is not None]
    if len(silent) == 1:
        then = lasts.get(silent[0])
        return [line for line in [unheard(silent[0], got, span, last_showed(then) if then else None)] if line]
    if not silent or got.end is None:
        return []
    first = min(got.oldest.get(h, got.newest[h]) for h in silent)
    last = max(got.newest[h] for h in silent)
    names = ", ".join(silent[:SILENT_READ_BACK]) + (" ..." if len(silent) > SILENT_READ_BACK else "")
    showed = "".join(f"; {said}" for said in hosts_showed(lasts))
    return [f"{len(silent)} of rack {rack}'s hosts have no link reading in the {fmt.hours(span.total_seconds() / 3600)}"
            f" before {fmt.when(got.end)}: {names}: they have {_span(first, last)}{showed}"]


def _span(first: datetime, last: datetime) -> str:
    """Where a node's link readings run."""
    if first == last:
        return f"link readings at {fmt.when(first)} alone"
    return f"link readings from {fmt.when(first)} to {fmt.when(last)}"


def stopped_inside(got: Window, nodes: list[str], length: timedelta, stale_intervals: float,
                   judged: Mapping[str, Diagnosis]) -> dict[str, datetime]:
    """The nodes whose every series stopped inside the window (of `length`), with their newest link reading: more
    than `stale_intervals` of the node's sampling interval before the window's end. The engine counts a link whose
    series stopped while its node kept reporting; a node whose exporter (or itself) went away is neither each link
    down nor healthy since, and its answer says when it went quiet. A node whose every GPU fell off the bus (its
    diagnosis in `judged` says so) went quiet for that, which its answer names: not an unexplained silence. A node
    silent since before the window is `unheard`'s."""
    links = got.tables.get("link_samples")
    if got.end is None or links is None or not len(links) or "node_id" not in links.columns:
        return {}
    start = got.end - length
    late = {n: t for n in nodes if (t := got.newest.get(n)) is not None and start < t < got.end
            and not (n in judged and every_gpu_off_the_bus(judged[n]))}
    if not late:
        return {}
    # asked of the column as it is (a fleet's node ids are categories: a lookup of codes, where a cast of every row
    # to text cost a third of a second a shard)
    mine = links.loc[links["node_id"].isin(list(late)).to_numpy(bool, na_value=False), ["node_id", "timestamp"]]
    times = mine.assign(node_id=mine["node_id"].astype("string"), t=ns(mine["timestamp"]))
    times = times.loc[times["t"] != NO_TIME, ["node_id", "t"]].drop_duplicates().sort_values(["node_id", "t"])
    interval = times.groupby("node_id")["t"].diff().groupby(times["node_id"]).median()
    end_ns = utc_ns(got.end)
    return {n: t for n, t in late.items()
            if n in interval.index and interval[n] > 0 and end_ns - utc_ns(t) > interval[n] * stale_intervals}


def every_gpu_off_the_bus(diagnosis: Diagnosis) -> bool:
    """Whether every GPU the node's findings name fell off the bus (an Xid 79 each): its series stop with them."""
    gpus = {f.gpu for f in diagnosis.findings if f.gpu is not None}
    gone = {f.gpu for f in diagnosis.findings if f.gpu is not None and any(c.rule == OFF_BUS_RULE for c in f.crossed)}
    return bool(gpus) and gone == gpus
