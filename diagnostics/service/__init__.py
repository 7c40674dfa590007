"""The diagnosis service: what every door (CLI, `/fabric`, the console, the demo, the watch and the digest) asks.

A source (snapshot files, tables in memory, the telemetry store, a Prometheus server; a rack is answered over any
of them) and one request in, one answer out, so one question gets one answer whichever door it comes through.
"""

from .diagnose import (
    FILES_MORE,
    Answer,
    Fleet,
    diagnose,
    diagnose_snapshot,
    explain_job,
    fleet,
    graph_of,
    named,
    node_span,
    planned,
    shown_said,
    viewed,
)
from .fleetwide import WatchAnswer, alert_pass, fleet_result, sweep, verify_repair, watch, watched
from .prometheus import PrometheusSource
from .request import CORRELATION_SPAN, DEFAULT_WINDOW, Asked, Request
from .shards import PROCESSES_ENV, process_count
from .source import Source, UnknownName, Window, close_matches, known, memory_log
from .store import StoreSource
from .tables import UNNAMED_NODE, SnapshotSource, TableSource, files_source, tables_source
from .workers import DiagnosisWorkers

__all__ = [
    "CORRELATION_SPAN",
    "DEFAULT_WINDOW",
    "FILES_MORE",
    "PROCESSES_ENV",
    "UNNAMED_NODE",
    "Answer",
    "Asked",
    "DiagnosisWorkers",
    "Fleet",
    "PrometheusSource",
    "Request",
    "SnapshotSource",
    "Source",
    "StoreSource",
    "TableSource",
    "UnknownName",
    "WatchAnswer",
    "Window",
    "alert_pass",
    "close_matches",
    "diagnose",
    "diagnose_snapshot",
    "explain_job",
    "files_source",
    "fleet",
    "fleet_result",
    "graph_of",
    "known",
    "memory_log",
    "named",
    "node_span",
    "planned",
    "process_count",
    "shown_said",
    "sweep",
    "tables_source",
    "verify_repair",
    "viewed",
    "watch",
    "watched",
]
