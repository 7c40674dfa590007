"""Normalized CSV / JSONL / Parquet tables: detection by columns, and every bad value named."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from diagnostics.errors import InputError
from diagnostics.ingest.base import Source
from diagnostics.ingest.detect import choose, read
from diagnostics.tables import LINK_SAMPLES, TABLES

CSV = """timestamp,node_id,gpu,link_type,link,replay,crc_flit,saturated
2026-03-01T00:00:00Z,n1,0,nvlink,3,10,1,false
2026-03-01T00:01:00Z,n1,0,nvlink,3,25,1,false
2026-03-01T00:02:00Z,n1,0,nvlink,3,ten,1,maybe
2026-03-01T00:03:00Z,n1,0,nvlnk,3,30,1,false
2026-03-01T00:04:00Z,n1,0,,3,40,1,false
"""


def test_csv_link_samples_with_bad_values_named(tmp_path: Path) -> None:
    path = tmp_path / "links.csv"
    path.write_text(CSV)
    assert choose(Source.from_path(path)).name == "tables"
    result = read(path)
    rows = result["link_samples"]
    assert list(rows["replay"]) [:2] == [10, 25] and pd.isna(rows["replay"].iloc[2])
    assert rows["timestamp"].iloc[1] == pd.Timestamp("2026-03-01T00:01Z")
    bad = {(w.line, w.message.split(" = ")[0]) for w in result.warnings}
    empty = "no link_type (one of nvlink, pcie, nvswitch); row not read"
    assert bad == {(4, "replay"), (4, "saturated"), (5, "link_type"), (6, empty)}
    # a link reading of no link type names no link: not read, and said with its value (it crashed every answer)
    assert len(rows) == 3 and "'nvlnk' is not a valid link_type" in next(w.message for w in result.warnings
                                                                         if w.line == 5)
    assert all(w.file == str(path) for w in result.warnings)
    assert rows["source"].iloc[0] == f"{path}:2"


def test_jsonl_events_and_a_broken_line(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    lines = [json.dumps({"timestamp": "2026-03-01T00:00:00Z", "node_id": "n1", "gpu": 2, "kind": "xid", "code": 79}),
             '{"timestamp": "2026-03-01T00:05:00Z", "node_id": "n1"',
             json.dumps({"timestamp": "2026-03-01T00:09:00Z", "node_id": "n1", "gpu": 2, "kind": "xid", "code": 74})]
    path.write_text("\n".join(lines) + "\n")
    result = read(path)
    assert list(result["events"]["code"]) == [79, 74]
    assert [w.line for w in result.warnings] == [2]


def test_parquet_round_trip(tmp_path: Path) -> None:
    frame = LINK_SAMPLES.conform(pd.DataFrame({
        "timestamp": pd.to_datetime(["2026-03-01T00:00Z"] * 2), "node_id": ["n2", "n2"], "gpu": [1, 1],
        "link_type": ["nvlink", "pcie"], "link": [4, None], "replay": [5.0, 6.0]}))
    path = tmp_path / "s.parquet"
    frame.to_parquet(path)
    back = read(path)["link_samples"]
    assert list(back["replay"]) == [5.0, 6.0] and back["link"].isna().tolist() == [False, True]
    assert str(back["gpu"].dtype) == "Int16"


def test_missing_required_column_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "x.csv"
    path.write_text("timestamp,node_id,link,replay\n2026-03-01,n1,0,1\n")
    with pytest.raises(InputError, match="needs gpu, link_type"):
        read(path, fmt="tables")


def test_a_parquet_table_with_no_rows_is_read_as_empty_not_refused(tmp_path: Path) -> None:
    path = tmp_path / "events.parquet"
    TABLES["events"].empty().to_parquet(path, index=False)
    result = read(path)
    assert result.rows["events"] == 0 and not result.warnings
