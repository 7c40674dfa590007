"""fabricbot's diagnostics: ingest, store, analysis, topology, rendering and tickets. Knows nothing of Slack.

Data flows one way: raw input -> `ingest` -> normalized tables (`tables`) -> `store` -> `analysis` -> a
`Diagnosis` -> `render`, `tickets`; every door asks `service.diagnose` (a source and a `Request` in, one answer out).
This module is the public surface; each subpackage has its own.
"""

import os as _os

# numpy asks the kernel for transparent huge pages for each large array (madvise). On a host whose memory is
# fragmented, as a long-running one's is, each such page fault compacts memory first: a fleet read's gigabyte of
# arrays, each kept for seconds, then spends more time in the kernel than in the read (measured: a 1,024-node sweep
# 16-18 s wall, 11-13 s of it in the kernel, against 10.5 s and under 2.5 s without). The flag is read when numpy is
# first imported (numpy.org/doc/stable/reference/global_state.html), so it is set here, before any module of the
# package imports numpy; a value the user sets still chooses.
_os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")

from . import format
from .analysis import (
    FleetAnalysis,
    JobExplanation,
    analyze_fleet,
    analyze_tables,
    explain_job,
)
from .components import ComponentRef
from .config.thresholds import Rule, Thresholds, load_thresholds
from .enums import (
    ComponentKind,
    EventKind,
    FaultKind,
    LinkState,
    LinkType,
    PortSource,
    Priority,
    Severity,
    priority_rank,
)
from .errors import ConfigError, FabricbotError, InputError
from .links import inert_links
from .model import Crossing, Diagnosis, Finding, Localization
from .names import (
    fleet_name_notes,
    headline_name,
    matched_note,
    name_notes,
    normal_name,
    outside_ascii,
    resolve_name,
)
from .offenders import (
    BELOW_RULES,
    COUNT_RULES,
    LINKS_SHOWN,
    NOT_ALL_CLEAR,
    Offender,
    SweepResult,
    counted_as,
    offenders_of,
    offending,
    offending_parts,
    worst_first,
)
from .redaction import RedactingFilter, redact, redact_values
from .service import Request, diagnose, diagnose_snapshot
from .snapshots import LinkReading, Snapshot
from .tables import EVENTS, GPUS, LINK_SAMPLES, STEP_SAMPLES, TABLES, TOPOLOGY, TableSchema
from .values import limits

__all__ = [
    "BELOW_RULES",
    "COUNT_RULES",
    "EVENTS",
    "GPUS",
    "LINKS_SHOWN",
    "LINK_SAMPLES",
    "NOT_ALL_CLEAR",
    "STEP_SAMPLES",
    "TABLES",
    "TOPOLOGY",
    "ComponentKind",
    "ComponentRef",
    "ConfigError",
    "Crossing",
    "Diagnosis",
    "EventKind",
    "FabricbotError",
    "FaultKind",
    "Finding",
    "FleetAnalysis",
    "InputError",
    "JobExplanation",
    "LinkReading",
    "LinkState",
    "LinkType",
    "Localization",
    "Offender",
    "PortSource",
    "Priority",
    "RedactingFilter",
    "Request",
    "Rule",
    "Severity",
    "Snapshot",
    "SweepResult",
    "TableSchema",
    "Thresholds",
    "analyze_fleet",
    "analyze_tables",
    "counted_as",
    "diagnose",
    "diagnose_snapshot",
    "explain_job",
    "fleet_name_notes",
    "format",
    "headline_name",
    "inert_links",
    "limits",
    "load_thresholds",
    "matched_note",
    "name_notes",
    "normal_name",
    "offenders_of",
    "offending",
    "offending_parts",
    "outside_ascii",
    "priority_rank",
    "redact",
    "redact_values",
    "resolve_name",
    "worst_first",
]
