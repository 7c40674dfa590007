"""A snapshot read as tables keeps its meaning: counts over the window, and the step time against baseline."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from diagnostics.errors import InputError
from diagnostics.ingest.detect import read
from diagnostics.ingest.snapshot import looks_like_json
from tests.conftest import link, snapshot_dict

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def test_snapshot_becomes_two_readings_one_window_apart(tmp_path: Path) -> None:
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(snapshot_dict(
        window_hours=2, step_time_ms=130, baseline_step_time_ms=100,
        fabric_errors=[link(gpu_src=3, gpu_dst=4, link_id="nvlink-5", replay_count=4000, crc_errors=12)])))
    result = read(path)
    rows = result["link_samples"]
    assert len(rows) == 2 and set(rows["link"]) == {5} and set(rows["peer"]) == {"GPU 4"}
    elapsed_h = (rows["timestamp"].iloc[1] - rows["timestamp"].iloc[0]) / pd.Timedelta(hours=1)
    assert elapsed_h == 2
    assert (rows["replay"].iloc[1] - rows["replay"].iloc[0]) / elapsed_h == 2000  # the snapshot's rate
    steps = result["step_samples"]
    assert list(steps["step_time_ms"]) == [100, 130] and set(steps["job_id"]) == {"snapshot:node-a"}


def test_seed_file_reads_every_valid_case() -> None:
    cases = json.loads((FIXTURES / "seed_examples.json").read_text())
    result = read(FIXTURES / "seed_examples.json")
    assert set(result["link_samples"]["node_id"]) == {c["input"]["node_id"] for c in cases}


def test_invalid_snapshot_is_an_error_naming_the_field(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(snapshot_dict(fabric_errors=[link(replay_count=-1)])))
    with pytest.raises(InputError, match="replay_count"):
        read(path)


@pytest.mark.parametrize(("text", "json_like"), [
    ('[\n  {"node_id": "n"', True), ("[]", True), ("[1, 2", True), ('{ "node_id"', True), ("{}", True), ("[", True),
    ("[root@gpu01 ~]# nvidia-smi nvlink -e\n", False), ("[user@host dir]$ dcgmi dmon\n", False),
    ("[    5.123456] NVRM: Xid (PCI:0000:00:00): 79\n", False), ("{node: n}", False), ("GPU 0: H100", False),
])
def test_json_is_told_apart_from_text_that_starts_with_a_bracket(text: str, json_like: bool) -> None:
    """A shell prompt in brackets or a kernel log's stamp starts with `[` as JSON does: JSON's error is said only
    where the text plausibly is JSON."""
    assert looks_like_json(text) is json_like
