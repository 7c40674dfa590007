"""A wide read's conversion: the Arrow copy let go of as the pandas copy is made, the heap trimmed now and then."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from diagnostics.store import memory, parts


def test_the_heap_is_trimmed_once_enough_is_freed(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    monkeypatch.setattr(memory, "_TRIM", calls.append)
    trimmer = memory.Trimmer(every=100)
    trimmer.freed(60)
    assert calls == []
    trimmer.freed(60)
    assert calls == [0] and trimmer.trims == 1
    trimmer.freed(99)
    assert trimmer.trims == 1  # the count starts again after a trim


def test_a_c_library_without_malloc_trim_trims_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "_TRIM", None)
    trimmer = memory.Trimmer(every=1)
    trimmer.freed(10)
    assert trimmer.trims == 0


def test_rows_are_handed_over_to_their_frame_in_order() -> None:
    table = pa.table({"x": pa.array([1.0, 2.0, 3.0]), "gpu": pa.array([0, None, 2], pa.int16())})
    rows = parts.Rows(table, np.array([2, 0, 1]))
    frame = rows.frame()
    assert frame["x"].tolist() == [3.0, 1.0, 2.0]
    assert frame["gpu"].tolist()[:2] == [2, 0] and frame["gpu"].isna().tolist() == [False, False, True]
    assert rows.table.num_rows == 0 and rows.table.column_names == ["x", "gpu"]  # nothing of the rows held
