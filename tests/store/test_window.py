"""Windowed reads: only the files, row groups and rows a window needs are read, in the layout the rates read."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlite_utils

from diagnostics.errors import InputError
from diagnostics.store import directory, parts
from diagnostics.store.catalog import footer_info
from diagnostics.store.telemetry import TelemetryStore
from diagnostics.tables import LINK_SAMPLES

START = pd.Timestamp("2026-03-01T00:00:00Z")
STEP = pd.Timedelta(minutes=5)


def fleet_file(path: Path, nodes: int = 3, hours: int = 48, links: int = 4) -> pd.DataFrame:
    """Link samples of a few nodes, time by time (as a scrape comes), written as a normalized Parquet table."""
    times = pd.date_range(START, periods=hours * 12, freq=STEP)
    rows = [{"timestamp": t, "node_id": f"n{n}", "gpu": g, "link_type": "nvlink", "link": link,
             "replay": float(i * (n + 1)), "crc_flit": float(i)}
            for i, t in enumerate(times) for n in range(nodes) for g in range(2) for link in range(links)]
    frame = pd.DataFrame(rows)
    frame.to_parquet(path, index=False)
    return frame


class Spy:
    """Records every row group read from a part, with the part's file."""

    def __init__(self) -> None:
        self.read: list[tuple[str, int]] = []
        self.opened: list[str] = []
        self.files: dict[int, str] = {}  # an open file's path, by the file (reader threads open files at once)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        real, real_file = pq.ParquetFile, pa.OSFile
        spy = self

        def opened(path: Any, *args: Any, **kwargs: Any) -> Any:  # a part is opened as a local file first
            file = real_file(path, *args, **kwargs)
            spy.files[id(file)] = str(path)
            return file

        class Watched(real):  # type: ignore[misc,valid-type]
            def __init__(self, source: Any, *args: Any, **kwargs: Any) -> None:
                self.spied = str(source) if isinstance(source, str | Path) else spy.files[id(source)]
                spy.opened.append(self.spied)
                super().__init__(source, *args, **kwargs)

            def read_row_groups(self, row_groups: Any, *args: Any, **kwargs: Any) -> pa.Table:
                spy.read.extend((self.spied, int(g)) for g in row_groups)
                return super().read_row_groups(row_groups, *args, **kwargs)

        monkeypatch.setattr(parts.pq, "ParquetFile", Watched)
        monkeypatch.setattr(parts.pa, "OSFile", opened)


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> TelemetryStore:
    monkeypatch.setattr(parts, "MIN_GROUP_ROWS", 64)  # row groups of an hour for these few links
    source = tmp_path / "links.parquet"
    fleet_file(source)
    store = TelemetryStore(tmp_path / "store")
    assert [f.status for f in store.ingest([source]).files] == ["ingested"]
    return store


def test_a_window_reads_only_its_nodes_row_groups_and_rows(store: TelemetryStore,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    spy = Spy()
    spy.install(monkeypatch)
    end = datetime(2026, 3, 2, 6, 0, tzinfo=UTC)
    got = store.read_window(end=end, span=timedelta(hours=2), nodes=["n1"])
    links = got.tables["link_samples"]
    t = links["timestamp"]
    assert set(links["node_id"].astype(str)) == {"n1"}
    assert t.min() == pd.Timestamp(end) - timedelta(hours=2) + STEP and t.max() == pd.Timestamp(end)
    assert len(links) == 8 * 24  # 8 links, 24 readings in (04:00, 06:00]
    assert all("node=n1" in f for f in spy.opened) and len(spy.opened) == 1  # one node, one day
    for path, group in spy.read:  # every row group read overlaps the window
        stats = pq.ParquetFile(path).metadata.row_group(group).column(0).statistics
        assert pd.Timestamp(stats.max) > pd.Timestamp(end) - timedelta(hours=2)
        assert pd.Timestamp(stats.min) <= pd.Timestamp(end)
    groups = pq.ParquetFile(spy.opened[0]).metadata.num_row_groups
    assert got.stats.row_groups == len(spy.read) < groups
    assert got.stats.rows_scanned < 8 * 288 and got.stats.rows == len(links)


def test_window_rows_are_link_by_link_in_time_order(store: TelemetryStore) -> None:
    links = store.window(end=None, span=timedelta(hours=30), nodes=None)["link_samples"]  # crosses midnight
    keys = links[["node_id", "gpu", "link"]].astype(str).agg("/".join, axis=1)
    runs = keys.ne(keys.shift()).cumsum()
    assert runs.nunique() == keys.nunique() == 3 * 8  # each link's rows together, each node's together
    assert list(dict.fromkeys(links["node_id"].astype(str))) == ["n0", "n1", "n2"]
    t = links["timestamp"].array.asi8
    same = (runs.to_numpy()[1:] == runs.to_numpy()[:-1])
    assert (t[1:][same] > t[:-1][same]).all()
    expected = links.sort_values(["node_id", "gpu", "link_type", "link", "lane", "timestamp"], kind="stable")
    assert (expected.index == links.index).all()


def test_a_catalog_that_foresees_too_few_rows_reads_the_same_window(store: TelemetryStore,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The frame's columns are sized by the catalog's row counts; where they fall short (a catalog out of step with
    its files), the rows that did not fit come after the others, in the same order: the same frame."""
    whole = store.window(end=None, span=timedelta(hours=30), nodes=None)["link_samples"]
    monkeypatch.setattr(parts, "_most_rows", lambda group, start, end: 100)
    short = store.window(end=None, span=timedelta(hours=30), nodes=None)["link_samples"]
    assert len(whole) > 3 * 100
    pd.testing.assert_frame_equal(short, whole)


def test_the_newest_reading_comes_from_the_catalog_without_opening_a_file(store: TelemetryStore,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    spy = Spy()
    spy.install(monkeypatch)
    assert store.newest() == START + 48 * 12 * STEP - STEP
    assert spy.opened == []
    got = store.read_window(end=None, span=timedelta(hours=1))
    assert got.end == store.newest() and got.tables["link_samples"]["timestamp"].max() == pd.Timestamp(got.end)


def test_a_window_asks_the_catalog_once_for_each_nodes_newest_and_oldest_reading(store: TelemetryStore) -> None:
    """Where each node's readings end and start (what a window says of a node quiet in it, or read before them)
    comes from one catalog query per read, not one for each bound."""
    asked: list[str] = []
    store.db.conn.set_trace_callback(asked.append)
    try:
        got = store.read_window(end=None, span=timedelta(hours=1), nodes=["n0", "n2"])
    finally:
        store.db.conn.set_trace_callback(None)
    per_node = [q for q in asked if "GROUP BY key" in q and ("max(t_max)" in q or "min(t_min)" in q)]
    assert len(per_node) == 1
    assert set(got.newest) == set(got.oldest) == {"n0", "n2"}
    assert all(got.oldest[n] == START and got.newest[n] == store.newest([n]) for n in ("n0", "n2"))


def test_a_window_holds_only_the_columns_its_readings_fill(store: TelemetryStore) -> None:
    links = store.window(end=None, span=timedelta(hours=1))["link_samples"]
    assert {"replay", "crc_flit", "timestamp", "node_id", "gpu", "link"} <= set(links.columns)
    assert "symbol_ber" not in links.columns and "aer_fatal" not in links.columns
    assert str(links["gpu"].dtype) == "Int16" and str(links["timestamp"].dtype) == "datetime64[ns, UTC]"



def test_a_part_holds_the_columns_its_rows_fill_with_statistics_for_the_time_alone(store: TelemetryStore) -> None:
    """A read parses every part's footer: the schema's empty columns and their statistics are not written, and the
    catalog rebuilt from the footers finds the same hours and columns."""
    part = next((store.root / "link_samples").rglob("*.parquet"))
    meta = pq.read_metadata(part)
    written = {meta.schema.column(i).name for i in range(meta.num_columns)}
    assert written == {"timestamp", "node_id", "gpu", "link_type", "link", "replay", "crc_flit", "source"}
    stats = {meta.schema.column(i).name: meta.row_group(0).column(i).statistics for i in range(meta.num_columns)}
    assert stats["timestamp"] is not None and stats["timestamp"].has_min_max
    assert all(v is None for k, v in stats.items() if k != "timestamp")
    info = footer_info(part)
    listed = next(p for p in store._catalog.parts("link_samples", None, None, None) if p.path == part)
    assert info.groups == listed.groups and set(info.columns) == set(listed.columns) == written


def test_a_part_written_with_every_column_reads_as_a_slim_one(store: TelemetryStore) -> None:
    """Parts of an earlier writer hold every column of the schema, empty ones as nulls, with statistics: a store
    holding both reads the same window."""
    slim = store.window(end=None, span=timedelta(hours=30), nodes=None)["link_samples"]
    schema = parts.arrow_schema(LINK_SAMPLES)
    for part in (store.root / "link_samples").rglob("*.parquet"):
        if "node=n1" not in str(part):
            continue
        file = pq.ParquetFile(part)
        groups = [file.read_row_group(i) for i in range(file.metadata.num_row_groups)]
        with pq.ParquetWriter(part, schema) as writer:
            for group in groups:
                full = [group.column(n).cast(f.type) if n in group.column_names else pa.nulls(group.num_rows, f.type)
                        for n, f in zip(schema.names, schema, strict=True)]
                writer.write_table(pa.Table.from_arrays(full, schema=schema), row_group_size=group.num_rows)
        assert pq.read_metadata(part).num_columns == len(schema)
    pd.testing.assert_frame_equal(store.window(end=None, span=timedelta(hours=30), nodes=None)["link_samples"], slim)

def _choose_two_links(seen: list[int]) -> Callable[[pd.DataFrame], np.ndarray]:
    def choose(identities: pd.DataFrame) -> np.ndarray:
        seen.append(len(identities))
        return ((identities["node_id"].astype(str) == "n2") & (identities["gpu"] == 1)
                & identities["link"].isin([0, 3])).to_numpy(bool)
    return choose


def _without_directories(store: TelemetryStore) -> None:
    """The store's parts as a writer before directories left them: the same row groups, no directory."""
    for part in (store.root / "link_samples").rglob("*.parquet"):
        file = pq.ParquetFile(part)
        assert directory.KEY in (file.metadata.metadata or {})
        groups = [file.read_row_group(i).replace_schema_metadata(None) for i in range(file.metadata.num_row_groups)]
        with pq.ParquetWriter(part, groups[0].schema) as writer:
            for group in groups:
                writer.write_table(group, row_group_size=group.num_rows)
        assert directory.KEY not in (pq.read_metadata(part).metadata or {})


@pytest.mark.parametrize("listed", [True, False], ids=["directory", "before-directories"])
def test_a_history_reads_the_links_a_choice_keeps_whole_with_its_columns(store: TelemetryStore, listed: bool,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A job's history: every reading (over two days' files) of each link whose identity the choice keeps, in the
    order and with the values an unchosen read gives them, only the columns asked for (and the identity); the
    choice sees each distinct identity once. Through the parts' directories, only the row groups that hold a chosen
    link are decoded, once; a part written before directories has its identities read first, then its values
    where a link is kept."""
    if not listed:
        _without_directories(store)
    start, end = START + timedelta(hours=20), START + timedelta(hours=30)  # crosses midnight
    whole = store.link_history(["n0", "n2"], start=start, end=end)
    seen: list[int] = []
    spy = Spy()
    spy.install(monkeypatch)
    got = store.link_history(["n0", "n2"], start=start, end=end, columns=["replay"], select=_choose_two_links(seen))
    reads = pd.Series([path for path, _ in spy.read]).str.extract(r"node=(n\d)")[0].value_counts()
    if listed:
        assert set(reads.index) == {"n2"} and len(spy.read) == len(set(spy.read))
    else:
        assert reads["n2"] == 2 * reads["n0"]  # n2's row groups twice (identities, then values), n0's once
    assert seen == [2 * 2 * 4]  # two nodes' links, each identity once
    assert "crc_flit" not in got.columns and {"replay", "timestamp", "node_id", "gpu", "link"} <= set(got.columns)
    kept = whole[(whole["node_id"].astype(str) == "n2") & (whole["gpu"] == 1) & whole["link"].isin([0, 3])]
    assert len(got) == 2 * (10 * 12 + 1)  # both links' every reading in [20:00, 06:00]
    assert (got["timestamp"].to_numpy() == kept["timestamp"].to_numpy()).all()
    assert (got["replay"].to_numpy() == kept["replay"].to_numpy()).all()
    assert got["link"].tolist() == kept["link"].tolist()
    assert got["node_id"].astype(str).tolist() == kept["node_id"].astype(str).tolist()


def test_a_history_through_directories_gives_the_rows_a_read_of_every_identity_gives(tmp_path: Path) -> None:
    """The same choice over a store with directories and over the same store without: the same frame, whatever
    the links' identities (a link whose peer changes within an hour, links without a lane or a peer)."""
    rows = []
    for i, t in enumerate(pd.date_range(START, periods=36, freq=STEP)):
        for gpu in range(2):
            for link in range(3):
                peer = f"GPU {1 - gpu}" if link else ("NVSwitch 0" if i < 20 else "NVSwitch 1")
                rows.append({"timestamp": t, "node_id": "n0", "gpu": gpu, "link_type": "nvlink", "link": link,
                             "peer": peer, "replay": float(i * (link + 1))})
            rows.append({"timestamp": t, "node_id": "n0", "gpu": gpu, "link_type": "pcie", "replay": float(i)})
    source = tmp_path / "links.parquet"
    pd.DataFrame(rows).to_parquet(source, index=False)
    asked = []
    for name in ("with", "without"):
        store = TelemetryStore(tmp_path / name)
        store.ingest([source])
        if name == "without":
            _without_directories(store)

        def choose(identities: pd.DataFrame) -> np.ndarray:
            return ((identities["peer"].astype("string") == "NVSwitch 1") | identities["link"].isna()).fillna(
                False).to_numpy(bool)

        asked.append(store.link_history(["n0"], start=START + timedelta(minutes=30), end=START + timedelta(hours=3),
                                        columns=["replay"], select=choose))
    assert len(asked[0]) == 2 * 16 + 2 * 30  # each GPU's link 0 once its peer is NVSwitch 1; PCIe from 00:30 on
    pd.testing.assert_frame_equal(asked[0], asked[1])


def test_a_history_over_a_damaged_earlier_day_leaves_that_node_out_and_says_why(store: TelemetryStore) -> None:
    """A job's history reaching back into a day whose part of one node was cut after it was written: the other
    nodes' rows are read, the node is left out and its part named, as a window's read does; asked without a place
    to say it, the read fails with the same words."""
    part = next((store.root / "link_samples" / "node=n1").glob("day=2026-03-01/*.parquet"))
    part.write_bytes(part.read_bytes()[:500])
    start, end = START + timedelta(hours=20), START + timedelta(hours=30)
    assert store.read_window(end=end, span=timedelta(hours=2), nodes=None).stats.unreadable == {}  # day 2 only
    unreadable: dict[str, str] = {}
    got = store.link_history(["n0", "n1"], start=start, end=end, unreadable=unreadable)
    assert set(got["node_id"].astype(str)) == {"n0"} and len(got) == 8 * (10 * 12 + 1)
    assert set(unreadable) == {"n1"} and str(part) in unreadable["n1"] and "cannot be read" in unreadable["n1"]
    with pytest.raises(InputError) as caught:
        store.link_history(["n0", "n1"], start=start, end=end)
    assert str(caught.value) == unreadable["n1"]


def test_a_store_written_before_the_catalog_is_read_by_window(tmp_path: Path) -> None:
    root = tmp_path / "old"
    frame = fleet_file(tmp_path / "links.parquet", nodes=1, hours=30)
    frame["timestamp"] = pd.to_datetime(frame["timestamp"], utc=True)
    for day, part in frame.groupby(frame["timestamp"].dt.strftime("%Y-%m-%d")):
        folder = root / "link_samples" / "node=n0" / f"day={day}"
        folder.mkdir(parents=True)
        pq.write_table(pa.Table.from_pandas(part.reset_index(drop=True), preserve_index=False),
                       folder / "0123456789abcdef0123.parquet")  # as the store wrote them: one group, time-major
    sqlite_utils.Database(root / "fabricbot.db")["nodes"].insert({"node_id": "n0", "first_seen": "x",
                                                                  "last_seen": "x"}, pk="node_id")
    store = TelemetryStore(root)
    got = store.read_window(end=None, span=timedelta(hours=2), nodes=["n0"])
    links = got.tables["link_samples"]
    assert got.end == START + 30 * 12 * STEP - STEP and len(links) == 8 * 24
    assert got.stats.files == 1  # the first day's part lies outside the window
    t = links["timestamp"].array.asi8.reshape(8, 24)
    assert (np.diff(t, axis=1) > 0).all() and links["replay"].iloc[23] > links["replay"].iloc[0]


def test_step_samples_of_the_jobs_on_the_nodes_within_the_span(tmp_path: Path) -> None:
    steps = tmp_path / "steps.csv"
    lines = ["timestamp,job_id,node_ids,step,step_time_ms"]
    for h in range(10):
        lines.append(f"2026-03-01T{h:02d}:00:00Z,j1,\"n1,n2\",{h},{200 + h}")
        lines.append(f"2026-03-01T{h:02d}:00:00Z,j2,n3,{h},300")
    steps.write_text("\n".join(lines) + "\n")
    store = TelemetryStore(tmp_path / "s")
    store.ingest([steps])
    end = datetime(2026, 3, 1, 9, tzinfo=UTC)
    got = store.window(end=end, span=timedelta(hours=3), nodes=["n1"])["step_samples"]
    assert set(got["job_id"].astype(str)) == {"j1"} and len(got) == 3
    assert store.window(end=end, span=timedelta(hours=3), nodes=["n9"])["step_samples"].empty
    longer = store.read_window(end=end, span=timedelta(hours=3), nodes=["n1"], steps=timedelta(hours=8))
    assert len(longer.tables["step_samples"]) == 8  # a job's slowdown is judged on more steps than the rules' span
    with_peers = store.read_window(end=end, span=timedelta(hours=3), nodes=["n1"], peers=True)
    assert with_peers.tables["nodes"]["node_id"].tolist() == ["n1", "n2"]


@pytest.mark.parametrize("damage", ["cut", "garbled", "deleted"])
def test_a_damaged_part_is_named_in_the_error(store: TelemetryStore, damage: str) -> None:
    """A part cut short, overwritten or deleted after the catalog listed it: a window leaves its node out and says
    why, naming that file and what became of it (never a bare Arrow message), and reads the other nodes; a read of
    the node's own samples fails with the same words."""
    part = next(p for p in (store.root / "link_samples").rglob("*.parquet") if "node=n1" in str(p))
    data = part.read_bytes()
    if damage == "deleted":
        part.unlink()
    else:
        part.write_bytes(data[: len(data) // 2] if damage == "cut" else data[:4] + bytes(len(data) - 8) + data[-4:])
    got = store.read_window(end=None, span=timedelta(hours=30), nodes=None)
    said = got.stats.unreadable["n1"]
    assert str(part) in said
    assert ("is missing: it was deleted" in said and "Errno" not in said) if damage == "deleted" else \
        "cannot be read" in said
    assert set(got.tables["link_samples"]["node_id"].astype(str)) == {"n0", "n2"}
    assert set(got.stats.unreadable) == {"n1"}
    with pytest.raises(InputError) as caught:
        store.link_samples("n1")
    assert str(caught.value) == said


def test_a_node_whose_parts_fill_other_columns_reads_each_row_with_its_own_values(tmp_path: Path,
                                                                                  monkeypatch: pytest.MonkeyPatch
                                                                                  ) -> None:
    """Two files of one node, the later filling a counter the earlier lacks: in a window cut inside the earlier
    file's hours, each row keeps its own values, the earlier's rows the counter as nulls, link by link in time."""
    monkeypatch.setattr(parts, "MIN_GROUP_ROWS", 16)
    early = fleet_file(tmp_path / "early.parquet", nodes=1, hours=6, links=2)
    late = early.assign(timestamp=early["timestamp"] + pd.Timedelta(hours=6), recovery=3.0, crc_flit=np.nan)
    late.to_parquet(tmp_path / "late.parquet", index=False)
    store = TelemetryStore(tmp_path / "store")
    store.ingest([tmp_path / "early.parquet", tmp_path / "late.parquet"])
    end = START + pd.Timedelta(hours=9) - pd.Timedelta(minutes=1)  # the later file read whole, the earlier cut
    span = timedelta(hours=4, minutes=30)
    links = store.window(end=end.to_pydatetime(), span=span, nodes=None)["link_samples"]
    both = pd.concat([early, late], ignore_index=True)
    both = both[(both["timestamp"] > end - span) & (both["timestamp"] <= end)]
    expected = both.sort_values(["gpu", "link", "timestamp"]).reset_index(drop=True)
    assert len(links) == len(expected) == 2 * 2 * 54
    assert links["timestamp"].tolist() == expected["timestamp"].tolist()
    assert links["gpu"].tolist() == expected["gpu"].tolist() and links["link"].tolist() == expected["link"].tolist()
    assert links["recovery"].fillna(-1).tolist() == expected["recovery"].fillna(-1).tolist()
    assert links["crc_flit"].fillna(-1).tolist() == expected["crc_flit"].fillna(-1).tolist()


def test_a_windows_categories_are_the_values_its_rows_hold(tmp_path: Path) -> None:
    """A part whose one row group reaches over the window with no row in it is read whole and all its rows left out:
    its values (another link type, peer and state) are no categories of the window's columns, nor are those of a
    history's links not chosen."""
    a = pd.DataFrame([{"timestamp": START + pd.Timedelta(minutes=m), "node_id": "n0", "gpu": 0, "link_type": "nvlink",
                       "link": 0, "peer": "GPU 1", "link_state": "up", "replay": float(m)} for m in range(0, 60, 5)])
    b = pd.DataFrame([{"timestamp": START + pd.Timedelta(minutes=m), "node_id": "n0", "gpu": 1, "link_type": "pcie",
                       "link": None, "peer": "NVSwitch 9", "link_state": "down", "replay": 1.0} for m in (2, 58)])
    a.to_parquet(tmp_path / "a.parquet", index=False)
    b.to_parquet(tmp_path / "b.parquet", index=False)
    store = TelemetryStore(tmp_path / "store")
    store.ingest([tmp_path / "a.parquet", tmp_path / "b.parquet"])
    end = (START + pd.Timedelta(minutes=30)).to_pydatetime()
    links = store.window(end=end, span=timedelta(minutes=20), nodes=None)["link_samples"]
    assert len(links) == 4
    for column, held in (("link_type", ["nvlink"]), ("peer", ["GPU 1"]), ("link_state", ["up"])):
        assert list(links[column].cat.categories) == held, column
    history = store.link_history(["n0"], start=START.to_pydatetime(), end=end,
                                 select=lambda rows: (rows["link_type"] == "pcie").to_numpy())
    assert list(history["link_type"].cat.categories) == ["pcie"] and len(history) == 1
