"""An Xid the kernel logged and dcgm-exporter's counter read first later on is one Xid, whichever door reads them:
the counter's first reading counts every Xid since the exporter started, the line's among them (a GPU off the bus
was said to have logged two Xid 79)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from diagnostics.service import Request, StoreSource, diagnose, files_source
from diagnostics.store import open_store
from diagnostics.synth.fleet import generate

NODE = "gpu-node-7"
LINE = ("{at} {node} kernel: NVRM: Xid (PCI:0000:91:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the "
        "bus.")
LABELS = ('gpu="{gpu}",UUID="GPU-3f1c2d7e-0a4b-4e6f-9c1d-2b3a4c5d6e7{gpu}",pci_bus_id="00000000:{bus}:00.0",'
          'device="nvidia{gpu}",modelName="NVIDIA A100-SXM4-80GB",Hostname="{node}"')
BUSES = {0: "07", 2: "91"}


def _xid79(source: object, node: str) -> float:
    """How many Xid 79 the node's diagnosis counts (its off-the-bus rule)."""
    diagnosis = diagnose(source, Request(node=node)).diagnosis  # type: ignore[arg-type]
    return sum(c.rate_per_hour for f in diagnosis.findings for c in f.crossed if c.rule == "xid_off_bus")


def _doors(paths: list[Path], node: str, store_at: Path) -> Iterator[tuple[str, float]]:
    """The node's Xid 79 as the files read in memory count them, and as a store they were ingested into does."""
    files, _, _ = files_source(paths, node=node)
    yield "files", _xid79(files, node)
    open_store(store_at).ingest(paths)
    yield "store", _xid79(StoreSource(store_at), node)


def _scrape(first_count: int, start: pd.Timestamp) -> str:
    """dcgm-exporter's exposition over three scrapes a minute apart from `start`: the GPUs' PCIe replay counters
    and GPU 2's Xid 79 counter, `first_count` from its first reading on."""
    lines = ["# HELP DCGM_FI_DEV_PCIE_REPLAY_COUNTER Total number of PCIe retries.",
             "# TYPE DCGM_FI_DEV_PCIE_REPLAY_COUNTER counter"]
    times = [int((start + pd.Timedelta(minutes=m)).value // 10**6) for m in range(3)]
    lines += [f"DCGM_FI_DEV_PCIE_REPLAY_COUNTER{{{LABELS.format(gpu=g, bus=b, node=NODE)}}} 0 {ms}"
              for g, b in BUSES.items() for ms in times]
    lines += ["# HELP DCGM_EXP_XID_ERRORS_COUNT Count of XID Errors within user-specified time window (see xid-count-"
              "window-size param).", "# TYPE DCGM_EXP_XID_ERRORS_COUNT gauge"]
    labels = LABELS.format(gpu=2, bus=BUSES[2], node=NODE) + ',window_size_in_ms="300000",xid="79"'
    lines += [f"DCGM_EXP_XID_ERRORS_COUNT{{{labels}}} {first_count} {ms}" for ms in times]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("counted", [1, 2])
def test_a_kernel_line_before_the_counters_first_reading_is_one_of_what_it_counted(tmp_path: Path,
                                                                                 counted: int) -> None:
    """The kernel logged the Xid 79 at 11:00, the exporter's first scrape at 11:40 read its counter at `counted`:
    that many Xid 79 in all, the line one of them (a first reading of 2 beside one line is still 2)."""
    line = pd.Timestamp("2026-03-01T11:00:00Z")
    (tmp_path / "kern.log").write_text(LINE.format(at=line.strftime("%Y-%m-%dT%H:%M:%S+0000"), node=NODE) + "\n",
                                       encoding="utf-8")
    (tmp_path / "metrics.prom").write_text(_scrape(counted, line + pd.Timedelta(minutes=40)), encoding="utf-8")
    paths = [tmp_path / "kern.log", tmp_path / "metrics.prom"]
    for door, xids in _doors(paths, NODE, tmp_path / "store"):
        assert xids == counted, door


def test_the_synthetic_gpu_off_the_bus_counts_one_xid(tmp_path: Path) -> None:
    """The synthetic fleet's GPU off the bus: its Xid 79 in the kernel's events, and the scrapes of the fleet's
    last 15 minutes, whose counter's first reading (1) comes long after it."""
    out = tmp_path / "fleet"
    generate(out=out, seed=3, nodes=1, hours=6, scrapes=1, scenarios=["xid79_after_pcie_replays"])
    [(node, truth)] = json.loads((out / "ground_truth.json").read_text(encoding="utf-8"))["nodes"].items()
    onset = pd.Timestamp(truth["faults"][0]["onset"])
    scrape = (out / "dcgm" / f"{node}.prom").read_text(encoding="utf-8")
    first_read = min(int(line.rsplit(" ", 1)[1]) for line in scrape.splitlines()
                     if line.startswith("DCGM_EXP_XID_ERRORS_COUNT{"))
    assert pd.Timestamp(first_read, unit="ms", tz="UTC") - onset > pd.Timedelta(minutes=30)  # the case at hand
    for door, xids in _doors([out], node, tmp_path / "store"):
        assert xids == 1, door


def test_a_store_whose_events_lack_the_mark_reads_and_gains_it(tmp_path: Path) -> None:
    """A store written before the mark (its events table without the column): read as before, and a scrape
    ingested into it later adds the column, the counter's first reading marked in it."""
    line = pd.Timestamp("2026-03-01T11:00:00Z")
    (tmp_path / "kern.log").write_text(LINE.format(at=line.strftime("%Y-%m-%dT%H:%M:%S+0000"), node=NODE) + "\n",
                                       encoding="utf-8")
    (tmp_path / "metrics.prom").write_text(_scrape(2, line + pd.Timedelta(minutes=40)), encoding="utf-8")
    store = open_store(tmp_path / "store")
    store.ingest([tmp_path / "kern.log"])
    assert "since_start" not in store.db["events"].columns_dict  # the table as a store written before it has it
    assert _xid79(StoreSource(tmp_path / "store"), NODE) == 1
    store.ingest([tmp_path / "metrics.prom"])
    assert store.events(NODE)["since_start"].fillna(False).tolist() == [False, True]
    assert _xid79(StoreSource(tmp_path / "store"), NODE) == 2
