"""The normalized tables every reader produces and every analysis consumes, and the counters they carry.

Defined once here: ingest readers conform their output to these schemas, analysis relies on them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np
import pandas as pd

from .metrics import AER_COUNTERS, COUNTERS  # the link samples' counter columns, from the one metric table

UTC_TS = "datetime64[ns, UTC]"


@dataclass(frozen=True)
class TableSchema:
    """Column names and dtypes of one normalized table, in order."""

    name: str
    columns: dict[str, str]
    doc: dict[str, str] = field(default_factory=dict)

    def empty(self) -> pd.DataFrame:
        """An empty frame of this schema: built once per schema, each caller gets its own (copy-on-write) copy."""
        return _empty_frame(self.name, tuple(self.columns.items())).copy(deep=False)

    def conform(self, frame: pd.DataFrame) -> pd.DataFrame:
        """Return `frame` with exactly this schema's columns (missing ones empty) and dtypes."""
        template = _empty_frame(self.name, tuple(self.columns.items()))
        n = len(frame)
        if (n and _default_index(frame) and frame.columns.equals(template.columns)
                and frame.columns.dtype == template.columns.dtype
                and all(str(t) == d for t, d in zip(frame.dtypes, self.columns.values(), strict=True))):
            return frame.copy(deep=False)  # already conforming: nothing to convert (every reader's own frames)
        out: dict[str, Any] = {}
        for col, dtype in self.columns.items():
            if col in frame.columns:
                series = frame[col]
                if str(series.dtype) != dtype:
                    if _unfilled(series, dtype):  # a column no row filled: nothing to cast
                        out[col] = _missing(dtype, n)
                        continue
                    if dtype == UTC_TS:
                        series = _utc_times(series)
                    target: Any = dtype
                    series = series.astype(target) if str(series.dtype) != dtype else series
                out[col] = series  # a Series, so the result shares its data copy-on-write, never by alias
            else:  # all missing, in the column's own NA: an array of this frame's own
                out[col] = _missing(dtype, n) if n else template[col].array
        conformed = pd.DataFrame(out, index=frame.index, copy=False)
        return conformed if _default_index(frame) else conformed.reset_index(drop=True)


def _utc_times(series: pd.Series) -> pd.Series:
    """Times as UTC: ISO 8601 strings of any precision side by side (a store's events: whole seconds beside a
    kernel line's nanoseconds), else whatever pandas reads element by element."""
    try:
        return pd.to_datetime(series, utc=True, format="ISO8601")
    except (ValueError, TypeError):
        return pd.to_datetime(series, utc=True, format="mixed")


def _unfilled(series: pd.Series, dtype: str) -> bool:
    """All NaN (or all None, for a target whose missing value does not depend on it): the cast would give exactly
    `_missing(dtype)`. A categorical is left to astype, whose empty categories take the dtype of what it held."""
    return (series.dtype == np.float64 or (series.dtype == object and dtype != "category")) and bool(
        series.isna().all())


def _default_index(frame: pd.DataFrame) -> bool:
    index = frame.index
    return isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1


@cache
def _empty_frame(name: str, columns: tuple[tuple[str, str], ...]) -> pd.DataFrame:
    """The empty frame of a schema (keyed by its columns, so any TableSchema gets its own); never handed out."""
    return pd.DataFrame({c: pd.Series(dtype=d) for c, d in columns})


@cache
def _missing_one(dtype: str) -> Any:
    return pd.Series(index=pd.RangeIndex(1), dtype=dtype).array


def _missing(dtype: str, n: int) -> Any:
    """`n` missing values of `dtype`, the same array `pd.Series(index=..., dtype=dtype)` holds, without its
    per-call dtype inference (which made conforming a small frame cost tens of milliseconds)."""
    return _missing_one(dtype).take(np.zeros(n, dtype=np.intp))


LINK_SAMPLES = TableSchema(
    "link_samples",
    {
        "timestamp": UTC_TS,
        "node_id": "category",
        "gpu": "Int16",  # nvidia-smi index; NA for an NVSwitch-side series
        "link_type": "category",  # LinkType
        "link": "Int16",  # NVLink index, NVSwitch port, or NA for a GPU's PCIe upstream link
        "lane": "Int8",  # NA unless the counter is per lane
        "peer": "category",  # "GPU 3", "NVSwitch 1", "CPU 0 root port", "unknown"
        "nvswitch": "category",  # the NVSwitch a switch-side series belongs to (dcgm `nvswitch` label); else NA
        "gpu_total": "boolean",  # true: the row sums all of the GPU's links of this type (link is NA)
        **{c: "float64" for c in COUNTERS},
        "saturated": "boolean",  # a 16-bit counter stuck at 65535: the value is a lower bound
        "symbol_ber": "float64",
        "effective_ber": "float64",
        "link_state": "category",  # LinkState
        "speed_gbps": "float64",
        "gen": "Int8",
        "max_gen": "Int8",
        "width": "Int8",
        "max_width": "Int8",
        "tx_bytes_per_s": "float64",
        "rx_bytes_per_s": "float64",
        "source": "category",  # "file:line"
        "gpu_uuid": "string",  # GPU-... as nvidia-smi prints it, when the input names it
        "pci_bus_id": "string",  # normalized dddd:bb:dd.f, lowercase (the device this row was read from)
        "device_kind": "category",  # lspci rows: gpu, nvswitch, pcie_switch, nic, bridge, other
        "lane_error": "boolean",  # lspci LaneErrStat: a lane error seen (per-lane row) or any/none (device row)
        "end": "category",  # LinkEnd: the end of the GPU's link the row was read at; NA = the GPU's own
        **{c: "float64" for c in AER_COUNTERS},
    },
    doc={
        "timestamp": "UTC time of the reading; NaT for a paste without a time",
        "speed_gbps": "link speed in GB/s (gigabytes per second, one direction) as nvidia-smi nvlink -s prints it",
        "saturated": "true when a counter read 65535 (16-bit saturation): a lower bound, not an exact count",
        "gpu_total": "true when the row is a GPU-wide total over all its links of this type (e.g. dcgm-exporter's "
        "`..._COUNT_TOTAL` without an `nvlink` label); such a row has link NA and must not be added to per-link rows",
        "nvswitch": "the NVSwitch id of an NVSwitch-side port series (link_type nvswitch, link = port, gpu NA)",
        "lane_error": "an observation, never a guess: lspci's Lane Error Status (`LaneErrStat: LaneErr at lane: 6`) "
        "gives one row per lane it names (lane set, lane_error true) and sets the device's own row (lane NA) true; "
        "`LaneErrStat: 0` sets it false; NA where the input does not say. A width downtrain names no lane",
        "end": "which end of the GPU's PCIe link a row was read at: NA (or gpu) the GPU's own port; upstream the "
        "PCIe switch or root port above it (its own bus id in `peer`, the GPU's in pci_bus_id). Which end saw "
        "which error tells the direction (`diagnostics/data/ends.toml`)",
    },
)

# The columns that name a link (a finding's component is read from them): its keys, whether it is a GPU's total, its
# peer.
LINK_IDENTITY = ("node_id", "gpu", "link_type", "nvswitch", "link", "lane", "gpu_total", "peer")

STEP_SAMPLES = TableSchema(
    "step_samples",
    {
        "timestamp": UTC_TS,
        "job_id": "category",
        "node_ids": "string",  # comma-separated; step time is job-wide (every rank waits for the slowest)
        "step": "Int64",
        "step_time_ms": "float64",
        "collective": "category",  # e.g. all_reduce
        "size_bytes": "Int64",
        "data_type": "category",  # nccl-tests: the element type (float, bfloat16, ...)
        "redop": "category",  # nccl-tests: the reduction (sum, ...); NA for a collective with none
        "root": "Int32",  # nccl-tests: the root rank; NA for a collective with none (printed -1 or left empty)
        "collective_time_us": "float64",
        "algbw_gbps": "float64",
        "busbw_gbps": "float64",
        "source": "category",
        "in_place": "boolean",  # nccl-tests: in-place or out-of-place figures; NA for the run's average row
        "baseline": "boolean",  # the input states this step time as the job's baseline (a snapshot's first row)
        "run": "string",  # nccl-tests: where the run's output starts (file:line; in a store, @ the file's hash too)
        "ingested": "Int64",  # nccl-tests in a store: the ingest that took the run in (1, 2, ...): of runs of one
        # time, the later ingested is the newer
        "gpus": "Int16",  # nccl-tests: the GPUs the run used on its hosts (one `# Rank` line each)
        "gpu_name": "string",  # nccl-tests: the device name its `# Rank` lines give ("NVIDIA H100 80GB HBM3")
        "wrong_values": "Int64",  # nccl-tests: #wrong (a size's), or the run's `# Out of bounds values` total
    },
)

EVENTS = TableSchema(
    "events",
    {
        "timestamp": UTC_TS,
        "node_id": "category",
        "gpu": "Int16",
        "pci_bus_id": "string",
        "kind": "category",  # EventKind
        "code": "Int32",  # Xid / SXid number, or NA
        "caused_by": "Int32",  # the earlier Xid a `caused by previous Xid N` line names
        "count": "Int64",  # occurrences the row stands for (a counter's increase); NA for one log line
        "text": "string",
        "source": "category",
        "link": "Int16",  # the link (Xid 74) or NVSwitch port (SXid) the line names
        "severity": "string",  # "fatal" / "non-fatal" as the line states it (SXid, NVLink5 Xids); else NA
        "nvswitch": "string",  # the NVSwitch an SXid names (N of nvidia-nvswitchN, else its bus id); bus: pci_bus_id
        "gpu_uuid": "string",  # GPU-... the driver's identity line gave for this bus earlier in the same log
        "gpu_serial": "string",  # the board serial the driver's next line gave for that GPU
        "subcode": "string",  # an NVLink5 Xid's unit and error as the line names them (`NETIR_LINK_EVT`)
        "driver_version": "string",  # the driver's, as its banner gave it earlier in the same log
        "since_start": "boolean",  # a counter's first reading: its count stands for every occurrence until then
    },
    doc={
        "severity": "what the kernel line itself says (`Fatal`, `Non-fatal`, `Severity 1`); how the analysis treats "
        "a code is the Xid/SXid catalog's `severity`, not this",
        "nvswitch": "the switch index as the driver names the device (`nvidia-nvswitch3` -> \"3\"); Fabric Manager's "
        "log, which names no index, gives the switch's PCI bus id; NA when the line gives neither",
        "gpu_uuid": "the UUID of the GPU on this bus as the driver's `NVRM: GPU at PCI:<bus>: GPU-<uuid>` line "
        "states it earlier in the same log; NA when no such line precedes the event",
        "gpu_serial": "the GPU's board serial as the driver's `NVRM: GPU Board Serial Number: ...` line, printed "
        "right after the identity line, states it; NA when the board reports none ([N/A]) or no such line precedes",
        "subcode": "the first field of an NVLink5 Xid (144-150) line, before its severity: the unit and error "
        "(`NETIR_LINK_EVT`, `RLW_RXPIPE`) that the Xid catalog's decode table is keyed by; NA for other lines",
        "driver_version": "the driver version its `NVRM: loading NVIDIA UNIX ... Kernel Module ... <version>` line "
        "states earlier in the same log (of the same host); NA when no such line precedes the event",
        "since_start": "true on a counter's first reading (DCGM_EXP_XID_ERRORS_COUNT's first value): its count stands "
        "for every occurrence since the exporter started, up to its time, so a kernel line of the same Xid before it "
        "is one of them, not another; NA on other rows (and in a store written before the column)",
    },
)

TOPOLOGY = TableSchema(
    "topology",
    {
        "node_id": "category",
        "a": "string",  # "GPU0", "NIC1", "NVSwitch 0000:05:00.0"
        "b": "string",
        "relation": "category",  # NV, PIX, PXB, PHB, NODE, SYS, nvlink, remote, cpu_affinity, numa_affinity,
        # gpu_numa_id, gpu (b: PCI bus id, detail: device=0x...), nic (b: device name such as mlx5_0)
        "nvlinks": "Int16",  # NV# count, or links from a GPU to a switch
        "link": "Int16",  # a GPU's link index when the row is one link (nvlink -R)
        "remote_port": "Int16",  # the switch port or peer link index at the far end, when observed
        "detail": "string",  # a remote row's detail starting PORT_REPORT: what the port says of its link (NMX-T)
        "source": "category",
    },
)
PORT_REPORT = "the port reports, "  # a remote row's detail that is the port's own word on its link: the link's evidence

GPUS = TableSchema(
    "gpus",
    {
        "node_id": "category",
        "gpu": "Int16",
        "uuid": "string",
        "serial": "string",  # the board serial (nvidia-smi -q 'Serial Number'): what a technician reads on the part
        "pci_bus_id": "string",
        "model": "string",
        "driver_version": "string",
        "pod": "string",  # Kubernetes labels, when the exporter attached a GPU to a pod
        "namespace": "string",
        "container": "string",
        "source": "category",
    },
    doc={"gpu": "one row per GPU a source describes: its identity as the exporter labelled it"},
)

TABLES: dict[str, TableSchema] = {t.name: t for t in (LINK_SAMPLES, STEP_SAMPLES, EVENTS, TOPOLOGY, GPUS)}


def job_nodes(steps: pd.DataFrame) -> list[str]:
    """Every node the step samples' comma-separated `node_ids` name."""
    names: set[str] = set()
    for value in steps["node_ids"].dropna().astype(str):
        names.update(n.strip() for n in value.split(",") if n.strip())
    return sorted(names)


def naming(node_ids: pd.Series, nodes: Collection[str]) -> np.ndarray:
    """Per step sample, whether its comma-separated `node_ids` name any of `nodes`: each distinct list split once,
    not once per sample."""
    wanted = set(nodes)
    codes, lists = pd.factorize(node_ids.astype("string").fillna(""))
    named = np.array([bool(wanted & {n.strip() for n in str(v).split(",")}) for v in lists], dtype=bool)
    return named[codes] if len(codes) else np.zeros(0, dtype=bool)


def run_rows(steps: pd.DataFrame, nodes: Collection[str] | None, start_ns: int | None,
             end_ns: int | None) -> pd.DataFrame:
    """The step samples of benchmark runs (nccl-tests rows: a bus bandwidth, no job) naming any of those nodes
    (None: any node): a window keeps them as it keeps a job's, undated ones always (a run's output states no time)."""
    if steps.empty or "busbw_gbps" not in steps.columns:
        return steps.iloc[0:0]
    keep = steps["busbw_gbps"].notna().to_numpy(bool, copy=True)
    if "job_id" in steps.columns:
        keep &= steps["job_id"].isna().to_numpy(bool)
    if nodes is not None and keep.any():
        keep &= naming(steps["node_ids"], nodes)
    if keep.any() and (start_ns is not None or end_ns is not None):
        stamps = pd.to_datetime(steps["timestamp"], utc=True).to_numpy("datetime64[ns]")
        t, undated = stamps.view(np.int64), np.isnat(stamps)
        inside = np.ones(len(t), dtype=bool)
        if start_ns is not None:
            inside &= t > start_ns
        if end_ns is not None:
            inside &= t <= end_ns
        keep &= undated | inside
    return steps[keep]


def nodes_named(tables: Mapping[str, pd.DataFrame]) -> list[str]:
    """Every node the tables name: each table's `node_id` and the nodes the step samples list. What a store notes
    of an ingest and a source in memory lists alike."""
    names: set[str] = set()
    for name, frame in tables.items():
        if frame is None:
            continue
        if "node_id" in frame.columns:
            names.update(str(n) for n in frame["node_id"].dropna().unique())
        elif name == "step_samples" and "node_ids" in frame.columns:
            names.update(job_nodes(frame))
    return sorted(names)


def rows_of(column: pd.Series, value: str) -> np.ndarray:
    """Which rows of a column hold `value` as text (NA none): on a categorical column (a read's node ids), its codes
    compared with the value's one code, where converting the whole column to text for each node asked cost a rack's
    answer seconds."""
    if isinstance(column.dtype, pd.CategoricalDtype) and pd.api.types.is_string_dtype(column.cat.categories.dtype):
        code = column.cat.categories.get_indexer(pd.Index([value]))[0]
        return column.cat.codes.to_numpy() == code if code >= 0 else np.zeros(len(column), bool)
    return (column.astype("string") == value).to_numpy(bool, na_value=False)


def as_text(column: pd.Series) -> pd.Series:
    """The column as pandas strings (NA where missing), as `astype("string")` gives it: a categorical through its
    few categories of text, where pandas converts row by row (seven times slower on a 100,000-row column of link types).
    Categories of numbers are left to pandas, which writes them as the floats a missing value makes them."""
    if not isinstance(column.dtype, pd.CategoricalDtype) or not pd.api.types.is_string_dtype(
            column.cat.categories.dtype):
        return column.astype("string")
    texts = column.cat.categories.astype("string").array
    return pd.Series(texts.take(column.cat.codes.to_numpy(), allow_fill=True), index=column.index, name=column.name)
