"""The tables' helpers: which rows hold a value, whatever the column's type."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from diagnostics.tables import rows_of

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
