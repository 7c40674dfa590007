"""The enumerations every layer shares: link types and states, severities, priorities, port sources, kinds."""

from __future__ import annotations

from enum import StrEnum


class LinkType(StrEnum):
    NVLINK = "nvlink"
    PCIE = "pcie"
    NVSWITCH = "nvswitch"


class LinkState(StrEnum):
    UP = "up"
    DOWN = "down"
    DEGRADED = "degraded"
    INACTIVE = "inactive"
    UNKNOWN = "unknown"


class Severity(StrEnum):
    """Ordered from harmless to worst; compare with `severity_rank`."""

    OK = "ok"
    WARNING = "warning"
    FAILING = "failing"
    DOWN = "down"


SEVERITY_RANK: dict[Severity, int] = {s: i for i, s in enumerate(Severity)}


def severity_rank(severity: Severity | str) -> int:
    return SEVERITY_RANK[Severity(severity)]


class Priority(StrEnum):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    URGENT = "urgent"


class PortSource(StrEnum):
    """Where a switch port number came from: read from the hardware, or taken from a platform template."""

    OBSERVED = "observed"
    ASSUMED = "assumed"
    UNKNOWN = "unknown"


class ComponentKind(StrEnum):
    NVLINK = "nvlink"
    NVSWITCH = "nvswitch"
    GPU = "gpu"
    PCIE = "pcie"
    FABRIC_SOFTWARE = "fabric-software"


class EventKind(StrEnum):
    XID = "xid"
    SXID = "sxid"
    AER = "aer"
    FABRIC_STATE = "fabric_state"
