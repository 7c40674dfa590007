"""Prometheus as a telemetry source: read one node's DCGM series, and sweep the fleet with generated PromQL."""

from ..offenders import Offender, SweepResult
from .client import PrometheusClient, PrometheusError
from .config import PrometheusConfig, load_config
from .source import read_node
from .sweep import analyze_node, fleet_queries, sweep, sweep_url

__all__ = [
    "Offender",
    "PrometheusClient",
    "PrometheusConfig",
    "PrometheusError",
    "SweepResult",
    "analyze_node",
    "fleet_queries",
    "load_config",
    "read_node",
    "sweep",
    "sweep_url",
]
