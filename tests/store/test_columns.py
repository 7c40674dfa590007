"""Rows written into pandas columns as each key's table arrives: the normalized dtypes, each table's order, the
tables' order whichever thread reads first, and categories that agree across tables' dictionaries."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
import pyarrow as pa

from diagnostics.store.columns import FrameBuilder, frame_of, frame_of_all

SCHEMA = pa.schema([
    ("timestamp", pa.timestamp("ns", tz="UTC")), ("node_id", pa.dictionary(pa.int32(), pa.string())),
    ("gpu", pa.int16()), ("gpu_total", pa.bool_()), ("replay", pa.float64()), ("gpu_uuid", pa.string()),
])


def _table(node: str, gpus: list[int | None], replays: list[float | None], t0: int = 0) -> pa.Table:
    n = len(gpus)
    return pa.table({
        "timestamp": pa.array([t0 + i for i in range(n)], pa.timestamp("ns", tz="UTC")),
        "node_id": pa.array([node] * n).dictionary_encode(),
        "gpu": pa.array(gpus, pa.int16()),
        "gpu_total": pa.array([g is None for g in gpus]),
        "replay": pa.array(replays, pa.float64()),
        "gpu_uuid": pa.array([None if g is None else f"GPU-{node}-{g}" for g in gpus]),
    }, schema=SCHEMA)


def test_a_table_becomes_the_normalized_dtypes_in_its_order() -> None:
    frame = frame_of(_table("n1", [0, None, 2], [1.0, None, 3.0]), np.array([2, 0, 1]))
    assert [str(frame[c].dtype) for c in frame.columns] == [
        "datetime64[ns, UTC]", "category", "Int16", "boolean", "float64", "string"]
    assert frame["replay"].tolist()[:2] == [3.0, 1.0] and np.isnan(frame["replay"].iloc[2])
    assert frame["gpu"].tolist()[:2] == [2, 0] and frame["gpu"].isna().tolist() == [False, False, True]
    assert frame["gpu_total"].tolist() == [False, False, True]
    assert frame["gpu_uuid"].tolist()[:2] == ["GPU-n1-2", "GPU-n1-0"]
    assert frame["timestamp"].astype("int64").tolist() == [2, 0, 1]


def test_tables_with_dictionaries_of_their_own_share_one_sorted_category() -> None:
    frame = frame_of_all([(_table("node-b", [0], [1.0]), None), (_table("node-a", [1, 2], [2.0, 3.0]), None)],
                         SCHEMA, capacity=3)
    assert frame["node_id"].tolist() == ["node-b", "node-a", "node-a"]
    assert list(frame["node_id"].cat.categories) == ["node-a", "node-b"]


def test_the_columns_grow_when_more_rows_come_than_were_foreseen() -> None:
    builder = FrameBuilder(SCHEMA, capacity=1)
    for i in range(5):
        builder.add(_table(f"n{i}", [i, None], [float(i), None]))
    frame = builder.frame()
    assert len(frame) == 10 and frame["gpu"].dropna().tolist() == [0, 1, 2, 3, 4]
    assert frame["node_id"].tolist()[::2] == ["n0", "n1", "n2", "n3", "n4"]


def test_nothing_added_is_an_empty_frame_of_the_schema() -> None:
    frame = FrameBuilder(SCHEMA, capacity=0).frame()
    assert len(frame) == 0 and list(frame.columns) == SCHEMA.names and str(frame["gpu"].dtype) == "Int16"


def test_threads_fill_in_the_order_of_their_turns_whoever_reads_first() -> None:
    tables = [_table(f"n{i}", list(range(i + 1)), [float(i)] * (i + 1)) for i in range(12)]
    builder = FrameBuilder(SCHEMA, capacity=sum(t.num_rows for t in tables))
    late = threading.Event()

    def fill(turn: int) -> None:
        if turn == 0:
            late.wait(1)  # the first turn's read is the slowest: the others wait for its claim, not for its rows
        at = builder.claim(tables[turn].num_rows, turn=turn)
        builder.put(at, tables[turn])

    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = [pool.submit(fill, turn) for turn in range(len(tables))]
        late.set()
        for f in futures:
            f.result()
    expected = pd.concat([frame_of(t) for t in tables], ignore_index=True)
    expected["node_id"] = expected["node_id"].astype(pd.CategoricalDtype(sorted(f"n{i}" for i in range(12))))
    pd.testing.assert_frame_equal(builder.frame(), expected)


def test_rows_beyond_those_foreseen_come_after_the_others_in_turn_order() -> None:
    """A catalog that foresaw too few rows: the claim that does not fit, and every later one, get no place (so no
    later table jumps ahead into room left over) and are added once the threads are done."""
    tables = [_table(f"n{i}", [0, 1], [float(i), None]) for i in range(4)]
    builder = FrameBuilder(SCHEMA, capacity=5)
    places = [builder.claim(2, turn=0), builder.claim(2, turn=1), builder.claim(2, turn=2), builder.claim(1, turn=3)]
    assert places == [0, 2, None, None]
    builder.put(0, tables[0])
    builder.put(2, tables[1])
    builder.add(tables[2])
    builder.add(tables[3])
    assert builder.frame()["node_id"].tolist() == ["n0", "n0", "n1", "n1", "n2", "n2", "n3", "n3"]


def test_an_empty_table_put_after_the_next_one_loses_none_of_its_rows() -> None:
    """A node whose rows the window's bound filtered away claims no rows: its place is the next table's, and its
    put, whenever its thread gets to it, must not overwrite what is written there (texts are kept by place)."""
    full = _table("n1", [0, 1], [1.0, 2.0])
    builder = FrameBuilder(SCHEMA, capacity=2)
    empty_at, full_at = builder.claim(0, turn=0), builder.claim(2, turn=1)
    assert empty_at == full_at == 0
    builder.put(full_at, full)
    builder.put(empty_at, full.slice(0, 0))
    assert builder.frame()["gpu_uuid"].tolist() == ["GPU-n1-0", "GPU-n1-1"]


def test_a_table_that_lacks_some_columns_writes_them_as_nulls() -> None:
    """A part fills about half a window's columns: those it leaves out are nulls of their own dtype, whatever the
    other tables hold there."""
    whole = _table("n1", [0, 1], [1.0, 2.0])
    part = _table("n2", [None, 3], [None, 4.0]).select(["timestamp", "node_id", "gpu"])
    frame = frame_of_all([(whole, None), (part, None)], SCHEMA, capacity=4)
    assert frame["gpu"].tolist()[:2] == [0, 1] and frame["gpu"].isna().tolist() == [False, False, True, False]
    assert frame["replay"].tolist()[:2] == [1.0, 2.0] and frame["replay"].iloc[2:].isna().all()
    assert frame["gpu_total"].isna().tolist() == [False, False, True, True]
    assert frame["gpu_uuid"].tolist()[:2] == ["GPU-n1-0", "GPU-n1-1"] and frame["gpu_uuid"].iloc[2:].isna().all()
    assert str(frame["gpu_total"].dtype) == "boolean" and str(frame["gpu_uuid"].dtype) == "string"


def test_an_order_may_keep_some_rows_only() -> None:
    """A key's rows outside the window are left out as they are ordered: only the rows the order names are written,
    nulls and values alike, and the next table follows them."""
    first = _table("n1", [0, None, 2, 3], [1.0, None, 3.0, 4.0])
    first = first.set_column(0, "timestamp", pa.array([10, None, 30, 40], pa.timestamp("ns", tz="UTC")))
    frame = frame_of_all([(first, np.array([3, 1])), (_table("n2", [5], [6.0]), None)], SCHEMA, capacity=4)
    assert len(frame) == 3
    assert frame["gpu"].tolist()[0] == 3 and frame["gpu"].isna().tolist() == [False, True, False]
    assert frame["gpu_total"].tolist() == [False, True, False]
    assert frame["timestamp"].isna().tolist() == [False, True, False]
    assert frame["timestamp"].iloc[0].value == 40 and frame["node_id"].tolist() == ["n1", "n1", "n2"]


def test_a_dictionary_with_null_rows_and_sliced_chunks_reads_each_row_as_its_value() -> None:
    """Chunks that start inside their buffers (a slice) and nulls among their indices: the values are read from the
    buffers at the chunk's offset."""
    nodes = pa.array(["a", None, "b", "a", None, "c"]).dictionary_encode()
    gpus = pa.array([1, None, 3, 4, None, 6], pa.int16())
    table = pa.table({"node_id": pa.chunked_array([nodes.slice(1, 3), nodes.slice(4, 2)]),
                      "gpu": pa.chunked_array([gpus.slice(1, 3), gpus.slice(4, 2)])})
    frame = frame_of(table)
    assert frame["node_id"].astype(object).where(frame["node_id"].notna(), None).tolist() == \
        [None, "b", "a", None, "c"]
    assert frame["gpu"].astype(object).where(frame["gpu"].notna(), None).tolist() == [None, 3, 4, None, 6]


def test_a_category_is_its_values_sorted_whether_they_came_in_order_or_not() -> None:
    """Values first seen in order (a fleet's nodes, key by key) and out of order, with nulls and a dictionary's
    value no kept row holds: each row reads as its value, the categories are those held, sorted."""
    for rows in (["a", "a", "b", None, "c"], ["c", None, "a", "b", "a"], ["b", "b"], [None, None]):
        column = pa.chunked_array([pa.array(part, pa.string()).dictionary_encode() for part in (rows[:2], rows[2:])])
        category = frame_of(pa.table({"node_id": column}))["node_id"]
        values = list(category.cat.categories)
        assert values == sorted({r for r in rows if r is not None})
        assert [None if c < 0 else values[c] for c in category.cat.codes.tolist()] == rows
    unused = pa.DictionaryArray.from_arrays(pa.array([1, None, 1], pa.int32()), pa.array(["a", "b"]))
    frame = frame_of(pa.table({"node_id": unused}), np.array([0, 2]))
    assert list(frame["node_id"].cat.categories) == ["b"] and frame["node_id"].tolist() == ["b", "b"]
    first = frame_of(pa.table({"node_id": pa.array(["a", "b", "b"]).dictionary_encode()}))
    assert list(first["node_id"].cat.categories) == ["a", "b"] and first["node_id"].cat.codes.tolist() == [0, 1, 1]


def test_a_value_held_by_a_single_row_among_many_is_a_category_and_one_no_row_holds_is_not() -> None:
    """Which values rows hold is first looked for in some of the rows: a value only rows between them hold is found
    all the same, and a dictionary's value that no row kept is still left out."""
    rows = ["a"] * 300 + ["c"] + ["a"] * 300
    column = pa.DictionaryArray.from_arrays(pa.array([0 if r == "a" else 2 for r in rows], pa.int32()),
                                            pa.array(["a", "b", "c"]))
    for order in (None, np.arange(len(rows))[::-1]):
        category = frame_of(pa.table({"node_id": column}), order)["node_id"]
        assert list(category.cat.categories) == ["a", "c"]
        assert category.tolist() == (rows if order is None else rows[::-1])
    dropped = frame_of(pa.table({"node_id": column}), np.arange(300))["node_id"]
    assert list(dropped.cat.categories) == ["a"] and set(dropped.tolist()) == {"a"}
