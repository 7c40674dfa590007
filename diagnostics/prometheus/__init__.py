"""Prometheus as a telemetry source: read one node's DCGM series, and sweep the fleet with generated PromQL."""

from ..offenders import Offender, SweepResult
from .client import PrometheusClient, PrometheusError
from .config import ENV_URL, PrometheusConfig, load_config, redacted_url
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
    "load_config",
    "read_node",
    "redacted_url",
    "sweep",
    "sweep_url",
]
