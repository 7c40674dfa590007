"""Each node's fabric as a graph: platform templates, graphs from real descriptions, port and FRU lookup.

    platform_graph("hgx-h100-8gpu").port_of(2, 1)   # GPU 2 NVLink 1 -> NVSwitch 0 port 9 (assumed)
"""

from .build import generic_graph, graph_from_topology
from .graph import NodeGraph, PortInfo, gpu_index, gpu_node
from .inventory import GpuIdentity, Inventory, load_inventory
from .templates import platform_graph, platform_names

__all__ = [
    "GpuIdentity",
    "Inventory",
    "NodeGraph",
    "PortInfo",
    "generic_graph",
    "gpu_index",
    "gpu_node",
    "graph_from_topology",
    "load_inventory",
    "platform_graph",
    "platform_names",
]
