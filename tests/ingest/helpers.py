"""Helpers for the tests of the shell-output readers: read a fixture, check a result against the schemas."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from diagnostics.ingest import detect
from diagnostics.ingest.base import IngestResult, Source
from diagnostics.tables import TABLES

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
REAL = FIXTURES / "real"
SAMPLES = FIXTURES / "samples"


def read(path: Path, fmt: str | None = None) -> IngestResult:
    """Read a fixture through detection (or a forced format) and check every table's schema."""
    result = detect.read(Source.from_path(path), fmt=fmt)
    assert_conformed(result)
    return result


def read_text(text: str, fmt: str | None = None, name: str = "paste.txt") -> IngestResult:
    result = detect.read(Source.from_text(text, name=name), fmt=fmt)
    assert_conformed(result)
    return result


def assert_conformed(result: IngestResult) -> None:
    for name, schema in TABLES.items():
        frame = result.tables[name]
        assert list(frame.columns) == list(schema.columns), name
        for column, dtype in schema.columns.items():
            assert str(frame[column].dtype) == dtype, (name, column, frame[column].dtype)


def warning_lines(result: IngestResult) -> list[int | None]:
    return [w.line for w in result.warnings]


def links_per_gpu(frame: pd.DataFrame) -> dict[int, list[int]]:
    rows = frame[frame["lane"].isna()]
    return {int(g): sorted(int(x) for x in grp["link"]) for g, grp in rows.groupby("gpu", observed=True)}


H100_SMI_Q = REAL / "smi_q_h100_8gpu_gpud_1.txt"  # a real `nvidia-smi -q` of an 8-GPU H100 board, read at 02:03:08


def smi_q_read_twice(*, cut_in_gpu4: bool = False) -> str:
    """The real H100 output, then the same board read again ten minutes later with GPU 0's PCIe replays up by 5,000
    (30,000/h: failing): `nvidia-smi -q; sleep 600; nvidia-smi -q` pasted as one. The second reading is made from
    the first (no published paste holds two). `cut_in_gpu4`: the second stops inside GPU 4's `Link Width`, before
    its replays."""
    first = H100_SMI_Q.read_text()
    body = first.split("\n", 1)[1]  # the source line is the file's, not the output's
    again = body.replace("Fri Jun 21 02:03:08 2024", "Fri Jun 21 02:13:08 2024", 1)
    again = again.replace("Replays Since Reset               : 120", "Replays Since Reset               : 5120", 1)
    assert again.count("02:13:08") == 1 and "5120" in again
    if cut_in_gpu4:
        gpu4 = again.index("GPU 00000000:97:00.0")
        again = again[:again.index("Current                   : 16x", gpu4) + len("Current  ")]
    return first + again
