"""Readers: raw input -> normalized tables (or, for the snapshot format, Snapshot models)."""

from . import detect
from .base import IngestResult, IngestWarning, Reader, Source
from .snapshot import Case, read_cases, with_platform

__all__ = [
    "Case",
    "IngestResult",
    "IngestWarning",
    "Reader",
    "Source",
    "detect",
    "read_cases",
    "with_platform",
]
