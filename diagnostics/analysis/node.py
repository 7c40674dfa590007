"""History analysis: one node's normalized tables over a window -> the same Diagnosis as the snapshot path."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd

from ..config.platforms import platform_data
from ..config.repairs import repair_action
from ..config.thresholds import Thresholds, load_thresholds
from ..enums import ComponentKind, EventKind, LinkState, LinkType, PortSource, Severity
from ..model import Crossing, Diagnosis, Finding, Localization
from ..topology import platform_graph
from .correlate import JobExplanation, explain_job, jobs_on
from .findings import finding_of, link_metrics, records
from .localize import OFF_BUS_RULE, SOFTWARE_RULE, localize_all
from .rates import ns, prepare, utc_ns
from .rules import priority, summarize, worst

_REPAIR_CLASS = {ComponentKind.NVLINK: "nvlink", ComponentKind.NVSWITCH: "nvswitch", ComponentKind.GPU: "gpu",
                 ComponentKind.PCIE: "pcie", ComponentKind.FABRIC_SOFTWARE: "fabric-software"}


def _node_rows(frame: pd.DataFrame | None, node_id: str) -> pd.DataFrame:
    if frame is None or frame.empty or "node_id" not in frame.columns:
        return pd.DataFrame()
    mine = (frame["node_id"] == node_id).to_numpy(bool, na_value=False)
    if "gpu_total" in frame.columns:  # a GPU-wide sum of links is not a link
        mine = mine & ~frame["gpu_total"].to_numpy(bool, na_value=False)
    return frame if mine.all() else frame[mine]


def _expected_links(graph: Any, platform: str | None, gpus: list[int]) -> dict[int, int]:
    if graph is not None:
        out = {}
        for gpu in gpus:
            try:
                out[gpu] = int(graph.expected_links(gpu, LinkType.NVLINK.value))
            except Exception:
                continue
        return out
    if platform:
        per_gpu = int(platform_data(platform).get("nvlinks_per_gpu", 0))
        return dict.fromkeys(gpus, per_gpu)
    return {}


def _missing(metrics: pd.DataFrame, expected: Mapping[int, int], warnings: list[str]) -> list[Finding]:
    """A missing series is never healthy: links the platform has but the telemetry lacks (one row per link)."""
    out: list[Finding] = []
    seen: dict[int, set[int]] = {}
    if not metrics.empty:
        nv = _nvlink_rows(metrics)
        gpus, links = (_floats(metrics["gpu"])[nv], _floats(metrics["link"])[nv])
        both = ~(np.isnan(gpus) | np.isnan(links))
        for gpu, link in zip(gpus[both].astype(int).tolist(), links[both].astype(int).tolist(), strict=True):
            seen.setdefault(gpu, set()).add(link)
    if expected and not seen and any(expected.values()):
        warnings.append("NVLink counters not collected on this node (enable them in dcgm-exporter's counters "
                        "file): NVLink health is unknown, not healthy")
        return out
    for gpu, count in sorted(expected.items()):
        have = seen.get(gpu, set())
        if not have and count:
            warnings.append(f"GPU {gpu}: NVLink counters not collected")
            continue
        for link in sorted(set(range(count)) - have):
            out.append(Finding(
                component=f"GPU {gpu} NVLink {link}", link_type=LinkType.NVLINK, link_id=f"nvlink-{link}",
                link=link, gpu=gpu, link_state=LinkState.UNKNOWN, severity=Severity.WARNING,
                crossed=[Crossing(rule="link_missing", counter="link_state", severity=Severity.WARNING,
                                  message=f"link missing: the platform has {count} NVLinks on GPU {gpu}, "
                                          f"no series for link {link}")],
                evidence=["a missing series is never healthy: a dead link's series disappears"]))
    return out


def _nvlink_rows(metrics: pd.DataFrame) -> np.ndarray:
    return np.asarray(metrics["link_type"].to_numpy(object) == LinkType.NVLINK.value, dtype=bool)


def _floats(series: pd.Series) -> np.ndarray:
    return np.asarray(pd.to_numeric(series, errors="coerce").to_numpy(np.float64, na_value=np.nan))


def _event_findings(events: pd.DataFrame, start_ns: int, end_ns: int, thresholds: Thresholds,
                    silent: Mapping[int, int] | None = None) -> list[Finding]:
    """Xid/SXid rules over the window. `silent` (GPU -> when its series stopped) keeps an Xid 79 found: a GPU off
    the bus stays off, so its Xid 79 at or after it fell silent counts even before the window."""
    if events.empty:
        return []
    t = ns(events["timestamp"])
    in_window = (t > start_ns) & (t <= end_ns)
    recent = events[in_window]
    out: list[Finding] = []
    kind = recent["kind"].astype("string")
    present = set(kind.dropna().unique()) | ({EventKind.XID.value} if silent else set())
    for rule in thresholds.rules:
        if rule.counter not in (EventKind.XID.value, EventKind.SXID.value) or rule.counter not in present:
            continue
        rows = recent[kind == rule.counter]
        if rule.name == OFF_BUS_RULE and silent:
            before = _off_bus_before(events[~in_window & (t <= end_ns)], silent)
            rows = pd.concat([rows, before]) if not before.empty else rows
        if rule.codes:
            rows = rows[rows["code"].isin(rule.codes)]
        for gpu, group in rows.groupby(rows["gpu"].astype("Float64").fillna(-1), sort=True):
            if len(group) <= rule.above:
                continue
            g = None if gpu < 0 else int(gpu)
            codes = sorted({int(c) for c in group["code"].dropna()})
            who = f"GPU {g}" if g is not None else "node"
            crossed = [Crossing(rule=rule.name, counter=rule.counter, rate_per_hour=float(len(group)),
                                above=rule.above, severity=rule.severity,
                                message=f"{len(group)} {rule.counter.upper()} {', '.join(map(str, codes))} on "
                                        f"{who} ({rule.name})")]
            severity, ratio = summarize(crossed)
            link_type = LinkType.PCIE if rule.name == OFF_BUS_RULE else LinkType.NVLINK
            out.append(Finding(component=f"{who} {rule.counter.upper()} {'/'.join(map(str, codes))}",
                               link_type=link_type, link_id=rule.counter, gpu=g, severity=severity,
                               worst_ratio=ratio, crossed=crossed, counts={rule.counter: float(len(group))},
                               evidence=[str(x) for x in group["text"].dropna().head(3)]))
    return out


def _off_bus_before(events: pd.DataFrame, silent: Mapping[int, int]) -> pd.DataFrame:
    """Xids before the window on GPUs that fell silent then (and stayed so): not those long before it."""
    xid = events[(events["kind"].astype("string") == EventKind.XID.value)
                 & events["gpu"].isin(list(silent)).to_numpy(bool, na_value=False)]
    if xid.empty:
        return xid
    stopped = xid["gpu"].astype("Int64").map(silent).astype("Int64").to_numpy(np.int64, na_value=0)
    return xid[ns(xid["timestamp"]) >= stopped]


def _silent_gpus(metrics: pd.DataFrame, stale: np.ndarray, slack_ns: int) -> dict[int, int]:
    """GPUs every series of which stopped while the node kept reporting -> (last reading - slack), in ns."""
    if metrics.empty or not stale.any():
        return {}
    frame = pd.DataFrame({"gpu": metrics["gpu"].astype("Int64").to_numpy(), "stale": stale,
                          "last": ns(metrics["last_seen"])}).dropna(subset=["gpu"])
    per_gpu = frame.groupby("gpu").agg(all_stale=("stale", "all"), last=("last", "max"))
    gone = per_gpu[per_gpu["all_stale"]]
    return {int(g): int(last) - slack_ns for g, last in zip(gone.index, gone["last"], strict=True)}


def _software(links: pd.DataFrame, metrics: pd.DataFrame, events: pd.DataFrame) -> Finding | None:
    """Fabric Manager or the driver, not a part: all NVLinks inactive everywhere, or fabric state not complete."""
    evidence: list[str] = []
    if not events.empty:
        fabric_rows = np.asarray(events["kind"].to_numpy(object) == EventKind.FABRIC_STATE.value, dtype=bool)
        if fabric_rows.any():
            fabric = events[fabric_rows]
            last = str(fabric["text"].iloc[int(np.argmax(ns(fabric["timestamp"])))])
            if "complete" not in last.lower() or "not" in last.lower() or "incomplete" in last.lower():
                evidence.append(f"fabric state is '{last}', not Completed")
    if not metrics.empty and "link_state" in metrics.columns:
        nv = _nvlink_rows(metrics)
        states = metrics["link_state"].to_numpy(object)[nv]
        gpus = {g for g in _floats(metrics["gpu"])[nv].tolist() if g == g}  # NaN != NaN: no GPU
        if len(states) >= 2 and all(s in ("inactive", "down") for s in states) and len(gpus) > 1:
            evidence.append(f"all {len(states)} NVLinks on all {len(gpus)} GPUs are inactive at once")
    if not evidence:
        return None
    return Finding(component="Fabric Manager / NVIDIA driver", link_type=LinkType.NVSWITCH, link_id="fabric",
                   severity=Severity.FAILING, evidence=evidence,
                   crossed=[Crossing(rule=SOFTWARE_RULE, counter="fabric_state", severity=Severity.FAILING,
                                     message="; ".join(evidence))])


def _stale_limit(p_t: np.ndarray, thresholds: Thresholds) -> float:
    """How long (ns) a series may be silent before it counts as stopped: a few sampling intervals."""
    steps = np.diff(np.sort(pd.unique(p_t[-200_000:])))  # hashing first: most times repeat across links
    interval = float(np.median(steps)) if len(steps) else 0.0
    return thresholds.setting("stale_after_intervals") * interval


def _stale(metrics: pd.DataFrame, p_t: np.ndarray, end_ns: int, limit: float) -> np.ndarray:
    """Links whose series stopped before the end while the node kept reporting (a dead link disappears)."""
    if metrics.empty or len(p_t) < 2:
        return np.zeros(len(metrics), dtype=bool)
    last_seen = ns(metrics["last_seen"])
    node_last = last_seen.max()
    return (node_last - last_seen > limit) & (node_last >= end_ns - limit)


def _action(loc: Localization | None, top: Finding | None, node_id: str, platform: str | None) -> str:
    if loc is not None and top is not None and top.severity in (Severity.FAILING, Severity.DOWN):
        klass = _REPAIR_CLASS[loc.kind]
        peer = loc.peer or ""
        gpu_dst = peer.split()[1] if peer.startswith("GPU ") else "?"
        return repair_action(klass, platform=platform, node_id=node_id, gpu=loc.gpu, gpu_src=loc.gpu,
                             gpu_dst=gpu_dst, link=loc.link, peer=peer or "?", switch=loc.switch or "?")
    if top is not None and top.severity is Severity.WARNING:
        return repair_action("warning", platform=platform, node_id=node_id)
    return repair_action("healthy", platform=platform, node_id=node_id)


def analyze_tables(tables: Mapping[str, pd.DataFrame], *, node_id: str, window: timedelta = timedelta(hours=1),
                   end: datetime | None = None, thresholds: Thresholds | None = None, graph: Any = None,
                   platform: str | None = None, job_id: str | None = None,
                   job: JobExplanation | None = None) -> Diagnosis:
    """Rates, rules, missing links, events, correlation with the node's job and localization, for one node.

    `job` passes a job explanation already computed (a fleet sweep explains each job once for all its nodes).
    """
    thresholds = thresholds or load_thresholds()
    warnings: list[str] = []
    if graph is None and platform:
        graph = platform_graph(platform)
    links = _node_rows(tables.get("link_samples"), node_id)
    events = _node_rows(tables.get("events"), node_id)
    findings: list[Finding] = []
    metrics = pd.DataFrame()
    silent: dict[int, int] = {}
    end_ns = utc_ns(end) if end is not None else None
    if links.empty:
        warnings.append(f"no link telemetry for {node_id}: its fabric health is unknown, not healthy")
    else:
        p = prepare(links)
        if len(p.t) < len(links):
            warnings.append(f"{len(links) - len(p.t)} duplicated or undated link samples ignored")
        end_ns = end_ns if end_ns is not None else int(p.t.max())
        metrics = link_metrics(p, window=window, end_ns=end_ns, thresholds=thresholds)
        limit = _stale_limit(p.t, thresholds)
        stale = _stale(metrics, p.t, end_ns, limit)
        silent = _silent_gpus(metrics, stale, int(limit))
        seen = metrics[(metrics["samples"] > 0) | stale]
        rows = records(seen)
        findings = [_placed(finding_of(row, thresholds, stale=bool(s)), graph) for row, s in
                    zip(rows, stale[seen.index], strict=True)]
        if (metrics["samples"] < 2).all():
            warnings.append("one reading per link: totals since reset only; a rate needs a second reading")
    end_ns = end_ns if end_ns is not None else _events_end(events)
    start_ns = end_ns - int(window.total_seconds() * 1e9)
    findings += _event_findings(events, start_ns, end_ns, thresholds, silent)
    gpus = sorted({f.gpu for f in findings if f.gpu is not None}) or list(range(8))
    findings += _missing(metrics, _expected_links(graph, platform, gpus), warnings) if not links.empty else []
    software = _software(links, metrics, events)
    if software is not None:
        findings.insert(0, software)
    locs = localize_all(findings, graph)
    if job is None:
        job = _job(tables, node_id, job_id, thresholds, warnings)
    else:
        warnings.extend(job.warnings)
    if job is not None and (not job.nodes or job.degradation_pct is None):
        job = None
    if job is not None:
        findings = [_with_score(f, job, node_id) for f in findings]
    top = worst(findings)
    failing = top is not None and top.severity in (Severity.FAILING, Severity.DOWN)
    degradation = job.degradation_pct if job is not None else None
    # the job's slowdown raises this node's priority only when one of its failing links explains it
    blamed = degradation if any(f.explains_slowdown for f in findings) else None
    loc = locs[0] if locs and failing else None
    return Diagnosis(
        node_id=node_id, platform=platform, window_hours=window.total_seconds() / 3600,
        fault_detected=failing,
        isolated_component=(loc.component if loc else top.component if top else "None") if failing else "None",
        degradation_pct=degradation, repair_action=_action(loc, top, node_id, platform),
        ticket_priority=priority(findings, blamed, thresholds), findings=findings,
        thresholds=thresholds.table(), warnings=warnings, localization=loc,
        localizations=locs if failing else [],
        step_time_ms=job.step_time_ms if job else None,
        baseline_step_time_ms=job.baseline_step_time_ms if job else None,
        job_id=job.job_id if job else None, job_gpus=8 * len(job.nodes) if job and job.nodes else None,
        slowdown_onset=job.onset if job else None, verdict=_node_verdict(job, findings, node_id),
        window_end=pd.Timestamp(end_ns, tz="UTC").to_pydatetime() if not (links.empty and events.empty) else None,
    )


def _placed(f: Finding, graph: Any) -> Finding:
    """A flagged link with its switch, port and name from the topology graph, where the graph knows the link."""
    if graph is None or f.gpu is None or f.link_type is LinkType.NVSWITCH or f.severity is Severity.OK:
        return f  # a healthy link keeps the name its telemetry gives; only flagged links are looked up
    port = graph.port_of(f.gpu, f.link, f.link_type.value)
    if port.source is PortSource.UNKNOWN and port.switch_port is None:
        return f
    update = {"component": port.component, "switch": port.switch or f.switch, "switch_port": port.switch_port,
              "port_source": port.source}
    return f.model_copy(update=update)


def _events_end(events: pd.DataFrame) -> int:
    if events.empty:
        return int(pd.Timestamp.now(tz="UTC").value)
    return int(pd.to_datetime(events["timestamp"], utc=True, format="mixed").max().value)


def _job(tables: Mapping[str, pd.DataFrame], node_id: str, job_id: str | None, thresholds: Thresholds,
         warnings: list[str]) -> JobExplanation | None:
    jobs = [job_id] if job_id else jobs_on(tables.get("step_samples"), node_id)
    if not jobs:
        return None
    job = explain_job(tables, job_id=jobs[0], thresholds=thresholds)
    warnings.extend(job.warnings)
    return job if job.nodes else None


def _with_score(f: Finding, job: JobExplanation, node_id: str) -> Finding:
    score = job.for_link(node_id, f.gpu, f.link, f.link_type.value)
    if score is None:
        if f.severity is Severity.OK:
            return f
        explains = False
        evidence = [*f.evidence, f"its errors do not track job {job.job_id}'s step time"]
        return f.model_copy(update={"explains_slowdown": explains, "correlation_score": 0.0,
                                    "evidence": evidence})
    return f.model_copy(update={"explains_slowdown": score.explains_slowdown, "correlation_score": score.score,
                                "onset": score.onset, "evidence": [*f.evidence, *score.evidence]})


def _node_verdict(job: JobExplanation | None, findings: list[Finding], node_id: str) -> str | None:
    if job is None:
        return None
    bad = [f for f in findings if f.severity in (Severity.FAILING, Severity.DOWN)]
    if job.slowdown and any(f.explains_slowdown for f in bad):
        return job.verdict
    if job.slowdown and bad:
        return (f"job {job.job_id} is {job.degradation_pct:+.1f}% slower but the failing links of {node_id} "
                "do not track it: not this node's fabric")
    if not job.slowdown and bad:
        return (f"{bad[0].component} is failing but job {job.job_id} is not slower "
                f"({job.degradation_pct:+.1f}%)")
    return job.verdict
