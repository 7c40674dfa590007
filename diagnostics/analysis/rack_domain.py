"""The rack as the unit: the fabric software of its NVLink domain, and incidents that take half its trays at once.

- The domain's fabric software: IMEX down (`nvidia-imex-ctl -N`: a compute tray's node not READY, or the domain not
  UP; NVIDIA's IMEX guide: it must be up before CUDA applications start), the trays' GPUs split over more than one
  ClusterUUID or CliqueId, a tray's fabric state not Completed (NMX-Controller has not set its GPUs up). One suspect
  for the rack, no part, every compute tray to drain: one diagnosis and one ticket.
- A rack-level incident: at least `rack_min_share` of the rack's compute trays start failing within `rack_within_s`
  of one another and no switch tray, chip or cable cartridge is common to them (power, cooling, a rack-wide event;
  NVSentinel issue 367 asks for this instead of one ticket per tray). One suspect for the rack; the units it would
  otherwise be are said in its evidence.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from .. import format as fmt
from ..components import ComponentRef
from ..config.thresholds import SOFTWARE_RULE
from ..enums import ComponentKind, EventKind, FaultKind, LinkType, Severity, severity_rank
from ..model import Crossing, Finding, Localization
from ..times import ns, utc_datetime
from .rack_localize import Placed

SWITCH_UNITS = (ComponentKind.NVSWITCH, ComponentKind.SWITCH_TRAY, ComponentKind.CARTRIDGE)


def _bad(f: Finding) -> bool:
    return f.severity in (Severity.FAILING, Severity.DOWN)


def imex_notes(hosts: Mapping[str, str], events: pd.DataFrame | None, start_ns: int, end_ns: int) -> list[str]:
    """What IMEX says is down on the rack's compute trays (`hosts`: host -> tray label), newest reading per node in
    the window: the domain not UP (as a tray of this rack read it), a tray's node not READY."""
    if events is None or not len(events) or not {"kind", "node_id", "text"} <= set(events.columns):
        return []
    kind = events["kind"].astype("string")
    node = events["node_id"].astype("string")
    rows = events[((kind == EventKind.IMEX_STATE.value) & node.isin(list(hosts))).fillna(False).to_numpy(bool)]
    if not len(rows):
        return []
    t = ns(rows["timestamp"])
    rows = rows[(t > start_ns) & (t <= end_ns)].assign(_t=t[(t > start_ns) & (t <= end_ns)]).sort_values("_t")
    domain: dict[str, tuple[str, int]] = {}
    state: dict[str, str] = {}
    for host, text, at in zip(rows["node_id"].astype(str), rows["text"].astype(str), rows["_t"], strict=True):
        if text.startswith("IMEX Domain State:"):
            domain[host] = (text.split(":", 1)[1].strip(), int(at))
        elif text.startswith("IMEX node "):
            state[host] = text.removeprefix("IMEX node ").split()[0]
    out = []
    down = {h: s for h, (s, _) in domain.items() if s.upper() != "UP"}
    if down:
        host, said = next(iter(sorted(down.items())))
        out.append(f"IMEX is down: `nvidia-imex-ctl -N` on compute tray {hosts[host]} ({host}) reads Domain State: "
                   f"{said} ({fmt.when(utc_datetime(domain[host][1]))}); jobs that share GPU memory across trays "
                   "cannot start until it is UP")
    lost = sorted((h for h, s in state.items() if s.upper() != "READY"), key=lambda h: hosts[h])
    if lost:
        listed = ", ".join(f"{hosts[h]} ({h}: {state[h]})" for h in lost[:8])
        out.append(f"IMEX nodes not READY on compute trays {listed}" + (" ..." if len(lost) > 8 else ""))
    return out


def domain_software(hosts: list[str], reasons: list[str], software: list[Localization],
                    nmx: str | None) -> tuple[Localization, Finding]:
    """The one suspect of a rack whose domain's fabric software fails, and the finding that says it (the rack
    itself fails, not one of its links): every compute tray to drain, no part."""
    said = [*reasons, *(e for loc in software for e in loc.evidence if not e.startswith("no part goes"))]
    where = (f"NMX-Controller, on {nmx} as the inventory says" if nmx else
             "NMX-Controller, on a switch tray or a head node (the inventory names neither: find it before any "
             "reboot)")
    evidence = [*dict.fromkeys(said), f"no part goes on the ticket: the domain's fabric software sets the fabric up "
                                      f"({where}; IMEX on every compute tray); one ticket for the rack"]
    severity = max((loc.severity for loc in software), key=severity_rank, default=Severity.FAILING)
    crossing = Crossing(rule=SOFTWARE_RULE, counter="fabric_state", severity=severity, unit=fmt.Unit.STATE,
                        message="; ".join(said[:2]))
    finding = Finding(ref=ComponentRef.fabric_software(domain=True), link_type=LinkType.NVSWITCH, link_id="fabric",
                      severity=severity, evidence=evidence, crossed=[crossing])
    links = [link for loc in software for link in loc.links]
    loc = Localization(ref=ComponentRef.fabric_software(domain=True), fault=FaultKind.FABRIC_MANAGER, hosts=hosts,
                       confidence=0.8, severity=severity, links=links or [finding.component], evidence=evidence)
    return loc, finding


def tray_onsets(hosts: list[str], events: pd.DataFrame | None, links: pd.DataFrame | None, start_ns: int,
                end_ns: int) -> dict[str, int]:
    """When each host's trouble began in the window: its first Xid or SXid, its first NVLink read down, the last
    reading of a GPU whose series stopped while the host kept reporting."""
    out: dict[str, int] = {}

    def seen(host: str, at: int) -> None:
        out[host] = min(out.get(host, at), at)

    if events is not None and len(events) and {"kind", "node_id", "timestamp"} <= set(events.columns):
        kind = events["kind"].astype("string")
        mask = (kind.isin([EventKind.XID.value, EventKind.SXID.value])
                & events["node_id"].astype("string").isin(hosts)).fillna(False).to_numpy(bool)
        t = ns(events["timestamp"][mask])
        for host, at in zip(events["node_id"][mask].astype(str), t, strict=True):
            if start_ns < at <= end_ns:
                seen(host, int(at))
    if links is not None and len(links) and "node_id" in links.columns:
        mask = links["node_id"].astype("string").isin(hosts).fillna(False).to_numpy(bool)
        rows = links[mask]
        t = ns(rows["timestamp"])
        if "link_state" in rows.columns:
            down = rows["link_state"].astype("string").isin(["inactive", "down"]).fillna(False).to_numpy(bool) \
                & (t > start_ns) & (t <= end_ns)
            for host, at in zip(rows["node_id"][down].astype(str), t[down], strict=True):
                seen(host, int(at))
        frame = pd.DataFrame({"host": rows["node_id"].astype(str).to_numpy(),
                              "gpu": pd.to_numeric(rows["gpu"], errors="coerce").to_numpy(), "t": t})
        frame = frame[frame["gpu"].notna()]
        last = frame.groupby(["host", "gpu"])["t"].max()
        newest = frame.groupby("host")["t"].max()
        for host, at in zip(last.index.get_level_values(0), last.to_numpy(), strict=True):
            if start_ns < at < newest[host] and at <= end_ns:  # a GPU that stopped while its host kept reporting
                seen(str(host), int(at))
    return out


INCIDENT_RULE = "rack_incident"  # a rack's trays failing at once: the rack, not a link, crosses it


def rack_incident(compute: Mapping[str, str], placed: list[Placed], locs: list[Localization], onsets: Mapping[str,
                  int], *, trays: int, min_share: float,
                  within_s: float) -> tuple[Localization, Finding] | None:
    """One suspect for the rack, and the finding that says it, when at least `min_share` of its `trays` compute
    trays start failing within `within_s` of one another and no switch unit holds them all; None otherwise.
    `compute`: host -> tray label."""
    needed = math.ceil(min_share * trays)
    failing = sorted({p.host for p in placed if p.host in compute and _bad(p.finding) and not p.switch_side})
    timed = sorted((onsets[h], h) for h in failing if h in onsets)
    if len(timed) < needed:
        return None
    times = np.array([t for t, _ in timed], dtype=np.int64)
    ends = np.searchsorted(times, times + int(within_s * 1e9), side="right")
    i = int(np.argmax(ends - np.arange(len(times))))
    group = [h for _, h in timed[i:int(ends[i])]]
    if len(group) < needed:
        return None
    for loc in locs:  # a switch tray, chip or cartridge that holds every tray of the group is their common end
        if loc.ref.kind in SWITCH_UNITS and set(group) <= set(loc.hosts):
            return None
    mine = [p for p in placed if p.host in group and _bad(p.finding)]
    worst = max((p.finding.severity for p in mine), key=severity_rank)
    labels = sorted((compute[h] for h in group), key=lambda x: (not x.isdigit(), int(x) if x.isdigit() else 0, x))
    span = (times[int(ends[i]) - 1] - times[i]) / 1e9
    units = [loc.component for loc in locs if set(loc.hosts) & set(group)]
    together = f"within {span:.0f} s of one another" if span >= 1 else "at the same reading"
    evidence = [f"{len(group)} of the rack's {trays} compute trays (trays {', '.join(labels)}) started failing "
                f"{together}, from {fmt.when(utc_datetime(int(times[i])))}; no switch tray, chip or "
                "cable cartridge is common to them: the rack is the unit (its power, cooling or a rack-wide event)",
                f"one ticket for the rack instead of {len(units)} suspects ({', '.join(units[:6])}"
                + (" ..." if len(units) > 6 else "") + ")",
                *dict.fromkeys(f"compute tray {compute[p.host]}: {c.message}" for p in mine[:8]
                               for c in p.finding.crossed[:1]),
                "before any reboot: each tray's BMC event log (power, thermal), the power shelves, each tray's fabric "
                "state and IMEX's view: a reboot clears what names the cause"]
    ref = ComponentRef.nvlink_domain()
    finding = Finding(ref=ref, link_type=LinkType.NVLINK, link_id="rack", severity=worst, evidence=evidence,
                      crossed=[Crossing(rule=INCIDENT_RULE, counter="trays", rate_per_hour=float(len(group)),
                                        above=float(needed - 1), unit=fmt.Unit.STATE, severity=worst,
                                        message=evidence[0])])
    loc = Localization(ref=ref, fault=FaultKind.RACK_INCIDENT, hosts=sorted(compute), confidence=0.7,
                       severity=worst, links=[finding.component, *dict.fromkeys(p.finding.component for p in mine)],
                       evidence=evidence)
    return loc, finding


__all__ = ["INCIDENT_RULE", "domain_software", "imex_notes", "rack_incident", "tray_onsets"]
