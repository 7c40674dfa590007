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


class LinkEnd(StrEnum):
    """An end of a link: the GPU's port, the PCIe switch or root port above it, or the NVSwitch port it lands on."""

    GPU = "gpu"
    UPSTREAM = "upstream"
    NVSWITCH = "nvswitch"


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


def priority_rank(priority: Priority | str) -> int:
    """Low 0 .. urgent 3: the one order every comparison of priorities uses."""
    return list(Priority).index(Priority(priority))


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
    COMPUTE_TRAY = "compute-tray"  # a rack's compute tray (its GPUs, board and spine connectors)
    SWITCH_TRAY = "switch-tray"  # a rack's NVLink switch tray (its switch chips and spine connectors)
    CARTRIDGE = "cartridge"  # a rack's cable cartridge: a block of the copper spine's cables
    NVLINK_DOMAIN = "nvlink-domain"  # a rack's NVLink domain as one: no one part of it is singled out
    NVLINK_MESH = "nvlink-mesh"  # a node's NVLinks as one, no NVSwitch among them (a DGX-1's mesh on its board)
    GPU_FABRIC = "gpu-fabric"  # a node's GPU-to-GPU paths as one, as a collective measures them: no link named


class EventKind(StrEnum):
    XID = "xid"
    SXID = "sxid"
    AER = "aer"
    FABRIC_STATE = "fabric_state"
    RECOVERY_ACTION = "recovery_action"  # the driver's recovery action as DCGM reads it (code = the NVML value)
    IMEX_STATE = "imex_state"  # one IMEX node's state, or the domain's, as `nvidia-imex-ctl -N` prints it


class FaultKind(StrEnum):
    """What kind of fault a localized component has: the repair catalog is keyed by platform and fault kind."""

    NVLINK = "nvlink"  # one link (its port pair) failing: replays, CRC, recoveries, down
    NVLINK_AGGREGATE = "nvlink-aggregate"  # a GPU's NVLink totals over all its links (Blackwell): which link is unread
    GPU_NVLINKS = "gpu-nvlinks"  # most of one GPU's NVLinks: the GPU (its module)
    NVSWITCH = "nvswitch"  # failing links of several GPUs landing on one switch
    NVSWITCH_SHARED = "nvswitch-shared"  # every switch failing for most GPUs alike: what all links share (board,
    # driver, Fabric Manager, firmware, power), not one switch
    NVLINK_SHARED = "nvlink-shared"  # most GPUs failing on most of their NVLinks alike, no NVSwitch known among
    # them: what all links share (the board's mesh, driver, firmware, power), not one GPU
    NVSWITCH_FATAL = "nvswitch-fatal"  # a fatal SXid on a switch link
    GPU_OFF_BUS = "gpu-off-bus"  # Xid 79: the GPU fell off the bus
    PCIE_REPLAYS = "pcie-replays"  # a GPU's PCIe link replaying
    PCIE_DOWNTRAIN = "pcie-downtrain"  # a GPU's PCIe link running narrower or slower than it can under load
    FABRIC_MANAGER = "fabric-manager"  # Fabric Manager or the driver: no part
    SWITCH_PORT = "switch-port"  # a rack: one NVLink failing at its switch tray port (the switch side counts errors)
    SWITCH_TRAY = "switch-tray"  # a rack: failing links on both chips of one switch tray
    CARTRIDGE = "cartridge"  # a rack: failing links of several compute and switch trays, all in one cable cartridge
    COMPUTE_TRAY = "compute-tray"  # a rack: failing links of several GPUs of one compute tray, on many switch chips
    FANOUT = "nvlink-fanout"  # a rack: NVLink Xids on many GPUs at once, no root singled out
    RACK_INCIDENT = "rack-incident"  # a rack: half its trays fail at once with no switch unit common to them


class ResetScope(StrEnum):
    """What a repair plan resets: one GPU, a GPU with all its NVLink peers (pre-Ampere), the whole node, the fabric
    service, or nothing (the fault does not apply to the platform)."""

    GPU = "gpu"
    NVLINK_PEERS = "nvlink-peers"
    NODE = "node"
    FABRIC_SERVICE = "fabric-service"
    NONE = "none"


class CodeSeverity(StrEnum):
    """How the analysis treats an Xid or SXid code (its catalog entry), whatever the line itself says."""

    FATAL = "fatal"  # the GPU, switch or link stops until a reset or restart
    FAILING = "failing"  # a part is failing: repair it
    WARNING = "warning"  # worth watching; no action on its own
    INFO = "info"  # follows another error, or no action
