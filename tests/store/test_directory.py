"""A link-sample part's directory: the runs of each link's rows per row group, in the part's footer."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from diagnostics.errors import InputError
from diagnostics.store import directory
from diagnostics.store.telemetry import TelemetryStore

from .test_window import START, fleet_file


def test_runs_break_at_each_row_group_and_each_change_of_identity_with_na_equal_to_na() -> None:
    table = pa.table({"gpu": pa.array([0, 0, 0, 0, 1, 1, None, None], pa.int16()),
                      "peer": pa.array(["a", "a", "b", "b", "b", None, None, None]).dictionary_encode(),
                      "replay": pa.array(range(8), pa.float64())})
    runs = directory.runs(table, ["gpu", "peer", "lane"], [0, 3])  # row groups [0, 3) and [3, 8); no lane column
    assert runs is not None and runs.column_names == ["group", "start", "rows", "gpu", "peer"]
    assert runs.to_pylist() == [
        {"group": 0, "start": 0, "rows": 2, "gpu": 0, "peer": "a"},
        {"group": 0, "start": 2, "rows": 1, "gpu": 0, "peer": "b"},
        {"group": 1, "start": 0, "rows": 1, "gpu": 0, "peer": "b"},  # the same link, in the next row group
        {"group": 1, "start": 1, "rows": 1, "gpu": 1, "peer": "b"},
        {"group": 1, "start": 2, "rows": 1, "gpu": 1, "peer": None},
        {"group": 1, "start": 3, "rows": 2, "gpu": None, "peer": None},
    ]
    assert directory.runs(table.slice(0, 0), ["gpu"], [0]) is None


@pytest.fixture
def store(tmp_path: Path) -> TelemetryStore:
    source = tmp_path / "links.parquet"
    fleet_file(source, hours=6)
    store = TelemetryStore(tmp_path / "store")
    store.ingest([source])
    return store


def _rewrite(part: Path, blob: bytes) -> None:
    """The part with another directory in its footer, its rows as they were."""
    table = pq.read_table(part).replace_schema_metadata(None)
    groups = pq.ParquetFile(part).metadata
    sizes = [groups.row_group(i).num_rows for i in range(groups.num_row_groups)]
    with pq.ParquetWriter(part, table.schema) as writer:
        at = 0
        for size in sizes:
            writer.write_table(table.slice(at, size), row_group_size=size)
            at += size
        writer.add_key_value_metadata({directory.KEY: blob})


def _history(store: TelemetryStore, unreadable: dict[str, str] | None = None) -> pd.DataFrame:
    return store.link_history(["n0", "n1"], start=START, end=START + timedelta(hours=6), columns=["replay"],
                              select=lambda ids: (ids["link"] == 1).to_numpy(bool), unreadable=unreadable)


def _shifted(part: Path) -> bytes:
    """A directory whose runs start a row later, checksummed anew: whole, but not its part's."""
    listed = directory.directory_of(pq.read_metadata(part))
    assert listed is not None
    shifted = listed.set_column(1, "start", pa.compute.add(listed.column("start"), pa.scalar(1, pa.int32())))
    return directory.checked(directory.encoded(shifted))


def _flipped(part: Path) -> bytes:
    """The part's own directory with one byte of it changed."""
    value = bytearray((pq.read_metadata(part).metadata or {})[directory.KEY])
    value[len(value) // 2] ^= 0x10
    return bytes(value)


@pytest.mark.parametrize("damage", [lambda part: b"not a directory", _flipped, _shifted],
                         ids=["unreadable", "a byte changed", "wrong runs"])
def test_a_part_whose_directory_is_not_its_own_leaves_its_node_out_and_names_it(store: TelemetryStore,
                                                                                damage: object) -> None:
    whole = _history(store)
    part = next((store.root / "link_samples" / "node=n1").rglob("*.parquet"))
    _rewrite(part, damage(part))  # type: ignore[operator]
    unreadable: dict[str, str] = {}
    got = _history(store, unreadable)
    assert set(unreadable) == {"n1"} and str(part) in unreadable["n1"] and "directory" in unreadable["n1"]
    pd.testing.assert_frame_equal(got, whole[whole["node_id"].astype(str) == "n0"].reset_index(drop=True),
                                  check_categorical=False)
    with pytest.raises(InputError, match="directory"):
        _history(store)


def test_a_part_damaged_where_only_its_values_are_decoded_leaves_its_node_out(store: TelemetryStore) -> None:
    """A part whose footer and directory are whole but whose counters were overwritten: only the chosen links'
    row groups are decoded, after the identities were asked of; the node is still left out and the part named."""
    part = next((store.root / "link_samples" / "node=n1").rglob("*.parquet"))
    chunk = next(c for c in (pq.read_metadata(part).row_group(0).column(i) for i in range(8))
                 if c.path_in_schema == "replay")
    start = chunk.dictionary_page_offset or chunk.data_page_offset
    with part.open("r+b") as file:
        file.seek(start)
        file.write(b"\xff" * chunk.total_compressed_size)
    unreadable: dict[str, str] = {}
    got = _history(store, unreadable)
    assert set(unreadable) == {"n1"} and str(part) in unreadable["n1"]
    assert set(got["node_id"].astype(str)) == {"n0"}


def test_a_part_of_runs_of_a_few_rows_has_no_directory(tmp_path: Path) -> None:
    """A switch tray's two chips report the same ports, their rows interleaved by time: a run a row, a directory as
    large as the part; it is left out and the part read as one written before directories. A part of one scrape (a
    run a link, a few hundred) keeps its small directory."""
    rows = [{"timestamp": START + timedelta(minutes=5 * i), "node_id": "t1", "gpu": None, "link_type": "nvswitch",
             "link": port, "nvswitch": chip, "replay": float(i)}
            for i in range(48) for port in range(16) for chip in ("0", "1")]
    source = tmp_path / "tray.parquet"
    pd.DataFrame(rows).to_parquet(source, index=False)
    store = TelemetryStore(tmp_path / "store")
    store.ingest([source])
    part = next((store.root / "link_samples").rglob("*.parquet"))
    assert directory.KEY not in (pq.read_metadata(part).metadata or {})
    got = store.link_history(["t1"], start=START, end=START + timedelta(hours=4), columns=["replay"],
                             select=lambda ids: (ids["nvswitch"].astype(str) == "1").to_numpy(bool))
    assert len(got) == 48 * 16 and set(got["nvswitch"].astype(str)) == {"1"}
    one = tmp_path / "one.parquet"
    pd.DataFrame([{"timestamp": START, "node_id": "n9", "gpu": g, "link_type": "nvlink", "link": link,
                   "replay": 1.0} for g in range(8) for link in range(18)]).to_parquet(one, index=False)
    store.ingest([one])
    part = next((store.root / "link_samples" / "node=n9").rglob("*.parquet"))
    assert directory.KEY in (pq.read_metadata(part).metadata or {})
