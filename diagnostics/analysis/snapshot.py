"""Snapshot analysis: one node's counters over one window -> a Diagnosis."""

from __future__ import annotations

from ..components import ComponentRef
from ..config.thresholds import Thresholds, load_thresholds
from ..enums import LinkType, Severity
from ..model import Diagnosis, Finding, LinkReading, Snapshot
from ..repair import repair_action
from .diagnosis import PLATFORM_UNKNOWN
from .rules import crossings, priority, state_crossing, summarize, worst


def degradation_pct(step_time_ms: float, baseline_ms: float) -> float:
    """Step-time slowdown against the baseline, in percent, rounded to 0.1; negative when the job got faster."""
    return round((step_time_ms - baseline_ms) / baseline_ms * 100.0, 1)


def ref_of(link: LinkReading) -> ComponentRef:
    """The link's identity: `GPU 2 -> GPU 3 NVLink 1`, `GPU 4 PCIe`."""
    if link.kind is LinkType.PCIE:
        return ComponentRef.pcie(link.gpu_src)
    return ComponentRef.nvlink(link.gpu_src, link.link_number, peer_gpu=link.gpu_dst)


def link_finding(link: LinkReading, window_hours: float, thresholds: Thresholds) -> Finding:
    counts = {"crc": float(link.crc_errors), "replay": float(link.replay_count),
              "recovery": float(link.recovery_count)}
    rates = {k: v / window_hours for k, v in counts.items()}
    crossed = crossings(link.kind.value, rates, thresholds)
    state = state_crossing(link.link_state)
    if state is not None:
        crossed.insert(0, state)
    severity, ratio = summarize(crossed)
    return Finding(
        ref=ref_of(link), link_type=link.kind, link_id=link.link_id, link=link.link_number,
        gpu=link.gpu_src, peer_gpu=link.gpu_dst,
        peer=f"GPU {link.gpu_dst}" if link.gpu_dst is not None else "CPU root port",
        link_state=link.link_state, counts=counts, rates_per_hour=rates, crossed=crossed,
        severity=severity, worst_ratio=ratio,
    )


def _action(snapshot: Snapshot, top: Finding | None) -> str:
    if top is None:
        return repair_action("healthy", platform=snapshot.platform, node_id=snapshot.node_id)
    if top.severity is Severity.WARNING:
        klass = "warning"
    elif top.severity is Severity.DOWN:
        klass = "down"
    else:
        klass = top.link_type.value
    return repair_action(klass, platform=snapshot.platform, node_id=snapshot.node_id, gpu=top.gpu,
                         gpu_src=top.gpu, gpu_dst=top.peer_gpu, link=top.link, peer=top.peer)


def analyze_snapshot(snapshot: Snapshot, thresholds: Thresholds | None = None) -> Diagnosis:
    thresholds = thresholds or load_thresholds()
    findings = [link_finding(link, float(snapshot.window_hours), thresholds) for link in snapshot.fabric_errors]
    top = worst(findings)
    failing = top is not None and top.severity in (Severity.FAILING, Severity.DOWN)
    degradation = degradation_pct(float(snapshot.step_time_ms), float(snapshot.baseline_step_time_ms))
    return Diagnosis(
        node_id=snapshot.node_id,
        platform=snapshot.platform,
        window_hours=float(snapshot.window_hours),
        fault_detected=failing,
        isolated_component=top.component if failing and top else "None",
        degradation_pct=degradation,
        repair_action=_action(snapshot, top),
        ticket_priority=priority(findings, degradation, thresholds),
        findings=findings,
        thresholds=thresholds.table(), warnings=[] if snapshot.platform else [PLATFORM_UNKNOWN],
        step_time_ms=float(snapshot.step_time_ms),
        baseline_step_time_ms=float(snapshot.baseline_step_time_ms),
    )

