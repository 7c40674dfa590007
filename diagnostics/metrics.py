"""The one table of what a link's readings measure: each metric's name, what people call it, its unit, whether it
is a cumulative counter (a lone reading is a total since reset; two make a rate per hour) or a level (judged as it
stands at the window's last reading), what a level is read from, and the link types it exists on.

The normalized tables' counter columns, the engine's rates and levels, the Prometheus push-down's gauges, the
thresholds' units and the formatter's names all come from here: a metric is added in one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from .enums import LinkType


class Unit(StrEnum):
    """The unit of every value a rule judges and an answer shows (one formatter, `format.value`, writes each)."""

    PER_HOUR = "/h"
    LANES = "lanes"
    GENERATIONS = "generations"
    RATIO = "ratio"
    EVENTS = "events"
    GPUS = "GPUs"
    LINKS = "links"
    TOTAL = "since reset"
    STATE = ""  # a link state or the fabric's: no quantity
    BANDWIDTH = "GB/s"  # a collective's bus bandwidth (nccl-tests busbw)


BUSY_SETTING = "pcie_busy_bytes_per_s"  # the thresholds' setting a level with `busy` counts only above
# where a 16-bit error counter (nvidia-smi's, DCGM's) stops: a count read there is pinned, a lower bound
SATURATED_16BIT = 65535


class Kind(StrEnum):
    COUNTER = "counter"  # cumulative, a column of the link samples: judged as its increase per hour
    SUM = "sum"  # a rate adding counters (CRC errors: flit and data)
    LEVEL = "level"  # as it stands at the window's last reading: lanes, generations, bit-error ratios
    HOST = "host"  # a host-side PCIe AER counter (sysfs, lspci), cumulative, weighed per end of a link
    EVENT = "event"  # counted from the event log: Xids, SXids


@dataclass(frozen=True)
class Metric:
    """One metric. A level with a `column` is that column's last reading; with a `maximum`, how far the reading
    is below it; with `busy`, counted only while a traffic column is at the BUSY_SETTING setting (a lower
    PCIe generation at idle is power saving, not a fault). A level without a column is derived by the engine."""

    name: str
    label: str
    kind: Kind
    unit: Unit = Unit.PER_HOUR
    on: frozenset[LinkType] | None = None  # the link types it exists on; None: every one
    column: str | None = None
    maximum: str | None = None
    busy: tuple[str, ...] = ()
    parts: tuple[str, ...] = ()  # the counters a sum adds

    @property
    def columns(self) -> tuple[str, ...]:
        """The link-sample columns a level is read from."""
        return (*((self.maximum,) if self.maximum else ()), *((self.column,) if self.column else ()), *self.busy)

    def applies(self, link_type: str) -> bool:
        return self.on is None or link_type in self.on


_PCIE = frozenset({LinkType.PCIE})
# NVLink's data link layer counts CRC errors, recoveries and discards, a GPU's and a switch port's alike; PCIe has its
# replays, rollovers and the AER kinds (Bad TLP, Bad DLLP, receiver errors), no CRC flit or recovery counter. The
# NVLink5 counters are a GPU's and, on an NVLink5 switch tray, its ports' (NMX-T reads both ends of every link).
_NVLINK = frozenset({LinkType.NVLINK, LinkType.NVSWITCH})

# In the order an answer lists them (and the link samples hold the counters).
METRICS: dict[str, Metric] = {m.name: m for m in (
    Metric("replay", "replays", Kind.COUNTER),
    Metric("crc_flit", "CRC flit errors", Kind.COUNTER, on=_NVLINK),
    Metric("crc_data", "CRC data errors", Kind.COUNTER, on=_NVLINK),
    Metric("recovery", "recoveries", Kind.COUNTER, on=_NVLINK),
    Metric("replay_rollovers", "replay rollovers", Kind.COUNTER, on=_PCIE),  # each a link retrain, never a replay
    Metric("tx_discards", "TX discards", Kind.COUNTER, on=_NVLINK),
    Metric("symbol_errors", "symbol errors", Kind.COUNTER, on=_NVLINK),
    Metric("effective_errors", "effective errors", Kind.COUNTER, on=_NVLINK),
    Metric("recovery_successful", "successful recoveries", Kind.COUNTER, on=_NVLINK),
    Metric("recovery_failed", "failed recoveries", Kind.COUNTER, on=_NVLINK),
    # NVLink5 (Blackwell) packet, integrity and ECC counters: DCGM's MonitorNVLink5Fields fails on any increase
    Metric("rx_malformed", "malformed packets", Kind.COUNTER, on=_NVLINK),  # DCGM field 1204
    Metric("rx_dropped", "packets dropped (buffer overrun)", Kind.COUNTER, on=_NVLINK),  # 1205
    Metric("rx_errors", "packets received in error", Kind.COUNTER, on=_NVLINK),  # 1206
    Metric("rx_remote_errors", "packets marked bad upstream", Kind.COUNTER, on=_NVLINK),  # stomp/EBP marker, 1207
    Metric("rx_general_errors", "packet header mismatches", Kind.COUNTER, on=_NVLINK),  # 1208
    Metric("integrity_errors", "link integrity errors", Kind.COUNTER, on=_NVLINK),  # over its threshold, 1209
    Metric("ecc_errors", "NVLink ECC errors", Kind.COUNTER, on=_NVLINK),  # NVLink ECC data errors, 1220
    Metric("crc", "CRC errors", Kind.SUM, on=_NVLINK, parts=("crc_flit", "crc_data")),
    Metric("width_lost", "lanes lost", Kind.LEVEL, Unit.LANES, _PCIE, column="width", maximum="max_width"),
    # lanes a Lane Error Status names at either end: dated (an earlier reading read it clear) or not (it is sticky,
    # RW1C, PCIe r4.0 sec. 7.7.3.3: set at some time since it was last cleared)
    Metric("lanes_in_error", "lanes in error", Kind.LEVEL, Unit.LANES, _PCIE),
    Metric("lanes_in_error_undated", "lanes in error (undated status)", Kind.LEVEL, Unit.LANES, _PCIE),
    Metric("gen_lost_under_load", "generations lost under load", Kind.LEVEL, Unit.GENERATIONS, _PCIE, column="gen",
           maximum="max_gen", busy=("tx_bytes_per_s", "rx_bytes_per_s")),
    # the Bad TLPs, Bad DLLPs and receiver errors (AER) the busier end of a GPU's PCIe link received per hour
    Metric("pcie_errors_received", "errors received (AER)", Kind.LEVEL, Unit.PER_HOUR, _PCIE),
    Metric("effective_ber", "effective BER", Kind.LEVEL, Unit.RATIO, _NVLINK, column="effective_ber"),
    Metric("symbol_ber", "symbol BER", Kind.LEVEL, Unit.RATIO, _NVLINK, column="symbol_ber"),
    Metric("aer_correctable", "aer correctable", Kind.HOST, on=_PCIE),  # TOTAL_ERR_COR
    Metric("aer_nonfatal", "aer nonfatal", Kind.HOST, on=_PCIE),  # TOTAL_ERR_NONFATAL
    Metric("aer_fatal", "aer fatal", Kind.HOST, on=_PCIE),  # TOTAL_ERR_FATAL
    Metric("bad_tlp", "bad TLPs", Kind.HOST, on=_PCIE),  # the receiver dropped a TLP, the sender replays it
    Metric("bad_dllp", "bad DLLPs", Kind.HOST, on=_PCIE),  # seen by the receiver
    Metric("rx_err", "receiver errors", Kind.HOST, on=_PCIE),  # physical layer, seen by the receiver
    Metric("replay_timeout", "replay timer timeouts", Kind.HOST, on=_PCIE),  # counted by the transmitter that replayed
    Metric("aer_rollover", "replay-number rollovers", Kind.HOST, on=_PCIE),  # by the transmitter (it retrains the link)
    Metric("xid", "Xids", Kind.EVENT, Unit.EVENTS),
    Metric("sxid", "SXids", Kind.EVENT, Unit.EVENTS),
)}


def of_kind(*kinds: Kind) -> tuple[str, ...]:
    """The metrics of those kinds, in the table's order."""
    return tuple(name for name, m in METRICS.items() if m.kind in kinds)


COUNTERS = of_kind(Kind.COUNTER)  # the link samples' cumulative counters: a lone reading is a total since reset
AER_COUNTERS = of_kind(Kind.HOST)
RATES = of_kind(Kind.COUNTER, Kind.SUM)  # what a link's rates per hour are
LEVELS = of_kind(Kind.LEVEL)
GAUGES = {name: m for name, m in METRICS.items() if m.kind is Kind.LEVEL and m.column}  # read from columns
SUMS = {name: m.parts for name, m in METRICS.items() if m.parts}  # a rate that adds counters: CRC, flit and data


def unit_of(name: str) -> Unit:
    """A metric's unit as a rule judges it: a level's or an event count's own, else a rate per hour."""
    m = METRICS.get(name)
    return m.unit if m is not None and m.kind in (Kind.LEVEL, Kind.EVENT) else Unit.PER_HOUR


def label(name: str) -> str:
    """What people call a metric."""
    m = METRICS.get(name)
    return m.label if m is not None else name.replace("_", " ")


def applies(name: str, link_type: str) -> bool:
    """Whether a metric exists on this link type (a PCIe rollover count is no NVLink figure)."""
    m = METRICS.get(name)
    return m is None or m.applies(link_type)
