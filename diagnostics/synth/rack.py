"""One synthetic rack: its compute trays (each a `NodeSim` of the tray platform), its switch trays' ports, one job
on its trays, and the faults labelled in the rack's own names.

A compute tray is written as dcgm-exporter writes a GB200 tray: per link the DCGM 4.6 link-entity replay counter
(field 1527), and the NVLink5 counters as each GPU's total. A switch tray is written as NMX-T reads its ports: per
chip and port the symbol errors, the successful and failed recoveries (`Link_Down`: the link went down) and the
effective and symbol bit-error ratios, as link_type nvswitch rows (nvswitch = the driver's chip index, link = port).
Background per port: symbol errors 1e2-1e5 an hour, effective BER 1e-17-1e-15, symbol BER 1e-10-1e-7, no failed
recovery. A fault on the switch side puts the port's effective BER at 1.1x-50x its limit, or its link down 1-6
times an hour.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..components import ComponentRef
from ..enums import FaultKind, Severity
from ..topology.rack import RackGraph
from .node import NodeSim, limit


@dataclass
class SwitchSim:
    """One switch tray's ports: counters grown deterministically where driven, Poisson elsewhere."""

    rng: np.random.Generator
    node_id: str
    chips: int
    ports: int
    first_port: int
    times: pd.DatetimeIndex
    symbol_rate: np.ndarray = field(init=False)
    down_rate: np.ndarray = field(init=False)
    effective_ber: np.ndarray = field(init=False)
    symbol_ber: np.ndarray = field(init=False)
    resets: list[int] = field(default_factory=list)  # samples where the tray restarted: its counters start over
    keep: np.ndarray = field(init=False)  # per sample: NMX-T read the tray (False while it reboots)

    def __post_init__(self) -> None:
        n, t = self.chips * self.ports, len(self.times)
        self.symbol_rate = np.repeat(np.exp(self.rng.uniform(np.log(1e2), np.log(1e5), (n, 1))), t, axis=1)
        self.down_rate = np.zeros((n, t))
        self.effective_ber = np.repeat(np.exp(self.rng.uniform(np.log(1e-17), np.log(1e-15), (n, 1))), t, axis=1)
        self.symbol_ber = np.repeat(np.exp(self.rng.uniform(np.log(1e-10), np.log(1e-7), (n, 1))), t, axis=1)
        self.keep = np.ones(t, dtype=bool)

    def row(self, chip: int, port: int) -> int:
        """The row of a port: chip counted from 1 (U1, U2), port as the rack numbers it."""
        return (chip - 1) * self.ports + port - self.first_port

    def fail(self, chip: int, port: int, start: int, factor: float, *, down: bool) -> None:
        i = self.row(chip, port)
        if down:
            self.down_rate[i, start:] = factor
        else:
            self.effective_ber[i, start:] = factor * limit("effective_ber")
            self.symbol_ber[i, start:] *= 50

    def frame(self) -> pd.DataFrame:
        n, t = self.chips * self.ports, len(self.times)
        hours = np.diff((self.times - self.times[0]).total_seconds().to_numpy(), prepend=0.0) / 3600
        symbols = np.cumsum(self.rng.poisson(self.symbol_rate * hours), axis=1).astype(float)
        downs = np.floor(np.cumsum(self.down_rate * hours, axis=1) + self.rng.uniform(size=(n, 1)))
        downs[self.down_rate.max(axis=1) == 0] = 0.0
        for r in sorted(self.resets):
            symbols[:, r:] -= symbols[:, r - 1:r]
            downs[:, r:] -= downs[:, r - 1:r]
        chip = np.repeat(np.arange(self.chips), self.ports)
        port = np.tile(np.arange(self.first_port, self.first_port + self.ports), self.chips)
        frame = pd.DataFrame({
            "timestamp": np.tile(self.times.to_numpy(), n), "node_id": self.node_id,
            "gpu": pd.array([None] * (n * t), dtype="Int16"), "link_type": "nvswitch",
            "link": np.repeat(port, t), "nvswitch": np.repeat(chip.astype(str), t), "peer": None,
            "symbol_errors": symbols.reshape(-1), "recovery_successful": np.zeros(n * t),
            "recovery_failed": downs.reshape(-1), "effective_ber": self.effective_ber.reshape(-1),
            "symbol_ber": self.symbol_ber.reshape(-1), "link_state": "up", "source": "synth",
        })
        return frame[np.tile(self.keep, n)] if not self.keep.all() else frame


@dataclass
class RackSim:
    """A rack: compute trays by slot, switch trays by slot, its labelled faults and what its job suffers."""

    rng: np.random.Generator
    rack_id: str
    graph: RackGraph
    times: pd.DatetimeIndex
    trays: dict[int, NodeSim] = field(default_factory=dict)
    switches: dict[int, SwitchSim] = field(default_factory=dict)
    faults: list[dict[str, Any]] = field(default_factory=list)
    slowdown: tuple[int, float] | None = None
    stopped: int | None = None  # the sample from which the rack's job logs no step (its GPUs lost, or drained)
    job_trays: list[int] = field(default_factory=list)

    @property
    def warnings(self) -> list[dict[str, Any]]:
        return [w for sim in self.trays.values() for w in sim.warnings]

    @property
    def near(self) -> list[dict[str, Any]]:
        return [{**n, "tray": t} for t, sim in self.trays.items() for n in sim.near]

    def host(self, kind: str, slot: int) -> str:
        return f"{self.rack_id}-{'c' if kind == 'compute' else 's'}{slot:02d}"

    def link_row(self, tray: int, gpu: int, link: int) -> int:
        sim = self.trays[tray]
        return next(i for i in sim.nv_indices(gpu) if sim.links[i].link == link)

    def fail_link(self, tray: int, gpu: int, link: int, start: int, factor: float, *, down: bool = False) -> None:
        """The GPU end of one link counts replays at `factor` x the limit (or the link goes inactive)."""
        sim, i = self.trays[tray], self.link_row(tray, gpu, link)
        if down:
            sim.inactive[i, start:] = True
        else:
            sim.drive("replay", i, start, factor * limit("nvlink_replay"))
        if self.rng.random() < 0.5:  # the GPU's NVLink5 totals count the same errors
            sim.drive("effective_errors", sim.total_index(gpu), start, float(self.rng.uniform(1, 30)))

    def fail_port(self, tray: int, gpu: int, link: int, start: int, factor: float, *, down: bool) -> None:
        """The switch end of one link: its port's effective BER over the limit, or its link going down."""
        end = self.graph.end(tray, gpu, link)
        self.switches[end.switch_tray].fail(end.chip, end.port, start, factor, down=down)

    def onset(self) -> int:
        return next(iter(self.trays.values())).onset()

    def factor(self) -> float:
        return next(iter(self.trays.values())).factor()

    def slows(self, onset: int, p: float = 0.8, lo: float = 5.0, hi: float = 60.0) -> bool:
        sim = next(iter(self.trays.values()))
        if self.rng.random() >= p:
            return False
        self.slowdown = (onset + int(self.rng.integers(0, 2)), sim.slowdown_pct(lo, hi))
        return True

    def fault(self, scenario: str, ref: ComponentRef, fault: FaultKind, onset: int, slows: bool, *,
              ratio: float | None, severity: Severity = Severity.FAILING, **where: Any) -> None:
        self.faults.append({"scenario": scenario, "kind": ref.kind.value, "fault": fault.value,
                            "component": ref.slug, "name": ref.name, "onset": str(self.times[onset]),
                            "slows_job": slows, "severity": severity.value,
                            "ratio": None if ratio is None else round(ratio, 3), **where})

    def frames(self) -> tuple[list[pd.DataFrame], list[pd.DataFrame]]:
        links = [sim.link_frame() for sim in self.trays.values()] + [s.frame() for s in self.switches.values()]
        events = [sim.event_frame() for sim in self.trays.values()]
        return links, events
