"""The analysis engine, in the order data flows: rates -> rules -> findings -> events -> correlation -> localization,
and its entry points: a fleet's diagnoses (`analyze_fleet`; with a rack inventory, each rack's too), one node's
(`analyze_tables`: the same engine on that node's rows), a stored rack's (`analyze_rack`: all its trays' findings
weighed together), a snapshot's (`analyze_snapshot`: counters already summed over a window), and a repair's
verification (`check_repair`: the repaired part judged window by window since).
"""

from ..tables import job_nodes
from .correlate import JobExplanation, LinkScore, jobs_on
from .fleet import FleetAnalysis, analyze_fleet, history_needed
from .jobs import History
from .node import analyze_tables, explain_job, node_tables
from .pasted import Reading, rates_between
from .rates import counters_in
from .snapshot import analyze_snapshot, degradation_pct
from .stored import (
    CORRELATION_SPAN,
    analyze_rack,
    analyze_store,
    fleet_result,
    node_span,
    planned,
    read_node,
    stored_diagnosis,
    sweep_store,
    sweep_tables,
    watch_store,
)
from .trends import Watch, watch_list
from .verify import RepairCheck, RepairVerdict, check_repair, check_stored_repair

__all__ = [
    "CORRELATION_SPAN",
    "FleetAnalysis",
    "History",
    "JobExplanation",
    "LinkScore",
    "Reading",
    "RepairCheck",
    "RepairVerdict",
    "Watch",
    "analyze_fleet",
    "analyze_rack",
    "analyze_snapshot",
    "analyze_store",
    "analyze_tables",
    "check_repair",
    "check_stored_repair",
    "counters_in",
    "degradation_pct",
    "explain_job",
    "fleet_result",
    "history_needed",
    "job_nodes",
    "jobs_on",
    "node_span",
    "node_tables",
    "planned",
    "rates_between",
    "read_node",
    "stored_diagnosis",
    "sweep_store",
    "sweep_tables",
    "watch_list",
    "watch_store",
]
