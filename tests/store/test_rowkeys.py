"""Rows' identities as codes: each distinct combination found once, whatever the columns' encoding or the runs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from diagnostics.store.rowkeys import distinct_rows, row_order


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


def test_rows_are_ordered_by_value_across_dictionaries_of_their_own_with_values_no_row_holds() -> None:
    """Each chunk's dictionary in an order of its own, one holding a value no row keeps, NA among the values and
    among the integers: rows come by each key's value (NA first), then time, as Python sorts the same rows."""
    kinds = [["pcie", "nvlink", None, "nvlink"], ["nvlink", "pcie", "pcie"]]
    unused = pa.DictionaryArray.from_arrays(pa.array([2, 0, None, 0], pa.int32()), pa.array(["pcie", "c2c", "nvlink"]))
    links = [[3, None, 1, 0], [2, 0, None]]
    times = [[5, 4, 3, 2], [1, 7, 6]]
    chunks = [unused, pa.array(kinds[1]).dictionary_encode()]
    table = pa.table({"link_type": pa.chunked_array(chunks),
                      "link": pa.chunked_array([pa.array(x, pa.int16()) for x in links]),
                      "timestamp": pa.chunked_array([pa.array(x, pa.timestamp("ns", tz="UTC")) for x in times])})
    rows = list(zip(["nvlink", "pcie", None, "pcie", *kinds[1]], [*links[0], *links[1]], [*times[0], *times[1]],
                    strict=True))
    order = row_order(table, ["gpu", "link_type", "link"])
    assert order is not None
    expected = sorted(range(len(rows)), key=lambda i: (rows[i][0] is not None, rows[i][0] or "",
                                                       rows[i][1] is not None, rows[i][1] or 0, rows[i][2]))
    assert order.tolist() == expected
    assert row_order(table.take(pa.array(np.array(expected))), ["link_type", "link"]) is None


def test_distinct_rows_read_columns_with_no_value_nulls_here_and_there_and_none_at_all_alike() -> None:
    """A column of nulls only (a PCIe link's NVSwitch, its dictionaries empty), one with some nulls, one with none
    and a boolean: each distinct combination found once, as Python tells the rows apart."""
    empty = pa.DictionaryArray.from_arrays(pa.array([None, None, None], pa.int32()), pa.array([], pa.string()))
    table = pa.table({"nvswitch": pa.chunked_array([empty, empty.slice(0, 2)]),
                      "link": pa.chunked_array([pa.array([1, None, 1], pa.int16()), pa.array([None, 1], pa.int16())]),
                      "gpu": pa.chunked_array([pa.array([3, 3, 3], pa.int16()), pa.array([3, 4], pa.int16())]),
                      "gpu_total": pa.chunked_array([pa.array([True, False, True]), pa.array([False, True])])})
    first, combination = distinct_rows(table, ["nvswitch", "link", "gpu", "gpu_total"])
    rows = list(zip(*(table.column(n).to_pylist() for n in table.column_names), strict=True))
    assert [rows[i] for i in first] == list(dict.fromkeys(rows))
    assert [rows[first[c]] for c in combination] == rows
