"""What the node picture shows, decided before anything is drawn: where each node sits, which links are bundled,
which are degraded (and how badly), which component is suspected, and what could not be placed.

Kept apart from matplotlib so the layout and the mapping of findings onto edges can be tested on their own.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field, replace

from .. import format as fmt
from ..analysis.absence import gpu_gone
from ..config.thresholds import BELOW_EXPECTED_RULE, OFF_BUS_RULE
from ..enums import FaultKind, LinkType, Severity, severity_rank
from ..model import Diagnosis, Finding
from ..topology.graph import CPU, GPU, NIC, NVSWITCH, PCIE_SWITCH, NodeGraph, gpu_node

WIDTH, HEIGHT = 12.0, 9.0  # drawing units: one unit is 100 px at the default size
RING_CENTER = (6.0, 5.75)
RING_RADII = (4.9, 2.05)
PCIE_Y, CPU_Y = 2.4, 1.1
LABEL_LIMIT = 16  # more degraded links than this are labelled per GPU, not per link
NIC_FIRST, NIC_STEP = 0.68, 0.5  # NIC boxes sit beside their PCIe switch, in its row

_COUNTER_WORDS = {
    "replay": "replays", "recovery": "recoveries", "crc": "CRC errors", "crc_flit": "CRC flit errors",
    "crc_data": "CRC data errors", "tx_discards": "discards", "symbol_errors": "symbol errors",
    "effective_errors": "effective errors", "recovery_failed": "failed recoveries",
    "recovery_successful": "recoveries", "replay_rollovers": "retrains",
}


@dataclass
class Bundle:
    """All links between two nodes, drawn as one line; `count` links (NVLinks) or one (PCIe). Not `reporting`
    when an end is a GPU the diagnosis judged gone (off the bus, silent): its links read nothing, so are not healthy.
    Not `read` when the diagnosis holds no reading of any of them (`_unread`): drawn so, not as healthy. A bundle
    some of whose links were read is two, side by side (`side` -1 and 1): those read, and the others, not read."""

    u: str
    v: str
    link_type: str
    count: int
    reporting: bool = True
    read: bool = True
    side: int = 0


@dataclass
class Highlight:
    """One degraded link drawn over its bundle."""

    u: str
    v: str
    severity: Severity
    label: str
    gid: str
    offset: float = 0.0
    finding: Finding | None = None
    label_at: tuple[float, float] = (0.0, 0.0)


@dataclass
class Mark:
    """A finding about a GPU's links as a whole (no link index): the GPU's box is outlined in its colour; or the
    label of many of its links gathered in one."""

    node: str
    severity: Severity
    label: str
    ring: bool = True  # False: only a label under the box (its links, each drawn in its colour, say the rest)


@dataclass
class Scene:
    pos: dict[str, tuple[float, float]]
    kinds: dict[str, str]
    bundles: list[Bundle]
    highlights: list[Highlight] = field(default_factory=list)
    suspect_node: str | None = None
    suspect_edge: tuple[str, str] | None = None
    suspect_label: str | None = None
    warnings: list[str] = field(default_factory=list)
    undrawn: dict[str, list[str]] = field(default_factory=dict)  # why -> the findings left off the picture for it
    marks: list[Mark] = field(default_factory=list)
    suspect_nodes: list[str] = field(default_factory=list)  # a suspect shared by many parts: each part outlined
    suspect_edges: list[tuple[str, str]] = field(default_factory=list)

    @property
    def suspected(self) -> bool:
        """Whether anything is outlined as the suspect."""
        return bool(self.suspect_node or self.suspect_edge or self.suspect_nodes or self.suspect_edges)


def links_up(finding: Finding) -> str | None:
    """'11 of 12 up' for a GPU or GPU pair counted short of its platform's NVLinks (which link is down unknown)."""
    short = next((c for c in finding.crossed if c.rule == BELOW_EXPECTED_RULE and c.above is not None), None)
    if finding.link is not None or short is None or short.rate_per_hour is None:
        return None
    return f"{short.rate_per_hour:.0f} of {short.above:.0f} up"


def rate_label(finding: Finding) -> str:
    """The figure that made the link degraded, e.g. '8.9k replays/h', 'x8 of x16'; 'down' for a link that is down
    ('1 of 2 up' for a GPU pair some of whose links, which unknown, are down)."""
    up = links_up(finding)
    if up is not None:
        return f"NVLinks: {up}"
    if finding.link_state.value in ("down", "inactive") or finding.severity is Severity.DOWN:
        return "down"
    rated = [c for c in finding.crossed if c.rate_per_hour is not None]
    if rated:
        top = max(rated, key=lambda c: (severity_rank(c.severity), c.rate_per_hour or 0.0))
        counter, rate = top.counter, float(top.rate_per_hour or 0.0)
        if top.unit != fmt.Unit.PER_HOUR and top.unit:
            if counter == "width_lost" and finding.width is not None and finding.max_width:
                return f"x{finding.width} of x{finding.max_width}"
            return fmt.metric(counter, rate, compact=True, unit=top.unit)
    elif finding.rates_per_hour:
        counter, rate = max(finding.rates_per_hour.items(), key=lambda kv: kv[1])
    else:
        return finding.severity.value
    return f"{fmt.number(rate, compact=True)} {_COUNTER_WORDS.get(counter, counter)}/h"


def _ring(gpus: list[int]) -> dict[str, tuple[float, float]]:
    n = max(len(gpus), 1)
    cx, cy = RING_CENTER
    rx, ry = RING_RADII
    pos = {}
    for i, gpu in enumerate(gpus):
        angle = math.radians(180.0 - (i + 0.5) * 360.0 / n)
        pos[gpu_node(gpu)] = (cx + rx * math.cos(angle), cy + ry * math.sin(angle))
    return pos


def _row(nodes: list[str], y: float, left: float, right: float) -> dict[str, tuple[float, float]]:
    if not nodes:
        return {}
    step = (right - left) / len(nodes)
    return {n: (left + step * (i + 0.5), y) for i, n in enumerate(nodes)}


def layout(graph: NodeGraph) -> dict[str, tuple[float, float]]:
    """Deterministic positions: GPUs on a ring, NVSwitches across its middle, the PCIe tree below."""
    pos = _ring(graph.gpus)
    switches = graph.nodes_of(NVSWITCH)
    span = min(1.7 * len(switches), 7.2)
    pos.update(_row(switches, RING_CENTER[1], RING_CENTER[0] - span / 2, RING_CENTER[0] + span / 2))
    # each PCIe switch shares its slot with its NICs, which sit beside it in the same row
    for name, (x, y) in _row(graph.nodes_of(PCIE_SWITCH), PCIE_Y, 0.3, WIDTH - 0.3).items():
        nics = [n for n in graph.neighbours(name) if graph.graph.nodes[n]["kind"] == NIC]
        shift = (NIC_FIRST + NIC_STEP * (len(nics) - 1)) / 2 if nics else 0.0
        pos[name] = (x - shift, y)
        for i, nic in enumerate(nics):
            pos[nic] = (x - shift + NIC_FIRST + NIC_STEP * i, y)
    cpus = graph.nodes_of(CPU)
    for i, cpu in enumerate(cpus):
        below = [pos[n][0] for n in graph.neighbours(cpu) if n in pos and graph.graph.nodes[n]["kind"] != GPU]
        pos[cpu] = (sum(below) / len(below) if below else WIDTH * (i + 1) / (len(cpus) + 1), CPU_Y)
    for nic in graph.nodes_of(NIC):
        pos.setdefault(nic, (WIDTH / 2, PCIE_Y - 0.6))
    return pos


def _bundles(graph: NodeGraph) -> list[Bundle]:
    counts: dict[tuple[str, str, str], int] = {}
    for u, v, data in graph.graph.edges(data=True):
        a, b = sorted((u, v))
        key = (a, b, str(data.get("link_type", "nvlink")))
        counts[key] = counts.get(key, 0) + int(data.get("nvlinks", 1))
    return [Bundle(a, b, t, n) for (a, b, t), n in sorted(counts.items())]


def _gid(node: str, link_type: str, link: int | None = None) -> str:
    """An SVG id for one link: `link-gpu2-nvlink1`, `link-gpu4-pcie`."""
    return f"link-{node.lower().replace(' ', '')}-{link_type}{'' if link is None else link}"


def _place(scene: Scene, graph: NodeGraph, finding: Finding) -> tuple[str, str, str] | None:
    """The edge a finding belongs on (u, v, gid), adding a stated edge where the graph has no layout for it."""
    gpu = finding.gpu
    if gpu is None or gpu_node(gpu) not in graph.graph:
        why = f"GPU {gpu} is not in the node's graph" if gpu is not None else \
            "its GPU is known by its PCI address alone, which no index places on the board" if finding.ref.bus else \
            "no GPU named to draw on"
        scene.undrawn.setdefault(why, []).append(finding.component)
        return None
    u = gpu_node(gpu)
    if finding.link_type is LinkType.PCIE:
        ups = [v for _, v, _, _ in graph.gpu_edges(gpu, "pcie")]
        if ups:
            return u, ups[0], _gid(u, "pcie")
        root = f"PCIe root of {u}"
        x, y = scene.pos[u]
        scene.pos[root], scene.kinds[root] = (x, max(y - 1.0, PCIE_Y)), CPU
        scene.bundles.append(Bundle(u, root, "pcie", 1))
        return u, root, _gid(u, "pcie")
    port = graph.port_of(gpu, finding.link)
    if port.peer in graph.graph and graph.has_link(gpu, finding.link):
        return u, port.peer, _gid(u, "nvlink", finding.link)
    peer = gpu_node(finding.peer_gpu) if finding.peer_gpu is not None else None
    if graph.platform is None and peer in scene.pos:
        assert peer is not None
        if not any({b.u, b.v} == {u, peer} for b in scene.bundles):
            a, b = sorted((u, peer))
            scene.bundles.append(Bundle(a, b, "nvlink", 1))
        return u, peer, _gid(u, "nvlink", finding.link)
    if finding.link is None and peer is not None and graph.graph.has_edge(u, peer):  # a GPU pair, index unknown
        return u, peer, f"{_gid(u, 'nvlink')}-to-gpu{finding.peer_gpu}"
    if finding.link is None and graph.has_link(gpu, None):  # a total over the GPU's links: mark the GPU
        if finding.severity is not Severity.OK:
            up = links_up(finding)
            scene.marks.append(Mark(u, finding.severity, f"NVLinks: {up}" if up else
                                    f"all NVLinks: {rate_label(finding)}"))
        return None
    scene.undrawn.setdefault(port.note or "the graph has no such link", []).append(finding.component)
    return None


SAID_UNDRAWN = 5  # findings named in the one line that counts those left off the picture for one reason


def _say_undrawn(scene: Scene) -> None:
    """One warning for each reason findings were left off the picture: a board of unknown ports leaves every link
    off, and a line each buried the rest of what was said."""
    for why, names in scene.undrawn.items():
        if len(names) == 1:
            scene.warnings.append(f"finding {names[0]}: {why}; not drawn")
            continue
        more = f" and {fmt.number(len(names) - SAID_UNDRAWN)} more" if len(names) > SAID_UNDRAWN else ""
        scene.warnings.append(f"{fmt.count(len(names), 'finding')} not drawn ({why}): "
                              f"{', '.join(names[:SAID_UNDRAWN])}{more}")


SHARED = (FaultKind.NVSWITCH_SHARED, FaultKind.NVLINK_SHARED)  # a suspect that stands for many parts


def _suspect(scene: Scene, graph: NodeGraph, diagnosis: Diagnosis, placed: dict[str, tuple[str, str]],
             marked: dict[str, str]) -> None:
    """The headline suspect outlined, and beside it every part a shared suspect ranked after it stands for (every
    NVSwitch, the NVLink mesh): a GPU off the bus heads the list, yet the switches every GPU fails on are suspects
    too, and a picture outlining the GPU alone says they are not."""
    _headline(scene, graph, diagnosis, placed, marked)
    head = diagnosis.localization
    for loc in diagnosis.localizations:
        if loc.fault in SHARED and (head is None or loc.ref != head.ref):
            scene.suspect_label = f"{scene.suspect_label}; also {loc.component}" if scene.suspect_label \
                else loc.component
            _shared_suspect(scene, loc.fault, loc.component)


def _headline(scene: Scene, graph: NodeGraph, diagnosis: Diagnosis, placed: dict[str, tuple[str, str]],
              marked: dict[str, str]) -> None:
    loc = diagnosis.localization
    name = loc.component if loc else diagnosis.isolated_component
    if not name or name == "None":
        return
    scene.suspect_label = name + (f" ({loc.port_source.value} port)" if loc and loc.switch_port is not None else "")
    if loc is not None and loc.fault in SHARED:
        _shared_suspect(scene, loc.fault, name)
        return
    if loc is not None and loc.kind.value in ("nvswitch", "gpu"):
        node = loc.switch if loc.kind.value == "nvswitch" else (gpu_node(loc.gpu) if loc.gpu is not None else None)
        if node in scene.pos:
            scene.suspect_node = node
            return
    if name in placed:
        scene.suspect_edge = placed[name]
        return
    if name in marked:
        scene.suspect_node = marked[name]
        return
    if loc is not None and loc.gpu is not None:
        for h in scene.highlights:
            if h.finding is not None and h.finding.gpu == loc.gpu and h.finding.link == loc.link:
                scene.suspect_edge = (h.u, h.v)
                return
    if name in scene.pos:
        scene.suspect_node = name
    else:
        scene.warnings.append(f"suspected component {name!r} is not in the node's graph; not outlined")


def _shared_suspect(scene: Scene, fault: FaultKind, name: str) -> None:
    """A suspect that stands for many parts, each outlined: every NVSwitch for what all switches share, every GPU's
    NVLink bundle for a mesh without switches (under the failing links, which keep their colours)."""
    if fault is FaultKind.NVSWITCH_SHARED:
        nodes = [n for n in scene.pos if scene.kinds.get(n) == NVSWITCH]
        scene.suspect_nodes.extend(n for n in nodes if n not in scene.suspect_nodes)
        found = bool(nodes)
    else:
        edges = [(b.u, b.v) for b in scene.bundles if b.link_type == "nvlink" and b.side >= 0
                 and GPU in (scene.kinds.get(b.u), scene.kinds.get(b.v))]
        scene.suspect_edges.extend(e for e in edges if e not in scene.suspect_edges)
        found = bool(edges)
    if not found:
        scene.warnings.append(f"suspected component {name!r}: the node's graph has none of its parts; not outlined")


def _gathered(scene: Scene) -> None:
    """Past LABEL_LIMIT degraded links, one label per GPU (how many of its NVLinks, the worst rate) in place of one
    per link, which would cover each other and the boxes; every link keeps its colour."""
    if sum(1 for h in scene.highlights if h.label) <= LABEL_LIMIT:
        return
    per_gpu: dict[str, list[Highlight]] = {}
    for h in scene.highlights:
        if h.finding is not None and h.finding.gpu is not None and h.finding.link_type is LinkType.NVLINK:
            per_gpu.setdefault(gpu_node(h.finding.gpu), []).append(h)
    marked = {m.node for m in scene.marks}
    for node, found in per_gpu.items():
        if node in marked or node not in scene.pos:
            continue
        worst = max(found, key=lambda h: (severity_rank(h.severity), h.finding.worst_ratio if h.finding else 0))
        alike = len({h.severity for h in found}) == 1
        said = f"{fmt.count(len(found), 'NVLink')} {worst.severity.value if alike else 'degraded, worst'}"
        scene.marks.append(Mark(node, worst.severity, f"{said}: {worst.label.split(': ')[-1]}", ring=False))
        for h in found:
            h.label = ""


def _gone(scene: Scene, graph: NodeGraph, diagnosis: Diagnosis) -> dict[str, str]:
    """The GPUs the diagnosis judged gone (an Xid 79, every series silent), each marked on its box, with every link
    of theirs drawn as not reporting: GPU node -> the component its findings name."""
    gone: dict[str, list[Finding]] = {}
    for f in diagnosis.findings:
        if f.gpu is not None and gpu_gone(f) and gpu_node(f.gpu) in graph.graph:
            gone.setdefault(gpu_node(f.gpu), []).append(f)
    for bundle in scene.bundles:
        if bundle.u in gone or bundle.v in gone:
            bundle.reporting = False
    for node, found in gone.items():
        xid = any(c.rule == OFF_BUS_RULE for f in found for c in f.crossed)
        scene.marks.append(Mark(node, Severity.DOWN, "off the bus (Xid 79): not reporting" if xid else
                                "not reporting: every series stopped"))
    return {f.component: node for node, found in gone.items() for f in found}


def build_scene(graph: NodeGraph, diagnosis: Diagnosis | None = None) -> Scene:
    pos = layout(graph)
    kinds = {n: str(d.get("kind", "")) for n, d in graph.graph.nodes(data=True)}
    scene = Scene(pos=pos, kinds=kinds, bundles=_bundles(graph))
    if diagnosis is None:
        return scene
    placed: dict[str, tuple[str, str]] = {}
    marked = _gone(scene, graph, diagnosis)  # its links drawn as not reporting, not one by one
    per_edge: dict[frozenset[str], int] = {}
    for finding in sorted(diagnosis.findings, key=lambda f: -severity_rank(f.severity)):
        if gpu_gone(finding) and finding.component in marked:
            continue
        marks = len(scene.marks)
        edge = _place(scene, graph, finding)
        if edge is None:
            if len(scene.marks) > marks:
                marked[finding.component] = scene.marks[-1].node
            continue
        u, v, gid = edge
        placed[finding.component] = (u, v)
        if finding.severity is Severity.OK:
            continue
        k = per_edge.get(frozenset((u, v)), 0)
        per_edge[frozenset((u, v))] = k + 1
        offset = 0.07 * ((k + 1) // 2) * (1 if k % 2 == 0 else -1)
        name = f"NVLink {finding.link}" if finding.link_type is LinkType.NVLINK and finding.link is not None else ""
        port = graph.port_of(finding.gpu or 0, finding.link) if name else None
        where = f" -> port {port.switch_port}" if port and port.switch_port is not None else ""
        label = f"{name}{where}: {rate_label(finding)}" if name else rate_label(finding)
        (x1, y1), (x2, y2) = scene.pos[u], scene.pos[v]
        t = 0.3 + 0.08 * (len(scene.highlights) % 3)  # near the GPU end: clear of the midpoint and the switches
        at = (x1 + (x2 - x1) * t, y1 + (y2 - y1) * t)
        scene.highlights.append(Highlight(u, v, finding.severity, label, gid, offset, finding, at))
    _say_undrawn(scene)
    _suspect(scene, graph, diagnosis, placed, marked)
    _gathered(scene)
    _unread(scene, diagnosis, placed)
    return scene


def _unread(scene: Scene, diagnosis: Diagnosis, placed: dict[str, tuple[str, str]]) -> None:
    """A GPU's NVLink bundles that no finding lies on, in a diagnosis that names every link it read: links the input
    does not reach (a paste cut short or elided, an output of some GPUs, a snapshot of chosen links), which are
    neither healthy nor missing; a bundle some of whose links a finding lies on, split into those and the others.
    A GPU's total over its NVLinks reads them all."""
    if not diagnosis.lists_every_link:
        return
    read = Counter(frozenset(edge) for edge in placed.values())  # a finding per link read
    totals = {gpu_node(f.gpu) for f in diagnosis.findings
              if f.gpu is not None and f.link is None and f.link_type is LinkType.NVLINK}
    for bundle in list(scene.bundles):
        gpus = {n for n in (bundle.u, bundle.v) if scene.kinds.get(n) == GPU}
        if bundle.link_type != "nvlink" or not gpus or not bundle.reporting or gpus & totals:
            continue
        got = read[frozenset((bundle.u, bundle.v))]
        if not got:
            bundle.read = False
        elif got < bundle.count:  # a paste of some of a GPU's links: those it holds, and beside them the rest
            scene.bundles.append(replace(bundle, count=bundle.count - got, read=False, side=-1))
            bundle.count, bundle.side = got, 1
