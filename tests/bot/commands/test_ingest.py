"""`fabricbot ingest`: reads, reports JSON, stores, and exits non-zero only when nothing was read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.cli import main

REAL = Path(__file__).resolve().parents[3] / "fixtures" / "real"


def test_json_report_for_real_scrapes(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["ingest", str(REAL / "dcgm_metrics_a100_1.txt"), str(REAL / "dcgm_metrics_gb200_1.txt"), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["nodes"] == ["3f546054f69d", "axa"]
    assert out["rows"]["link_samples"] == 8 and out["rows"]["gpus"] == 8
    assert {w["line"] for w in out["warnings"] if w["file"].endswith("gb200_1.txt")} >= {10}
    assert set(out) >= {"rows", "nodes", "links_per_gpu", "warnings"}


def test_links_per_gpu_and_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scrape = tmp_path / "s.prom"
    scrape.write_text("".join(f'DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L{i}{{gpu="{g}",Hostname="n"}} 0\n'
                              for g in range(2) for i in range(12)))
    code = main(["ingest", str(scrape), "--store", str(tmp_path / "st"), "--json", "--at", "2026-03-01T00:00:00Z"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["links_per_gpu"] == {"n": {"0": 12, "1": 12}}
    assert (tmp_path / "st" / "link_samples" / "node=n" / "day=2026-03-01").is_dir()
    assert main(["ingest", str(scrape), "--store", str(tmp_path / "st")]) == 0
    assert "already in the store" in capsys.readouterr().out


def test_nothing_readable_exits_non_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    junk = tmp_path / "junk.bin"
    junk.write_bytes(bytes(range(256)))
    assert main(["ingest", str(junk)]) == 1
    assert "nothing could be read" in capsys.readouterr().err
    assert main(["ingest", str(tmp_path / "s.prom"), "--at", "yesterday"]) == 2


def test_at_mtime_dates_scrapes_without_timestamps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import os

    scrape = tmp_path / "s.prom"
    scrape.write_text('DCGM_FI_DEV_PCIE_REPLAY_COUNTER{gpu="0",Hostname="n"} 2\n')
    when = 1_772_409_600  # 2026-03-02T00:00Z
    os.utime(scrape, (when, when))
    assert main(["ingest", str(scrape), "--store", str(tmp_path / "st"), "--at", "mtime"]) == 0
    assert (tmp_path / "st" / "link_samples" / "node=n" / "day=2026-03-02").is_dir()
    assert main(["ingest", str(scrape), "--format", "nvidia-smi-x"]) == 1
    assert "unknown format" in capsys.readouterr().err
