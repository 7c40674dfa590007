"""Times as the tables hold them: UTC, timezone-aware, and as int64 nanoseconds for array work."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pandas as pd

# A snapshot states counts over a window but no clock time: its readings are placed just after the epoch
# (`ingest.snapshot.snapshot_tables`), so a time before this one is no clock time.
CLOCKLESS_BEFORE = datetime(1971, 1, 1, tzinfo=UTC)


def utc(series: pd.Series) -> pd.Series:
    """A time column as UTC datetimes (nanoseconds); a value that is no time becomes NaT."""
    if str(series.dtype) == "datetime64[ns, UTC]":
        return series
    return pd.to_datetime(series, utc=True, errors="coerce", format="mixed").astype("datetime64[ns, UTC]")


def utc_ns(when: datetime | pd.Timestamp) -> int:
    """A time as UTC nanoseconds; a naive time is taken as UTC."""
    ts = pd.Timestamp(when)
    ts = ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")
    return int(ts.value)


def utc_datetime(value: int | np.integer | pd.Timestamp) -> datetime:
    """UTC nanoseconds (or a Timestamp) as an aware datetime; the nanoseconds a datetime cannot hold are dropped."""
    ts = pd.Timestamp(value, tz="UTC") if not isinstance(value, pd.Timestamp) else value
    return ts.to_pydatetime(warn=False)


def ns(series: pd.Series) -> np.ndarray:
    """UTC nanoseconds of a datetime column, whatever its unit."""
    as_utc = utc(series)
    if as_utc.dtype == "datetime64[ns, UTC]":
        return np.asarray(as_utc.array.asi8)
    return as_utc.to_numpy("datetime64[ns]").view(np.int64)


def clockless(moment: datetime | pd.Timestamp) -> bool:
    """Whether a time is no clock time (a snapshot's window, placed after the epoch)."""
    return utc_ns(moment) < utc_ns(CLOCKLESS_BEFORE)
