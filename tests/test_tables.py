"""The tables' helpers: which rows hold a value, whatever the column's type."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from diagnostics.tables import STEP_SAMPLES, as_text, rows_of, run_rows

VALUES = ["n1", None, "n2", "n1", "n10"]


@pytest.mark.parametrize("dtype", ["category", "string", "object"])
def test_rows_of_a_value_are_the_same_whatever_the_columns_type(dtype: str) -> None:
    column = pd.Series(VALUES, dtype=dtype)
    assert rows_of(column, "n1").tolist() == [True, False, False, True, False]
    assert rows_of(column, "n3").tolist() == [False] * 5
    assert rows_of(column, "n1").dtype == np.bool_


def test_a_categorical_of_numbers_is_compared_as_text() -> None:
    column = pd.Series([1, 2, 1], dtype="category")
    assert rows_of(column, "1").tolist() == [True, False, True]


def test_a_windows_benchmark_runs_are_its_nodes_undated_ones_and_those_inside_it() -> None:
    t0 = pd.Timestamp("2026-03-01T00:00:00Z")
    steps = STEP_SAMPLES.conform(pd.DataFrame({
        "timestamp": [pd.NaT, t0, t0 + pd.Timedelta(hours=2), pd.NaT, pd.NaT],
        "job_id": [None, None, None, None, "j1"], "node_ids": ["n1", "n1", "n1", "n2,n3", "n1"],
        "busbw_gbps": [232.0, 230.0, 231.0, 469.0, None], "step_time_ms": [None, None, None, None, 5.0]}))
    start, end = int(t0.value) - 1, int(t0.value) + 3_600_000_000_000
    assert run_rows(steps, ["n1"], start, end)["busbw_gbps"].tolist() == [232.0, 230.0]  # the job's row is no run
    assert run_rows(steps, ["n3"], None, None)["busbw_gbps"].tolist() == [469.0]
    assert run_rows(steps, None, None, None)["busbw_gbps"].tolist() == [232.0, 230.0, 231.0, 469.0]


@pytest.mark.parametrize("column", [
    pd.Series(pd.Categorical(["node-1", None, "node-2", "node-1"]), name="node_id"),
    pd.Series(pd.Categorical([3, 1, None, 3]), index=[5, 6, 7, 8]),
    pd.Series(pd.Categorical([None, None], categories=["unused"])),
    pd.Series(pd.Categorical([], categories=[])),
    pd.Series(["a", None, "b"], dtype=object),
], ids=["names", "numbers, another index", "none filled", "empty", "not categorical"])
def test_a_column_as_text_is_what_pandas_gives_row_by_row(column: pd.Series) -> None:
    pd.testing.assert_series_equal(as_text(column), column.astype("string"))
