"""Rows' identities as codes: each distinct combination found once, whatever the columns' encoding or the runs."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from diagnostics.store.rowkeys import distinct_rows


def test_distinct_rows_tell_values_apart_across_dictionaries_nulls_and_wide_integers() -> None:
    """Each distinct combination found once, its first row named, whatever the column's encoding: chunks with
    dictionaries of their own, NA as a value of its own, integers too far apart to pack by offset."""
    names = pa.chunked_array([pa.array(["a", "b", "a"]).dictionary_encode(),
                              pa.array(["b", None, "c"]).dictionary_encode()])
    gpus = pa.chunked_array([pa.array([0, 1, 0], pa.int16()), pa.array([1, 1, None], pa.int16())])
    wide = pa.chunked_array([pa.array([2**62, -(2**62), -(2**62), -(2**62), 2**62, 2**62], pa.int64())])
    table = pa.table({"node_id": names, "gpu": gpus, "stamp": wide})
    first, combination = distinct_rows(table, ["stamp", "node_id", "gpu"])
    rows = list(zip(names.to_pylist(), gpus.to_pylist(), wide.to_pylist(), strict=True))
    expected: dict[tuple[Any, ...], int] = {}
    for i, row in enumerate(rows):
        expected.setdefault(row, i)
    assert sorted(first.tolist()) == sorted(expected.values())
    assert [expected[rows[first[c]]] for c in combination] == [expected[r] for r in rows]



def test_distinct_rows_are_the_same_whether_equal_rows_come_in_runs_or_apart() -> None:
    """Parts hold each link's hour as a run of equal identities: a run is one combination, and a combination that
    comes back after another run is the same one, its first row the earliest."""
    nodes = ["a", "a", "a", "b", "b", "a", "a", "a", "c", "b"]
    gpus = [0, 0, 0, 0, 0, 0, 0, 1, 1, 0]
    table = pa.table({"node_id": pa.array(nodes).dictionary_encode(), "gpu": pa.array(gpus, pa.int16())})
    first, combination = distinct_rows(table, ["node_id", "gpu"])
    rows = list(zip(nodes, gpus, strict=True))
    assert [rows[i] for i in first] == [("a", 0), ("b", 0), ("a", 1), ("c", 1)]
    assert first.tolist() == [0, 3, 7, 8]
    assert [rows[first[c]] for c in combination] == rows
