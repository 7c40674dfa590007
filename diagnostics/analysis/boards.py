"""Each node's topology graph and platform, for the engine: given, the platform's template, or what the node's own
topology rows describe; a platform the GPU model label names; the GPUs' PCI addresses."""

from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping

import pandas as pd

from ..components import CHIP_PREFIX
from ..config.platforms import all_platforms, has_nvswitch, platform_for_model, platforms_for_model
from ..enums import LinkType
from ..errors import ConfigError
from ..model import Finding
from ..topology import NodeGraph, graph_from_topology
from ..topology.observed import observe_ports
from ..topology.templates import template
from .described import described_short
from .diagnosis import PLATFORM_UNKNOWN


def _rack_ends(rows: pd.DataFrame) -> bool:
    """Whether a node's topology rows are only its links' far ends on a rack's switch chips (NMX-T's link partners):
    no description of a board to draw, but the rack's tray ports, observed, once its platform is known."""
    far = rows["b"].astype("string") if "b" in rows.columns else pd.Series(dtype="string")
    return bool(len(far)) and bool(far.str.startswith(CHIP_PREFIX).fillna(False).all())


class Boards:
    """Each node's topology graph and platform: given; else its platform's template (built once per platform); else,
    for a node with flagged links, the graph its own topology rows describe (`topo -m`, NCCL XML, `nvlink -R`)."""

    def __init__(self, platforms: Mapping[str, str], graphs: Mapping[str, NodeGraph], gpus: pd.DataFrame | None,
                 topology: pd.DataFrame | None, slots: Mapping[str, int] | None = None) -> None:
        self.platforms, self.given, self.templates = dict(platforms), graphs, dict[str, NodeGraph]()
        self.slots = dict(slots or {})  # a rack host -> its compute tray's slot: its ports are the rack's
        self.notes: dict[str, list[str]] = {}
        self.guessed: dict[str, str] = {}  # a node whose platform no one named -> what it was told from
        self.contradicted: dict[str, str] = {}  # a node whose GPU model is not its named platform's -> why
        self.topology = by_node(topology)
        self.described: dict[str, NodeGraph] = {}
        self.drawn: dict[Hashable, NodeGraph] = {}  # a description's rows (less the node) and platform -> its graph
        self.buses: dict[str, dict[str, int]] = {}  # node -> PCI address -> GPU index, from its GPU table
        self.uuids: dict[str, dict[str, int]] = {}  # node -> GPU UUID -> GPU index, from its GPU table
        for node, rows in by_node(gpus).items():
            for column, index in (("pci_bus_id", self.buses), ("uuid", self.uuids)):
                if column in rows:
                    known = rows.dropna(subset=[column, "gpu"])
                    index[node] = {str(b).lower(): int(g) for b, g in zip(known[column], known["gpu"], strict=True)}
            if "model" not in rows:
                continue
            models = sorted({str(m) for m in rows["model"].dropna()})
            found = {p for p in (platform_for_model(m) for m in models) if p is not None}  # the one guessed
            given = self.platforms.get(node)
            if given is not None:
                fits = {p for m in models for p in platforms_for_model(m)}  # every board the model is built into
                if fits and given not in fits:
                    said = ", ".join(repr(m) for m in models)
                    self.contradicted[node] = (f"the platform given, {given}, is not what the GPU model {said} says "
                                               f"({', '.join(sorted(fits))})")
                    self.notes[node] = [f"{self.contradicted[node]}: its parts and steps may not fit the board"]
                continue
            if len(found) == 1:
                self.platforms[node] = str(found.pop())
                self.guessed[node] = f"taken from the GPU model {', '.join(repr(m) for m in models)}"
                wiring = "" if node in self.topology else (  # no row of its own: every peer is the template's
                    ": the GPU or NVSwitch port each NVLink is shown joining is that platform's wiring, assumed until "
                    "the node's own is read (`nvidia-smi nvlink -R`)")
                self.notes[node] = [f"platform {self.platforms[node]} {self.guessed[node]}; name it with --platform "
                                    f"or a nodes.csv{wiring}"]

    def __call__(self, node: str, *, describe: bool = False) -> NodeGraph | None:
        """The graph the node is judged on: given; else what its own topology rows describe (observed ports over
        the template's, said in its notes), except on a rack's host, whose ports the rack lays out; else its
        platform's template; else None. `describe` is kept for callers that ask only when it matters: a node's
        own rows are read whenever it has some, so a fleet and one node's view judge it on the same graph."""
        if node in self.given:
            return self.given[node]
        platform = self.platforms.get(node)
        data = all_platforms().get(platform, {}) if platform else {}
        rack = data.get("rack")
        if node in self.topology and not rack and not _rack_ends(self.topology[node]):
            if node not in self.described:
                self.described[node] = self._describe(node, platform)
            return self.described[node]
        if platform:
            slot = self.slots.get(node) if rack and data.get("tray_kind") == "compute" else None
            key = f"{platform}@{slot}" if slot is not None else platform
            if key not in self.templates:
                self.templates[key] = template(platform, str(rack) if slot is not None else None, slot)
            if rack and node in self.topology:  # a rack host's far ends read (NMX-T's link partner): observed
                if node not in self.described:
                    self.described[node] = self.templates[key].copy()
                    self.described[node].node_id = node
                    observe_ports(self.described[node], self.topology[node])
                return self.described[node]
            return self.templates[key]
        return None

    def _describe(self, node: str, platform: str | None) -> NodeGraph:
        """The graph the node's own rows describe. Nodes of one build describe themselves alike, row for row: the
        graph is drawn once per description and platform, and each node gets a copy of its own."""
        rows = self.topology[node]
        key: Hashable = (platform, _content(rows))
        try:
            hash(key)
        except TypeError:  # a value that cannot be compared as a key (a list): drawn for this node alone
            key = node
        if key not in self.drawn:
            self.drawn[key] = self._draw(rows, node, platform)
        graph = self.drawn[key].copy()
        graph.node_id = node
        self.notes.setdefault(node, []).extend(graph.warnings)
        if platform is None and graph.platform is not None and not graph.alike:  # told from the links it counts
            self.guessed[node] = "fitted to the node's own topology (its `topo -m`, NCCL XML or `nvlink -R` rows)"
            self.notes[node].append(f"platform {graph.platform} {self.guessed[node]}; name it with --platform or a "
                                    "nodes.csv")
        return graph

    @staticmethod
    def _draw(rows: pd.DataFrame, node: str, platform: str | None) -> NodeGraph:
        try:
            graph = graph_from_topology(rows, node_id=node, platform=platform if platform in all_platforms()
                                        else None)
        except ConfigError:
            graph = graph_from_topology(rows, node_id=node)
            graph.warnings.append(f"platform {platform!r} does not fit the node's own topology: judged on what "
                                  "the topology describes")
        return graph

    def short_links(self, node: str, live: Mapping[int, Collection[int]]) -> tuple[list[Finding], list[str]]:
        """The NVLinks the node's own topology shows missing against the platform its graph follows (`live`: the
        NVLinks its readings report, per GPU), when its graph was drawn from that topology."""
        graph = self.described.get(node)
        return described_short(self.topology[node], graph, live) if graph is not None else ([], [])

    def platform(self, node: str) -> str | None:
        """The node's platform: named, else told from its GPU model or its own topology; None where that topology
        fits several alike (their links are alike, their parts are not: it is judged on the first one's graph)."""
        if node in self.platforms:
            return self.platforms[node]
        graph = self.given.get(node) or self.described.get(node)
        return graph.platform if graph is not None and not graph.alike else None

    def alike(self, node: str) -> list[str]:
        """The platforms the node's own topology fits alike, where none is told (`platform` is None); else none."""
        graph = self.described.get(node)
        if self.platform(node) is not None or graph is None or graph.platform is None or not graph.alike:
            return []
        return [graph.platform, *graph.alike]

    def contradiction(self, node: str) -> str | None:
        """Why the node's named platform does not fit its readings (their GPU model names another); None where it
        does, or none was named."""
        return self.contradicted.get(node)

    def guess(self, node: str) -> str | None:
        """What the node's platform was told from when no one named it; None when named (or unknown)."""
        return self.guessed.get(node) if self.platform(node) is not None else None

    def unwired(self, node: str, gpu: int | None, link: int | None) -> str | None:
        """Why GPU `gpu`'s NVLink `link` is none the node's board wires, where its platform uses some of its die's
        links and numbers the ones it uses (a bridged H100 card's 12 of 18: the others stay inactive by design);
        None where the link is wired, or that is not known."""
        platform, graph = self.platform(node), self(node)
        data = all_platforms().get(platform, {}) if platform else {}
        die, used = int(data.get("die_nvlinks", 0)), int(data.get("nvlinks_per_gpu", 0))
        if graph is None or gpu is None or link is None or not 0 < used < die or link >= die \
                or not data.get("nvlink", {}).get("links") or gpu not in graph.gpus or graph.has_link(gpu, link):
            return None
        return (f"not wired on {platform}: its cards use {used} of the die's {die} NVLinks, and this one stays "
                "inactive by design")

    def nvlink_generation(self, node: str) -> int | None:
        """The node's NVLink generation as its platform states it (5: Blackwell); None where not known."""
        platform = self.platform(node)
        value = all_platforms().get(platform, {}).get("nvlink_generation") if platform else None
        return int(value) if value is not None else None

    def warnings(self, node: str) -> list[str]:
        notes = list(self.notes.get(node, []))
        described = self.described.get(node)
        if self.platform(node) is None and (described is None or not described.alike):  # the alike say their own
            notes.append(PLATFORM_UNKNOWN)
        return notes


def by_node(frame: pd.DataFrame | None) -> dict[str, pd.DataFrame]:
    if frame is None or frame.empty or "node_id" not in frame.columns:
        return {}
    return {str(n): g for n, g in frame.groupby(frame["node_id"].astype("string"), observed=True)}


def _content(rows: pd.DataFrame) -> Hashable:
    """A node's description as it reads apart from whose it is: its columns, their types and every row's values, in
    order (compared value by value, never by a digest)."""
    columns = [c for c in rows.columns if c != "node_id"]
    return (tuple(columns), tuple(str(rows[c].dtype) for c in columns),
            tuple(zip(*(rows[c].tolist() for c in columns), strict=True)))


def expected_links(graph: NodeGraph, gpus: Collection[int]) -> dict[int, int]:
    out = {}
    for gpu in sorted(gpus):
        try:
            out[gpu] = int(graph.expected_links(gpu, LinkType.NVLINK.value))
        except Exception:
            continue
    return out


def gpu_count(platform: str | None) -> int | None:
    if not platform:
        return None
    data = all_platforms().get(platform)
    return int(data["gpu_count"]) if data and "gpu_count" in data else None


def no_fabric_manager(platform: str | None, guess: str | None, gpus: int) -> str | None:
    """Why a node whose NVLinks are all inactive has no NVSwitch, so no Fabric Manager to blame, where no one named a
    platform that has them: two GPUs (no NVSwitch board holds two), four on no known board (a 4-GPU board joins its
    GPUs directly), or a platform told from the GPU model that has none (an H100 NVL's bridged pairs). None where
    the node may run one (a platform named, or told to have NVSwitches)."""
    if platform is not None and guess is None:
        return None  # named: its repair entry says whether Fabric Manager applies
    if platform is not None:
        return None if has_nvswitch(platform) else \
            f"{platform} ({guess}) has no NVSwitch (bridged or directly joined GPUs)"
    if gpus == 2:
        return "no NVSwitch board holds two GPUs (a bridged pair, or a board of direct links)"
    if gpus == 4:
        return "four GPUs and no platform named: a 4-GPU board joins its GPUs directly, with no NVSwitch"
    return None


def count_fixed(platform: str | None) -> bool:
    """Whether the platform's GPU count is the board's own (an HGX's eight), so a GPU never read is one gone, or only
    what such a server may hold (a PCIe server's cards: `gpu_count_fixed = false`)."""
    data = all_platforms().get(platform or "")
    return bool(data.get("gpu_count_fixed", True)) if data else True
