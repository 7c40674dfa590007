"""A node's all_reduce bus bandwidth (nccl-tests `busbw`) against its platform's figure (`data/busbw.toml`).

An engineer runs all_reduce_perf on one node to see whether its NVLink fabric delivers its bandwidth: the run's
largest message size (or its `# Avg bus bandwidth` where no size row was read) is judged, one finding for the node's
GPU-to-GPU fabric as a whole, since a collective's figure names no link. A run over several hosts crosses the
network between them, and a node whose platform is not known has no figure to compare with: both are said, with
no verdict.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .. import format as fmt
from ..components import ComponentRef
from ..config.busbw import ExpectedBusbw, default_busbw
from ..config.thresholds import BUSBW_RULE, Thresholds
from ..enums import LinkType, Severity
from ..metrics import Unit
from ..model import Crossing, Finding

COLLECTIVE = "all_reduce"  # the collective the platforms' figures are of
BUSBW_ACTION = ("Check the GPU-to-GPU paths of {node}: `nvidia-smi nvlink -s` (an NVLink down or below its speed) and "
                "`nvidia-smi topo -m` (GPU pairs on PIX, PXB, NODE or SYS rather than NV#: peer-to-peer over PCIe or "
                "shared memory), then read its link counters (`nvidia-smi nvlink -e`, twice a few minutes apart)")


@dataclass(frozen=True)
class Run:
    """One host list's all_reduce figure: the best busbw at its largest message size, or its average."""

    hosts: tuple[str, ...]
    busbw_gbps: float
    size_bytes: int | None  # None: the run's `# Avg bus bandwidth` (no size row was read)

    def said(self) -> str:
        at = f"at {_size(self.size_bytes)} messages" if self.size_bytes is not None else "(the run's average)"
        return f"all_reduce bus bandwidth {fmt.value(self.busbw_gbps, Unit.BANDWIDTH)} {at}"


@dataclass
class Measured:
    """What the runs say of each node: a finding where its platform's figure judges it, else notes."""

    findings: dict[str, list[Finding]] = field(default_factory=dict)
    notes: dict[str, list[str]] = field(default_factory=dict)


def all_reduce_runs(steps: pd.DataFrame | None) -> list[Run]:
    """The all_reduce runs the step samples hold (nccl-tests rows carry `busbw_gbps`), one per host list."""
    if steps is None or steps.empty or "busbw_gbps" not in steps.columns or "collective" not in steps.columns:
        return []
    busbw = pd.to_numeric(steps["busbw_gbps"], errors="coerce").to_numpy(np.float64, na_value=np.nan)
    mine = ~np.isnan(busbw) & (steps["collective"].astype("string") == COLLECTIVE).to_numpy(bool, na_value=False)
    if not mine.any():
        return []
    rows = steps[mine]
    sizes = (pd.to_numeric(rows["size_bytes"], errors="coerce") if "size_bytes" in rows.columns
             else pd.Series(np.nan, index=rows.index)).to_numpy(np.float64, na_value=np.nan)
    figures = busbw[mine]
    hosts = rows["node_ids"].astype("string").fillna("").to_numpy(object)
    out = []
    for listed in sorted(set(hosts)):
        named = tuple(h.strip() for h in str(listed).split(",") if h.strip())
        if not named:
            continue
        here = hosts == listed
        sized = here & ~np.isnan(sizes)
        if sized.any():
            largest = sizes[sized].max()
            out.append(Run(named, float(figures[sized & (sizes == largest)].max()), int(largest)))
        else:
            out.append(Run(named, float(figures[here].max()), None))
    return out


def measured_bandwidth(steps: pd.DataFrame | None, platform_of: Callable[[str], str | None],
                       thresholds: Thresholds) -> Measured:
    """Each node's all_reduce figure judged against its platform's, or said where it cannot be."""
    out = Measured()
    policy = default_busbw()
    fraction = thresholds.setting("busbw_degraded_fraction")
    for run in all_reduce_runs(steps):
        if len(run.hosts) > 1:
            note = (f"{run.said()} over {fmt.count(len(run.hosts), 'host')} ({', '.join(run.hosts)}): the figure "
                    "crosses the network between them, so it judges no host's NVLink fabric (all_reduce_perf on one "
                    "host, its GPUs alone, judges that)")
            for host in run.hosts:
                out.notes.setdefault(host, []).append(note)
            continue
        host = run.hosts[0]
        platform = platform_of(host)
        expected = policy.of(platform)
        if platform is None:
            out.notes.setdefault(host, []).append(
                f"{run.said()} on {host}: its platform is not known, so the figure is not judged (name it with "
                "--platform or a nodes.csv to compare the figure with the platform's expected one)")
        elif expected is None:
            out.notes.setdefault(host, []).append(
                f"{run.said()} on {host}: no expected all_reduce figure is known for {platform} (busbw.toml), so "
                "the figure is not judged")
        else:
            finding = judged(run, platform, expected, fraction)
            out.findings.setdefault(host, []).append(finding)
            if finding.severity is Severity.OK:  # said where every door shows it: a healthy finding is not listed
                out.notes.setdefault(host, []).extend(finding.evidence)
    return out


def judged(run: Run, platform: str, expected: ExpectedBusbw, fraction: float) -> Finding:
    """The node's GPU fabric as its run measured it: degraded (a warning) below `fraction` of the expected figure."""
    limit = expected.busbw_gbps * fraction
    said = (f"{run.said()}, {run.busbw_gbps / expected.busbw_gbps:.0%} of the "
            f"{fmt.value(expected.busbw_gbps, Unit.BANDWIDTH)} expected of {platform}"
            f"{' (an assumed figure)' if expected.assumed else ''}")
    if run.busbw_gbps >= limit:
        return Finding(ref=ComponentRef.gpu_fabric(), link_type=LinkType.NVLINK, link_id="gpu-fabric",
                       severity=Severity.OK, evidence=[f"{said}: the fabric delivers its bandwidth"])
    message = (f"{said}, below {fraction:.0%} of it: an NVLink down or degraded, or peer-to-peer falling back to "
               "PCIe or shared memory (`nvidia-smi nvlink -s`, `nvidia-smi topo -m`)")
    crossing = Crossing(rule=BUSBW_RULE, counter="busbw", rate_per_hour=run.busbw_gbps, above=limit,
                        unit=Unit.BANDWIDTH, severity=Severity.WARNING, message=message)
    return Finding(ref=ComponentRef.gpu_fabric(), link_type=LinkType.NVLINK, link_id="gpu-fabric",
                   severity=Severity.WARNING, crossed=[crossing],
                   evidence=["a collective's figure names no link: the node's links, its topology and NCCL's "
                             "transport (NCCL_DEBUG=INFO says P2P, SHM or NVLS) tell which path is slow"])


def degraded(findings: list[Finding]) -> Finding | None:
    """The node's degraded all_reduce finding, if any."""
    return next((f for f in findings if any(c.rule == BUSBW_RULE for c in f.crossed)), None)


def _size(size: int) -> str:
    """A message size as nccl-tests' -b/-e options write it: '10 GiB', '512 MiB', '4,096 bytes'."""
    for scale, unit in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if size >= scale:
            return f"{fmt.number(size / scale)} {unit}"
    return fmt.count(size, "byte")
