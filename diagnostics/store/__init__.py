"""The local telemetry store: Parquet samples by node and day, a SQLite database beside them, windowed reads."""

from .alertmanager import AlertmanagerBook, AlertMessage
from .alerts import Alert, AlertBook, AlertStatus, BlindRecord, StormRecord
from .compaction import Compacted
from .database import BUSY_TIMEOUT_S, StoreDatabase, connect, lock_of, transaction
from .load import load_inputs, one_machine_each
from .maintenance import Maintenance, MaintenanceLog
from .sources import At, FileOutcome, IngestReport, expand, read_sources
from .telemetry import DB_NAME, TelemetryStore, open_store
from .window import StoreWindow

__all__ = [
    "BUSY_TIMEOUT_S",
    "DB_NAME",
    "Alert",
    "AlertBook",
    "AlertMessage",
    "AlertStatus",
    "AlertmanagerBook",
    "At",
    "BlindRecord",
    "Compacted",
    "FileOutcome",
    "IngestReport",
    "Maintenance",
    "MaintenanceLog",
    "StoreDatabase",
    "StoreWindow",
    "StormRecord",
    "TelemetryStore",
    "connect",
    "expand",
    "load_inputs",
    "lock_of",
    "one_machine_each",
    "open_store",
    "read_sources",
    "transaction",
]
