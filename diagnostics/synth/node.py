"""One synthetic node: its links' counter rates, gauges and states over time, turned into link_samples rows.

Background (per hour): replays 0-15, CRC flits 0-20, CRC data 0-5 per link, Poisson. Blackwell nodes are written
as dcgm-exporter writes them on GB200/B200: the NVLink5 counters (symbol and effective errors, successful and
failed recoveries, the bit-error ratios) only as each GPU's total over its links (a row with `gpu_total` true and
no link: DCGM documents fields 1200-1219 as "NVLink5+ only. Returns aggregate value across all links"), and per
link only the replay counter, which DCGM also gives per link (the link-entity field 1527,
`DCGM_FI_DEV_NVLINK_REPLAY_ERROR_PER_LINK_TOTAL`; rare there by design, 0-2). A counter a scenario drives (a fault,
or a benign link drawn near a threshold) grows deterministically at its rate, the fraction carried between samples,
so an hour's increase is the rate within one count: a fault drawn at 1.1x its threshold is over it in every window,
a benign link at 0.95x under it. Rules and limits come from the packaged thresholds file, so ground truth follows
its defaults. A slowdown is never drawn within `MARGIN_PCT` of a step in the priority policy (5 %, 20 %): the
measured figure could fall either side.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from functools import cache
from typing import Any

import numpy as np
import pandas as pd

from ..analysis import history_needed
from ..components import ComponentRef
from ..config.platforms import platform_data
from ..config.thresholds import DEFAULT_FILE, Thresholds, load_thresholds
from ..enums import FaultKind, Severity
from .layout import SynthLink, gpu_totals, has_switches, nvlinks, pcie_links, pcie_shape

CLASSIC = ("crc_flit", "crc_data", "recovery")  # NVLink counters before Blackwell
BLACKWELL = ("symbol_errors", "effective_errors", "recovery_successful", "recovery_failed")
COUNTERS = ("replay", *CLASSIC, "replay_rollovers", *BLACKWELL)
GAUGES = ("symbol_ber", "effective_ber")
NEAR_LOW, NEAR_HIGH = 1.1, 1.5  # "near" a threshold, above it; below it a benign draw reaches 0.95x
MARGIN_PCT = 1.5  # no slowdown is drawn closer than this to a step of the priority policy


@cache
def defaults() -> Thresholds:
    """The packaged thresholds file: the limits faults are drawn against and the policy the truth is judged by."""
    return load_thresholds(DEFAULT_FILE)


def limit(rule: str) -> float:
    """A rule's default limit (`above`) from the packaged thresholds file."""
    return float(defaults().rule(rule).above)


def policy_steps() -> list[float]:
    """The slowdowns at which the verdict or the priority changes: the slowdown floor and the priority rows'."""
    t = defaults()
    rows = [r.min_degradation_pct for r in t.priority if r.min_degradation_pct is not None]
    return sorted({t.setting("slowdown_min_pct"), *rows})


def component_of(fault: FaultKind, where: dict[str, Any]) -> str:
    """The slug of the part a fault is in (`ComponentRef.slug`): what a correct localization names."""
    gpu = where.get("gpu")
    if fault is FaultKind.NVLINK:
        return ComponentRef.nvlink(gpu, where["link"]).slug
    if fault is FaultKind.NVLINK_AGGREGATE:
        return ComponentRef.nvlink(gpu, None).slug
    if fault in (FaultKind.GPU_NVLINKS, FaultKind.GPU_OFF_BUS):
        return ComponentRef.of_gpu(int(where["gpu"])).slug
    if fault is FaultKind.NVSWITCH:
        return ComponentRef.nvswitch(where["switch"]).slug
    if fault is FaultKind.NVSWITCH_FATAL:  # the port the SXid names
        return ComponentRef.nvswitch(where["switch"], where["port"]).slug
    if fault in (FaultKind.PCIE_REPLAYS, FaultKind.PCIE_DOWNTRAIN):
        return ComponentRef.pcie(gpu).slug
    return ComponentRef.fabric_software().slug


def is_blackwell(platform: str) -> bool:
    return int(platform_data(platform).get("nvlink_generation", 0)) >= 5


@dataclass
class NodeSim:
    rng: np.random.Generator
    node_id: str
    platform: str
    times: pd.DatetimeIndex
    links: list[SynthLink]
    rate: dict[str, np.ndarray]
    gauge: dict[str, np.ndarray]
    inactive: np.ndarray
    width: np.ndarray
    gen: np.ndarray
    traffic: np.ndarray
    max_gen: int
    max_width: int
    blackwell: bool = False
    resets: list[int] = field(default_factory=list)
    keep: np.ndarray = field(default_factory=lambda: np.ones(0, dtype=bool))
    gone: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=bool))  # per link: no row at all
    exact: set[tuple[str, int]] = field(default_factory=set)  # (counter, link index) grown deterministically
    faults: list[dict[str, Any]] = field(default_factory=list)
    near: list[dict[str, Any]] = field(default_factory=list)  # benign links drawn just under a threshold
    events: list[dict[str, Any]] = field(default_factory=list)
    slowdown: tuple[int, float] | None = None
    stops_job: int | None = None  # the sample from which the node's job logs no step (it cannot run)
    warnings: list[dict[str, Any]] = field(default_factory=list)  # benign readings over a warning rule, and when
    inventory: bool = True  # False: the node is missing from the inventory and its peers are spelled `nvswitch-1`
    ports: list[dict[str, Any]] = field(default_factory=list)  # PCIe lane faults: the lane, the end, from when
    lanes: list[dict[str, Any]] = field(default_factory=list)  # NVLink lanes counting CRC errors (nvlink -ec)
    switch_ports: list[dict[str, Any]] = field(default_factory=list)  # NVSwitch ports read at the far end
    per_link: set[tuple[str, int]] = field(default_factory=set)  # (NVLink5 counter, link) read per link as well

    @classmethod
    def new(cls, rng: np.random.Generator, node_id: str, platform: str, times: pd.DatetimeIndex, *,
            near: bool = True) -> NodeSim:
        """`near=False`: no link drawn under a threshold (the demo nodes show no stray warning)."""
        blackwell = is_blackwell(platform)
        links = nvlinks(platform) + pcie_links(platform) + (gpu_totals(platform) if blackwell else [])
        n, t = len(links), len(times)
        highs = {"replay": 2 if blackwell else 15, "crc_flit": 20, "crc_data": 5, "symbol_errors": 0}
        rate = {c: np.repeat(rng.uniform(0, highs.get(c, 0), (n, 1)), t, axis=1) for c in COUNTERS}
        gauge = {c: np.full((n, t), np.nan) for c in GAUGES}
        max_gen, max_width = pcie_shape(platform)
        busy = np.ones(t, dtype=bool)
        for _ in range(int(rng.integers(0, 3))):  # idle stretches: the PCIe generation drops to save power
            a = int(rng.integers(0, t))
            busy[a:a + int(rng.integers(2, 12))] = False
        traffic = np.where(busy, rng.uniform(2e9, 12e9, t), rng.uniform(0, 2e8, t))
        sim = cls(rng, node_id, platform, times, links, rate, gauge, np.zeros((n, t), dtype=bool),
                  np.full(t, max_width, dtype=float), np.where(busy, max_gen, 1).astype(float), traffic,
                  max_gen, max_width, blackwell=blackwell, keep=np.ones(t, dtype=bool),
                  gone=np.zeros((n, t), dtype=bool))
        nv = sim.error_indices()
        if blackwell:
            rate["symbol_errors"][nv] = np.exp(rng.uniform(np.log(1e2), np.log(1e5), (len(nv), 1)))
            gauge["symbol_ber"][nv] = np.exp(rng.uniform(np.log(1e-10), np.log(1e-7), (len(nv), 1)))
            gauge["effective_ber"][nv] = np.exp(rng.uniform(np.log(1e-17), np.log(1e-15), (len(nv), 1)))
        if rng.random() < 0.5 and nv and near:  # one link (or GPU total) just under a threshold: not a fault
            sim.near_below(int(rng.choice(nv)))
        if has_switches(platform):
            sim.events.append({"timestamp": times[0], "kind": "fabric_state", "text": "Fabric State: Completed"})
        return sim

    def near_below(self, i: int) -> None:
        ratio = float(self.rng.uniform(0.5, 0.95))
        s = self.links[i]
        if self.blackwell:
            rule = str(self.rng.choice(["effective_ber", "symbol_ber"]))
            self.gauge[rule][i] = ratio * limit(rule)
        else:
            rule = str(self.rng.choice(["nvlink_replay", "crc", "nvlink_crc_data"]))
            counter = {"nvlink_replay": "replay", "crc": "crc_flit", "nvlink_crc_data": "crc_data"}[rule]
            if rule == "crc":
                self.rate["crc_data"][i] = 0.0  # the rule sums both CRC counters
            self.drive(counter, i, 0, ratio * limit(rule))
            if rule == "nvlink_crc_data" and ratio * limit(rule) > limit("crc"):  # under failing, over the warning
                self.warn("crc", i, 0, len(self.times) - 1)
        self.near.append({"rule": rule, "ratio": round(ratio, 3), "gpu": s.gpu, "link": s.link})

    def warn(self, rule: str, i: int, start: int, stop: int) -> None:
        """A benign reading over warning rule `rule` from sample `start` to `stop`: a warning, not a fault."""
        s = self.links[i]
        self.warnings.append({"rule": rule, "gpu": s.gpu, "link": s.link, "from": str(self.times[start]),
                              "to": str(self.times[stop])})

    # -- helpers scenarios use -------------------------------------------------------------------------------
    def nv_indices(self, gpu: int | None = None) -> list[int]:
        """The NVLinks, each on its own (not the GPU totals)."""
        return [i for i, s in enumerate(self.links) if s.link_type == "nvlink" and not s.total
                and (gpu is None or s.gpu == gpu)]

    def total_index(self, gpu: int) -> int:
        return next(i for i, s in enumerate(self.links) if s.total and s.gpu == gpu)

    def error_indices(self) -> list[int]:
        """Where the NVLink error counters live: the GPU totals on Blackwell, else each NVLink."""
        return [i for i, s in enumerate(self.links) if s.total] if self.blackwell else self.nv_indices()

    def pcie_index(self, gpu: int) -> int:
        return next(i for i, s in enumerate(self.links) if s.link_type == "pcie" and s.gpu == gpu)

    def onset(self, before_end_h: float = 4.0) -> int:
        t = len(self.times)
        step_h = (self.times[1] - self.times[0]).total_seconds() / 3600
        latest = max(int(t * 0.2) + 1, t - int(before_end_h / step_h) - 1)
        return int(self.rng.integers(int(t * 0.15), latest))

    def onset_in_span(self, before_end_h: float = 1.0) -> int:
        """An onset inside the history the rules read for a one-hour window ending at the last sample, after a reading
        in it: a sticky status (PCIe's Lane Error Status, RW1C, r4.0 sec. 7.7.3.3) set there is dated by the clear
        reading before it, through every door that reads that span."""
        t = len(self.times)
        step_h = (self.times[1] - self.times[0]).total_seconds() / 3600
        span_h = history_needed(timedelta(hours=1), defaults()).total_seconds() / 3600
        first = max(1, t - int(span_h / step_h))  # the sample before it is the span's first reading
        latest = max(first + 1, t - int(before_end_h / step_h) - 1)
        return int(self.rng.integers(first, latest))

    def factor(self) -> float:
        """How far over its threshold a fault is: half the draws near it (1.1-1.5x), half 1.5-50x log-uniform."""
        if self.rng.random() < 0.5:
            return float(self.rng.uniform(NEAR_LOW, NEAR_HIGH))
        return float(np.exp(self.rng.uniform(np.log(NEAR_HIGH), np.log(50))))

    def drive(self, counter: str, i: int, start: int, rate: float) -> None:
        """Counter `counter` of link `i` grows at `rate` per hour from sample `start`, deterministically."""
        self.rate[counter][i, start:] = rate
        self.exact.add((counter, i))

    def slows(self, onset: int, lo: float = 5.0, hi: float = 90.0, p: float = 0.8, *,
              force: bool | None = None) -> bool:
        """Whether the fault slows its job (with probability `p`, or as `force` says), by lo-hi percent."""
        if force is False or self.slowdown is not None or (force is None and self.rng.random() >= p):
            return False
        self.slowdown = (onset + int(self.rng.integers(0, 2)), self.slowdown_pct(lo, hi))
        return True

    def slowdown_pct(self, lo: float, hi: float) -> float:
        """A slowdown in lo-hi percent, never within MARGIN_PCT of a step of the priority policy."""
        pct = round(float(self.rng.uniform(lo, hi)), 1)
        while any(abs(pct - step) < MARGIN_PCT for step in policy_steps()):
            pct = round(float(self.rng.uniform(lo, hi)), 1)
        return pct

    def fault(self, scenario: str, kind: str, onset: int, slows: bool, *, fault: FaultKind,
              severity: Severity = Severity.FAILING, ratio: float | None = None, **where: Any) -> None:
        """A labelled fault: where it is, its kind, the part it is in, how bad (`ratio`: how far over its
        threshold; None for a zero threshold or a down link, which count as furthest) and whether it slows the job."""
        self.faults.append({"scenario": scenario, "kind": kind, "fault": fault.value,
                            "component": component_of(fault, where), "onset": str(self.times[onset]),
                            "slows_job": slows, "severity": severity.value,
                            "ratio": None if ratio is None else round(ratio, 3), **where})

    # -- output ----------------------------------------------------------------------------------------------
    def _applies(self, counter: str) -> np.ndarray:
        pcie = np.array([s.link_type == "pcie" for s in self.links])
        total = np.array([s.total for s in self.links])
        if counter == "replay":
            return ~total
        if counter == "replay_rollovers":
            return pcie
        if counter in BLACKWELL:  # DCGM gives them per GPU; `nvidia-smi nvlink -e` reads some per link
            return total | np.array([(counter, i) in self.per_link for i in range(len(self.links))], dtype=bool)
        return ~pcie & ~self.blackwell

    def _counts(self, counter: str, hours: np.ndarray) -> np.ndarray:
        expected = self.rate[counter] * hours * ~self.inactive
        inc = self.rng.poisson(expected).astype(float)
        for c, i in sorted(self.exact):  # sorted: a set of str keys iterates in a per-process order
            if c == counter:  # the fraction carries over: an hour's increase is the rate within one count
                cum = np.floor(np.cumsum(expected[i]) + self.rng.uniform())
                inc[i] = np.diff(cum, prepend=0.0)
        return inc

    def link_frame(self) -> pd.DataFrame:
        n = len(self.links)
        hours = np.diff((self.times - self.times[0]).total_seconds().to_numpy(), prepend=0.0) / 3600
        cols: dict[str, Any] = {}
        is_pcie = np.array([s.link_type == "pcie" for s in self.links])
        for c in COUNTERS:
            applies = self._applies(c)
            if not applies.any():
                continue
            cum = np.cumsum(self._counts(c, hours), axis=1)
            cum += np.floor(self.rng.uniform(0, 5e4 if c not in ("recovery", "recovery_failed") else 40, (n, 1)))
            for r in sorted(self.resets):
                cum[:, r:] -= cum[:, r - 1:r]
            cum[~applies] = np.nan
            cols[c] = cum
        rows = self.keep[None, :] & ~self.gone
        per_link = rows.sum(axis=1)

        def flat(a: np.ndarray) -> np.ndarray:
            return np.broadcast_to(a, rows.shape)[rows]

        def each(values: list[Any]) -> np.ndarray:
            return np.repeat(np.array(values, dtype=object), per_link)

        state = np.where(self.inactive, "inactive", "up")
        pcie_row = np.repeat(is_pcie, per_link)
        return pd.DataFrame({
            "timestamp": flat(self.times.to_numpy()[None, :]), "node_id": self.node_id,
            "gpu": each([s.gpu for s in self.links]), "link_type": each([s.link_type for s in self.links]),
            "link": each([s.link for s in self.links]), "peer": each([self._peer(s) for s in self.links]),
            "gpu_total": each([s.total for s in self.links]).astype(bool),
            **{c: flat(v) for c, v in cols.items()},
            **{g: flat(v) for g, v in self.gauge.items() if np.isfinite(v).any()}, "link_state": flat(state),
            "gen": np.where(pcie_row, flat(self.gen[None, :]), np.nan),
            "max_gen": np.where(pcie_row, self.max_gen, np.nan),
            "width": np.where(pcie_row, flat(self.width_by_link()), np.nan),
            "max_width": np.where(pcie_row, self.max_width, np.nan),
            "tx_bytes_per_s": np.where(pcie_row, flat(self.traffic[None, :]), np.nan), "source": "synth",
        })

    def _peer(self, s: SynthLink) -> str | None:
        """The peer column as the node's readers spell it: a node outside the inventory writes `nvswitch-1`."""
        if s.total:
            return None
        return s.peer.replace("NVSwitch ", "nvswitch-") if not self.inventory else s.peer

    def width_by_link(self) -> np.ndarray:
        w = np.full((len(self.links), len(self.times)), float(self.max_width))
        for fault in self.faults:
            if "width" in fault:
                w[self.pcie_index(fault["gpu"]), self.times.searchsorted(pd.Timestamp(fault["onset"])):] = \
                    fault["width"]
        return w

    def event_frame(self) -> pd.DataFrame:
        return pd.DataFrame([{**e, "node_id": self.node_id, "source": "synth"} for e in self.events])
