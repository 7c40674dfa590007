"""Racks in the one engine: each rack's hosts' findings placed in the rack and weighed together, one Diagnosis per
rack, and each tray's own Diagnosis told what its rack concludes about its links.

A host belongs to a rack when its platform is a rack's host platform (`rack` key) and the inventory names its rack
(and, for its ports and cartridges, its tray's slot). Compute trays' findings are named in the rack (`Compute tray 7
GPU 2 NVLink 5 -> Switch tray 3 chip 2 port 27`); switch trays' port findings are joined to the GPU link on that
port. Every finding keeps the score its host's job gave it, so a job spanning trays is one job.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import pandas as pd

from .. import format as fmt
from ..config.platforms import all_platforms
from ..config.racks import rack_of
from ..config.thresholds import SOFTWARE_RULE, SXID_FATAL_RULE, XID_NVLINK_RULE, Thresholds
from ..enums import ComponentKind, FaultKind, Severity, severity_rank
from ..model import Diagnosis, Finding, Localization, RackPlace, RackSlot, StoppedBy, every_held, outside_trays
from ..repair import localization_plan
from ..times import utc_ns
from ..topology.rack import RackGraph, rack_graph
from .correlate import JobExplanation, verdict
from .diagnosis import assemble, scored
from .fanout import FanOut, fan_out, fan_tolerance_ns, headline
from .localize import rank
from .rack_domain import domain_software, imex_notes, rack_incident, tray_onsets
from .rack_localize import Placed, localize_rack, tray_order
from .rack_names import named_as_rack, place_findings
from .recovery import Recovery, recovery_notes, with_recovery

_DOMAIN = re.compile(r"(ClusterUUID|CliqueId): ([^;]+)")
_NMX_ROLE = re.compile(r"nmx", re.IGNORECASE)  # the inventory's role of a host that runs NMX-Controller
WHOLE = (ComponentKind.FABRIC_SOFTWARE, ComponentKind.NVLINK_DOMAIN)  # a rack's suspect that is the rack as one


@dataclass
class Rack:
    """One rack's hosts, how the rack names each, and what is missing."""

    place: RackPlace
    graph: RackGraph
    label: dict[str, str] = field(default_factory=dict)  # host -> tray label (its slot, else the host)
    kind: dict[str, str] = field(default_factory=dict)  # host -> compute | switch
    slot: dict[str, int] = field(default_factory=dict)  # host -> slot, where known and in the rack
    warnings: list[str] = field(default_factory=list)

    def hosts(self, kind: str | None = None) -> list[str]:
        return sorted(h for h, k in self.kind.items() if kind is None or k == kind)


def group_racks(platforms: Mapping[str, str], slots: Mapping[str, RackSlot]) -> dict[str, Rack]:
    """Every rack the inventory names, with its hosts (those whose platform is a rack host's)."""
    known = all_platforms()
    out: dict[str, Rack] = {}
    nmx: dict[str, list[str]] = {}  # rack -> the hosts the inventory says run NMX-Controller (a head node too)
    for host, where in sorted(slots.items()):
        if where.role and _NMX_ROLE.search(where.role):
            nmx.setdefault(where.rack, []).append(host)
        platform = platforms.get(host)
        spec = rack_of(platform) if platform in known else None
        if spec is None:
            continue
        kind = str(known[str(platform)].get("tray_kind", "compute"))
        rack = out.get(where.rack)
        if rack is None:
            rack = out[where.rack] = Rack(RackPlace(rack_id=where.rack, platform=spec.name), rack_graph(spec.name))
        elif rack.graph.name != spec.name:
            rack.warnings.append(f"{host} is a {spec.name} host in a {rack.graph.name} rack: left out")
            continue
        rack.kind[host] = kind
        limit = spec.compute_trays if kind == "compute" else spec.switch_trays
        slot = int(where.tray) if where.tray is not None and str(where.tray).isdigit() else None
        taken = [h for h, s in rack.slot.items() if s == slot and rack.kind[h] == kind]
        if slot is not None and (not 1 <= slot <= limit or taken):
            why = f"outside {spec.name}'s {limit} {kind} trays" if not taken else f"also {taken[0]}'s"
            rack.warnings.append(f"{host}: {kind} tray {where.tray} is {why}; the host is named by itself")
            slot = None
        if slot is not None:
            rack.slot[host] = slot
        rack.label[host] = str(slot) if slot is not None else host
    for rack in out.values():
        compute = {rack.label[h]: h for h in rack.hosts("compute")}
        switch = {rack.label[h]: h for h in rack.hosts("switch")}
        unslotted = [h for h in rack.kind if h not in rack.slot]
        rack.place = rack.place.model_copy(update={"compute": compute, "switch": switch,
                                                   "slots_known": not unslotted,
                                                   "nmx": _nmx_said(rack, nmx.get(rack.place.rack_id, []))})
        spec = rack.graph.spec
        if unslotted:
            rack.warnings.append(f"no tray slot for {', '.join(unslotted[:6])}: their switch ports and cartridges are "
                                 "not known (give the inventory's tray column)")
        missing = sorted(set(range(1, spec.compute_trays + 1)) - set(rack.slot[h] for h in rack.hosts("compute")
                                                                      if h in rack.slot))
        if missing and not unslotted:
            rack.warnings.append(f"the inventory names {spec.compute_trays - len(missing)} of the rack's "
                                 f"{spec.compute_trays} compute trays: trays {_ranges(missing)} are not judged")
    return out


def _nmx_said(rack: Rack, hosts: list[str]) -> str | None:
    """Where NMX-Controller runs, as a technician finds it: `switch tray 1 (rack-01-s01)`, `mgmt-01 (a head node)`."""
    said = [f"switch tray {rack.label[h]} ({h})" if rack.kind.get(h) == "switch" and h in rack.slot else
            f"{h} (a head node)" if h not in rack.kind else h for h in hosts]
    return ", ".join(said) or None


def domain_notes(rack: Rack, events: pd.DataFrame) -> list[str]:
    """The compute trays whose GPUs name another NVLink domain than the rest of the rack (`nvidia-smi -q` Fabric:
    ClusterUUID and CliqueId, newest reading per tray): not in the rack's domain, or not in this rack."""
    if not len(events) or not {"kind", "node_id", "text"} <= set(events.columns):
        return []
    hosts = rack.hosts("compute")
    rows = events[(events["kind"].astype("string") == "fabric_state")
                  & events["node_id"].astype("string").isin(hosts)]
    seen: dict[str, tuple[str, str]] = {}
    for host, text in zip(rows["node_id"].astype(str), rows["text"].astype(str), strict=True):
        found = dict(_DOMAIN.findall(text))
        if "ClusterUUID" in found or "CliqueId" in found:
            seen[host] = (found.get("ClusterUUID", "?").strip(), found.get("CliqueId", "?").strip())
    if len(set(seen.values())) < 2:
        return []
    (uuid, clique), _ = Counter(seen.values()).most_common(1)[0]
    return [f"compute tray {rack.label[h]} ({h}) reports ClusterUUID {u}, CliqueId {c}; the rack's other trays "
            f"{uuid}, {clique}: it is not in the rack's NVLink domain (its fabric registration, or the inventory's "
            "rack, is wrong)" for h, (u, c) in sorted(seen.items()) if (u, c) != (uuid, clique)]


def _ranges(values: list[int]) -> str:
    return ", ".join(map(str, values[:12])) + (" ..." if len(values) > 12 else "")


def rack_job(rack: Rack, jobs: Mapping[str, JobExplanation], chosen: Mapping[str, str]) -> JobExplanation | None:
    """The job the rack's compute trays run: the one on most of them (a slowed job first on a tie)."""
    compute = set(rack.hosts("compute"))
    found = {chosen[h] for h in compute if h in chosen and chosen[h] in jobs}
    if not found:
        return None
    return max((jobs[j] for j in found), key=lambda j: (len(compute & set(j.nodes)), j.slowdown, j.job_id))


def diagnose_rack(rack: Rack, found: Mapping[str, list[Finding]], job: JobExplanation | None, *,
                  window_hours: float, window_end: datetime | None, thresholds: Thresholds,
                  host_warnings: Mapping[str, list[str]], job_gpus: int | None,
                  events: pd.DataFrame | None = None, links: pd.DataFrame | None = None,
                  recoveries: Mapping[str, Mapping[int | str, Recovery]] | None = None,
                  split: list[str] | None = None,
                  restarted: Collection[str] = ()) -> tuple[Diagnosis, list[Placed]]:
    """The rack's Diagnosis: every host's findings scored against the rack's job, placed, weighed together. A
    burst of NVLink Xids over many GPUs (`events`) is weighed for its root first, with the links' history before
    it (`links`): one suspect and its downstream GPUs, or the domain when no root is singled out. A suspect on a GPU
    whose driver asks for a recovery action (`recoveries`: host -> GPU -> action) carries it to its plan. The rack is
    the unit (one suspect) when its domain's fabric software fails (IMEX, a ClusterUUID or CliqueId `split`, a tray's
    fabric state) or half its trays fail at once with no switch unit common to them (rack_domain.py)."""
    placed: list[Placed] = []
    running = job is not None and job.nodes and job.degradation_pct is not None and job.running
    for host in rack.hosts():
        mine = found.get(host, [])
        if running and job is not None:
            mine = scored(mine, job, host)
        placed.extend(place_findings(rack, host, mine))
    fan = None
    if events is not None and window_end is not None:
        end_ns = utc_ns(window_end)
        fan = fan_out(rack.graph, {h: rack.label[h] for h in rack.hosts("compute")},
                      {h: rack.slot[h] for h in rack.hosts("switch") if h in rack.slot}, events, links, placed,
                      start_ns=end_ns - int(window_hours * 3600e9), end_ns=end_ns)
    first: list[Localization] = []
    notes = list(rack.warnings)
    if fan is not None and fan.localization is not None:
        placed, loc = _apart(placed, fan, job)
        if any(f.severity in (Severity.FAILING, Severity.DOWN) for f in fan.echoes):
            first.append(loc)
        else:  # no event of the burst fails on its own (non-fatal codes warn only): said once, no suspect
            fan.localization = None
            notes.append(f"{loc.evidence[0]}; none of them fails on its own (NVIDIA's decode: non-fatal, warn only): "
                         f"{'the root is ' + loc.component if fan.root is not None else 'root not identifiable'}; "
                         "capture each tray's kernel Xid log and `nvidia-smi nvlink -e` if they recur")
    locs = first + (localize_rack(placed, rack.graph) if any(
        p.finding.severity in (Severity.FAILING, Severity.DOWN) for p in placed) else [])
    locs = [loc.model_copy(update={"hosts": loc.hosts or _switch_hosts(rack, loc)}) for loc in locs]
    locs, whole = _as_one(rack, placed, locs, events, links, window_hours, window_end, split or [])
    pending = {h: r for h, r in (recoveries or {}).items() if h in rack.kind}
    locs = with_recovery(locs, pending, rack.place.compute)
    notes += [f"compute tray {rack.label.get(h, h)} ({h}): {n}" for h in sorted(pending)
              for n in recovery_notes(pending[h])]
    rebooted = sorted((h for h in rack.hosts("compute") if h in restarted), key=lambda h: rack.slot.get(h, 0))
    if len(rebooted) >= rack.graph.spec.localize.rack_min_share * rack.graph.spec.compute_trays:
        notes.append(f"{len(rebooted)} of the rack's {rack.graph.spec.compute_trays} compute trays restarted in this "
                     f"window (compute trays {', '.join(rack.label[h] for h in rebooted[:18])}): a rack reboot, "
                     "planned or not; their links down right after it are the reboot, not judged")
    silent = [h for h in rack.hosts() if h not in found or any("no link telemetry" in w for w in
                                                               host_warnings.get(h, []))]
    if silent:
        notes.append(silent_note(silent))
    kept = [p.finding for p in placed] + (fan.echoes if fan is not None else []) + whole
    if job is not None:
        job = job.model_copy(update={"verdict": _named_verdict(job, placed)})
    diagnosis = assemble(rack.place.rack_id, platform=rack.graph.name, window_hours=window_hours,
                         window_end=window_end, findings=kept, localizations=locs, job=job,
                         thresholds=thresholds, warnings=notes, rates_known=bool(placed) or not silent,
                         has_links=bool(placed) or len(silent) < len(rack.hosts()), job_gpus=job_gpus,
                         prescored=True, rack=rack.place)
    top = diagnosis.localization
    if fan is not None and top is not None and top.explains_slowdown and job is not None and fan.localization \
            is not None and top.ref.slug == fan.localization.ref.slug:
        cause = f"the root is {top.component}" if fan.root is not None else "the root is not identifiable"
        diagnosis = diagnosis.model_copy(update={"verdict": f"job {job.job_id} is {fmt.percent(job.degradation_pct)} "
                                                            f"slower from the Xid burst on: {headline(fan)}; {cause}"})
    return diagnosis, placed


SILENT_FROM = "no link telemetry from "


def silent_note(hosts: list[str]) -> str:
    """The rack's note of its hosts with no link reading in the window: their links are not judged."""
    return f"{SILENT_FROM}{', '.join(hosts[:8])}" + (" ..." if len(hosts) > 8 else "") + ": their links are not judged"


def _named_verdict(job: JobExplanation, placed: list[Placed]) -> str:
    """The job's verdict naming the link that explains it as the rack names it (`Compute tray 15 GPU 3 NVLinks`), not
    as its host does (`rack-01-c15 GPU 3 NVLinks`)."""
    names = {(p.host, p.node_ref.slug): p.finding.ref.name for p in placed}
    return verdict(job, lambda s: names.get((s.node_id, s.ref.slug), f"{s.node_id} {s.ref.name}"))


def _as_one(rack: Rack, placed: list[Placed], locs: list[Localization], events: pd.DataFrame | None,
            links: pd.DataFrame | None, window_hours: float, window_end: datetime | None,
            split: list[str]) -> tuple[list[Localization], list[Finding]]:
    """The rack as the unit where it is one: the domain's fabric software failing, or half its trays failing at
    once with no switch unit common to them; else the suspects as they are. -> suspects, findings to add."""
    compute = {h: rack.label[h] for h in rack.hosts("compute")}
    end_ns = utc_ns(window_end) if window_end is not None else np.iinfo(np.int64).max
    start_ns = end_ns - int(window_hours * 3600e9) if window_end is not None else np.iinfo(np.int64).min
    reasons = [*split, *imex_notes(compute, events, start_ns, end_ns)]
    software = [loc for loc in locs if loc.fault is FaultKind.FABRIC_MANAGER]
    if reasons or software:
        loc, finding = domain_software(sorted(compute), reasons, software, rack.place.nmx)
        return [loc], [] if any(SOFTWARE_RULE in {c.rule for c in p.finding.crossed} for p in placed) else [finding]
    rules = rack.graph.spec.localize
    failing = {p.host for p in placed if p.host in compute and p.finding.severity in (Severity.FAILING,
                                                                                      Severity.DOWN)}
    if len(failing) < rules.rack_min_share * rack.graph.spec.compute_trays:
        return locs, []
    onsets = tray_onsets(sorted(failing), events, links, start_ns, end_ns)
    incident = rack_incident(compute, placed, locs, onsets, trays=rack.graph.spec.compute_trays,
                             min_share=rules.rack_min_share, within_s=rules.rack_within_s)
    return ([incident[0]], [incident[1]]) if incident is not None else (locs, [])


def _apart(placed: list[Placed], fan: FanOut, job: JobExplanation | None) -> tuple[list[Placed], Localization]:
    """The burst's findings set apart from the rest: the Xids of its GPUs and the root link's own findings go to the
    burst's localization (which explains the job's slowdown when the slowdown began with the burst); the rest are
    weighed as before."""
    assert fan.localization is not None
    loc = fan.localization
    keys = set(fan.hits)
    root = (fan.root.host, fan.root.gpu, fan.root.link) if fan.root is not None else None
    echo: list[Placed] = []
    rest: list[Placed] = []
    for p in placed:
        f = p.finding
        xid = bool({c.rule for c in f.crossed} & {XID_NVLINK_RULE, SXID_FATAL_RULE, "sxid"})
        on_root = root is not None and (p.host, p.gpu) == root[:2] and (f.link is None or f.link == root[2]
                                                                         or p.link == root[2])
        if (xid and (p.host, p.gpu) in keys) or on_root:
            echo.append(p)
        else:
            rest.append(p)
    onset = job.onset if job is not None and job.slowdown else None
    tolerance = fan_tolerance_ns(fan)
    began = onset is not None and abs(utc_ns(onset) - fan.start_ns) <= tolerance
    said = headline(fan)
    findings = []
    for p in echo:
        f = p.finding
        mine = fan.root is not None and (p.host, p.gpu) == (fan.root.host, fan.root.gpu)
        note = said if mine or fan.root is None else f"downstream: {said}"
        update: dict[str, object] = {"evidence": [*f.evidence, note]}
        if began and (mine or fan.root is None) and job is not None:
            update.update(explains_slowdown=True, evidence=[*f.evidence, note, f"job {job.job_id}'s step time rose "
                                                            f"with the burst ({fmt.when(onset)})"])
        findings.append(f.model_copy(update=update))
    named = [f.component for f, p in zip(findings, echo, strict=True)
             if fan.root is None or (p.host, p.gpu) == (fan.root.host, fan.root.gpu)]
    severity = max((f.severity for f in findings), key=severity_rank, default=loc.severity)
    fan.echoes = findings
    return rest, loc.model_copy(update={"links": list(dict.fromkeys([*loc.links, *named])), "severity": severity})


def _switch_hosts(rack: Rack, loc: Localization) -> list[str]:
    """The hosts to drain for a unit only its switch side reports: the compute tray its link comes from, else the
    switch tray itself."""
    tray = rack.place.compute.get(loc.tray or "") if loc.tray else None
    host = tray or (rack.place.switch.get(loc.switch_tray or "") if loc.switch_tray else None)
    return [host] if host else []


def tray_view(tray: Diagnosis, rack: Rack, rack_diagnosis: Diagnosis, host: str,
              stops: Localization | None = None, found: Mapping[str, list[Finding]] | None = None) -> Diagnosis:
    """A rack host's own Diagnosis with its rack's conclusions about its links: the units the rack localized that
    hold this host's failing links (outside the tray, it says so and names the rack's view); `stops`, the rack's
    suspect whose repair stops every GPU of the rack (`rack_stopper`), is every compute tray's concern. A host of the
    rack's job says the rack's verdict on it, weighed over every tray (a tray whose own links read clean would say
    "not the fabric" of a job a link elsewhere in the rack slows). `found`: every host's findings, to name the links
    its job's evidence draws from other hosts as the rack does."""
    label = rack.label[host]
    switch_host = rack.kind.get(host) == "switch"
    tray = named_as_rack(tray, rack, host, found or {})
    if rack_diagnosis.verdict and tray.job_id is not None and tray.job_id == rack_diagnosis.job_id:
        tray = tray.model_copy(update={"verdict": rack_diagnosis.verdict})
    failing = {f.component for f in tray.failing}
    mine = [loc for loc in rack_diagnosis.localizations
            if ((loc.switch_tray == label or host in loc.hosts or failing & set(loc.links)) if switch_host
                else host in loc.hosts)]
    update: dict[str, object] = {"rack": rack.place, "tray": label}
    echoed = [loc for loc in rack_diagnosis.localizations if loc not in mine and not switch_host
              and any(r.tray == label for r in loc.downstream)]
    if not mine and echoed:  # its Xids echo a root elsewhere in the rack
        root = echoed[0]
        said = (f"its GPUs' NVLink Xids are downstream of {root.component} (rack {rack.place.rack_id}): "
                f"{root.evidence[0]}; the rack's view: `/fabric rack {rack.place.rack_id}`")
        update["warnings"] = [*tray.warnings, said]
        if tray.fault_detected:
            update.update(localizations=[root], localization=root, isolated_component=root.component,
                          held=every_held([root]),
                          repair_action=root.action or tray.repair_action,
                          ticket_priority=rack_diagnosis.ticket_priority, verdict=rack_diagnosis.verdict)
        return tray.model_copy(update=update)
    if stops is not None and not mine and not switch_host:  # its links read clean; that repair stops them anyway
        said = (f"its GPUs stop with rack {rack.place.rack_id}'s repair of {stops.component} (every GPU of the rack "
                f"has links through it): drain it with the rack's plan, `/fabric rack {rack.place.rack_id}`")
        update["warnings"] = [*tray.warnings, said]
        if not tray.fault_detected:  # the rack's plan is its action; a fault of its own keeps its own
            update["repair_action"] = stops.action or rack_diagnosis.repair_action
            update["stopped_by"] = StoppedBy(component=stops.component, priority=rack_diagnosis.ticket_priority)
        return tray.model_copy(update=update)
    if not mine:
        return tray.model_copy(update=update)
    whole = [loc for loc in mine if loc.ref.kind in WHOLE]
    if whole:  # the rack fails as one: one ticket for the rack, which this tray's answer points at
        said = (f"rack {rack.place.rack_id} fails as a whole ({whole[0].component}: {whole[0].evidence[0]}): one "
                f"ticket for the rack, `/fabric rack {rack.place.rack_id}`; drain this tray with the rack's plan")
        own = {f.component for f in tray.findings}  # the rack's own finding: every tray is in the failing domain
        rack_level = [f for f in rack_diagnosis.findings if f.ref.kind in WHOLE and f.component not in own]
        return tray.model_copy(update={**update, "warnings": [*tray.warnings, said], "localizations": whole,
                                       "held": every_held(whole),
                                       "findings": [*tray.findings, *rack_level], "fault_detected": True,
                                       "localization": whole[0], "isolated_component": whole[0].component,
                                       "repair_action": whole[0].action or tray.repair_action,
                                       "ticket_priority": rack_diagnosis.ticket_priority,
                                       "verdict": rack_diagnosis.verdict})
    if not tray.fault_detected and switch_host:
        said = f"its links run through {mine[0].component}, which rack {rack.place.rack_id} finds failing " \
               f"(`/fabric rack {rack.place.rack_id}`): drain it with the rack's plan"
        return tray.model_copy(update={**update, "warnings": [*tray.warnings, said],
                                       "repair_action": mine[0].action or tray.repair_action})
    if not tray.fault_detected:  # a compute tray whose own end reads clean, but a link of it runs through the failing
        # unit, which only the far end reports (a switch port's NMX-T counters): the rack's part is its fault too, its
        # ticket the rack's, as for a tray whose own end fails; its action drains this tray and resets its GPU
        top = rank(mine)[0]
        said = f"its links run through {top.component}, which rack {rack.place.rack_id} finds failing (its own " \
               f"end reads clean; `/fabric rack {rack.place.rack_id}`): drain it with the rack's plan"
        own = {f.component for f in tray.findings}
        far = [f for f in rack_diagnosis.findings if f.component in top.links and f.component not in own]
        return tray.model_copy(update={**update, "warnings": [*tray.warnings, said], "fault_detected": True,
                                       "findings": [*tray.findings, *far], "localizations": [top],
                                       "localization": top, "isolated_component": top.component,
                                       "held": every_held([top]), "repair_action": top.action or tray.repair_action,
                                       "ticket_priority": rack_diagnosis.ticket_priority,
                                       "verdict": rack_diagnosis.verdict})
    locs = rank(mine)
    top = locs[0]
    notes = list(tray.warnings)
    outside = [loc for loc in locs if outside_trays(loc.ref, loc.fault)]
    if outside and not switch_host:
        others = sorted({t for loc in outside for t in _trays_of(rack, loc)} - {label}, key=tray_order)
        also = f" and those of compute trays {', '.join(others)}" if others else ""
        notes.append(f"the fault is outside this tray: {outside[0].component} (rack {rack.place.rack_id}) explains "
                     f"its failing links{also}; the rack's view: `/fabric rack {rack.place.rack_id}`")
    update.update(localizations=locs, localization=top, isolated_component=top.component, held=every_held(locs),
                  repair_action=top.action or tray.repair_action, warnings=notes,
                  ticket_priority=rack_diagnosis.ticket_priority, verdict=rack_diagnosis.verdict)
    return tray.model_copy(update=update)


def rack_stopper(rack: Rack, rack_diagnosis: Diagnosis) -> Localization | None:
    """The rack's first suspect outside every compute tray whose plan stops every GPU of the rack (a switch tray's
    reboot, a reseat on the spine): every compute tray is drained for it, whether its own links fail or not. A
    compute tray's own suspect stops the rack only if the tray is replaced (the rack reboot sequence follows), which
    its plan drains the rack for then; the rack as the unit is told to each tray on its own."""
    return next((loc for loc in rack_diagnosis.localizations if loc.ref.kind not in WHOLE
                 and outside_trays(loc.ref, loc.fault) and localization_plan(
                     loc, platform=rack_diagnosis.platform, node_id=rack.place.rack_id, rack=rack.place,
                     job_id=rack_diagnosis.job_id).stops_rack), None)


def _trays_of(rack: Rack, loc: Localization) -> set[str]:
    return {rack.label[h] for h in loc.hosts if h in rack.label}
