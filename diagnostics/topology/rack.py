"""A rack's fabric from its rack file: which switch chip and port each GPU link of each compute tray lands on, which
cable cartridge carries it, and each host's own view (a compute tray's graph, a switch tray's).

The rack is regular (every GPU has one link to each chip), so it is arithmetic over the file's wiring, not a graph
search: `end(tray, gpu, link)` and its inverse `from_port(switch_tray, chip, port)`. Trays are numbered from 1 as
their slots are; GPUs and links from 0 as nvidia-smi numbers them; chips from 1 within their switch tray.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import networkx as nx

from ..components import ComponentRef, chip_name
from ..config.platforms import platform_data, platform_dirs
from ..config.racks import RackSpec, rack_dirs, rack_spec
from ..enums import PortSource
from .graph import GPU, NVSWITCH, NodeGraph, gpu_node, node_name


@dataclass(frozen=True)
class LinkEnd:
    """One GPU link of the rack, end to end."""

    tray: int
    gpu: int
    link: int
    switch_tray: int
    chip: int
    port: int
    cartridge: str | None

    def ref(self, tray_label: str | None = None) -> ComponentRef:
        """The link as the rack names it (by its GPU end, landing on its switch port)."""
        return ComponentRef.nvlink(self.gpu, self.link).in_tray(
            tray_label or str(self.tray), switch_tray=str(self.switch_tray), chip=self.chip, port=self.port)

    @property
    def port_ref(self) -> ComponentRef:
        return ComponentRef.switch_chip(str(self.switch_tray), self.chip, self.port)


class RackGraph:
    """The rack platform's layout: trays, chips, links, cartridges."""

    def __init__(self, spec: RackSpec) -> None:
        self.spec = spec
        self.name = spec.name

    # -- the layout -------------------------------------------------------------------------------------------
    @property
    def compute_trays(self) -> list[int]:
        return list(range(1, self.spec.compute_trays + 1))

    @property
    def switch_trays(self) -> list[int]:
        return list(range(1, self.spec.switch_trays + 1))

    def chip_of(self, link: int) -> tuple[int, int]:
        """(switch tray, chip) GPU link `link` lands on, whatever its tray."""
        per = self.spec.chips_per_switch_tray
        return link // per + 1, link % per + 1

    def chip_index(self, switch_tray: int, chip: int) -> int:
        """The rack-wide index (0-based) of a chip: the GPU link index that lands on it."""
        return (switch_tray - 1) * self.spec.chips_per_switch_tray + chip - 1

    def port_of(self, tray: int, gpu: int) -> int:
        return self.spec.wiring.first_port + self.spec.gpus_per_tray * (tray - 1) + gpu

    def cartridge_of(self, tray: int, link: int) -> str | None:
        return next((c.id for c in self.spec.cartridge if c.holds(tray, link)), None)

    def has(self, tray: int, gpu: int, link: int) -> bool:
        return 1 <= tray <= self.spec.compute_trays and 0 <= gpu < self.spec.gpus_per_tray \
            and 0 <= link < self.spec.nvlinks_per_gpu

    def end(self, tray: int, gpu: int, link: int) -> LinkEnd:
        switch_tray, chip = self.chip_of(link)
        return LinkEnd(tray, gpu, link, switch_tray, chip, self.port_of(tray, gpu), self.cartridge_of(tray, link))

    def from_port(self, switch_tray: int, chip: int, port: int) -> LinkEnd | None:
        """The GPU link on a switch port; None for a port no GPU link of this rack takes (a trunk port)."""
        if not (1 <= switch_tray <= self.spec.switch_trays and 1 <= chip <= self.spec.chips_per_switch_tray):
            return None
        offset = port - self.spec.wiring.first_port
        tray, gpu = offset // self.spec.gpus_per_tray + 1, offset % self.spec.gpus_per_tray
        if offset < 0 or tray > self.spec.compute_trays:
            return None
        return self.end(tray, gpu, self.chip_index(switch_tray, chip))

    def links(self) -> Iterator[LinkEnd]:
        for tray in self.compute_trays:
            for gpu in range(self.spec.gpus_per_tray):
                for link in range(self.spec.nvlinks_per_gpu):
                    yield self.end(tray, gpu, link)

    def fru(self, key: str, **fields: Any) -> str | None:
        text = self.spec.fru.get(key)
        return text.format(**fields) if text else None

    # -- each host's own view -----------------------------------------------------------------------------------
    def tray_graph(self, tray: int | None, label: str | None = None) -> NodeGraph:
        """A compute tray host's fabric: its GPUs, each link to its chip, at its port when the tray's slot is known
        (ports are the rack file's wiring, so assumed); unknown without the slot."""
        name = self.spec.compute_platform
        g = nx.MultiGraph(platform=name)
        for gpu in range(self.spec.gpus_per_tray):
            g.add_node(gpu_node(gpu), kind=GPU, index=gpu)
        for link in range(self.spec.nvlinks_per_gpu):
            switch_tray, chip = self.chip_of(link)
            g.add_node(chip_name(str(switch_tray), chip), kind=NVSWITCH, index=link, ports=self.spec.ports_per_chip,
                       switch_tray=switch_tray, chip=chip)
        source = PortSource.ASSUMED if tray is not None else PortSource.UNKNOWN
        gen = platform_data(name).get("nvlink_generation")
        for gpu in range(self.spec.gpus_per_tray):
            for link in range(self.spec.nvlinks_per_gpu):
                switch_tray, chip = self.chip_of(link)
                g.add_edge(gpu_node(gpu), chip_name(str(switch_tray), chip), key=f"nvlink {link}", link_type="nvlink",
                           gpu=gpu, link=link, switch=chip_name(str(switch_tray), chip),
                           switch_port=self.port_of(tray, gpu) if tray is not None else None,
                           port_source=source.value, gen=gen)
        where = label or (str(tray) if tray is not None else "(slot unknown)")
        fru = {k: v.replace("{tray}", where) for k, v in platform_data(name).get("fru", {}).items()}
        warnings = [] if tray is not None else [
            f"{name}: the tray's slot in its rack is not known, so its switch ports are not (give a rack inventory: "
            "node_id, platform, rack, tray)"]
        return NodeGraph(g, platform=name, warnings=warnings, fru=fru, nvlinks_per_gpu=self.spec.nvlinks_per_gpu)

    def switch_graph(self) -> NodeGraph:
        """A switch tray host's fabric: its chips as the nvidia-nvswitch driver numbers them (NVSwitch 0, 1, ...)."""
        name = self.spec.switch_platform
        g = nx.MultiGraph(platform=name)
        for chip in range(self.spec.chips_per_switch_tray):
            g.add_node(node_name(NVSWITCH, chip), kind=NVSWITCH, index=chip, ports=self.spec.ports_per_chip)
        return NodeGraph(g, platform=name, fru=dict(platform_data(name).get("fru", {})), nvlinks_per_gpu=0)


def rack_graph(name: str) -> RackGraph:
    """The rack platform named by its file (`gb200-nvl72`), built once per rack and platform folders."""
    return _rack(name, tuple(rack_dirs()), tuple(platform_dirs()))


@cache
def _rack(name: str, racks: tuple[Path, ...], platforms: tuple[Path, ...]) -> RackGraph:
    return RackGraph(rack_spec(name))


def host_graph(platform: str) -> NodeGraph:
    """The template graph of a rack host's platform: a compute tray whose slot is not known, or a switch tray."""
    data = platform_data(platform)
    rack = rack_graph(str(data["rack"]))
    return rack.switch_graph() if data.get("tray_kind") == "switch" else rack.tray_graph(None)
