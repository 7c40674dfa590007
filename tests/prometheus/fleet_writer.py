"""A large synthetic fleet written straight to OpenMetrics, one file per 2-hour block, fast enough for 24 h x 256 nodes.

`prometheus_helpers.generate_fleet` builds a DataFrame of every sample and formats it line by line: right for the
tests' small fleet, far too slow and too big in memory for the benchmark's (about 218 million samples). This
writer keeps one block of one metric family in memory at a time, draws its counters with numpy and assembles the
lines with pyarrow compute kernels (`cast` and `binary_join_element_wise`), never a Python format per sample.

What a node exposes is what dcgm-exporter would for the counters the sweep reads: per GPU the four NVLink error
counters of each of the 18 links (`..._ERROR_COUNT_L{n}`), the PCIe replay counter and the last-Xid gauge, each
labelled like a real exporter (`gpu`, `UUID`, `device`, `modelName`, `Hostname`). The planted faults are those of
`generate_fleet`, on nodes 0-3. Input is split at promtool's 2-hour block boundaries because
`promtool tsdb create-blocks-from openmetrics` re-reads its whole input once per block it writes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tests.prometheus.helpers import GPUS, LINKS, MODEL, START

BLOCK_S = 2 * 3600  # promtool's block length (2.x, not configurable for openmetrics before 2.47)
NVLINK_COUNTERS = {  # column -> dcgm-exporter per-link name (the first spelling data/dcgm.toml writes)
    "crc_data": "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_L{link}",
    "crc_flit": "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L{link}",
    "recovery": "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_L{link}",
    "replay": "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L{link}",
}
PCIE_REPLAY = "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"
XID_GAUGE = "DCGM_FI_DEV_XID_ERRORS"
HEALTHY_PER_HOUR = {"replay": 3.0, "crc_flit": 1.0, "crc_data": 0.2, "recovery": 0.0, "pcie": 2.0}


@dataclass
class Family:
    """One metric family: a name, its kind, and per series (node, GPU) its rate and planted events."""

    name: str
    counter: bool
    rate_per_hour: np.ndarray  # per series
    resets: dict[int, int] = field(default_factory=dict)  # series -> step where the counter restarts at 0
    steps_up: dict[int, int] = field(default_factory=dict)  # series -> step from which it reads one more
    stop_after: dict[int, int] = field(default_factory=dict)  # series -> last step it reports
    absent: set[int] = field(default_factory=set)  # series never exposed


@dataclass
class BigFleet:
    """The fleet's shape, its planted faults, and the files written."""

    nodes: int
    hours: float
    scrape_s: int = 60
    seed: int = 7
    start: datetime = START
    planted: dict[str, str] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)

    @property
    def steps(self) -> int:
        return int(self.hours * 3600 // self.scrape_s) + 1

    @property
    def end(self) -> datetime:
        return self.start + timedelta(seconds=(self.steps - 1) * self.scrape_s)

    @property
    def node_ids(self) -> list[str]:
        return [f"node-{n:03d}" for n in range(self.nodes)]

    @property
    def series_per_family(self) -> int:
        return self.nodes * GPUS


def _series(node: int, gpu: int) -> int:
    return node * GPUS + gpu


def families(fleet: BigFleet) -> list[Family]:
    """Every family a node exposes, sorted by name, with `generate_fleet`'s faults planted on nodes 0-3."""
    n, steps = fleet.series_per_family, fleet.steps
    present = {k: v for k, v in (("n0", 0), ("n1", 1), ("n2", 2), ("n3", 3)) if v < fleet.nodes}
    planted = fleet.planted
    stop_step = steps - 1 - (40 * 60) // fleet.scrape_s  # its last sample: 40 minutes before the end
    out: list[Family] = []
    for column, pattern in sorted(NVLINK_COUNTERS.items()):
        for link in range(LINKS):
            rates = np.full(n, HEALTHY_PER_HOUR[column])
            fam = Family(pattern.format(link=link), True, rates)
            if "n1" in present and link == 5 and column in ("replay", "crc_flit"):
                rates[_series(1, 2)] = 6000.0 if column == "replay" else 300.0
                planted["node-001 GPU 2 NVLink 5"] = "replay 6000/h, crc 300/h"
            if "n0" in present and link == 0 and column == "replay":
                rates[_series(0, 0)] = 1040.0  # close to the threshold: agreement needs the same extrapolation
                planted["node-000 GPU 0 NVLink 0"] = "replay 1040/h"
            if "n0" in present and link == 1 and column == "replay":
                fam.resets[_series(0, 1)] = steps // 3  # an exporter restart
            if "n2" in present and link == 3 and column == "recovery":
                fam.steps_up[_series(2, 1)] = steps - 1 - (30 * 60) // fleet.scrape_s  # 30 min before the end
                planted["node-002 GPU 1 NVLink 3"] = "one recovery"
            if "n3" in present and link == 17:
                fam.absent.add(_series(3, 3))  # never reports: down before the window
                planted["node-003 GPU 3"] = "17 of 18 links reporting"
            if "n3" in present and link == 9:
                fam.stop_after[_series(3, 6)] = stop_step
                planted["node-003 GPU 6 NVLink 9"] = "series stop 40 min before the end"
            out.append(fam)
    pcie = np.full(n, HEALTHY_PER_HOUR["pcie"])
    if "n2" in present:
        pcie[_series(2, 4)] = 3000.0
        planted["node-002 GPU 4 PCIe"] = "replay 3000/h"
    out.append(Family(PCIE_REPLAY, True, pcie))
    out.append(Family(XID_GAUGE, False, np.zeros(n)))  # the last Xid: 0, none since the exporter started
    return sorted(out, key=lambda f: f.name)


def _labels(fleet: BigFleet) -> list[str]:
    """Each series' label set as dcgm-exporter writes it, in series order (node-major, then GPU)."""
    out = []
    for node in range(fleet.nodes):
        for gpu in range(GPUS):
            uuid = f"GPU-{node:08x}-{gpu:04x}-4e{gpu:02x}-9f00-{node * GPUS + gpu:012x}"
            out.append(f'{{gpu="{gpu}",UUID="{uuid}",device="nvidia{gpu}",modelName="{MODEL}",'
                       f'Hostname="node-{node:03d}"}} ')
    return out


def _block_values(fam: Family, rng: np.random.Generator, carry: np.ndarray, first: int, count: int,
                  scrape_s: int) -> np.ndarray:
    """The family's values for steps [first, first + count): counters continue from `carry` (updated)."""
    if not fam.counter:
        return np.zeros((len(carry), count), dtype=np.int64)
    per_step = fam.rate_per_hour * scrape_s / 3600
    values = np.cumsum(rng.poisson(per_step[:, None], (len(carry), count)), axis=1) + carry[:, None]
    for s, at in fam.resets.items():
        if first <= at < first + count:
            before = values[s, at - first - 1] if at > first else carry[s]
            values[s, at - first:] -= before
    for s, at in fam.steps_up.items():
        if first <= at < first + count:  # later blocks carry it
            values[s, at - first:] += 1
    carry[:] = values[:, -1]
    return values


def _lines(prefixes: pa.Array, values: np.ndarray, stamps: pa.Array, keep: np.ndarray) -> pa.Array:
    """`prefix value stamp\\n` for every kept (series, step), series-major, assembled by arrow kernels."""
    series, steps = values.shape
    rows = np.repeat(np.arange(series), steps)[keep.ravel()]
    cols = np.tile(np.arange(steps), series)[keep.ravel()]
    text = pc.cast(pa.array(values.ravel()[keep.ravel()]), pa.string())
    return pc.binary_join_element_wise(prefixes.take(pa.array(rows)), text, stamps.take(pa.array(cols)), "")


def _write(fh: object, strings: pa.Array) -> int:
    """Write a string array's characters as one buffer (no per-line Python objects)."""
    strings = strings.combine_chunks() if isinstance(strings, pa.ChunkedArray) else strings
    offsets = np.frombuffer(strings.buffers()[1], dtype=np.int32, count=len(strings) + 1, offset=strings.offset * 4)
    data = memoryview(strings.buffers()[2])[offsets[0]:offsets[-1]]
    return fh.write(data)  # type: ignore[attr-defined, no-any-return]


def write_blocks(fleet: BigFleet, folder: Path,
                 kept: Callable[[str], bool] | None = None) -> Iterator[tuple[Path, int, int]]:
    """Write the fleet as one OpenMetrics file per 2-hour block; yield each file, its bytes and samples when done.
    `kept` names the families written (default: all), for a benchmark that reads some alone."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(fleet.seed)
    fams = [f for f in families(fleet) if kept is None or kept(f.name)]
    labels = _labels(fleet)
    prefixes = {f.name: pa.array([f"{f.name}{'_total' if f.counter else ''}{lab}" for lab in labels])
                for f in fams}
    carries = {f.name: np.zeros(fleet.series_per_family, dtype=np.int64) for f in fams}
    t0 = int(fleet.start.timestamp())
    times = t0 + np.arange(fleet.steps) * fleet.scrape_s
    block_of = (times - times[0] // BLOCK_S * BLOCK_S) // BLOCK_S
    fleet.files = []
    for block in np.unique(block_of):
        steps = np.flatnonzero(block_of == block)
        first, count = int(steps[0]), len(steps)
        stamps = pa.array([f" {t}\n" for t in times[steps]])
        path = folder / f"fleet-{int(times[first])}.om"
        size = samples = 0
        with path.open("wb") as fh:
            for fam in fams:
                values = _block_values(fam, rng, carries[fam.name], first, count, fleet.scrape_s)
                keep = np.ones(values.shape, dtype=bool)
                for s in fam.absent:
                    keep[s] = False
                for s, last in fam.stop_after.items():
                    keep[s, max(last + 1 - first, 0):] = False
                size += fh.write(f"# TYPE {fam.name} {'counter' if fam.counter else 'gauge'}\n".encode())
                size += _write(fh, _lines(prefixes[fam.name], values, stamps, keep))
                samples += int(keep.sum())
            size += fh.write(b"# EOF\n")
        fleet.files.append(path)
        yield path, size, samples
