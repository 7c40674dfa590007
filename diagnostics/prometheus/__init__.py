"""Prometheus as a telemetry source: read one node's DCGM series, and sweep the fleet with generated PromQL."""

from ..offenders import Offender, SweepResult
from .client import PrometheusClient, PrometheusError
from .config import ENV_URL, PrometheusConfig, load_config, redacted_url
from .rules import labels_only, recording_name, rules_yaml, window_text
from .source import read_node
from .sweep import analyze_node, fleet_queries, sweep, sweep_url

__all__ = [
    "ENV_URL",
    "Offender",
    "PrometheusClient",
    "PrometheusConfig",
    "PrometheusError",
    "SweepResult",
    "analyze_node",
    "fleet_queries",
    "labels_only",
    "load_config",
    "read_node",
    "recording_name",
    "redacted_url",
    "rules_yaml",
    "sweep",
    "sweep_url",
    "window_text",
]
