"""Readers: raw input -> normalized tables (or, for the snapshot format, Snapshot models)."""

from . import detect
from .alertmanager import NodeAlert, node_alerts
from .base import IngestResult, IngestWarning, Reader, Source
from .snapshot import Case, read_cases, with_platform

__all__ = [
    "Case",
    "IngestResult",
    "IngestWarning",
    "NodeAlert",
    "Reader",
    "Source",
    "detect",
    "node_alerts",
    "read_cases",
    "with_platform",
]
