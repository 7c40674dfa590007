"""Training step logs: JSONL, CSV and text through the patterns file."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from diagnostics.errors import ConfigError
from diagnostics.ingest.base import Source
from diagnostics.ingest.steplog import READER, StepLogReader
from tests.ingest.helpers import REAL, SAMPLES, read, read_text, warning_lines


def test_jsonl_with_seconds_lists_and_a_cut_last_line() -> None:
    result = read(SAMPLES / "steps.jsonl")
    steps = result["step_samples"]
    assert steps["step"].tolist() == [100, 101, 102]
    assert steps["step_time_ms"].tolist() == [812.5, 815.0, 1250.0]  # 1.25 s
    assert set(steps["node_ids"]) == {"gpu-node-07,gpu-node-08"} and set(steps["job_id"]) == {"llm-7b-42"}
    assert steps["timestamp"].iloc[0] == pd.Timestamp("2026-11-20 03:00:00", tz="UTC")
    assert warning_lines(result) == [5]


def test_csv_with_a_bad_value() -> None:
    result = read(SAMPLES / "steps.csv")
    assert result["step_samples"]["step"].tolist() == [1, 2, 4]
    assert warning_lines(result) == [5]


def test_megatron_text_log() -> None:
    result = read(SAMPLES / "megatron_train.log")
    steps = result["step_samples"]
    assert steps["step"].tolist() == [100, 101, 102]
    assert steps["step_time_ms"].tolist() == [812.4, 815.9, 1244.0]
    assert steps["timestamp"].iloc[2] == pd.Timestamp("2026-11-20 03:00:03", tz="UTC")
    assert warning_lines(result) == [3]  # the times state no zone


def test_a_user_pattern_file(tmp_path: Path) -> None:
    patterns = tmp_path / "patterns.toml"
    patterns.write_text(
        '[fields]\nstep = ["step"]\n\n[[pattern]]\nname = "mine"\n'
        "regex = 'it (?P<step>\\d+) took (?P<step_time>[\\d.]+)s'\ntime_unit = \"s\"\n"
    )
    reader = StepLogReader.from_file(patterns)
    result = reader.read(Source.from_text("hello\nit 7 took 0.5s\n"), node_id="n1")
    assert result["step_samples"][["step", "step_time_ms"]].values.tolist() == [[7, 500.0]]
    assert result["step_samples"]["node_ids"].tolist() == ["n1"]


def test_a_pattern_without_step_time_is_a_config_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[fields]\n[[pattern]]\nname = 'x'\nregex = 'step (?P<step>\\d+)'\n")
    with pytest.raises(ConfigError, match="step_time"):
        StepLogReader.from_file(bad)


def test_malformed_rows() -> None:
    result = read_text('{"step": 1, "step_time_ms": 10}\n[1, 2]\n{"step": 2, "step_time_ms": -3}\n', fmt="steplog")
    assert result["step_samples"]["step"].tolist() == [1]
    assert warning_lines(result) == [2, 3]
    csv = read_text("step,step_time_ms\n1,10\n2,11,extra\n", fmt="steplog")
    assert csv["step_samples"]["step"].tolist() == [1] and warning_lines(csv) == [3]


def test_another_format_and_empty() -> None:
    other = READER.read(Source.from_path(REAL / "nvlink_s_a100_1.txt"))
    assert other.rows["step_samples"] == 0 and other.warnings
    assert READER.read(Source.from_text("")).rows["step_samples"] == 0
