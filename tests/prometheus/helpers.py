"""A small labelled fleet written as OpenMetrics, backfilled with promtool, served by a real Prometheus.

Used by the Prometheus tests and by benchmarks/bench_sweep.py (which asks for a bigger fleet).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import numpy as np
import pandas as pd
import pytest

from diagnostics.ingest.dcgm_write import format_exposition
from diagnostics.tables import LINK_SAMPLES

MODEL = "NVIDIA H100 80GB HBM3"
LINKS = 18
GPUS = 8
START = datetime(2026, 3, 2, 0, 0, tzinfo=UTC)


@dataclass
class Fleet:
    """Link samples of a fleet plus what was planted in it (the ground truth)."""

    samples: pd.DataFrame
    gpus: pd.DataFrame
    start: datetime
    end: datetime
    planted: dict[str, str] = field(default_factory=dict)


def link_samples(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows holding some of the link_samples columns, as a link_samples table (the other counters NaN)."""
    frame = frame.copy()
    for column, dtype in LINK_SAMPLES.columns.items():
        if dtype == "float64" and column not in frame:
            frame[column] = np.nan
    return LINK_SAMPLES.conform(frame)


def _counter(rng: np.random.Generator, steps: int, per_step: float) -> np.ndarray:
    return np.cumsum(rng.poisson(per_step, steps)).astype(float)


def generate_fleet(nodes: int = 4, hours: float = 2.0, scrape_s: int = 60, seed: int = 7,
                   columns: tuple[str, ...] = ("replay", "crc_flit", "recovery")) -> Fleet:
    """`nodes` HGX H100 nodes; faults planted on nodes 1-3 (when present); everything else healthy."""
    rng = np.random.default_rng(seed)
    steps = int(hours * 3600 // scrape_s) + 1
    times = pd.date_range(START, periods=steps, freq=f"{scrape_s}s", tz="UTC")
    per_hour = 3600 / scrape_s
    frames: list[pd.DataFrame] = []
    planted: dict[str, str] = {}
    for n in range(nodes):
        node = f"node-{n:03d}"
        keys = [(g, lk) for g in range(GPUS) for lk in range(LINKS)]
        if n == 3:
            keys.remove((3, 17))  # this link never reports: a link down before the window
            planted[f"{node} GPU 3"] = "17 of 18 links reporting"
        cols: dict[str, list[np.ndarray]] = {c: [] for c in columns}
        index: list[tuple[int, int]] = []
        for gpu, link in keys:
            rates = {"replay": 3.0, "crc_flit": 1.0, "recovery": 0.0}
            if n == 1 and (gpu, link) == (2, 5):
                rates = {"replay": 6000.0, "crc_flit": 300.0, "recovery": 0.0}
                planted[f"{node} GPU 2 NVLink 5"] = "replay 6000/h, crc 300/h"
            if n == 0 and (gpu, link) == (0, 0):
                rates["replay"] = 1040.0  # close to the threshold: agreement needs the same extrapolation
                planted[f"{node} GPU 0 NVLink 0"] = "replay 1040/h"
            for column in columns:
                values = _counter(rng, steps, rates.get(column, 0.0) / per_hour)
                if n == 2 and (gpu, link) == (1, 3) and column == "recovery":
                    values[steps * 3 // 4:] += 1.0
                    planted[f"{node} GPU 1 NVLink 3"] = "one recovery"
                if n == 0 and (gpu, link) == (1, 1) and column == "replay":
                    values[steps // 3:] -= values[steps // 3 - 1]  # an exporter restart: counter reset
                cols[column].append(values)
            index.append((gpu, link))
        count = len(index)
        frame = pd.DataFrame({
            "timestamp": np.tile(times, count), "node_id": node, "link_type": "nvlink",
            "gpu": np.repeat([g for g, _ in index], steps), "link": np.repeat([lk for _, lk in index], steps),
            **{c: np.concatenate(v) for c, v in cols.items()},
        })
        if n == 3:  # GPU 6 link 9 goes down 40 minutes before the end: its series stop
            stop = times[-1] - pd.Timedelta(minutes=40)
            frame = frame[~((frame["gpu"] == 6) & (frame["link"] == 9) & (frame["timestamp"] > stop))]
            planted[f"{node} GPU 6 NVLink 9"] = "series stop 40 min before the end"
        pcie_rate = 3000.0 if n == 2 else 2.0
        if n == 2:
            planted[f"{node} GPU 4 PCIe"] = "replay 3000/h"
        pcie = pd.DataFrame({
            "timestamp": np.tile(times, GPUS), "node_id": node, "link_type": "pcie",
            "gpu": np.repeat(np.arange(GPUS), steps),
            "replay": np.concatenate([_counter(rng, steps, (pcie_rate if g == 4 else 2.0) / per_hour)
                                      for g in range(GPUS)]),
        })
        frames += [frame, pcie]
    samples = link_samples(pd.concat(frames, ignore_index=True))
    gpus = pd.DataFrame([{"node_id": f"node-{n:03d}", "gpu": g, "model": MODEL}
                         for n in range(nodes) for g in range(GPUS)])
    return Fleet(samples, gpus, START, times[-1].to_pydatetime(), planted)


_HOST = re.compile(r'Hostname="([^"]*)"')


def silenced(fleet: Fleet, node: str, quiet_for: timedelta) -> Fleet:
    """The fleet with every series of `node` stopped `quiet_for` before its end (its exporter or the node went
    away)."""
    samples = fleet.samples
    gone = (samples["node_id"] == node) & (samples["timestamp"] > fleet.end - quiet_for)
    fleet.samples = samples[~gone].reset_index(drop=True)
    return fleet


def openmetrics_lines(fleet: Fleet) -> Iterator[str]:
    """The fleet as dcgm-exporter would have exposed it, with timestamps, ending in `# EOF`."""
    for line in format_exposition(fleet.samples, openmetrics=True):
        if line.startswith("#"):
            yield line
        else:  # dcgm-exporter also labels every GPU series with its model
            yield _HOST.sub(lambda m: f'{m[0]},modelName="{MODEL}"', line, count=1)


def write_openmetrics(fleet: Fleet, path: Path) -> int:
    with path.open("w", encoding="utf-8") as fh:
        size = 0
        for line in openmetrics_lines(fleet):
            size += fh.write(line + "\n")
    return size


def promtool_missing() -> str | None:
    """Why the real-server tests cannot run here, or None. With CI set, a missing binary is a failure."""
    missing = [b for b in ("prometheus", "promtool") if shutil.which(b) is None]
    if not missing:
        return None
    reason = f"{' and '.join(missing)} not installed (Debian package `prometheus`)"
    if os.environ.get("CI"):
        raise RuntimeError(f"CI is set but {reason}")
    return reason


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    url: str
    process: subprocess.Popen[bytes]
    data: Path

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def backfill(openmetrics: Path, data: Path) -> None:
    done = subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", str(openmetrics), str(data)],
                          capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"promtool backfill failed: {done.stderr[-2000:]}")


def start_server(data: Path, *, extra: tuple[str, ...] = ()) -> Server:
    """Prometheus over backfilled blocks on a free loopback port, with no scrape targets."""
    config = data.parent / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1m\nscrape_configs: []\n", encoding="utf-8")
    port = free_port()
    log = (data.parent / "prometheus.log").open("wb")
    process = subprocess.Popen(
        ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={data}",
         "--storage.tsdb.retention.time=100y", f"--web.listen-address=127.0.0.1:{port}", *extra],
        stdout=log, stderr=subprocess.STDOUT)
    server = Server(f"http://127.0.0.1:{port}", process, data)
    wait_ready(server.url, process, "prometheus", Path(log.name), server.stop)
    return server


def wait_ready(url: str, process: subprocess.Popen[bytes], name: str, log: Path, stop: Callable[[], None]) -> None:
    """Until the server at `url` answers `/-/ready` (Prometheus and Alertmanager both serve it); a server that exits
    or is not ready within 180 s (it is as soon as it can be; a busy machine delays its start) is stopped and an error
    names its log."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited with {process.returncode}; see {log}")
        try:
            if httpx.get(f"{url}/-/ready", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    stop()
    raise RuntimeError(f"{name} did not become ready within 60 s")


def serve_samples(samples: pd.DataFrame, folder: Path, models: Mapping[str, str] | None = None) -> Server:
    """link_samples rows (the synthetic fleet's, read back from its files) served as dcgm-exporter series, with
    each node's GPU model as the exporter's `modelName` label when `models` names it."""
    om = folder / "fleet.om"
    om.write_text("\n".join(format_exposition(samples, openmetrics=True, models=models)) + "\n", encoding="utf-8")
    backfill(om, folder / "data")
    return start_server(folder / "data")


def serve_fleet(fleet: Fleet, folder: Path, *, extra: tuple[str, ...] = ()) -> Server:
    om = folder / "fleet.om"
    write_openmetrics(fleet, om)
    backfill(om, folder / "data")
    return start_server(folder / "data", extra=extra)


def serving(fleet: Fleet, factory: pytest.TempPathFactory, name: str) -> Iterator[Server]:
    """A module's server over the fleet (`yield from` it in a fixture), stopped after the module."""
    served = serve_fleet(fleet, factory.mktemp(name))
    yield served
    served.stop()


def newest(tables: Mapping[str, pd.DataFrame]) -> datetime:
    """The newest link sample's time: the instant a sweep of the written fleet is evaluated at."""
    stamp: datetime = tables["link_samples"]["timestamp"].max().to_pydatetime()
    return stamp


Written = tuple[dict[str, pd.DataFrame], dict[str, str], Path]  # a synthetic fleet's tables, platforms, folder


def written_fleet(folder: Path, *, seed: int, scenarios: list[str], hours: float) -> Written:
    """A `fabricbot synth` fleet of one node per scenario, written under `folder/fleet` and read back."""
    from diagnostics.synth import fleet as synth

    synth.generate(out=folder / "fleet", seed=seed, nodes=len(scenarios), hours=hours, scenarios=scenarios)
    tables, inventory = synth.load(folder / "fleet")
    return tables, inventory, folder


def serve_written(written: Written) -> Iterator[Server]:
    """A server holding the fleet's link samples as dcgm-exporter labels them (its GPU model per node); stopped
    after."""
    from diagnostics.config import all_platforms

    tables, inventory, folder = written
    models = {n: f"NVIDIA {all_platforms()[p]['gpu_model']}" for n, p in inventory.items()}
    server = serve_samples(tables["link_samples"], folder, models)
    yield server
    server.stop()
