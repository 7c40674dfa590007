"""The benchmark's fast fleet writer: valid block-split OpenMetrics that the dcgm reader reads to the planted faults."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pandas as pd
import pytest

from diagnostics import load_thresholds
from diagnostics.ingest.base import Source
from diagnostics.ingest.dcgm import read_scrapes
from tests.prometheus.fleet_writer import BLOCK_S, BigFleet, write_blocks
from tests.prometheus.helpers import GPUS, LINKS, MODEL
from tests.prometheus.mirror import failing_links

NEAR_THRESHOLD = "node-000 GPU 0 NVLink 0"  # 1040/h against 1000/h: may fall either side; agreement covers it


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[BigFleet, list[tuple[Path, int, int]]]:
    fleet = BigFleet(nodes=5, hours=2.5, scrape_s=300)  # 5-minute scrapes: a small test
    return fleet, list(write_blocks(fleet, tmp_path_factory.mktemp("om")))


def test_files_split_at_block_boundaries_and_hold_every_sample(
        written: tuple[BigFleet, list[tuple[Path, int, int]]]) -> None:
    fleet, files = written
    assert len(files) == 2  # [0 h, 2 h) and [2 h, 2.5 h]
    total = 0
    for path, size, samples in files:
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        assert len(text.encode()) == size and lines[-1] == "# EOF" and text.count("# EOF") == 1
        body = [ln for ln in lines if not ln.startswith("#")]
        assert len(body) == samples
        stamps = pd.Series([int(ln.rsplit(" ", 1)[1]) for ln in body])
        first = int(path.stem.split("-")[1])
        assert stamps.min() == first and stamps.max() < first + BLOCK_S
        types = [ln.split()[2] for ln in lines if ln.startswith("# TYPE")]
        assert len(types) == len(set(types)) == 4 * LINKS + 2  # each family once: 72 NVLink, PCIe, Xid
        total += samples
    per_gpu = 4 * LINKS + 2
    full = fleet.nodes * GPUS * per_gpu * fleet.steps
    absent = 4 * fleet.steps  # node-003 GPU 3 link 17: four counters, never exposed
    stopped = 4 * (40 * 60 // fleet.scrape_s)  # node-003 GPU 6 link 9: four counters, silent for 40 minutes
    assert total == full - absent - stopped


def test_the_reader_finds_the_planted_faults_and_nothing_else(
        written: tuple[BigFleet, list[tuple[Path, int, int]]]) -> None:
    fleet, files = written
    tables = read_scrapes([(Source.from_path(p), None) for p, _, _ in files])
    samples = tables["link_samples"]
    assert samples["timestamp"].max() == pd.Timestamp(fleet.end)
    assert samples["timestamp"].min() == pd.Timestamp(fleet.end - timedelta(hours=2.5))
    gpus = pd.DataFrame([{"node_id": n, "gpu": g, "model": MODEL} for n in fleet.node_ids for g in range(GPUS)])
    found = {(f"{o.node_id} {o.component}", o.rule)
             for o in failing_links(samples, load_thresholds(), fleet.end, 1.0, gpus)}
    assert set(fleet.planted) == {NEAR_THRESHOLD, "node-001 GPU 2 NVLink 5", "node-002 GPU 1 NVLink 3",
                                  "node-002 GPU 4 PCIe", "node-003 GPU 3", "node-003 GPU 6 NVLink 9"}
    # the planted faults, each as the rule it should break; node-004 is healthy, and the exporter restart on
    # node-000 GPU 1 NVLink 1 is a counter reset, not a burst of errors
    assert found - {(NEAR_THRESHOLD, "nvlink_replay")} == {
        ("node-001 GPU 2 NVLink 5", "nvlink_replay"), ("node-001 GPU 2 NVLink 5", "crc"),
        ("node-002 GPU 1 NVLink 3", "recovery"), ("node-002 GPU 4 PCIe", "pcie_replay"),
        ("node-003 GPU 3 NVLinks", "links_below_expected"),  # link 17 never reported
        ("node-003 GPU 6 NVLink 9", "link_missing"), ("node-003 GPU 6 NVLinks", "links_below_expected"),
    }
