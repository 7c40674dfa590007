"""Ports read from the hardware (`nvidia-smi nvlink -R`, NMX-T's link partner) replace a template's assumed ones."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..enums import PortSource
from ..tables import PORT_REPORT
from .graph import NVSWITCH, gpu_index, gpu_node, node_name

if TYPE_CHECKING:
    from .graph import NodeGraph

_BUS_ID = re.compile(r"([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-9a-fA-F])")


def _value(row: Any, name: str) -> Any:
    value = getattr(row, name, None)
    return None if value is None or value is pd.NA or (isinstance(value, float) and value != value) else value


def _bus_id(text: str) -> str | None:
    match = _BUS_ID.search(text)
    return match[1].lower() if match else None


def _bind_bus_ids(graph: NodeGraph, remotes: list[str]) -> None:
    """Template switches with no bus id take the remote bus ids in bus id order (how the driver numbers them)."""
    switches = graph.switches(NVSWITCH)
    nodes: Any = graph.graph.nodes
    known = {nodes[s].get("pci_bus_id") for s in switches}
    unseen = sorted({b for r in remotes if (b := _bus_id(r)) and b not in known})
    free = [s for s in switches if not nodes[s].get("pci_bus_id")]
    if unseen and len(unseen) <= len(free):
        for s, bus in zip(free, unseen, strict=False):
            nodes[s]["pci_bus_id"] = bus
        graph.warnings.append("NVSwitch chips numbered in PCI bus id order: " +
                              ", ".join(f"{s} = {nodes[s]['pci_bus_id']}" for s in switches
                                        if nodes[s].get("pci_bus_id")))


def _target(graph: NodeGraph, remote: str) -> str | None:
    g = gpu_index(remote)
    if g is not None:
        return gpu_node(g)
    name = remote.strip()
    if name in graph.graph:
        return name
    bus = _bus_id(name)
    nodes: Any = graph.graph.nodes
    for s in graph.switches(NVSWITCH):
        if bus and nodes[s].get("pci_bus_id") == bus:
            return s
    match = re.match(r"^NVSwitch ?(\d+)$", name, re.IGNORECASE)
    if match:
        return node_name(NVSWITCH, int(match[1]))
    return None


def with_observed_ports(graph: NodeGraph, topology: pd.DataFrame) -> NodeGraph:
    """A copy where the `remote` rows (from `nvidia-smi nvlink -R`) make those ports observed."""
    out = graph.copy()
    observe_ports(out, topology)
    return out


def observe_ports(out: NodeGraph, topology: pd.DataFrame) -> None:
    """`with_observed_ports` in place, for a graph its caller has just made."""
    rows = topology[topology["relation"].astype(str) == "remote"] if "relation" in topology else topology.iloc[:0]
    _bind_bus_ids(out, [str(r) for r in rows["b"].dropna()])
    g = out.graph
    unplaced: dict[str, tuple[str, dict[str, list[str]]]] = {}  # a remote end no node is: where first, whose links
    for row in rows.itertuples(index=False):
        gpu = gpu_index(str(_value(row, "a") or ""))
        link = _value(row, "link")
        remote = str(_value(row, "b") or "")
        port = _value(row, "remote_port")
        where = _value(row, "source") or "nvlink -R"
        target = _target(out, remote)
        if gpu is None or link is None or target is None:
            unplaced.setdefault(remote, (str(where), {}))[1].setdefault(str(_value(row, "a")), []).append(str(link))
            continue
        link = int(link)
        attrs: dict[str, Any] = {"link_type": "nvlink", "gen": None}
        for _, v, key, data in list(out.gpu_edges(gpu, "nvlink")):
            if out._link_on(gpu, data) == link:
                attrs = dict(data)
                g.remove_edge(gpu_node(gpu), v, key)
                break
        else:
            out.warnings.append(f"{where}: GPU {gpu} link {link} is not in the template; added from nvlink -R")
        if target not in g:
            g.add_node(target, kind=NVSWITCH, index=target.rsplit(" ", 1)[-1])
        attrs["port_source"] = PortSource.OBSERVED.value
        detail = str(_value(row, "detail") or "")
        attrs["said"] = (detail[len(PORT_REPORT):],) if detail.startswith(PORT_REPORT) else ()
        peer = gpu_index(target)
        if peer is not None:
            attrs.update(ends={gpu: link, peer: int(port) if port is not None else None})
            attrs.pop("link", None)
            key = f"nvlink {gpu}:{link}"
        else:
            attrs.update(gpu=gpu, link=link, switch=target, switch_port=int(port) if port is not None else None)
            attrs.pop("ends", None)
            key = f"nvlink {link}"
        g.add_edge(gpu_node(gpu), target, key=key, **attrs)
    for remote, (where, ends) in unplaced.items():  # one line per remote end: bridged boards have dozens of links
        said = "; ".join(f"{end} link{'s' if len(links) > 1 else ''} {', '.join(links)}" for end, links in ends.items())
        out.warnings.append(f"{where}: cannot place remote end {remote!r} of {said}")
