"""The local telemetry store: Parquet samples by node and day, a SQLite database beside them, windowed reads."""

from .load import load_inputs
from .maintenance import Maintenance, MaintenanceLog
from .sources import At, FileOutcome, IngestReport, expand, read_sources
from .telemetry import DB_NAME, StoreWindow, TelemetryStore, open_store

__all__ = [
    "DB_NAME",
    "At",
    "FileOutcome",
    "IngestReport",
    "Maintenance",
    "MaintenanceLog",
    "StoreWindow",
    "TelemetryStore",
    "expand",
    "load_inputs",
    "open_store",
    "read_sources",
]
