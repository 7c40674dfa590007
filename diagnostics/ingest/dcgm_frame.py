"""Turn the dcgm parser's compact sample arrays into normalized frames (one row per time and link)."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .. import format as fmt
from ..config.recovery import load_recovery
from ..enums import EventKind
from ..tables import GPUS, LINK_SAMPLES, TABLES, TableSchema
from .base import IngestWarning

if TYPE_CHECKING:
    from .dcgm import DcgmParser

from .dcgm_lines import NAT_MS


def _times(ms: np.ndarray) -> Any:
    stamps = np.where(ms == NAT_MS, np.datetime64("NaT", "ms"), ms.astype("datetime64[ms]")).astype("datetime64[ns]")
    return pd.DatetimeIndex(stamps).tz_localize("UTC")


@cache
def _missing_one(dtype: str) -> Any:
    """One missing value of `dtype` (a categorical with no categories, <NA>, NaT, NaN), built once."""
    if dtype == "float64":
        return np.full(1, np.nan)
    if dtype.startswith("Int"):
        return pd.arrays.IntegerArray(np.zeros(1, dtype=dtype.lower()), np.ones(1, dtype=bool))
    if dtype == "boolean":
        return pd.arrays.BooleanArray(np.zeros(1, dtype=bool), np.ones(1, dtype=bool))
    if dtype == "category":
        return pd.Categorical.from_codes(np.full(1, -1, dtype=np.int8), dtype=pd.CategoricalDtype(pd.Index([])))
    if dtype.startswith("datetime"):
        return _times(np.full(1, NAT_MS, dtype=np.int64)).array
    target: Any = dtype
    return pd.array(np.full(1, None, dtype=object), dtype=target)


def _missing(dtype: str, n: int) -> Any:
    """An all-missing column of `dtype`, taken from a one-value template (pandas' scalar-fill path, and building
    a dtype per column, are slow for wide tables)."""
    return _missing_one(dtype).take(np.zeros(n, dtype=np.intp))


def typed_frame(schema: TableSchema, columns: dict[str, Any], n: int) -> pd.DataFrame:
    """A frame with exactly `schema`'s columns and dtypes, from columns already of the right dtype."""
    return pd.DataFrame({c: columns[c] if c in columns else _missing(d, n) for c, d in schema.columns.items()},
                        copy=False)  # every column is an array built for this frame alone


def _category(codes: np.ndarray, values: list[Any]) -> Any:
    """Per-row categorical from per-entity values (None -> missing)."""
    cats = sorted({v for v in values if v is not None})
    index = {v: i for i, v in enumerate(cats)}
    lookup = np.array([index.get(v, -1) if v is not None else -1 for v in values], dtype=np.int32)
    return pd.Categorical.from_codes(lookup[codes], dtype=pd.CategoricalDtype(pd.Index(cats, dtype=object)))


def _nullable(codes: np.ndarray, values: list[Any], dtype: str) -> Any:
    data = np.array([0 if v is None else v for v in values], dtype=dtype.lower())[codes]
    mask = np.array([v is None for v in values], dtype=bool)[codes]
    return pd.arrays.BooleanArray(data, mask) if dtype == "bool" else pd.arrays.IntegerArray(data, mask)


def _whole(values: np.ndarray, dtype: str) -> Any:
    """A gauge of small whole numbers (PCIe generation, width) in its nullable integer column; a value that is
    not one (a fraction, or out of the column's range) is no value rather than a wrapped-around number."""
    info = np.iinfo(dtype.lower())
    ok = np.isfinite(values) & (values == np.round(values)) & (values >= info.min) & (values <= info.max)
    return pd.arrays.IntegerArray(np.where(ok, values, 0).astype(dtype.lower()), ~ok)


def empty(table: str) -> pd.DataFrame:
    return TABLES[table].empty()


_UNKNOWN = pd.CategoricalDtype(pd.Index(["unknown"]))  # the peer of every dcgm row (dtypes are immutable)
UNNAMED = "unknown"  # the node of a series no label names a host of, while the scrape is read


def unnamed(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame with the rows of a series that named no host left without a node (NA), as an `nvidia-smi` paste's
    are: `analyze FILE --node`, the store's `ingest --node` and a paste in a node's thread name them alike. A node
    literally called `unknown` stood for every host-less scrape read, so two hosts' scrapes were one node."""
    if "node_id" not in frame.columns or not len(frame):
        return frame
    ids = frame["node_id"]
    if isinstance(ids.dtype, pd.CategoricalDtype):
        return frame.assign(node_id=ids.cat.remove_categories([UNNAMED])) if UNNAMED in ids.cat.categories else frame
    return frame.assign(node_id=ids.mask(ids.astype("string") == UNNAMED))


def build_link_samples(parser: DcgmParser) -> pd.DataFrame:
    """Pivot (time, entity, column, value) samples to rows of (time, entity) with one column per counter.

    A row's source is the first line that contributed to it.
    """
    if not parser.parts:
        return empty("link_samples")
    ts, ent, col, val, line, file = (np.concatenate(arrays) for arrays in zip(*parser.parts, strict=True))
    ent = ent.astype(np.int64)

    ts_unique, ts_code = np.unique(ts, return_inverse=True)
    n_ent = len(parser.entities)
    # samples are in reading order, so a row's first sample is its first line
    keys, first_sample, row = np.unique(ts_code.astype(np.int64) * n_ent + ent, return_index=True,
                                        return_inverse=True)
    used, col_code = np.unique(col, return_inverse=True)
    matrix = np.full((len(keys), len(used)), np.nan)
    matrix[row, col_code] = val

    names = {i: c for c, i in parser.columns.items()}
    entities = list(parser.entities)
    n = len(keys)
    ent_of_row = (keys % n_ent).astype(np.int64)
    frame: dict[str, Any] = {"timestamp": _times(ts_unique[keys // n_ent])}
    for pos, label in enumerate(("node_id", "gpu", "link_type", "link", "nvswitch", "gpu_total")):
        values = [e[pos] for e in entities]
        dtype = LINK_SAMPLES.columns[label]
        frame[label] = _category(ent_of_row, values) if dtype == "category" else _nullable(
            ent_of_row, values, "bool" if dtype == "boolean" else dtype)
    for j, c in enumerate(used):
        name = names[int(c)]
        dtype = LINK_SAMPLES.columns.get(name, "float64")
        frame[name] = _whole(matrix[:, j], dtype) if dtype.startswith("Int") else matrix[:, j]
    for label, key in (("gpu_uuid", "uuid"), ("pci_bus_id", "pci_bus_id")):  # the GPU's identity on its rows
        per_entity = pd.array([parser.gpus.get((e[0], e[1]), {}).get(key) for e in entities], dtype="string")
        frame[label] = per_entity.take(ent_of_row)  # one string per entity, taken for its rows
    saturated = frame.pop("saturated", np.full(n, np.nan))
    frame["saturated"] = pd.arrays.BooleanArray(~np.isnan(saturated), np.zeros(n, dtype=bool))
    frame["peer"] = pd.Categorical.from_codes(np.zeros(n, dtype=np.int8), dtype=_UNKNOWN)
    where = pc.binary_join_element_wise(pa.array(parser.files).take(pa.array(file[first_sample])),
                                        pc.cast(pa.array(line[first_sample]), pa.string()), ":")
    frame["source"] = where.dictionary_encode().to_pandas()
    return typed_frame(LINK_SAMPLES, frame, n)


def build_events(xids: list[tuple[Any, ...]], files: list[str],
                 last: dict[tuple[Any, ...], float] | None = None) -> tuple[pd.DataFrame, list[IngestWarning]]:
    """Xid rows: (ts, kind, node, gpu, code, bus id, value, file, line) in reading order -> events + warnings.
    `kind` is counter, gauge (the last Xid) or recovery (the driver's recovery action, an event of its own kind).

    `last` holds each Xid series' previous value, (kind, node, gpu, code) -> value, from earlier reads; it is
    updated in place, so a caller reading scrape files one by one sees a change between them.
    """
    rows: list[dict[str, Any]] = []
    warnings: list[IngestWarning] = []
    order = sorted(range(len(xids)), key=lambda i: (xids[i][0] == NAT_MS, xids[i][0], i))
    if any(x[0] == NAT_MS for x in xids):
        order = list(range(len(xids)))  # no times to order by: keep the reading order
    last = {} if last is None else last
    changed: set[int] = set()  # the rows of a last-Xid gauge's change
    for i in order:
        ts, kind, node, gpu, code, bus, value, file_no, line = xids[i]
        where = f"{files[file_no]}:{line}"
        key = (kind, node, gpu, code)
        prev = last.get(key)
        last[key] = value
        event: dict[str, Any] | None = None
        if kind == "counter":
            increase = value if prev is None or value < prev else value - prev
            if increase > 0:
                first = " since the exporter started" if prev is None else ""
                event = {"code": code, "count": int(increase),
                         "text": f"Xid {code} counted {fmt.count(int(increase), 'time')}{first} "
                                 "(DCGM_EXP_XID_ERRORS_COUNT)"}
                if prev is None:  # every Xid until now: the merge takes a kernel line before it as one of them
                    event["since_start"] = True
        elif kind == "recovery":  # a state, not a history: a pending action now, and each change
            if (prev is None and value) or (prev is not None and value != prev):
                action = load_recovery().of(int(value))
                was = "" if prev is None else f" (was {int(prev)})"
                event = {"code": int(value), "kind": EventKind.RECOVERY_ACTION.value,
                         "text": f"DCGM_FI_DEV_GPU_RECOVERY_ACTION reads {int(value)} ({action.words}){was}"}
        elif prev is None:
            if value:
                warnings.append(IngestWarning(files[file_no], line, (
                    f"GPU {gpu} last reported Xid {int(value)} at an unknown time; one reading of "
                    "DCGM_FI_DEV_XID_ERRORS is not an event (a change between readings is)")))
        elif value != prev and value:
            event = {"code": int(value), "text": f"DCGM_FI_DEV_XID_ERRORS changed from {int(prev)} to {int(value)}"}
            changed.add(len(rows))
        if event is not None:
            ts_value = pd.NaT if ts == NAT_MS else pd.Timestamp(ts, unit="ms", tz="UTC")
            rows.append({"timestamp": ts_value, "node_id": node, "gpu": gpu, "pci_bus_id": bus, "kind": "xid",
                         "source": where, **event})  # an event's own kind (a recovery action) over "xid"
    # the last-Xid gauge changing in the scrape where the counter counts that Xid is the same Xid, counted there
    counted = {(r["timestamp"], r["node_id"], r["gpu"], r["code"]) for i, r in enumerate(rows)
               if "count" in r and i not in changed and not pd.isna(r["timestamp"])}
    rows = [r for i, r in enumerate(rows)
            if i not in changed or (r["timestamp"], r["node_id"], r["gpu"], r["code"]) not in counted]
    return pd.DataFrame(rows), warnings


def _labels(values: list[str]) -> Any:
    """pd.Categorical(values) for a few distinct strings, without inferring them twice."""
    categories = pd.Index(sorted(set(values)))
    codes = categories.get_indexer(pd.Index(values))
    return pd.Categorical.from_codes(codes, dtype=pd.CategoricalDtype(categories))


def build_gpus(gpus: dict[tuple[str, int], dict[str, Any]]) -> pd.DataFrame:
    """One row per GPU, built column by column in the schema's dtypes."""
    keys = sorted(gpus)
    columns: dict[str, Any] = {
        "node_id": _labels([k[0] for k in keys]),
        "gpu": pd.array([k[1] for k in keys], dtype="Int16"),
        "source": _labels([gpus[k]["source"] for k in keys]),
    }
    for name, dtype in GPUS.columns.items():
        if name not in columns:
            values = [gpus[k].get(name) for k in keys]
            target: Any = dtype
            columns[name] = (pd.arrays.ArrowStringArray(pa.array(values, type=pa.string()))
                             if _ARROW_STRINGS and dtype == "string" else pd.array(values, dtype=target))
    return typed_frame(GPUS, columns, len(keys))


# pandas' "string" dtype is Arrow-backed here, so an Arrow array of the labels is the column as it stands
_ARROW_STRINGS = isinstance(pd.array([], dtype="string"), pd.arrays.ArrowStringArray)
