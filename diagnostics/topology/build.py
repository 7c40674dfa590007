"""TOPOLOGY rows (from `topo -m` or the NCCL XML) -> NodeGraph: the matching platform template, or a generic graph.

The descriptions give link counts, never ports: a matched platform keeps its template's assumed ports, a generic
graph has bundles of links whose ports are unknown. Either way the graph answers every lookup.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import networkx as nx
import pandas as pd

from ..config.platforms import all_platforms
from ..enums import PortSource
from .facts import Facts
from .graph import CPU, FABRIC, GPU, NVSWITCH, NodeGraph, gpu_node, node_name
from .observed import observe_ports
from .templates import platform_graph

MIN_SCORE = 0.75  # share of the described GPU pairs that must agree with a template


def _signature(graph: NodeGraph) -> tuple[dict[tuple[int, int], int], dict[int, tuple[int, ...]]]:
    """What `topo -m` would show between each GPU pair, and each GPU's links per NVSwitch (sorted)."""
    totals = {g: sum(1 for _ in graph.gpu_edges(g, "nvlink")) for g in graph.gpus}
    spread: dict[int, tuple[int, ...]] = {}
    pairs: dict[tuple[int, int], int] = {}
    for g in graph.gpus:
        per_peer = Counter(v for _, v, _, _ in graph.gpu_edges(g, "nvlink"))
        spread[g] = tuple(sorted(n for v, n in per_peer.items() if graph.graph.nodes[v]["kind"] == NVSWITCH))
        for h in graph.gpus:
            if h > g:
                direct = per_peer.get(gpu_node(h), 0)
                pairs[(g, h)] = direct or (min(totals[g], totals[h]) if spread[g] else 0)
    return pairs, spread


def _short(facts: Facts, graph: NodeGraph, spread: dict[int, tuple[int, ...]]) -> dict[int, int]:
    """On a switched template, the described GPUs short of their NVLinks (GPU -> the most `topo -m` shows it with),
    when fewer than half are: a pair through the switches shows the fewer of its GPUs' links, so one GPU with a link
    down lowers all its pairs, and two such GPUs would leave no template fitting the board they are faults of. A GPU
    with none up (NODE or SYS to every peer) is the shortest of all."""
    if not any(spread.values()):
        return {}
    most: dict[int, int] = {}
    for (a, b), seen in facts.pair_nvlinks().items():
        for g in (a, b):
            most[g] = max(most.get(g, 0), seen)
    short = {g: n for g, n in most.items() if g in spread and n < sum(spread[g])}
    return short if 2 * len(short) < len(most) else {}


def _score(facts: Facts, graph: NodeGraph) -> tuple[float, list[str]]:
    pairs, spread = _signature(graph)
    short = _short(facts, graph, spread)
    checks = 0
    agree = 0
    notes = []
    lowered: dict[int, int] = {}  # a short GPU whose pairs it lowers: one note for the GPU, not one per pair
    for (a, b), seen in sorted(facts.pair_nvlinks().items()):
        want = pairs.get((a, b))
        if want is None:
            continue
        checks += 1
        if seen == want:
            agree += 1
        elif {a, b} & set(short) and seen == min(short.get(a, want), short.get(b, want)):
            agree += 1  # a pair lowered by its short GPU fits the board that GPU is a fault of
            for g in {a, b} & set(short):
                if short[g] == seen:
                    lowered[g] = want
        else:
            notes.append(f"GPU {a} - GPU {b}: {seen} NVLinks where {graph.named} has {want}")
    notes[:0] = [f"GPU {g}: {short[g]} NVLinks where {graph.named} has {want}: a pair through the switches shows "
                 "the fewer of its two GPUs' links, so each of its pairs reads short, not a fault of each pair"
                 for g, want in sorted(lowered.items())]
    for g, seen_spread in sorted(facts.switch_spread().items()):
        if g in spread:
            checks += 1
            if seen_spread == spread[g]:
                agree += 1
            else:
                notes.append(f"GPU {g}: links per NVSwitch {list(seen_spread)} where {graph.named} has "
                             f"{list(spread[g])}")
    return (agree / checks if checks else 0.0), notes


def _choose(facts: Facts, hint: str | None) -> tuple[NodeGraph | None, list[str]]:
    """The template of the platform the description fits best (`hint`, where one is named) and its notes; the other
    platforms it fits as well are the graph's `alike` (an HGX H100, H200 and B200 each show 18 NVLinks a GPU)."""
    platforms = all_platforms()
    if hint:
        graph = platform_graph(hint)
        _, notes = _score(facts, graph)
        return graph, notes
    scored: list[tuple[float, bool, int, str, list[str]]] = []
    for name, data in platforms.items():
        if int(data.get("gpu_count", 0)) != len(facts.gpus) or data.get("rack"):
            continue  # a rack's host is not told from its own topology: its links land in the rack
        graph = platform_graph(name)
        score, notes = _score(facts, graph)
        if score >= MIN_SCORE:
            ids = {str(i).lower() for i in data.get("pci_device_ids", [])}
            scored.append((score, bool(ids & facts.device_ids), int(data.get("detect_preference", 0)), name, notes))
    if not scored:
        return None, []
    scored.sort(key=lambda t: (t[0], t[1], t[2]), reverse=True)
    best = scored[0]
    notes = list(best[4])
    ties = tuple(s[3] for s in scored[1:] if s[0] == best[0] and s[1] == best[1])
    chosen = platform_graph(best[3])
    if ties:  # its notes name every platform it fits
        chosen = chosen.copy()
        chosen.alike = ties
        notes = _score(facts, chosen)[1]
        chosen = _shared_fabric(chosen)
        notes.append(f"the description fits {', '.join([best[3], *ties])} alike: its links are checked against the "
                     "NVLink counts they share; their NVSwitch chips and ports differ, so which chip and port a link "
                     "lands on, and the part a repair names, are not told from it (name the platform with --platform "
                     "or a nodes.csv; `nvidia-smi -q | grep -i \"product name\"` says which)")
    return chosen, notes


def _shared_fabric(graph: NodeGraph) -> NodeGraph:
    """The graph with its NVSwitch chips as one fabric, every GPU link to them kept by its link index with its chip
    and port unknown: boards a description fits alike share their GPUs' NVLink counts, not their switches (an HGX H100
    has four chips, an HGX B200 two), so naming a template's chip or port would name another board's. Only the FRU
    words every one of the boards uses are kept."""
    g = graph.graph
    chips = set(graph.switches(NVSWITCH))
    if not chips:
        return graph
    links = [(u, v, k, d) for u, v, k, d in g.edges(keys=True, data=True) if (u in chips) != (v in chips)]
    g.remove_nodes_from(chips)
    g.add_node(FABRIC, kind=NVSWITCH, index="fabric")
    for u, v, key, data in links:
        gpu = v if u in chips else u
        g.add_edge(gpu, FABRIC, key=key, **{**data, "switch": FABRIC, "switch_port": None,
                                             "port_source": PortSource.UNKNOWN.value})
    words = [platform_graph(name).fru for name in graph.alike]
    graph.fru = {k: v for k, v in graph.fru.items() if all(w.get(k) == v for w in words)}
    return graph


def _bind_switch_ids(graph: NodeGraph, facts: Facts) -> None:
    """Name the template's NVSwitch chips by the PCI bus ids the description gives, in bus id order."""
    described = facts.switch_ids()
    template = graph.switches("nvswitch")
    if template == [FABRIC]:
        return  # boards fitted alike: which chip is which is not told
    if not described or len(described) != len(template):
        if described:
            graph.warnings.append(f"the description names {len(described)} NVSwitch chips; {graph.platform} has "
                                  f"{len(template)}")
        return
    for node, bus_id in zip(template, described, strict=True):
        graph.graph.nodes[node]["pci_bus_id"] = bus_id


def generic_graph(gpus: int | list[int], *, node_id: str | None = None, facts: Facts | None = None,
                  warnings: list[str] | None = None) -> NodeGraph:
    """A graph for a node no template fits: what the description says, with every port unknown."""
    indices = list(range(gpus)) if isinstance(gpus, int) else sorted(gpus)
    g = nx.MultiGraph(platform=None)
    for i in indices:
        g.add_node(gpu_node(i), kind=GPU, index=i)
    graph = NodeGraph(g, platform=None, warnings=list(warnings or []), node_id=node_id)
    if facts is None:
        graph.warnings.append("no platform: links are drawn as the findings name them; ports unknown")
        return graph
    switch_links = facts.switch_links()
    for s, bus_id in enumerate(facts.switch_ids()):
        g.add_node(node_name(NVSWITCH, s), kind=NVSWITCH, index=s, pci_bus_id=bus_id)
        for gpu, count in switch_links.get(bus_id, {}).items():
            g.add_edge(gpu_node(gpu), node_name(NVSWITCH, s), key="nvlink bundle", link_type="nvlink",
                       gpu=gpu, link=None, nvlinks=count, port_source="unknown")
    pairs = {k: v for k, v in facts.pair_nvlinks().items() if v > 0}
    if not switch_links and pairs:
        complete = len(pairs) == len(indices) * (len(indices) - 1) // 2 and len(set(pairs.values())) == 1
        each = next(iter(pairs.values())) * (len(indices) - 1)  # the links each GPU would have if they were direct
        if complete and len(indices) > 2 and each > _most_nvlinks():
            # every pair shows the same NV#, more in all than a GPU has: one switch fabric the description does not
            # name (a 4-GPU board's NV6 to each of its 3 peers is its 18 links, direct)
            fabric = FABRIC
            g.add_node(fabric, kind=NVSWITCH, index="fabric")
            count = next(iter(pairs.values()))
            for gpu in indices:
                g.add_edge(gpu_node(gpu), fabric, key="nvlink bundle", link_type="nvlink", gpu=gpu, link=None,
                           nvlinks=count, port_source="unknown")
            graph.warnings.append(f"every GPU pair shows NV{count}: drawn as one NVSwitch fabric whose chips "
                                  "the description does not name")
        else:
            for (a, b), count in pairs.items():
                g.add_edge(gpu_node(a), gpu_node(b), key="nvlink bundle", link_type="nvlink",
                           ends={a: None, b: None}, nvlinks=count, port_source="unknown")
    for gpu, numa in facts.numa.items():
        cpu = node_name(CPU, numa)
        g.add_node(cpu, kind=CPU, index=numa)
        g.add_edge(gpu_node(gpu), cpu, key="pcie", link_type="pcie", gpu=gpu, port_source="unknown")
    return graph


def _most_nvlinks() -> int:
    """The most NVLinks any GPU of a known platform has (18: Hopper and Blackwell)."""
    return max((int(d["nvlinks_per_gpu"]) for d in all_platforms().values() if "nvlinks_per_gpu" in d), default=18)


def graph_from_topology(topology: pd.DataFrame, *, node_id: str | None = None,
                        platform: str | None = None) -> NodeGraph:
    """The node's graph from TOPOLOGY rows: the platform they fit (or `platform`), else a generic graph."""
    facts = Facts.from_rows(topology)
    node_id = node_id or facts.node_id
    graph, notes = _choose(facts, platform) if facts.gpus else (None, [])
    if graph is None:
        count = len(facts.gpus)
        what = f"{count} GPUs" + (f" with {facts.describe_links()}" if count else "")
        reason = "no GPUs described" if not count else f"no platform template fits {what}"
        graph = generic_graph(facts.gpus or [], node_id=node_id, facts=facts,
                              warnings=[f"{reason}: drawing a generic graph (ports unknown)"])
    else:
        graph = graph.copy()
        graph.node_id = node_id
        graph.warnings.extend(notes)
        _bind_switch_ids(graph, facts)
        _annotate(graph, facts)
    graph.warnings.extend(facts.warnings)
    if facts.has_remote:
        observe_ports(graph, topology)
    return graph


def _annotate(graph: NodeGraph, facts: Facts) -> None:
    """Copy what the description knows about each device (bus id, NUMA node, NIC name) onto the graph."""
    nodes: Any = graph.graph.nodes
    for gpu, bus_id in facts.gpu_bus_ids.items():
        if gpu_node(gpu) in nodes:
            nodes[gpu_node(gpu)]["pci_bus_id"] = bus_id
    for gpu, numa in facts.numa.items():
        if gpu_node(gpu) in nodes:
            nodes[gpu_node(gpu)]["numa"] = numa
    for index, name in facts.nic_names.items():
        nic = f"NIC {index}"
        if nic in nodes:
            nodes[nic]["device"] = name
    missing = [g for g in graph.gpus if g not in facts.gpus]
    if missing:
        graph.warnings.append(f"the description lists no GPU {', '.join(map(str, missing))}; "
                              f"{graph.platform} has {len(graph.gpus)}")

