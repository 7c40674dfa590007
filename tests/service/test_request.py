"""A request's window is said back in hours, as a person wrote it, when it is refused."""

from __future__ import annotations

from datetime import timedelta

import pytest

from diagnostics.errors import InputError
from diagnostics.service import Request


@pytest.mark.parametrize(("window", "said"), [(timedelta(hours=-1), "-1 h"), (timedelta(0), "0 h")])
def test_a_window_not_longer_than_zero_is_said_in_hours(window: timedelta, said: str) -> None:
    with pytest.raises(InputError) as refused:
        Request(window=window)
    assert f"'{said}'" in str(refused.value) and "day" not in str(refused.value)
