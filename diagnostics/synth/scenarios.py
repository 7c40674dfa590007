"""The labelled scenarios of the synthetic fleet: each changes one node's rates, states, resets, gaps and events.

Ranges (per hour unless stated; background in `synth_node`): a fault sits at 1.1x-50x its threshold, half the draws
near it (1.1x-1.5x) and half log-uniform 1.5x-50x; a healthy node carries, one time in two, a link at 0.5x-0.95x
of a threshold; a flapping link recovers 1-30 times an hour (log-uniform) with replays at 0.1x-0.95x of their
threshold; a benign CRC burst puts 150-3000 CRC flits and 0.5x-0.95x of the CRC-data threshold into one interval;
a Blackwell GPU fails by effective errors (1-300/h, effective BER 1.1x-50x its limit) or failed recoveries (1-6/h),
read as the GPU's totals over its NVLinks; a GPU off the bus (Xid 79) stops reporting and its direct peers see their
link go down, its job stops, and in one scenario its PCIe link replays for 15-90 minutes first. A fault slows its
job with probability 0.8 by 5-90%; PCIe downtrains halve or quarter the width (the truth says how many lanes, not
which: no reader names them). Two faults on one node: the one that slows the job and another whose onset lies at
least an hour away from it (or before the job's history), so the two can be told apart. The driven counters grow
deterministically (see `synth_node`), so a fault at 1.1x is over its threshold in every window.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from ..config.platforms import platform_data
from ..enums import FaultKind, Severity
from ..topology import platform_graph
from .lanes import nvlink_lane_errors, nvswitch_end_fault, pcie_lane_errors
from .node import NodeSim, limit

__all__ = ["BENIGN", "CAVEATS", "SCENARIOS", "NodeSim", "apply_scenario"]

SCENARIOS: tuple[str, ...] = (
    "healthy", "replay_storm", "flapping_link", "link_inactive", "nvswitch_port_fault", "gpu_wide_fault",
    "pcie_riser_replays", "pcie_downtrain", "benign_crc_burst", "reboot_reset", "reset_during_fault",
    "scrape_gaps", "fabric_manager_down", "sku_12_of_18", "two_faults", "outside_slowdown", "xid79_gpu_lost",
    "blackwell_link_errors", "healthy_blackwell", "platform_unknown", "xid79_after_pcie_replays", "single_scrape",
    "fatal_sxid", "pcie_lane_errors", "nvlink_lane_errors", "nvswitch_end_fault",
)
BENIGN = frozenset({"healthy", "benign_crc_burst", "reboot_reset", "scrape_gaps", "sku_12_of_18",
                    "outside_slowdown", "healthy_blackwell", "single_scrape"})
# What a diagnosis must say beyond its parts, per scenario: (where: warnings | verdict | evidence of the headline,
# the words); matched without regard to case.
CAVEATS: dict[str, list[tuple[str, str]]] = {
    "platform_unknown": [("warnings", "platform unknown")],
    "single_scrape": [("warnings", "second reading")],
    "fabric_manager_down": [("verdict", "cannot start")],
    "xid79_after_pcie_replays": [("evidence", "pcie replay")],
}


# -- scenarios ---------------------------------------------------------------------------------------------------
def replay_storm(sim: NodeSim, name: str = "replay_storm", gpu: int | None = None, link: int | None = None, *,
                 onset: int | None = None, slow: bool | None = None, lo: float = 5.0, hi: float = 90.0) -> None:
    if gpu is None:
        i = int(sim.rng.choice(sim.nv_indices()))
    else:
        i = next(j for j in sim.nv_indices(gpu) if sim.links[j].link == link)
    on = sim.onset() if onset is None else onset
    factor = sim.factor()
    rate = factor * limit("nvlink_replay")
    sim.drive("replay", i, on, rate)
    sim.rate["crc_flit"][i, on:] = rate * sim.rng.uniform(1, 5)
    s = sim.links[i]
    sim.fault(name, "nvlink", on, sim.slows(on, lo, hi, force=slow), fault=FaultKind.NVLINK, ratio=factor,
              gpu=s.gpu, link=s.link, switch=s.switch, peer=s.peer, rule="nvlink_replay")


def seed_storm(sim: NodeSim) -> None:
    """The demo node: GPU 2 -> GPU 3 NVLink 1 failing, its job 89% slower."""
    i = next(j for j in sim.nv_indices(2) if sim.links[j].link == 1)
    on = int(len(sim.times) * 0.4)
    sim.rate["replay"][i, on:] = 8900.0
    sim.rate["crc_flit"][i, on:] = 45120.0
    sim.slowdown = (on, 89.2)
    s = sim.links[i]
    sim.fault("replay_storm", "nvlink", on, True, fault=FaultKind.NVLINK, ratio=8900.0 / limit("nvlink_replay"),
              gpu=s.gpu, link=s.link, switch=s.switch, peer=s.peer, rule="nvlink_replay")


def flapping_link(sim: NodeSim) -> None:
    i = int(sim.rng.choice(sim.nv_indices()))
    on = sim.onset(5.0)
    recoveries = float(np.exp(sim.rng.uniform(0, np.log(30))))
    sim.drive("recovery", i, on, recoveries)
    sim.drive("replay", i, on, sim.rng.uniform(0.1, 0.95) * limit("nvlink_replay"))
    s = sim.links[i]
    sim.fault("flapping_link", "nvlink", on, sim.slows(on, 3, 30), fault=FaultKind.NVLINK, gpu=s.gpu, link=s.link,
              switch=s.switch, rule="recovery_persistent", rate_per_hour=round(recoveries, 3))


def link_inactive(sim: NodeSim, name: str = "link_inactive", gpu: int | None = None, link: int | None = None, *,
                  onset: int | None = None, slow: bool | None = None, lo: float = 3.0, hi: float = 40.0) -> None:
    i = int(sim.rng.choice(sim.nv_indices(gpu))) if link is None else next(
        j for j in sim.nv_indices(gpu) if sim.links[j].link == link)
    on = sim.onset() if onset is None else onset
    sim.inactive[i, on:] = True
    s = sim.links[i]
    sim.fault(name, "nvlink", on, sim.slows(on, lo, hi, force=slow), fault=FaultKind.NVLINK,
              severity=Severity.DOWN, gpu=s.gpu, link=s.link, switch=s.switch)


def nvswitch_port_fault(sim: NodeSim) -> None:
    switch = str(sim.rng.choice(sorted({s.switch for s in sim.links if s.switch})))
    gpus = sim.rng.choice(8, size=int(sim.rng.integers(2, 5)), replace=False)
    on = sim.onset()
    factors = []
    for gpu in gpus:
        i = int(sim.rng.choice([j for j in sim.nv_indices(int(gpu)) if sim.links[j].switch == switch]))
        factors.append(sim.factor())
        sim.drive("replay", i, on, factors[-1] * limit("nvlink_replay"))
    sim.fault("nvswitch_port_fault", "nvswitch", on, sim.slows(on), fault=FaultKind.NVSWITCH, ratio=max(factors),
              switch=switch, gpus=sorted(map(int, gpus)), rule="nvlink_replay", least_ratio=round(min(factors), 3))


def gpu_wide_fault(sim: NodeSim) -> None:
    gpu = int(sim.rng.integers(0, 8))
    on = sim.onset()
    factors = [sim.factor() for _ in sim.nv_indices(gpu)]
    for i, factor in zip(sim.nv_indices(gpu), factors, strict=True):
        sim.drive("replay", i, on, factor * limit("nvlink_replay"))
    fatal = bool(sim.rng.random() < 0.5)  # an Xid 74 (fatal: it stops the link until the GPU is reset)
    if fatal:
        sim.events.append({"timestamp": sim.times[-3], "kind": "xid", "gpu": gpu, "code": 74,
                           "text": f"NVRM: Xid (PCI:0000:{gpu + 0x18:02x}:00): 74, NVLink error"})
    sim.fault("gpu_wide_fault", "gpu", on, sim.slows(on), fault=FaultKind.GPU_NVLINKS, ratio=max(factors), gpu=gpu,
              rule="nvlink_replay", least_ratio=round(min(factors), 3), fatal=fatal)


def pcie_riser_replays(sim: NodeSim, name: str = "pcie_riser_replays", gpu: int | None = None, *,
                       onset: int | None = None, slow: bool | None = None, lo: float = 3.0, hi: float = 30.0) -> None:
    gpu = int(sim.rng.integers(0, 8)) if gpu is None else gpu
    i, on, factor = sim.pcie_index(gpu), sim.onset() if onset is None else onset, sim.factor()
    sim.drive("replay", i, on, factor * limit("pcie_replay"))
    rollovers = sim.rng.random() < 0.3
    if rollovers:  # a rollover is a retrain: failing at any count, as far over as any zero threshold
        sim.rate["replay_rollovers"][i, on:] = 0.5
    sim.fault(name, "pcie", on, sim.slows(on, lo, hi, 0.5, force=slow), fault=FaultKind.PCIE_REPLAYS,
              ratio=None if rollovers else factor, gpu=gpu, rule="pcie_replay")


def pcie_downtrain(sim: NodeSim, name: str = "pcie_downtrain", gpu: int | None = None, *,
                   onset: int | None = None, slow: bool | None = None, lo: float = 1.0, hi: float = 10.0) -> None:
    """The link runs narrower: its width says how many lanes it lost, never which, so the truth names none."""
    gpu = int(sim.rng.integers(0, 8)) if gpu is None else gpu
    on = sim.onset() if onset is None else onset
    width = sim.max_width // int(sim.rng.choice([2, 4]))
    sim.fault(name, "pcie", on, sim.slows(on, lo, hi, 0.5, force=slow), fault=FaultKind.PCIE_DOWNTRAIN, gpu=gpu,
              width=width, max_width=sim.max_width, rule="pcie_width")


def benign_crc_burst(sim: NodeSim) -> None:
    """One interval of CRC errors: flits well over the CRC warning, data just under the failing CRC-data rule."""
    i = int(sim.rng.choice(sim.nv_indices() or [sim.pcie_index(0)]))
    at = int(sim.rng.integers(len(sim.times) // 2, len(sim.times) - 1))
    interval_h = (sim.times[at] - sim.times[at - 1]).total_seconds() / 3600
    sim.rate["crc_flit"][i, at] = sim.rng.uniform(150, 3000) / interval_h
    room = limit("nvlink_crc_data") - 2 - sim.rate["crc_data"][i].max()  # background, and one count of carry
    ratio = float(sim.rng.uniform(0.5, 0.95))
    sim.exact.add(("crc_data", i))  # exact, so the hour holding the burst stays under the rule
    sim.rate["crc_data"][i, at] = ratio * room / interval_h
    s = sim.links[i]
    sim.near.append({"rule": "nvlink_crc_data", "ratio": round(float(ratio * room) / limit("nvlink_crc_data"), 3),
                     "gpu": s.gpu, "link": s.link, "at": str(sim.times[at])})
    sim.warn("crc", i, at, at)


def reboot_reset(sim: NodeSim) -> None:
    at = int(sim.rng.integers(len(sim.times) // 3, len(sim.times) - 2))
    sim.resets.append(at)
    sim.keep[max(at - 2, 0):at] = False


def reset_during_fault(sim: NodeSim) -> None:
    replay_storm(sim, "reset_during_fault")
    on = int(sim.times.searchsorted(pd.Timestamp(sim.faults[-1]["onset"])))
    sim.resets.append(int(sim.rng.integers(on + 1, len(sim.times) - 1)))


def scrape_gaps(sim: NodeSim) -> None:
    t = len(sim.times)
    for _ in range(int(sim.rng.integers(1, 4))):
        a = int(sim.rng.integers(1, t - 3))
        sim.keep[a:min(a + int(sim.rng.integers(3, 24)), t - 2)] = False


def fabric_manager_down(sim: NodeSim) -> None:
    """Fabric Manager stops: every NVLink goes inactive and, on an NVSwitch system, CUDA initialisation fails
    (error 802, "system not yet initialized"), so the node's job logs no step from then on."""
    on = sim.onset()
    sim.inactive[sim.nv_indices(), on:] = True
    if int(platform_data(sim.platform).get("nvlink_generation", 0)) >= 4:  # the GPU fabric state: Hopper and newer
        sim.events.append({"timestamp": sim.times[on], "kind": "fabric_state",
                           "text": "Fabric State: In Progress (Fabric Manager not running)"})
    sim.stops_job = on
    sim.fault("fabric_manager_down", "fabric-software", on, False, fault=FaultKind.FABRIC_MANAGER,
              severity=Severity.DOWN)


def two_faults(sim: NodeSim) -> None:
    """Two independent faults on two GPUs: the first slows the job; the second starts at least an hour away from it,
    or before the job's history begins. Two NVLinks never share a switch or a GPU pair: that would be one switch or
    one link, and no analysis could tell them apart."""
    gpus = [int(g) for g in sim.rng.choice(8, size=2, replace=False)]
    kinds = sim.rng.choice(4, size=2, replace=False)
    first = sim.onset()
    step_h = (sim.times[1] - sim.times[0]).total_seconds() / 3600
    apart = int(np.ceil(1.0 / step_h))
    latest = max(first, len(sim.times) - int(4.0 / step_h) - 1)
    second = int(sim.rng.choice([0, *(i for i in range(1, latest + 1) if abs(i - first) >= apart)]))
    taken: set[str | None] = set()
    for gpu, which, on, slow in zip(gpus, kinds, (first, second), (True, False), strict=True):
        when: dict[str, Any] = {"onset": on, "slow": slow, "lo": 8.0, "hi": 60.0}
        if which in (0, 1):
            other = f"GPU {gpus[1] if gpu == gpus[0] else gpus[0]}"
            free = [j for j in sim.nv_indices(gpu) if sim.links[j].peer != other
                    and (sim.links[j].switch is None or sim.links[j].switch not in taken)]
            link = sim.links[int(sim.rng.choice(free))].link
            taken.add(sim.links[next(j for j in free if sim.links[j].link == link)].switch)
            if which == 0:
                replay_storm(sim, "two_faults", gpu=gpu, link=link, **when)
            else:
                link_inactive(sim, "two_faults", gpu=gpu, link=link, **when)
        elif which == 2:
            pcie_riser_replays(sim, "two_faults", gpu=gpu, **when)
        else:
            pcie_downtrain(sim, "two_faults", gpu=gpu, **when)


def outside_slowdown(sim: NodeSim) -> None:
    sim.slowdown = (sim.onset(), sim.slowdown_pct(8, 50))


def healthy(sim: NodeSim) -> None:
    """Nothing beyond background noise (and maybe one link near a threshold)."""


def healthy_blackwell(sim: NodeSim) -> None:
    """A Blackwell node with a GPU whose bit-error ratio sits just under its limit: the Blackwell rules' negative."""
    if not sim.near:
        sim.near_below(int(sim.rng.choice(sim.error_indices())))


def xid79_gpu_lost(sim: NodeSim, name: str = "xid79_gpu_lost", gpu: int | None = None,
                   onset: int | None = None) -> None:
    """Xid 79: the GPU fell off the bus. Its series stop; a direct peer sees its link to it go down; the job's
    processes on it fail, so the job logs no step from then on."""
    gpu = int(sim.rng.integers(0, 8)) if gpu is None else gpu
    on = sim.onset() if onset is None else onset
    sim.gone[[i for i, s in enumerate(sim.links) if s.gpu == gpu], on + 1:] = True
    sim.inactive[[i for i, s in enumerate(sim.links) if s.peer == f"GPU {gpu}"], on + 1:] = True
    sim.events.append({"timestamp": sim.times[on], "kind": "xid", "gpu": gpu, "code": 79,
                       "text": f"NVRM: Xid (PCI:0000:{gpu + 0x18:02x}:00): 79, pid='<unknown>', name=<unknown>, "
                               "GPU has fallen off the bus."})
    sim.stops_job = on
    sim.fault(name, "gpu", on, False, fault=FaultKind.GPU_OFF_BUS, severity=Severity.DOWN, gpu=gpu,
              rule="xid_off_bus")


def xid79_after_pcie_replays(sim: NodeSim) -> None:
    """The GPU's PCIe link replays for 15-90 minutes, then Xid 79 and its series stop: the GPU off the bus is the
    fault; the replays before it are its evidence (the PCIe path is the usual cause), not a second fault."""
    gpu, t = int(sim.rng.integers(0, 8)), len(sim.times)
    step_h = (sim.times[1] - sim.times[0]).total_seconds() / 3600
    on = int(sim.rng.integers(max(int(t * 0.3), t - int(4.0 / step_h)), t - int(1.5 / step_h)))
    rise = on - int(sim.rng.integers(max(1, int(0.25 / step_h)), int(1.5 / step_h) + 1))
    factor = sim.factor()
    sim.drive("replay", sim.pcie_index(gpu), rise, factor * limit("pcie_replay"))
    xid79_gpu_lost(sim, "xid79_after_pcie_replays", gpu=gpu, onset=on)
    sim.faults[-1].update(replays_from=str(sim.times[rise]), replay_ratio=round(factor, 3))


def blackwell_link_errors(sim: NodeSim) -> None:
    """A Blackwell GPU's NVLinks failing the Blackwell way: effective errors and BER, or failed recoveries; replays
    rare. DCGM reads these counters as the GPU's totals over its links, so the fault is the GPU's NVLinks."""
    gpu, on = int(sim.rng.integers(0, 8)), sim.onset()
    i = sim.total_index(gpu)
    if sim.rng.random() < 0.6:
        factor = sim.factor()
        sim.gauge["effective_ber"][i, on:] = factor * limit("effective_ber")
        sim.drive("effective_errors", i, on, float(np.exp(sim.rng.uniform(0, np.log(300)))))
        worse = sim.rng.uniform(10, 1000)
        sim.gauge["symbol_ber"][i, on:] *= worse
        sim.rate["symbol_errors"][i, on:] *= worse
        how: dict[str, Any] = {"rule": "effective_ber", "ber_ratio": round(factor, 3)}
    else:
        failed = float(sim.rng.uniform(1, 6))
        sim.drive("recovery_failed", i, on, failed)
        sim.drive("recovery_successful", i, on, float(sim.rng.uniform(2, 20)))
        how = {"rule": "recovery_failed", "rate_per_hour": round(failed, 3)}
    # effective errors and failed recoveries fail at any count: as far over as a zero threshold goes (ratio None)
    sim.fault("blackwell_link_errors", "nvlink", on, sim.slows(on, 3, 40), fault=FaultKind.NVLINK_AGGREGATE,
              gpu=gpu, link=None, **how)


def fatal_sxid(sim: NodeSim) -> None:
    """A fatal SXid (24007, sourcetrack timeout) on the NVSwitch port of one GPU link, 20-55 minutes before the end:
    the switch stops that link, so the GPU sees its NVLink go inactive, and the job's processes on the GPU fail (it
    logs no step since). The kernel line names the switch (nvidia-nvswitchN) and the port (Link N)."""
    i = int(sim.rng.choice([j for j in sim.nv_indices() if sim.links[j].switch]))
    s = sim.links[i]
    port = platform_graph(sim.platform).port_of(s.gpu, s.link, "nvlink").switch_port
    step_h = (sim.times[1] - sim.times[0]).total_seconds() / 3600
    on = len(sim.times) - 1 - int(sim.rng.integers(int(np.ceil(0.34 / step_h)), int(0.92 / step_h) + 1))
    index = str(s.switch).split()[-1]
    sim.inactive[i, on + 1:] = True
    sim.events.append({"timestamp": sim.times[on], "kind": "sxid", "code": 24007, "severity": "fatal",
                       "nvswitch": index, "link": port,
                       "text": f"nvidia-nvswitch{index}: SXid (PCI:0000:{0xa0 + int(index):02x}:00.0): 24007, Fatal, "
                               f"Link {port} sourcetrack timeout error (First)"})
    sim.stops_job = on + 1
    sim.fault("fatal_sxid", "nvswitch", on, False, fault=FaultKind.NVSWITCH_FATAL, severity=Severity.DOWN,
              switch=s.switch, port=port, gpu=s.gpu, link=s.link, code=24007)


def platform_unknown(sim: NodeSim) -> None:
    """A node the inventory lacks (no platform file names it), its tables spelling switches `nvswitch-1`: a replay
    storm on one of its NVLinks, which no part can be named for until the board is known."""
    sim.inventory = False
    replay_storm(sim, "platform_unknown")


def single_scrape(sim: NodeSim) -> None:
    """The store holds one scrape of this node: one reading per link, totals since reset and no rate (so no rate
    can cross a warning either)."""
    sim.keep[:-1] = False
    sim.warnings.clear()


_APPLY: dict[str, Callable[[NodeSim], None]] = {
    "healthy": healthy, "replay_storm": replay_storm, "flapping_link": flapping_link,
    "link_inactive": link_inactive, "nvswitch_port_fault": nvswitch_port_fault, "gpu_wide_fault": gpu_wide_fault,
    "pcie_riser_replays": pcie_riser_replays, "pcie_downtrain": pcie_downtrain,
    "benign_crc_burst": benign_crc_burst, "reboot_reset": reboot_reset, "reset_during_fault": reset_during_fault,
    "scrape_gaps": scrape_gaps, "fabric_manager_down": fabric_manager_down, "sku_12_of_18": healthy,
    "two_faults": two_faults, "outside_slowdown": outside_slowdown, "xid79_gpu_lost": xid79_gpu_lost,
    "blackwell_link_errors": blackwell_link_errors, "healthy_blackwell": healthy_blackwell,
    "platform_unknown": platform_unknown, "xid79_after_pcie_replays": xid79_after_pcie_replays,
    "single_scrape": single_scrape, "fatal_sxid": fatal_sxid, "pcie_lane_errors": pcie_lane_errors,
    "nvlink_lane_errors": nvlink_lane_errors, "nvswitch_end_fault": nvswitch_end_fault,
}


def apply_scenario(sim: NodeSim, scenario: str, *, demo: bool = True) -> None:
    """`demo`: node 12's replay storm is the demo's fixed one (GPU 2 -> GPU 3 NVLink 1, job 89% slower)."""
    if demo and sim.node_id == "hpc-gpu-node-12" and scenario == "replay_storm":
        seed_storm(sim)
        return
    _APPLY[scenario](sim)
