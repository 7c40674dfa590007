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
