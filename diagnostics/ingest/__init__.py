"""Readers: raw input -> normalized tables (or, for the snapshot format, Snapshot models)."""

from . import detect
from .alertmanager import NodeAlert, known_node, node_alerts
from .base import STDIN, IngestResult, IngestWarning, Reader, Source, input_text, open_input
from .snapshot import Case, looks_like_json, read_cases, with_platform

__all__ = [
    "STDIN",
    "Case",
    "IngestResult",
    "IngestWarning",
    "NodeAlert",
    "Reader",
    "Source",
    "detect",
    "input_text",
    "known_node",
    "looks_like_json",
    "node_alerts",
    "open_input",
    "read_cases",
    "with_platform",
]
