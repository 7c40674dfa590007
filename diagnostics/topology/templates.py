"""Platform files -> NodeGraph. The layout lives in `data/platforms/<name>.toml`; this module only reads it.

A template's port numbers are `assumed` (vendors do not publish which GPU link lands on which switch port);
`observed.with_observed_ports` replaces them with what `nvidia-smi nvlink -R` reports.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import networkx as nx

from ..config.platforms import all_platforms, platform_data, platform_dirs
from ..config.racks import rack_dirs
from ..enums import PortSource
from ..errors import ConfigError
from .graph import CPU, GPU, NIC, NVSWITCH, PCIE_SWITCH, NodeGraph, gpu_node, node_name
from .rack import host_graph, rack_graph


def platform_names() -> list[str]:
    return sorted(all_platforms())


def _int(data: dict[str, Any], key: str, where: str, default: int | None = None) -> int:
    value = data.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ConfigError(f"{where}: '{key}' must be a whole number >= 0 (got {value!r})")
    return value


def _source(section: dict[str, Any], where: str) -> PortSource:
    raw = section.get("port_source", "assumed")
    try:
        return PortSource(raw)
    except ValueError:
        raise ConfigError(f"{where}: port_source must be observed, assumed or unknown (got {raw!r})") from None


def _add_nvswitches(g: nx.MultiGraph, section: dict[str, Any], gpus: int, gen: int | None, where: str) -> None:
    count = _int(section, "count", f"{where} [nvswitch]")
    per_switch = section.get("links_per_switch", [])
    if len(per_switch) != count:
        raise ConfigError(f"{where} [nvswitch]: links_per_switch has {len(per_switch)} entries for {count} switches")
    ports = _int(section, "ports", f"{where} [nvswitch]", default=sum(per_switch) * gpus)
    source = _source(section, f"{where} [nvswitch]")
    for s in range(count):
        g.add_node(node_name(NVSWITCH, s), kind=NVSWITCH, index=s, ports=ports)
    for gpu in range(gpus):
        link = 0
        for s, n in enumerate(per_switch):
            for k in range(n):
                port = gpu * n + k
                switch = node_name(NVSWITCH, s)
                if port >= ports:
                    raise ConfigError(f"{where} [nvswitch]: {switch} needs port {port} but has {ports} ports")
                g.add_edge(gpu_node(gpu), switch, key=f"nvlink {link}", link_type="nvlink", gpu=gpu, link=link,
                           switch=switch, switch_port=port, port_source=source.value, gen=gen)
                link += 1


def _add_direct(g: nx.MultiGraph, section: dict[str, Any], gpus: int, gen: int | None, where: str) -> None:
    source = _source(section, f"{where} [nvlink]")
    bridge = section.get("kind") == "bridge"
    next_link = dict.fromkeys(range(gpus), 0)
    # the link numbers a GPU's direct links take, in order (default 0, 1, 2, ...): a card that wires some of its
    # die's links numbers them with gaps
    numbers = section.get("links")
    if numbers is not None and (not isinstance(numbers, list) or len(set(numbers)) != len(numbers)
                                or any(not isinstance(n, int) or isinstance(n, bool) or n < 0 for n in numbers)):
        raise ConfigError(f"{where} [nvlink] links: a list of distinct link numbers (got {numbers!r})")
    for i, pair in enumerate(section.get("direct", [])):
        ends = pair.get("gpus", [])
        if len(ends) != 2 or any(not isinstance(e, int) or not 0 <= e < gpus for e in ends) or ends[0] == ends[1]:
            raise ConfigError(f"{where} [nvlink] direct[{i}]: gpus must be two different GPUs 0-{gpus - 1} "
                              f"(got {ends!r})")
        a, b = ends
        for _ in range(_int(pair, "count", f"{where} [nvlink] direct[{i}]", default=1)):
            la, lb = next_link[a], next_link[b]
            if numbers is not None:
                if max(la, lb) >= len(numbers):
                    raise ConfigError(f"{where} [nvlink] direct[{i}]: GPU {a if la >= lb else b} has more links "
                                      f"than links lists ({len(numbers)})")
                la, lb = numbers[la], numbers[lb]
            next_link[a] += 1
            next_link[b] += 1
            g.add_edge(gpu_node(a), gpu_node(b), key=f"nvlink {a}:{la}", link_type="nvlink",
                       ends={a: la, b: lb}, port_source=source.value, gen=gen, bridge=bridge)


def _add_pcie(g: nx.MultiGraph, section: dict[str, Any], gpus: int, where: str) -> None:
    gen = section.get("generation")
    width = section.get("width")
    cpus = max(1, _int(section, "cpus", f"{where} [pcie]", default=1))
    for c in range(cpus):
        g.add_node(node_name(CPU, c), kind=CPU, index=c)
    placed: set[int] = set()
    for s, sw in enumerate(section.get("switches", [])):
        cpu = node_name(CPU, _int(sw, "cpu", f"{where} [pcie] switches[{s}]", default=0))
        if cpu not in g:
            raise ConfigError(f"{where} [pcie] switches[{s}]: {cpu} is not one of the {section.get('cpus')} CPUs")
        name = node_name(PCIE_SWITCH, s)
        g.add_node(name, kind=PCIE_SWITCH, index=s)
        g.add_edge(name, cpu, key="uplink", link_type="pcie", gen=gen, width=width, port_source="assumed")
        port = 1
        for gpu in sw.get("gpus", []):
            if not isinstance(gpu, int) or not 0 <= gpu < gpus:
                raise ConfigError(f"{where} [pcie] switches[{s}]: no GPU {gpu!r} on a {gpus}-GPU platform")
            g.add_edge(gpu_node(gpu), name, key="pcie", link_type="pcie", gpu=gpu, switch=name, switch_port=port,
                       gen=gen, width=width, port_source="assumed")
            placed.add(gpu)
            port += 1
        for nic in sw.get("nics", []):
            g.add_node(node_name(NIC, nic), kind=NIC, index=nic)
            g.add_edge(node_name(NIC, nic), name, key="pcie", link_type="pcie", switch=name, switch_port=port,
                       port_source="assumed")
            port += 1
    for gpu in sorted(set(range(gpus)) - placed):  # no switch named: straight onto a CPU root port
        cpu = node_name(CPU, gpu * cpus // gpus)
        g.add_edge(gpu_node(gpu), cpu, key="pcie", link_type="pcie", gpu=gpu, gen=gen, width=width,
                   port_source="assumed")


def platform_graph(name: str) -> NodeGraph:
    """The template graph of a platform named by its file (`hgx-h100-8gpu`, ...)."""
    data = platform_data(name)
    if data.get("rack"):  # a rack's host: its links land in the rack, so the rack file lays them out
        return host_graph(name)
    where = data.get("_path", name).rsplit("/", 1)[-1]
    gpus = _int(data, "gpu_count", where)
    gen = data.get("nvlink_generation")
    g = nx.MultiGraph(platform=name)
    for i in range(gpus):
        g.add_node(gpu_node(i), kind=GPU, index=i)
    if "nvswitch" in data:
        _add_nvswitches(g, data["nvswitch"], gpus, gen, where)
    if "nvlink" in data:
        _add_direct(g, data["nvlink"], gpus, gen, where)
    if "pcie" in data:
        _add_pcie(g, data["pcie"], gpus, where)
    warnings = []
    if data.get("layout_source") == "assumed":
        warnings.append(f"{name}: the switch layout is assumed, not confirmed")
    graph = NodeGraph(g, platform=name, warnings=warnings, fru=dict(data.get("fru", {})),
                      nvlinks_per_gpu=_int(data, "nvlinks_per_gpu", where, default=0))
    for gpu in range(gpus):
        have = sum(1 for _ in graph.gpu_edges(gpu, "nvlink"))
        if have != graph.nvlinks_per_gpu:
            raise ConfigError(f"{where}: GPU {gpu} gets {have} NVLinks from the layout, "
                              f"but nvlinks_per_gpu = {graph.nvlinks_per_gpu}")
    return graph


def template(platform: str, rack: str | None = None, slot: int | None = None) -> NodeGraph:
    """A platform's template graph, or a rack's compute tray in its slot, built once per platform folders: it is only
    read (a fleet's nodes of one platform, one node's view asked again, a repair plan all look up its ports)."""
    return _template(platform, rack, slot, tuple(platform_dirs()), tuple(rack_dirs()))


@cache
def _template(platform: str, rack: str | None, slot: int | None, platforms: tuple[Path, ...],
              racks: tuple[Path, ...]) -> NodeGraph:
    return rack_graph(rack).tray_graph(slot) if rack is not None and slot is not None else platform_graph(platform)
