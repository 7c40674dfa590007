"""A GPU model built into boards of several sizes (the H100 SXM5 on 4- and 8-GPU boards): a platform told only from
the model said GPUs 4-7 of a healthy 4-GPU board were off the bus, "urgent, restart the machine", at every door
(the sweep's server query too)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Cli

START_MS = 1_796_518_800_000  # two scrapes ten minutes apart


def _scrapes(path: Path, gpus: int, model: str = "NVIDIA H100 80GB HBM3") -> Path:
    lines = []
    for at in (START_MS, START_MS + 600_000):
        for metric in ("REPLAY_ERROR_COUNT", "CRC_FLIT_ERROR_COUNT", "RECOVERY_ERROR_COUNT"):
            for link in range(18):
                name = f"DCGM_FI_DEV_NVLINK_{metric}_L{link}"
                lines.append(f"# TYPE {name} counter")
                lines += [f'{name}{{gpu="{g}",UUID="GPU-0000000{g}-a825-300c-0336-48e33d0dadb2",device="nvidia{g}",'
                          f'modelName="{model}",Hostname="quad-01"}} 0 {at}' for g in range(gpus)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_four_gpus_of_a_model_also_built_into_four_gpu_boards_are_a_board_not_four_gone(tmp_path: Path,
                                                                                         cli: Cli) -> None:
    scrapes = _scrapes(tmp_path / "quad.prom", 4)
    code, out, _ = cli("analyze", str(scrapes))
    assert code == 0 and "fault=no" in out and "reports no telemetry" not in out, out
    assert ("the readings name 4 GPUs (0-3), a whole board of the 4 the GPU model is also built into: read as one, "
            "so GPUs 4-7 of hgx-h100-8gpu (taken from the GPU model 'NVIDIA H100 80GB HBM3') are not judged "
            "missing") in out
    store = tmp_path / "store"
    assert cli("ingest", str(scrapes), "--store", str(store))[0] == 0
    code, out, _ = cli("sweep", "--store", str(store), "--at", "2026-12-06T01:10:00Z")
    assert code == 0 and out.startswith("all links within thresholds"), out
    topology = Path(__file__).resolve().parents[3] / "fixtures" / "real" / "topo_m_4xh100_nv6_1.txt"
    code, out, _ = cli("analyze", str(scrapes), str(topology), "--node", "quad-01")  # its own topology beside
    assert code == 0 and "fault=no" in out and "reports no telemetry" not in out, out


@pytest.mark.parametrize(("gpus", "model", "platform"), [
    (7, "NVIDIA H100 80GB HBM3", None),  # seven: no board of the model, so one is gone
    (4, "NVIDIA H100 80GB HBM3", "hgx-h100-8gpu"),  # the board named: its eight are the count
    (4, "NVIDIA B200", None),  # a model built into 8-GPU boards alone
])
def test_gpus_short_of_every_board_of_the_model_or_of_a_named_one_are_gone(
        tmp_path: Path, cli: Cli, gpus: int, model: str, platform: str | None) -> None:
    scrapes = _scrapes(tmp_path / "node.prom", gpus, model)
    code, out, _ = cli("analyze", str(scrapes), *(["--platform", platform] if platform else []))
    assert code == 0 and "fault=yes" in out and f"GPU {gpus} reports no telemetry: {gpus} of 8 GPUs report" in out


def test_four_gpus_that_are_not_a_boards_first_four_are_still_four_gone(tmp_path: Path, cli: Cli) -> None:
    """A board numbers its GPUs from 0: GPUs 4-7 reporting alone are half a board whose other half is gone."""
    scrapes = _scrapes(tmp_path / "half.prom", 8)
    text = scrapes.read_text(encoding="utf-8")
    scrapes.write_text("\n".join(line for line in text.splitlines() if not any(f'gpu="{g}"' in line for g in range(4)))
                       + "\n", encoding="utf-8")
    code, out, _ = cli("analyze", str(scrapes))
    assert code == 0 and "fault=yes" in out and "GPU 0 reports no telemetry: 4 of 8 GPUs report" in out, out
