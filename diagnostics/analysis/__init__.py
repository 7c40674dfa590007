"""The analysis engine, in the order data flows: rates -> rules -> findings -> events -> correlation -> localization,
and its entry points: a fleet's diagnoses (`analyze_fleet`), one node's (`analyze_tables`: the same engine on that
node's rows) and a snapshot's (`analyze_snapshot`: counters already summed over a window).
"""

from .correlate import JobExplanation, LinkScore
from .fleet import FleetAnalysis, History, analyze_fleet, history_needed
from .node import analyze_tables, explain_job, node_tables
from .snapshot import analyze_snapshot, degradation_pct

__all__ = [
    "FleetAnalysis",
    "History",
    "JobExplanation",
    "LinkScore",
    "analyze_fleet",
    "analyze_snapshot",
    "analyze_tables",
    "degradation_pct",
    "explain_job",
    "history_needed",
    "node_tables",
]
