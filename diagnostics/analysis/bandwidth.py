"""A node's all_reduce bus bandwidth (nccl-tests `busbw`) against its platform's figure (`data/busbw.toml`).

An engineer runs all_reduce_perf on one node to see whether its NVLink fabric delivers its bandwidth: each host's
newest run is judged at its largest message size, one finding for the node's GPU-to-GPU fabric as a whole, since a
collective's figure names no link; a run whose check found wrong values is failing whatever its figure. Where a
verdict could be wrong (no platform or figure, another GPU model, fewer GPUs than the board, a run that stopped at
small messages or gave only its average, a run over several hosts) the figure is said with why, and no verdict.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .. import format as fmt
from ..components import ComponentRef
from ..config import all_platforms
from ..config.busbw import BusbwPolicy, ExpectedBusbw, default_busbw
from ..config.racks import rack_of
from ..config.thresholds import BUSBW_RULE, WRONG_VALUES_RULE, Thresholds
from ..enums import LinkType, Severity
from ..metrics import Unit
from ..model import Crossing, Finding

COLLECTIVE = "all_reduce"  # the collective the platforms' figures are of
BUSBW_ACTION = ("Check the GPU-to-GPU paths of {node}: `nvidia-smi nvlink -s` (an NVLink down or below its speed) and "
                "`nvidia-smi topo -m` (GPU pairs on PIX, PXB, NODE or SYS rather than NV#: peer-to-peer over PCIe or "
                "shared memory), then read its link counters (`nvidia-smi nvlink -e`, twice a few minutes apart)")

# A collective whose results came out wrong: the node runs no job until the link is found (a failing finding's action)
WRONG_ACTION = ("Drain {node}: a collective's results over its GPU-to-GPU fabric came out wrong (data corrupted), "
                "which names no part; find the link: `nvidia-smi nvlink -e` twice a few minutes apart (a link's "
                "errors), the node's kernel log (NVLink Xids), `nvidia-smi nvlink -s` (a link down), then ticket the "
                "part that link names")
# A bus bandwidth names no part: no replacement is drafted for it, only what finds the link
BUSBW_NO_PART = ("the GPU-to-GPU fabric's bus bandwidth names no part, so no repair ticket is drafted for it: find the "
                 "link first (`nvidia-smi nvlink -s` for a link down or slow, `nvidia-smi topo -m` for GPU pairs off "
                 "NVLink, `nvidia-smi nvlink -e` twice a few minutes apart for a link's errors, and the CUDA samples' "
                 "p2pBandwidthLatencyTest for the slow GPU pair), then draft the part that link names")
# Wrong values in a collective's results name no part either: what finds the link whose data came out corrupted
WRONG_NO_PART = ("the GPU-to-GPU fabric's results came out corrupted (wrong values in a collective), which names no "
                 "part, so no repair ticket is drafted for it: find the link first (`nvidia-smi nvlink -e` twice a few "
                 "minutes apart for a link's errors, the node's Xids, `nvidia-smi nvlink -s` for a link down), then "
                 "draft the part that link names")


@dataclass(frozen=True)
class Run:
    """One run's all_reduce figure: the best busbw at its largest message size, or its average; what it ran on."""

    hosts: tuple[str, ...]
    busbw_gbps: float
    size_bytes: int | None  # None: the run's `# Avg bus bandwidth` (no size row was read)
    gpus: int | None = None  # the GPUs it used (its `# Rank` lines)
    gpu_name: str | None = None  # the device its `# Rank` lines name
    wrong: int = 0  # values its check found wrong (#wrong, `# Out of bounds values`)
    time_ns: int | None = None  # its newest row's time; None: undated
    order: int = 0  # where it was read: a later run of the same time (or undated) is the newer
    ingested: int = 0  # the store's ingest that took it in (0: read from a file): ranks above where it was read

    def said(self) -> str:
        at = f"at {_size(self.size_bytes)} messages" if self.size_bytes is not None else "(the run's average)"
        return f"all_reduce bus bandwidth {fmt.value(self.busbw_gbps, Unit.BANDWIDTH)} {at}"

    def newer(self) -> tuple[bool, int, int, int]:
        """How runs of a host rank: a dated run above every undated one (an undated run states no time, so any
        window holds it), then by time, then the later ingested, then the later read (a store reads its parts in
        no ingest order)."""
        return self.time_ns is not None, self.time_ns or 0, self.ingested, self.order


@dataclass
class Measured:
    """What the runs say of each node: a finding where its platform's figure judges it, else notes."""

    findings: dict[str, list[Finding]] = field(default_factory=dict)
    notes: dict[str, list[str]] = field(default_factory=dict)


def all_reduce_runs(steps: pd.DataFrame | None) -> list[Run]:
    """The all_reduce runs the step samples hold (nccl-tests rows carry `busbw_gbps`), one per run (rows stored
    with no run: one per host list)."""
    if steps is None or steps.empty or "busbw_gbps" not in steps.columns or "collective" not in steps.columns:
        return []
    busbw = pd.to_numeric(steps["busbw_gbps"], errors="coerce").to_numpy(np.float64, na_value=np.nan)
    mine = ~np.isnan(busbw) & (steps["collective"].astype("string") == COLLECTIVE).to_numpy(bool, na_value=False)
    if not mine.any():
        return []
    rows = steps[mine]
    hosts = rows["node_ids"].astype("string").fillna("")
    key = rows["run"].astype("string").fillna("hosts " + hosts) if "run" in rows.columns else "hosts " + hosts
    frame = pd.DataFrame({
        "key": key.to_numpy(object), "hosts": hosts.to_numpy(object), "busbw": busbw[mine],
        "size": _numbers(rows, "size_bytes"), "gpus": _numbers(rows, "gpus"), "wrong": _numbers(rows, "wrong_values"),
        "name": rows["gpu_name"].astype("string").to_numpy(object, na_value=None) if "gpu_name" in rows.columns
        else None,
        "t": pd.to_datetime(rows["timestamp"], utc=True).to_numpy("datetime64[ns]").view(np.int64)
        if "timestamp" in rows.columns else np.iinfo(np.int64).min,
        "order": np.arange(len(rows)), "ingested": _numbers(rows, "ingested")})
    frame.loc[frame["t"] == np.iinfo(np.int64).min, "t"] = np.nan  # NaT
    sized = frame["size"].notna()  # a size row's #wrong is its own; the average row's the run's total
    frame["wrong_sized"], frame["wrong_total"] = frame["wrong"].where(sized), frame["wrong"].where(~sized)
    largest = frame.groupby("key", sort=False)["size"].transform("max")
    at_largest = frame[frame["size"] == largest].groupby("key", sort=False)["busbw"].max().to_dict()
    run = frame.groupby("key", sort=False).agg(hosts=("hosts", "first"), average=("busbw", "max"),
                                               size=("size", "max"), gpus=("gpus", "max"),
                                               wrong_sized=("wrong_sized", "sum"), wrong_total=("wrong_total", "max"),
                                               name=("name", "first"), t=("t", "max"), order=("order", "max"),
                                               ingested=("ingested", "max"))
    out = []
    for key, r in run.iterrows():
        named = tuple(h.strip() for h in str(r["hosts"]).split(",") if h.strip())
        if not named:
            continue
        has_size = not np.isnan(r["size"])
        size = int(r["size"]) if has_size else None
        out.append(Run(named, float(at_largest[key] if has_size else r["average"]), size,
                       None if np.isnan(r["gpus"]) else int(r["gpus"]), r["name"] or None,
                       int(np.nanmax([r["wrong_sized"], r["wrong_total"], 0.0])),
                       None if np.isnan(r["t"]) else int(r["t"]), int(r["order"]),
                       0 if np.isnan(r["ingested"]) else int(r["ingested"])))
    return out


def _numbers(rows: pd.DataFrame, column: str) -> np.ndarray:
    if column not in rows.columns:
        return np.full(len(rows), np.nan)
    return pd.to_numeric(rows[column], errors="coerce").to_numpy(np.float64, na_value=np.nan)


def newest_runs(runs: list[Run]) -> dict[str, Run]:
    """Each host's newest run (`Run.newer`): the one judged, so a better older run never hides a newer one."""
    out: dict[str, Run] = {}
    for run in runs:
        for host in run.hosts:
            if host not in out or run.newer() > out[host].newer():
                out[host] = run
    return out


def measured_bandwidth(steps: pd.DataFrame | None, platform_of: Callable[[str], str | None],
                       thresholds: Thresholds) -> Measured:
    """Each node's newest all_reduce run judged against its platform's figure, or said, with why, where a verdict
    could be wrong: data found wrong is failing whatever the figure."""
    out = Measured()
    policy = default_busbw()
    fraction = thresholds.setting("busbw_degraded_fraction")
    for host, run in sorted(newest_runs(all_reduce_runs(steps)).items()):
        platform = platform_of(host)
        if run.wrong and len(run.hosts) == 1:
            out.findings.setdefault(host, []).append(wrong_values(run))
            continue
        why = unjudged(run, platform, policy, fraction)
        if why is not None:
            out.notes.setdefault(host, []).append(why)
            continue
        assert platform is not None
        expected = policy.of(platform)
        assert expected is not None
        out.findings.setdefault(host, []).append(judged(run, platform, expected, fraction))
    return out


def unjudged(run: Run, platform: str | None, policy: BusbwPolicy, fraction: float) -> str | None:
    """Why the run's figure judges no node (said with the figure), or None where it does."""
    host = run.hosts[0]
    said = f"{run.said()} on {host}" if len(run.hosts) == 1 else \
        f"{run.said()} over {fmt.count(len(run.hosts), 'host')} ({', '.join(run.hosts)})"
    if len(run.hosts) > 1:
        spans = "the rack's NVLink domain" if rack_of(platform) is not None else "the network between them"
        wrong = (f"; it found {fmt.count(run.wrong, 'wrong value')}: one of the hosts or the path between them "
                 "corrupts data, so run it on each host alone") if run.wrong else ""
        return (f"{said}: the figure crosses {spans}, and no figure for that is in busbw.toml, so it judges no "
                f"host's fabric (all_reduce_perf on one host, its GPUs alone, judges that){wrong}")
    expected = policy.of(platform)
    board = all_platforms().get(platform or "", {})
    platform_gpus = int(board["gpu_count"]) if "gpu_count" in board else None
    model = str(board.get("gpu_model", "")) or None
    named = _model_named(run.gpu_name)
    if platform is None:
        return (f"{said}: its platform is not known, so the figure is not judged (name it with --platform or a "
                "nodes.csv to compare the figure with the platform's expected one)")
    if expected is None:
        return f"{said}: no expected all_reduce figure is known for {platform} (busbw.toml), so it is not judged"
    if named is not None and model is not None and named != model:
        return (f"{said}: the run's GPUs are {run.gpu_name}, not the {model} of {platform}, so the figure is not "
                "judged (is the platform right?)")
    if run.gpus is not None and platform_gpus is not None and run.gpus < platform_gpus:
        return (f"{said}: the run used {fmt.count(run.gpus, 'GPU')} of the node's {platform_gpus}, and the figure "
                f"depends on the GPU count, so it is not judged (run all_reduce_perf -g {platform_gpus}, or one "
                "process per GPU, for a verdict)")
    if run.size_bytes is None:
        return (f"{said}: the average over every message size (the smallest included) is not the large-message "
                "figure a verdict needs, so it is not judged (paste the run's size rows)")
    if run.size_bytes < policy.judged_from_bytes:
        return (f"{said}: busbw is still rising below {_size(policy.judged_from_bytes)} messages, so it is not "
                f"judged (run all_reduce_perf to `-e 8G` for a verdict)")
    return None


def _model_named(name: str | None) -> str | None:
    """The platforms' GPU model a device name names: the longest one it holds as words ('H100 NVL' over 'H100')."""
    if not name:
        return None
    models = {str(p.get("gpu_model")) for p in all_platforms().values() if p.get("gpu_model")}
    found = [m for m in models if re.search(rf"(?<![\w-]){re.escape(m)}(?![\w])", name)]
    return max(found, key=len) if found else None


def wrong_values(run: Run) -> Finding:
    """A run whose check found wrong values: the node's GPU-to-GPU fabric corrupted data (failing, whatever the
    figure)."""
    message = (f"all_reduce on {run.hosts[0]} found {fmt.count(run.wrong, 'wrong value')} in its results "
               "(#wrong, `# Out of bounds values`): data crossing the GPU-to-GPU fabric came out corrupted, whatever "
               "its bandwidth; read the node's link counters (`nvidia-smi nvlink -e`) and its Xids")
    crossing = Crossing(rule=WRONG_VALUES_RULE, counter="#wrong", severity=Severity.FAILING, message=message)
    return Finding(ref=ComponentRef.gpu_fabric(), link_type=LinkType.NVLINK, link_id="gpu-fabric",
                   severity=Severity.FAILING, crossed=[crossing], evidence=[f"{run.said()}; {message}"])


def judged(run: Run, platform: str, expected: ExpectedBusbw, fraction: float) -> Finding:
    """The node's GPU fabric as its run measured it: degraded (a warning) below `fraction` of the expected figure."""
    limit = expected.busbw_gbps * fraction
    said = (f"{run.said()}, {run.busbw_gbps / expected.busbw_gbps:.0%} of the "
            f"{fmt.value(expected.busbw_gbps, Unit.BANDWIDTH)} expected of {platform}"
            f"{' (an assumed figure)' if expected.assumed else ''}")
    if run.busbw_gbps >= limit:
        return Finding(ref=ComponentRef.gpu_fabric(), link_type=LinkType.NVLINK, link_id="gpu-fabric",
                       severity=Severity.OK, evidence=[f"{said}: as expected of a healthy fabric"])
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


def corrupted(findings: list[Finding]) -> Finding | None:
    """The node's all_reduce finding whose results came out wrong, if any."""
    return next((f for f in findings if any(c.rule == WRONG_VALUES_RULE for c in f.crossed)), None)


def _size(size: int) -> str:
    """A message size as nccl-tests' -b/-e options write it: '10 GiB', '512 MiB', '4,096 bytes'."""
    for scale, unit in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if size >= scale:
            return f"{fmt.number(size / scale)} {unit}"
    return fmt.count(size, "byte")
