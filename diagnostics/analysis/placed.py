"""A flagged link placed on its switch port: the switch, port and identity the node's topology graph gives it, each
graph's ports looked up once (a platform's template graph serves every node of it, request after request)."""

from __future__ import annotations

import weakref

from ..enums import LinkType, PortSource
from ..model import Finding
from ..topology import NodeGraph, PortInfo


def placed(f: Finding, graph: NodeGraph | None) -> Finding:
    """A flagged link with its switch, port and identity from the topology graph, where the graph knows the link."""
    if graph is None or f.gpu is None or f.link is None or f.link_type is LinkType.NVSWITCH:
        return f
    port = port_at(graph, f.gpu, f.link, f.link_type.value)
    if port.source is PortSource.UNKNOWN and port.switch_port is None:
        return f
    peer = f.peer_gpu if port.ref.peer_gpu is None else port.ref.peer_gpu  # GPU 0 is a peer
    said = [e for e in port.said if e not in f.evidence]  # what the port reports of its link (NMX-T's down_blame)
    return f.model_copy(update={"ref": port.ref, "switch": port.switch or f.switch, "switch_port": port.switch_port,
                                "port_source": port.source, "peer_gpu": peer, "evidence": [*f.evidence, *said]})


def port_at(graph: NodeGraph, gpu: int, link: int, link_type: str) -> PortInfo:
    """`graph.port_of`, looked up once per graph and link: placing a link and localizing it ask the same port."""
    ports = _PORTS.get(id(graph))
    if ports is None:  # a platform's template serves every node of it, request after request
        ports = _PORTS[id(graph)] = {}
        weakref.finalize(graph, _PORTS.pop, id(graph), None)
    key = (gpu, link, link_type)
    port = ports.get(key)
    if port is None:
        port = ports[key] = graph.port_of(gpu, link, link_type)
    return port


# the ports found on each graph the engine judges on (by its id), kept as long as the graph: graphs are only read
# once built
_PORTS: dict[int, dict[tuple[int, int, str], PortInfo]] = {}
