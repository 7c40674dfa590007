"""One node's fabric as a networkx MultiGraph, and the port lookups tickets quote.

Nodes are named as people say them ("GPU 2", "NVSwitch 1", "PCIe switch 3", "CPU 0", "NIC 4") and carry `kind`.
Every NVLink or PCIe link is one edge (parallel NVLinks are parallel edges) whose attributes say where it lands
and how that is known (`port_source`): observed from the hardware, assumed from a platform template, or unknown.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
from pydantic import BaseModel, ConfigDict

from ..components import ComponentRef, switch_name
from ..enums import LinkType, PortSource

GPU, NVSWITCH, PCIE_SWITCH, CPU, NIC = "gpu", "nvswitch", "pcie_switch", "cpu", "nic"
SWITCH_KINDS = (NVSWITCH, PCIE_SWITCH)

_NODE_NAME = {GPU: "GPU {}", PCIE_SWITCH: "PCIe switch {}", CPU: "CPU {}", NIC: "NIC {}"}


def node_name(kind: str, index: int | str) -> str:
    return switch_name(index) if kind == NVSWITCH else _NODE_NAME[kind].format(index)


# A node's NVSwitch chips as one, where the description does not tell them apart: which chip a link lands on is unknown
FABRIC = node_name(NVSWITCH, "fabric")


def gpu_node(gpu: int) -> str:
    return node_name(GPU, gpu)


_GPU_NAME = re.compile(r"^GPU ?(\d+)$")


def gpu_index(name: str) -> int | None:
    """The GPU index of a node name ("GPU 3" or "GPU3"), or None."""
    match = _GPU_NAME.match(name.strip())
    return int(match[1]) if match else None


def find_with(gpu: int, link_type: str) -> str:
    """The command that reads where this GPU's link really lands."""
    if link_type == LinkType.PCIE:
        return f"nvidia-smi -q -i {gpu} -d PCI; lspci -tv"
    return f"nvidia-smi nvlink -R -i {gpu}"


class PortInfo(BaseModel):
    """Where one GPU link lands, which part holds it, and how that is known."""

    model_config = ConfigDict(frozen=True)

    gpu: int
    link: int | None
    link_type: str
    peer: str
    peer_kind: str
    switch: str | None = None
    switch_port: int | None = None
    peer_link: int | None = None
    source: PortSource = PortSource.UNKNOWN
    find_with: str | None = None
    fru: str
    fru_next: str | None = None
    ref: ComponentRef
    expected_gen: int | None = None
    expected_width: int | None = None
    said: tuple[str, ...] = ()  # what the port reports of its link, where its far end was read (NMX-T's down_blame)
    note: str | None = None
    slot: str | None = None
    gpu_serial: str | None = None
    gpu_uuid: str | None = None

    @property
    def component(self) -> str:
        return self.ref.name


class _Blank(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return "?"


@dataclass
class NodeGraph:
    """A node's fabric: the graph, the platform it follows (None for a generic graph) and what was uncertain."""

    graph: nx.MultiGraph
    platform: str | None = None
    warnings: list[str] = field(default_factory=list)
    node_id: str | None = None
    fru: dict[str, str] = field(default_factory=dict)
    nvlinks_per_gpu: int | None = None
    alike: tuple[str, ...] = ()  # the other platforms a description fits as well as `platform`: its parts unknown

    @property
    def named(self) -> str | None:
        """The platform as a text says what it has: 'hgx-h100-8gpu', or 'each of hgx-h100-8gpu, hgx-h200-8gpu,
        hgx-b200-8gpu' where the description fits them alike."""
        if self.platform is None or not self.alike:
            return self.platform
        return "each of " + ", ".join([self.platform, *self.alike])

    @property
    def either(self) -> str | None:
        """The platform as a title names it: 'hgx-h100-8gpu', or 'hgx-h100-8gpu, hgx-h200-8gpu or hgx-b200-8gpu'."""
        if self.platform is None or not self.alike:
            return self.platform
        *first, last = [self.platform, *self.alike]
        return f"{', '.join(first)} or {last}"

    # -- nodes -------------------------------------------------------------------------------------------------
    @property
    def gpus(self) -> list[int]:
        return sorted(d["index"] for _, d in self.graph.nodes(data=True) if d.get("kind") == GPU)

    def nodes_of(self, kind: str) -> list[str]:
        found = [(d.get("index", 0), n) for n, d in self.graph.nodes(data=True) if d.get("kind") == kind]
        return [n for _, n in sorted(found, key=lambda t: (str(type(t[0])), t[0]))]

    def switches(self, kind: str | None = None) -> list[str]:
        """NVSwitch chips, then PCIe switches (or only those of `kind`)."""
        kinds = (kind,) if kind else SWITCH_KINDS
        return [n for k in kinds for n in self.nodes_of(k)]

    def neighbours(self, node: str) -> list[str]:
        if node not in self.graph:
            return []
        return sorted(set(self.graph.neighbors(node)))

    # -- links -------------------------------------------------------------------------------------------------
    def gpu_edges(self, gpu: int, link_type: str | None = None) -> Iterator[tuple[str, str, str, dict[str, Any]]]:
        """Every edge leaving GPU `gpu` (u is always the GPU), optionally of one link type."""
        name = gpu_node(gpu)
        if name not in self.graph:
            return
        for _, v, key, data in self.graph.edges(name, keys=True, data=True):
            if link_type is None or data.get("link_type") == link_type:
                yield name, v, key, data

    def _link_on(self, gpu: int, data: dict[str, Any]) -> int | None:
        """The link index at GPU `gpu`'s end of an edge (a GPU-GPU edge has one per end)."""
        ends: dict[int, int | None] = data.get("ends", {})
        return ends[gpu] if gpu in ends else data.get("link")

    def expected_links(self, gpu: int, link_type: str = "nvlink") -> int:
        """Links this GPU should have up, by the platform's SKU (12 of 18 by design is 12), else by the graph."""
        if link_type == LinkType.PCIE:
            return 1 if gpu in self.gpus else 0
        if self.nvlinks_per_gpu is not None and gpu in self.gpus:
            return self.nvlinks_per_gpu
        return sum(int(d.get("nvlinks", 1)) for *_, d in self.gpu_edges(gpu, "nvlink"))

    def has_link(self, gpu: int, link: int | None, link_type: str = "nvlink") -> bool:
        if link is None:
            return any(True for _ in self.gpu_edges(gpu, link_type))
        return any(self._link_on(gpu, d) == link for *_, d in self.gpu_edges(gpu, link_type))

    def links_of(self, gpu: int) -> list[PortInfo]:
        """Every link of the GPU, NVLinks in link order, then PCIe."""
        out = [self._port(gpu, v, d) for _, v, _, d in self.gpu_edges(gpu)]
        return sorted(out, key=lambda p: (p.link_type != "nvlink", p.link if p.link is not None else -1, p.peer))

    def port_of(self, gpu: int, link: int | None, link_type: str = "nvlink") -> PortInfo:
        """Where GPU `gpu`'s link `link` lands; an honest `unknown` (with the command to find out) if not known."""
        kind = str(LinkType(link_type))
        candidates = [(v, d) for _, v, _, d in self.gpu_edges(gpu, kind)]
        if kind == LinkType.PCIE and candidates:
            return self._port(gpu, *candidates[0])
        for v, d in candidates:
            if link is not None and self._link_on(gpu, d) == link:
                return self._port(gpu, v, d)
        if gpu not in self.gpus:
            where = f"platform {self.platform}" if self.platform else "this node's description"
            have = f"GPUs {self.gpus[0]}-{self.gpus[-1]}" if self.gpus else "no GPUs"
            note = f"GPU {gpu} is not in the node: {where} has {have}"
        elif link is not None and self.platform and any(self._link_on(gpu, d) is not None for _, d in candidates):
            note = f"GPU {gpu} has no {kind} link {link} on {self.platform} (expected {self.expected_links(gpu)})"
        else:
            note = "the description gives link counts, not ports"
        peers = {v for v, _ in candidates}
        peer = peers.pop() if len(peers) == 1 else "unknown"
        return self._unknown(gpu, link, kind, peer, note)

    def _unknown(self, gpu: int, link: int | None, kind: str, peer: str, note: str) -> PortInfo:
        peer_kind = self.graph.nodes[peer].get("kind", "unknown") if peer in self.graph else "unknown"
        slot, serial, uuid = self._identity(gpu)
        return PortInfo(
            slot=slot, gpu_serial=serial, gpu_uuid=uuid,
            gpu=gpu, link=link, link_type=kind, peer=peer, peer_kind=peer_kind,
            switch=peer if peer_kind in SWITCH_KINDS else None, source=PortSource.UNKNOWN,
            find_with=find_with(gpu, kind), fru=self._fru("gpu", gpu=gpu) or f"GPU {gpu} (part unknown)",
            ref=_ref(gpu, link, kind, peer, peer_kind, None), note=note,
        )

    def _port(self, gpu: int, peer: str, data: dict[str, Any]) -> PortInfo:
        kind = str(data.get("link_type", "nvlink"))
        link = self._link_on(gpu, data)
        peer_kind = str(self.graph.nodes[peer].get("kind", "unknown"))
        source = PortSource(data.get("port_source", PortSource.UNKNOWN))
        switch = peer if peer_kind in SWITCH_KINDS else None
        port = data.get("switch_port") if switch else None
        peer_link = data.get("ends", {}).get(gpu_index(peer)) if peer_kind == GPU else None
        fields = {"gpu": gpu, "peer": peer, "switch": switch or peer, "pcie_switch": peer, "port": port,
                  "link": link, "peer_link": peer_link}
        fru = self._fru(kind, **fields) or self._fru("gpu", **fields) or f"GPU {gpu} (part unknown)"
        slot, serial, uuid = self._identity(gpu)
        return PortInfo(
            slot=slot, gpu_serial=serial, gpu_uuid=uuid,
            gpu=gpu, link=link, link_type=kind, peer=peer, peer_kind=peer_kind, switch=switch,
            switch_port=port, peer_link=peer_link, source=source,
            find_with=None if source is PortSource.OBSERVED else find_with(gpu, kind),
            fru=fru, fru_next=self._fru(f"{kind}_next", **fields),
            ref=_ref(gpu, link, kind, peer, peer_kind, port),
            expected_gen=data.get("gen"), expected_width=data.get("width"), said=tuple(data.get("said", ())),
            note=None if link is not None or kind == LinkType.PCIE else "the description gives link counts, not ports",
        )

    def _fru(self, key: str, **fields: Any) -> str | None:
        text = self.fru.get(key)
        if not text:
            return None
        out = text.format_map(_Blank(fields))
        slot = self._identity(int(fields["gpu"]))[0] if "gpu" in fields else None
        return f"{out}, slot {slot}" if slot and key in ("gpu", "nvlink", "pcie") else out

    def _identity(self, gpu: int) -> tuple[str | None, str | None, str | None]:
        """The GPU's slot label, serial and UUID from the inventory, where one was given."""
        data = self.graph.nodes.get(gpu_node(gpu), {})
        return data.get("slot"), data.get("serial"), data.get("uuid")

    def with_inventory(self, inventory: Any) -> NodeGraph:
        """A copy whose GPUs carry the inventory's slot label, serial and UUID (matched by index or bus id).

        `inventory` is an Inventory (its entry for this node) or one node's NodeInventory.
        """
        node = inventory.node(self.node_id) if hasattr(inventory, "nodes") else inventory
        out = self.copy()
        for gpu in out.gpus:
            data = out.graph.nodes[gpu_node(gpu)]
            ident = node.gpu(pci_bus_id=data["pci_bus_id"]) if data.get("pci_bus_id") else node.gpu(gpu)
            if ident.slot is None and ident.serial is None and ident.uuid is None:
                ident = node.gpu(gpu)
            data.update(slot=ident.slot, serial=ident.serial, uuid=ident.uuid)
        return out

    def copy(self) -> NodeGraph:
        return NodeGraph(self.graph.copy(), self.platform, list(self.warnings), self.node_id, dict(self.fru),
                         self.nvlinks_per_gpu, self.alike)


def _ref(gpu: int, link: int | None, kind: str, peer: str, peer_kind: str, port: int | None) -> ComponentRef:
    """The link's identity with where it lands: a GPU peer, a switch port, or neither when the graph does not say."""
    if kind == LinkType.PCIE:
        return ComponentRef.pcie(gpu)
    if peer_kind == GPU:
        return ComponentRef.nvlink(gpu, link, peer_gpu=gpu_index(peer))
    if peer_kind == NVSWITCH:
        return ComponentRef.nvlink(gpu, link, switch=peer, port=port)
    return ComponentRef.nvlink(gpu, link)
