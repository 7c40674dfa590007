"""Outputs fabricbot knows and does not read (data/unread_outputs.toml) are refused as what they are, with what to
give instead, through detection, `analyze FILE`, `ingest` and a file shared in Slack: they were refused as an
unknown format, which left the engineer to guess."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.cli import main
from bot.pastes import unreadable
from diagnostics.config import unread_outputs
from diagnostics.errors import InputError
from diagnostics.ingest import detect
from diagnostics.ingest.base import Source

OUTPUTS = {
    "nvidia-smi's summary table": (
        "+-----------------------------------------------------------------------------------------+\n"
        "| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |\n"
        "|-----------------------------------------+------------------------+----------------------+\n"),
    # NVIDIA/DCGM issue 265 (a GB200 compute tray, DCGM 4.4.1)
    "`dcgmi dmon`": ("# dcgmi dmon -e 310,1200\n#Entity    ESVTL        NLXMITP\nID\n"
                     "GPU 0      N/A          N/A\nGPU 1      N/A          N/A\n"),
    # NVIDIA/NVSentinel pull 1481 (an A100 80GB PCIe without an NVLink bridge)
    "`dcgmi health -c`": ("| Overall Health            | Failure                                       |\n"
                          "| -> 0                      | Failure                                       |\n"
                          "|    -> NVLINK system       | Failure                                       |\n"),
    "`dcgmi diag`": ("+---------------------------+------------------------------------------------+\n"
                     "| Diagnostic                | Result                                         |\n"
                     "+===========================+================================================+\n"),
}


def test_every_shipped_entry_has_a_sample_here() -> None:
    assert sorted(o.name for o in unread_outputs().output) == sorted(OUTPUTS)


@pytest.mark.parametrize("name", sorted(OUTPUTS))
def test_an_output_not_read_is_refused_as_what_it_is_through_each_door(name: str, tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    text = "  " + OUTPUTS[name].replace("\n", "\n  ")  # pasted indented
    with pytest.raises(InputError) as refused:
        detect.choose(Source.from_text(text, name="paste.txt"))
    said = f"it is {name}, which fabricbot does not read: give "
    assert said in str(refused.value) and "unrecognized format" not in str(refused.value)
    path = tmp_path / "out.txt"
    path.write_text(text, encoding="utf-8")
    assert main(["analyze", str(path)]) == 2
    assert said in capsys.readouterr().err
    assert main(["ingest", str(path)]) == 1
    assert said in capsys.readouterr().out
    source = Source.from_text(text, name="out.txt")
    assert said in unreadable(source, refused.value)


def test_an_output_fabricbot_reads_is_not_taken_for_one_it_does_not() -> None:
    assert unread_outputs().said("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\n\t Link 0: Replay Errors: 0\n") is None


def test_a_gpu_nvidia_smi_could_not_reach_keeps_its_table_from_being_refused_by_name() -> None:
    """`Unable to determine the device handle for GPU...: GPU is lost` above the summary table names a GPU off the
    bus, which the readers read in nvidia-smi's other outputs: the refusal by name would steer the engineer away."""
    lost = "Unable to determine the device handle for GPU0000:3A:00.0: GPU is lost.  Reboot the system\n"
    assert unread_outputs().said(lost + OUTPUTS["nvidia-smi's summary table"]) is None
