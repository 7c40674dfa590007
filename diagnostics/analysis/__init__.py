"""The analysis engine, in the order data flows: rates -> rules -> findings -> events -> correlation -> localization,
and its entry points: a fleet's diagnoses (`analyze_fleet`; with a rack inventory, each rack's too), one node's
(`analyze_tables`: the same engine on that node's rows), and a repair's verification (`check_repair`: the repaired
part judged window by window since). It reads tables, never a store: the service (`diagnostics.service`) reads the
windows and asks it.
"""

from ..tables import job_nodes
from .alerting import Decision, FailingPart, Pass, Step, Storm, decide, failing_parts, find_storm
from .applications import events_said, gpu_faults_said
from .correlate import JobExplanation, LinkScore
from .fleet import FleetAnalysis, analyze_fleet, history_needed
from .jobs import History
from .node import analyze_tables, explain_job, node_tables
from .pasted import PASTED_NODE, Reading, judged_whole, pasted_hosts, pasted_node, rates_between
from .rates import counters_in
from .rules import part_priority
from .steps import jobs_on
from .trends import Watch, watch_list
from .urgency import places, urgent_first
from .verify import Diagnostic, RepairCheck, RepairVerdict, check_repair, uuids

__all__ = [
    "PASTED_NODE",
    "Decision",
    "Diagnostic",
    "FailingPart",
    "FleetAnalysis",
    "History",
    "JobExplanation",
    "LinkScore",
    "Pass",
    "Reading",
    "RepairCheck",
    "RepairVerdict",
    "Step",
    "Storm",
    "Watch",
    "analyze_fleet",
    "analyze_tables",
    "check_repair",
    "counters_in",
    "decide",
    "events_said",
    "explain_job",
    "failing_parts",
    "find_storm",
    "gpu_faults_said",
    "history_needed",
    "job_nodes",
    "jobs_on",
    "judged_whole",
    "node_tables",
    "part_priority",
    "pasted_hosts",
    "pasted_node",
    "places",
    "rates_between",
    "urgent_first",
    "uuids",
    "watch_list",
]
