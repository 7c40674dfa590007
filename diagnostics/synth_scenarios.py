"""The labelled scenarios of the synthetic fleet: each changes one node's rates, states, resets and gaps.

Ranges (per hour unless stated): background replays 0-15 and CRC 0-25 per link; a healthy node may carry one link
at 50-90% of a threshold; a fault sits at 1.15x-30x its threshold (log-uniform), recoveries at 3-30/h; a fault
slows its job with probability 0.8 by 5-90%; PCIe downtrains halve or quarter the width.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .synth_layout import SynthLink, has_switches, nvlinks, pcie_links, pcie_shape

SCENARIOS: tuple[str, ...] = (
    "healthy", "replay_storm", "flapping_link", "link_inactive", "nvswitch_port_fault", "gpu_wide_fault",
    "pcie_riser_replays", "pcie_downtrain", "benign_crc_burst", "reboot_reset", "reset_during_fault",
    "scrape_gaps", "fabric_manager_down", "sku_12_of_18", "two_faults", "outside_slowdown",
)
BENIGN = frozenset({"healthy", "benign_crc_burst", "reboot_reset", "scrape_gaps", "sku_12_of_18",
                    "outside_slowdown"})
REPLAY_LIMIT, CRC_LIMIT = 1000.0, 100.0
NV_COUNTERS, PCIE_COUNTERS = ("crc_flit", "crc_data", "replay", "recovery"), ("replay", "replay_rollovers")


@dataclass
class NodeSim:
    rng: np.random.Generator
    node_id: str
    platform: str
    times: pd.DatetimeIndex
    links: list[SynthLink]
    rate: dict[str, np.ndarray]
    inactive: np.ndarray
    width: np.ndarray
    gen: np.ndarray
    traffic: np.ndarray
    max_gen: int
    max_width: int
    resets: list[int] = field(default_factory=list)
    keep: np.ndarray = field(default_factory=lambda: np.ones(0, dtype=bool))
    faults: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    slowdown: tuple[int, float] | None = None

    @classmethod
    def new(cls, rng: np.random.Generator, node_id: str, platform: str, times: pd.DatetimeIndex) -> NodeSim:
        links = nvlinks(platform) + pcie_links(platform)
        n, t = len(links), len(times)
        rate = {c: np.repeat(rng.uniform(0, hi, (n, 1)), t, axis=1)
                for c, hi in (("replay", 15), ("crc_flit", 20), ("crc_data", 5), ("recovery", 0),
                              ("replay_rollovers", 0))}
        max_gen, max_width = pcie_shape(platform)
        busy = np.ones(t, dtype=bool)
        for _ in range(int(rng.integers(0, 3))):  # idle stretches: the PCIe generation drops to save power
            a = int(rng.integers(0, t))
            busy[a:a + int(rng.integers(2, 12))] = False
        traffic = np.where(busy, rng.uniform(2e9, 12e9, t), rng.uniform(0, 2e8, t))
        sim = cls(rng, node_id, platform, times, links, rate, np.zeros((n, t), dtype=bool),
                  np.full(t, max_width, dtype=float), np.where(busy, max_gen, 1).astype(float), traffic,
                  max_gen, max_width, keep=np.ones(t, dtype=bool))
        if rng.random() < 0.3 and sim.nv_indices():  # one link near (below) a threshold: not a fault
            i = int(rng.choice(sim.nv_indices()))
            counter, limit = (("replay", REPLAY_LIMIT), ("crc_flit", CRC_LIMIT))[int(rng.integers(0, 2))]
            sim.rate[counter][i] = rng.uniform(0.5, 0.9) * limit
        if has_switches(platform):
            sim.events.append({"timestamp": times[0], "kind": "fabric_state", "text": "Fabric State: Completed"})
        return sim

    # -- helpers scenarios use -------------------------------------------------------------------------------
    def nv_indices(self, gpu: int | None = None) -> list[int]:
        return [i for i, s in enumerate(self.links) if s.link_type == "nvlink" and (gpu is None or s.gpu == gpu)]

    def pcie_index(self, gpu: int) -> int:
        return next(i for i, s in enumerate(self.links) if s.link_type == "pcie" and s.gpu == gpu)

    def onset(self, before_end_h: float = 4.0) -> int:
        t = len(self.times)
        step_h = (self.times[1] - self.times[0]).total_seconds() / 3600
        latest = max(int(t * 0.2) + 1, t - int(before_end_h / step_h) - 1)
        return int(self.rng.integers(int(t * 0.15), latest))

    def fault_rate(self, limit: float) -> float:
        return float(limit * np.exp(self.rng.uniform(np.log(1.15), np.log(30))))

    def slows(self, onset: int, lo: float = 5.0, hi: float = 90.0, p: float = 0.8) -> bool:
        if self.rng.random() < p and self.slowdown is None:
            self.slowdown = (onset + int(self.rng.integers(0, 2)), round(float(self.rng.uniform(lo, hi)), 1))
            return True
        return False

    def fault(self, scenario: str, kind: str, onset: int, slows: bool, **where: Any) -> None:
        self.faults.append({"scenario": scenario, "kind": kind, "onset": str(self.times[onset]),
                            "slows_job": slows, **where})

    # -- output ----------------------------------------------------------------------------------------------
    def link_frame(self) -> pd.DataFrame:
        n = len(self.links)
        hours = np.diff((self.times - self.times[0]).total_seconds().to_numpy(), prepend=0.0) / 3600
        cols: dict[str, Any] = {}
        is_pcie = np.array([s.link_type == "pcie" for s in self.links])
        for c in ("crc_flit", "crc_data", "replay", "recovery", "replay_rollovers"):
            inc = self.rng.poisson(self.rate[c] * hours * ~self.inactive).astype(float)
            cum = np.cumsum(inc, axis=1) + np.floor(self.rng.uniform(0, 5e4 if c != "recovery" else 40, (n, 1)))
            for r in sorted(self.resets):
                cum[:, r:] -= cum[:, r - 1:r]
            applies = is_pcie if c == "replay_rollovers" else ~is_pcie if c != "replay" else np.ones(n, bool)
            cum[~applies] = np.nan
            cols[c] = cum
        keep = self.keep
        k = int(keep.sum())

        def flat(a: np.ndarray) -> np.ndarray:
            return a[:, keep].reshape(-1)

        def per_link(values: list[Any]) -> np.ndarray:
            return np.repeat(np.array(values, dtype=object), k)

        state = np.where(self.inactive, "inactive", "up")
        pcie_row = np.repeat(is_pcie, k)
        frame = pd.DataFrame({
            "timestamp": np.tile(self.times[keep], n), "node_id": self.node_id,
            "gpu": per_link([s.gpu for s in self.links]), "link_type": per_link([s.link_type for s in self.links]),
            "link": per_link([s.link for s in self.links]), "peer": per_link([s.peer for s in self.links]),
            **{c: flat(v) for c, v in cols.items()}, "link_state": flat(state),
            "gen": np.where(pcie_row, np.tile(self.gen[keep], n), np.nan),
            "max_gen": np.where(pcie_row, self.max_gen, np.nan),
            "width": np.where(pcie_row, flat(self.width_by_link()), np.nan),
            "max_width": np.where(pcie_row, self.max_width, np.nan),
            "tx_bytes_per_s": np.where(pcie_row, np.tile(self.traffic[keep], n), np.nan), "source": "synth",
        })
        return frame

    def width_by_link(self) -> np.ndarray:
        w = np.full((len(self.links), len(self.times)), float(self.max_width))
        for fault in self.faults:
            if "width" in fault:
                w[self.pcie_index(fault["gpu"]), self.times.searchsorted(pd.Timestamp(fault["onset"])):] = \
                    fault["width"]
        return w

    def event_frame(self) -> pd.DataFrame:
        return pd.DataFrame([{**e, "node_id": self.node_id, "source": "synth"} for e in self.events])


# -- scenarios ---------------------------------------------------------------------------------------------------
def replay_storm(sim: NodeSim, name: str = "replay_storm", gpu: int | None = None, link: int | None = None) -> None:
    if gpu is None:
        i = int(sim.rng.choice(sim.nv_indices()))
    else:
        i = next(j for j in sim.nv_indices(gpu) if sim.links[j].link == link)
    on = sim.onset()
    rate = sim.fault_rate(REPLAY_LIMIT)
    sim.rate["replay"][i, on:] = rate
    sim.rate["crc_flit"][i, on:] = rate * sim.rng.uniform(1, 5)
    s = sim.links[i]
    sim.fault(name, "nvlink", on, sim.slows(on), gpu=s.gpu, link=s.link, switch=s.switch, peer=s.peer)


def seed_storm(sim: NodeSim) -> None:
    """The demo node: GPU 2 -> GPU 3 NVLink 1 failing, its job 89% slower."""
    i = next(j for j in sim.nv_indices(2) if sim.links[j].link == 1)
    on = int(len(sim.times) * 0.4)
    sim.rate["replay"][i, on:] = 8900.0
    sim.rate["crc_flit"][i, on:] = 45120.0
    sim.slowdown = (on, 89.2)
    s = sim.links[i]
    sim.fault("replay_storm", "nvlink", on, True, gpu=s.gpu, link=s.link, switch=s.switch, peer=s.peer)


def flapping_link(sim: NodeSim) -> None:
    i = int(sim.rng.choice(sim.nv_indices()))
    on = sim.onset(5.0)
    sim.rate["recovery"][i, on:] = sim.rng.uniform(4, 30)
    sim.rate["replay"][i, on:] = sim.rng.uniform(100, 900)
    s = sim.links[i]
    sim.fault("flapping_link", "nvlink", on, sim.slows(on, 3, 30), gpu=s.gpu, link=s.link, switch=s.switch)


def link_inactive(sim: NodeSim, name: str = "link_inactive", gpu: int | None = None) -> None:
    i = int(sim.rng.choice(sim.nv_indices(gpu)))
    on = sim.onset()
    sim.inactive[i, on:] = True
    s = sim.links[i]
    sim.fault(name, "nvlink", on, sim.slows(on, 3, 40), gpu=s.gpu, link=s.link, switch=s.switch)


def nvswitch_port_fault(sim: NodeSim) -> None:
    switch = str(sim.rng.choice(sorted({s.switch for s in sim.links if s.switch})))
    gpus = sim.rng.choice(8, size=int(sim.rng.integers(2, 5)), replace=False)
    on = sim.onset()
    for gpu in gpus:
        i = int(sim.rng.choice([j for j in sim.nv_indices(int(gpu)) if sim.links[j].switch == switch]))
        sim.rate["replay"][i, on:] = sim.fault_rate(REPLAY_LIMIT)
    sim.fault("nvswitch_port_fault", "nvswitch", on, sim.slows(on), switch=switch, gpus=sorted(map(int, gpus)))


def gpu_wide_fault(sim: NodeSim) -> None:
    gpu = int(sim.rng.integers(0, 8))
    on = sim.onset()
    for i in sim.nv_indices(gpu):
        sim.rate["replay"][i, on:] = sim.fault_rate(REPLAY_LIMIT)
    if sim.rng.random() < 0.5:
        sim.events.append({"timestamp": sim.times[-3], "kind": "xid", "gpu": gpu, "code": 74,
                           "text": f"NVRM: Xid (PCI:0000:{gpu + 0x18:02x}:00): 74, NVLink error"})
    sim.fault("gpu_wide_fault", "gpu", on, sim.slows(on), gpu=gpu)


def pcie_riser_replays(sim: NodeSim, name: str = "pcie_riser_replays", gpu: int | None = None) -> None:
    gpu = int(sim.rng.integers(0, 8)) if gpu is None else gpu
    i, on = sim.pcie_index(gpu), sim.onset()
    sim.rate["replay"][i, on:] = sim.fault_rate(REPLAY_LIMIT)
    if sim.rng.random() < 0.3:
        sim.rate["replay_rollovers"][i, on:] = 0.5
    sim.fault(name, "pcie", on, sim.slows(on, 3, 30, 0.5), gpu=gpu)


def pcie_downtrain(sim: NodeSim, name: str = "pcie_downtrain", gpu: int | None = None) -> None:
    gpu = int(sim.rng.integers(0, 8)) if gpu is None else gpu
    on = sim.onset()
    width = sim.max_width // int(sim.rng.choice([2, 4]))
    sim.fault(name, "pcie", on, sim.slows(on, 1, 10, 0.5), gpu=gpu, width=width,
              lanes=list(range(width, sim.max_width)))


def benign_crc_burst(sim: NodeSim) -> None:
    i = int(sim.rng.choice(sim.nv_indices() or [sim.pcie_index(0)]))
    at = int(sim.rng.integers(len(sim.times) // 2, len(sim.times) - 1))
    sim.rate["crc_flit"][i, at] = sim.rng.uniform(150, 3000) * 12


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
    on = sim.onset()
    sim.inactive[sim.nv_indices(), on:] = True
    sim.events.append({"timestamp": sim.times[on], "kind": "fabric_state",
                       "text": "Fabric State: In Progress (Fabric Manager not running)"})
    sim.fault("fabric_manager_down", "fabric-software", on, sim.slows(on, 30, 90, 1.0))


def two_faults(sim: NodeSim) -> None:
    gpus = [int(g) for g in sim.rng.choice(8, size=2, replace=False)]
    first, second = sim.rng.choice(4, size=2, replace=False)
    for gpu, which in zip(gpus, (first, second), strict=True):
        if which == 0:
            link = sim.links[int(sim.rng.choice(sim.nv_indices(gpu)))].link
            replay_storm(sim, "two_faults", gpu=gpu, link=link)
        elif which == 1:
            link_inactive(sim, "two_faults", gpu=gpu)
        elif which == 2:
            pcie_riser_replays(sim, "two_faults", gpu=gpu)
        else:
            pcie_downtrain(sim, "two_faults", gpu=gpu)


def outside_slowdown(sim: NodeSim) -> None:
    sim.slowdown = (sim.onset(), round(float(sim.rng.uniform(8, 50)), 1))


def healthy(sim: NodeSim) -> None:
    """Nothing beyond background noise (and maybe one link near a threshold)."""


_APPLY: dict[str, Callable[[NodeSim], None]] = {
    "healthy": healthy, "replay_storm": replay_storm, "flapping_link": flapping_link,
    "link_inactive": link_inactive, "nvswitch_port_fault": nvswitch_port_fault, "gpu_wide_fault": gpu_wide_fault,
    "pcie_riser_replays": pcie_riser_replays, "pcie_downtrain": pcie_downtrain,
    "benign_crc_burst": benign_crc_burst, "reboot_reset": reboot_reset, "reset_during_fault": reset_during_fault,
    "scrape_gaps": scrape_gaps, "fabric_manager_down": fabric_manager_down, "sku_12_of_18": healthy,
    "two_faults": two_faults, "outside_slowdown": outside_slowdown,
}


def apply_scenario(sim: NodeSim, scenario: str) -> None:
    if sim.node_id == "hpc-gpu-node-12" and scenario == "replay_storm":
        seed_storm(sim)
        return
    _APPLY[scenario](sim)
