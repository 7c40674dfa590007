"""Where a failing link lands: the analysis's own port, else the topology graph's answer, else `unknown`.

Without a graph (no platform, no `topo -m`) a port is `unknown` and the ticket names the command that finds it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..enums import PortSource
from ..model import Diagnosis, Finding
from ..topology import NodeGraph, platform_graph
from ..topology.graph import find_with


@dataclass(frozen=True)
class Port:
    """Where one link lands, and how that is known."""

    switch: str | None
    switch_port: int | None
    source: PortSource
    find_with: str | None = None
    fru: str | None = None
    peer: str | None = None


def find_port_command(finding: Finding) -> str | None:
    return find_with(finding.gpu, finding.link_type.value) if finding.gpu is not None else None


def resolve_graph(diagnosis: Diagnosis, graph: NodeGraph | None) -> NodeGraph | None:
    """The graph given, else the platform template's, else none (a rack's own diagnosis: its findings carry their
    ports, placed by the rack file)."""
    if graph is None and diagnosis.platform and not (diagnosis.rack is not None and diagnosis.tray is None):
        return platform_graph(diagnosis.platform)
    return graph


def port_for(finding: Finding, diagnosis: Diagnosis, graph: NodeGraph | None) -> Port:
    """The analysis's own port when it has one; else the graph's (or the platform template's); else unknown."""
    if finding.switch is not None or finding.port_source is not PortSource.UNKNOWN:
        return Port(finding.switch, finding.switch_port, finding.port_source,
                    None if finding.port_source is PortSource.OBSERVED else find_port_command(finding))
    graph = resolve_graph(diagnosis, graph)
    if graph is not None and finding.gpu is not None:
        info = graph.port_of(finding.gpu, finding.link, finding.link_type.value)
        return Port(info.switch, info.switch_port, info.source, info.find_with, info.fru, info.peer)
    return Port(None, None, PortSource.UNKNOWN, find_port_command(finding))
