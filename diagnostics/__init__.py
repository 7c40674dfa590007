"""fabricbot's diagnostics: ingest, analysis, topology, rendering and tickets. Knows nothing of Slack."""

from .analyze import analyze_snapshot, degradation_pct
from .errors import ConfigError, FabricbotError, InputError
from .model import Crossing, Diagnosis, Finding, LinkReading, Localization, Snapshot
from .schema import ComponentKind, LinkState, LinkType, PortSource, Priority, Severity
from .thresholds import Rule, Thresholds, load_thresholds

__all__ = [
    "ComponentKind",
    "ConfigError",
    "Crossing",
    "Diagnosis",
    "FabricbotError",
    "Finding",
    "InputError",
    "LinkReading",
    "LinkState",
    "LinkType",
    "Localization",
    "PortSource",
    "Priority",
    "Rule",
    "Severity",
    "Snapshot",
    "Thresholds",
    "analyze_snapshot",
    "degradation_pct",
    "load_thresholds",
]
