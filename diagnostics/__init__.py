"""fabricbot's diagnostics: ingest, analysis, topology, rendering and tickets. Knows nothing of Slack."""

from .analysis.snapshot import analyze_snapshot, degradation_pct
from .config.thresholds import Rule, Thresholds, load_thresholds
from .enums import ComponentKind, LinkState, LinkType, PortSource, Priority, Severity
from .errors import ConfigError, FabricbotError, InputError
from .model import Crossing, Diagnosis, Finding, LinkReading, Localization, Snapshot

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
