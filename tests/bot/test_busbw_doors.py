"""An nccl-tests run's bus bandwidth verdict is the same through `analyze FILE` and through the store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main
from tests.ingest.helpers import REAL


def fabric(capsys: pytest.CaptureFixture[str], args: list[str]) -> list[dict[str, Any]]:
    capsys.readouterr()
    assert main(args) == 0
    diagnosis = json.loads(capsys.readouterr().out)
    return [f for f in diagnosis["findings"] if f["ref"]["kind"] == "gpu-fabric"]


def test_the_file_and_the_store_give_the_same_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "nccl.txt"  # the real A100 run judged as an H100 board: below its figure
    run.write_text((REAL / "nccl_allreduce_1.txt").read_text())
    from_file = fabric(capsys, ["analyze", str(run), "--platform", "hgx-h100-8gpu", "--json"])
    store = str(tmp_path / "store")
    assert main(["ingest", str(run), "--store", store]) == 0
    from_store = fabric(capsys, ["analyze", "--store", store, "--node", "a4bae1424041", "--platform", "hgx-h100-8gpu",
                                 "--json"])
    assert [f["severity"] for f in from_file] == ["warning"]
    assert [c["message"] for f in from_file for c in f["crossed"]] == \
        [c["message"] for f in from_store for c in f["crossed"]]
    assert "48% of the 480 GB/s expected of hgx-h100-8gpu" in from_file[0]["crossed"][0]["message"]
