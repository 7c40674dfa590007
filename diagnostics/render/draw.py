"""The node picture (PNG or SVG): the fabric with degraded links coloured by severity and the suspect outlined.

Sized for a Slack preview (1200x900 px, well under 300 KB). Healthy links are thin grey bundles (one line per
GPU-switch or GPU-GPU pair, width by link count); each degraded link is its own thick coloured line labelled
with its rate. In SVG every link and node carries an id (`link-gpu2-nvlink1`, `node-nvswitch0`) for a
clickable view.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import itertools
import math
from dataclasses import dataclass
from typing import Any

import matplotlib
import numpy as np
from PIL import Image  # matplotlib's own dependency

matplotlib.use("Agg")

from matplotlib.artist import Artist
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection, PatchCollection
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import FancyBboxPatch
from matplotlib.text import Text
from matplotlib.transforms import Affine2D, ScaledTranslation

from .. import format as fmt
from ..enums import Severity
from ..errors import InputError
from ..model import Diagnosis
from ..topology.graph import CPU, GPU, NIC, NVSWITCH, PCIE_SWITCH, NodeGraph
from .colours import HEALTHY, NOT_READ, NOT_REPORTING, PCIE_HEALTHY, SEVERITY_COLOURS, SUSPECT
from .scene import HEIGHT, WIDTH, Bundle, Highlight, Scene, build_scene
from .text import fit, footnote

SIZE_PX = (1200, 900)
PNG_COMPRESSION = 1  # zlib level: higher levels cost more time than they save bytes here
_NODE_STYLE: dict[str, tuple[float, float, str, str, float]] = {  # width, height, face, edge, font size
    GPU: (1.05, 0.5, "#e7f5ff", "#1864ab", 11.0),
    NVSWITCH: (1.3, 0.48, "#f1f3f5", "#495057", 9.5),
    PCIE_SWITCH: (0.82, 0.36, "#f8f9fa", "#868e96", 6.8),
    CPU: (1.3, 0.42, "#fff9db", "#8d7a00", 9.0),
    NIC: (0.44, 0.3, "#ebfbee", "#2b8a3e", 6.5),
}


def _short(name: str, kind: str) -> str:
    if kind == PCIE_SWITCH:
        return name.replace("PCIe switch ", "PCIe sw ")
    if name.startswith("PCIe root of "):
        return "PCIe root"
    return name


def _gid(name: str) -> str:
    return "node-" + name.lower().replace(" ", "")


@dataclass(frozen=True)
class _Box:
    """One node as drawn: hashable, so the layer of boxes and labels can be cached per layout."""

    name: str
    kind: str
    x: float
    y: float
    w: float
    h: float
    size: float
    label: str


def _boxes(scene: Scene, graph: NodeGraph) -> tuple[_Box, ...]:
    many = sum(1 for k in scene.kinds.values() if k == GPU) > 10
    switches = sorted(x for n, (x, _) in scene.pos.items() if scene.kinds.get(n) == NVSWITCH)
    switch_room = min((b - a for a, b in itertools.pairwise(switches)), default=2.0) * 0.9
    out = []
    for name, (x, y) in scene.pos.items():
        kind = scene.kinds.get(name, CPU)
        w, h, _, _, size = _NODE_STYLE.get(kind, _NODE_STYLE[CPU])
        if kind == GPU and many:
            w, h, size = w * 0.75, h * 0.85, size * 0.8
        if kind == NVSWITCH and w > switch_room:
            w, size = switch_room, size * switch_room / w
        label = _short(name, kind)
        device = graph.graph.nodes[name].get("device") if name in graph.graph else None
        out.append(_Box(name, kind, x, y, w, h, size, f"{label}\n{device}" if device else label))
    return tuple(out)


def _patch(box: _Box, **style: Any) -> FancyBboxPatch:
    _, _, face, edge, _ = _NODE_STYLE.get(box.kind, _NODE_STYLE[CPU])
    options: dict[str, Any] = {"facecolor": face, "edgecolor": edge, "linewidth": 1.2, "zorder": 5,
                               "gid": _gid(box.name), **style}
    return FancyBboxPatch((box.x - box.w / 2, box.y - box.h / 2), box.w, box.h,
                          boxstyle="round,pad=0.02,rounding_size=0.08", **options)


def _draw_nodes(ax: _Board, boxes: tuple[_Box, ...], ids: bool) -> None:
    """Boxes and labels; one collection per kind unless each node needs its own SVG id."""
    grouped: dict[str, list[FancyBboxPatch]] = {}
    for box in boxes:
        if ids:
            ax.add(_patch(box))
        else:
            grouped.setdefault(box.kind, []).append(_patch(box))
        ax.text(box.x, box.y, box.label, ha="center", va="center", fontsize=box.size, zorder=6,
                fontweight="bold" if box.kind in (GPU, NVSWITCH) else "normal", color="#212529")
    for kind, patches in grouped.items():
        _, _, face, edge, _ = _NODE_STYLE.get(kind, _NODE_STYLE[CPU])
        ax.add(PatchCollection(patches, facecolor=face, edgecolor=edge, linewidth=1.2, zorder=5))


class _Board:
    """Figure-level drawing in drawing units (no Axes: an Axes with its ticks and spines costs ~40 ms to make)."""

    def __init__(self, fig: Figure) -> None:
        self.figure = fig
        # drawing units -> inches -> display: through the figure's dpi, so SVG (saved at 72 dpi) matches the PNG
        self.transData = Affine2D().scale(SIZE_PX[0] / 100 / WIDTH, SIZE_PX[1] / 100 / HEIGHT) + fig.dpi_scale_trans

    def plot(self, xs: list[float], ys: list[float], **style: Any) -> Line2D:
        line = Line2D(xs, ys, transform=self.transData, **style)
        self.figure.add_artist(line)
        return line

    def add(self, artist: Artist) -> Artist:
        artist.set_transform(self.transData)
        self.figure.add_artist(artist)
        return artist

    def text(self, x: float, y: float, text: str, **style: Any) -> Text:
        return self.figure.text(x, y, text, **{"transform": self.transData, **style})


def _blank(transparent: bool = False) -> tuple[Figure, FigureCanvasAgg, _Board]:
    fig = Figure(figsize=(SIZE_PX[0] / 100, SIZE_PX[1] / 100), dpi=100, facecolor="none" if transparent else "white")
    return fig, FigureCanvasAgg(fig), _Board(fig)


@dataclass(frozen=True)
class _Layer:
    """The drawn pixels of a node layer only (boxes cover a fraction of the picture): flat index, RGB, alpha."""

    index: np.ndarray
    rgb: np.ndarray
    alpha: np.ndarray

    def over(self, base: np.ndarray) -> None:
        """Lay the (straight-alpha) layer over an RGBA picture, in place."""
        flat = base.reshape(-1, 4)
        under = flat[self.index, :3].astype(np.uint16)
        flat[self.index, :3] = ((self.rgb * self.alpha + under * (255 - self.alpha) + 127) // 255).astype(np.uint8)


@functools.lru_cache(maxsize=8)
def _node_layer(boxes: tuple[_Box, ...]) -> _Layer:
    """The boxes and labels of one layout, drawn once per layout and then laid over each picture: text is most
    of a render's cost, and a platform's nodes do not change between diagnoses."""
    _, canvas, board = _blank(transparent=True)
    _draw_nodes(board, boxes, ids=False)
    canvas.draw()
    pixels = np.asarray(canvas.buffer_rgba()).reshape(-1, 4)
    index = np.flatnonzero(pixels[:, 3])
    return _Layer(index, pixels[index, :3].astype(np.uint16), pixels[index, 3:4].astype(np.uint16))


def _width(bundle: Bundle) -> float:
    return 0.6 + 0.35 * min(bundle.count, 4)


SILENT_STYLE = (0, (1, 1.6))  # dotted: a link that reads nothing, apart from a link read down (dashed)
NOT_READ_STYLE = (0, (5, 3))  # long dashes: links no reading reached, apart from PCIe's short ones


def bundle_style(bundle: Bundle) -> tuple[str, Any]:
    """A bundle's colour and line style: grey when it reports, the down colour dotted when its GPU is gone, pale
    and long-dashed when nothing of it was read."""
    if not bundle.reporting:
        return NOT_REPORTING, SILENT_STYLE
    if not bundle.read:
        return NOT_READ, NOT_READ_STYLE
    return (PCIE_HEALTHY, (0, (2, 2))) if bundle.link_type == "pcie" else (HEALTHY, "-")


def _draw_bundles(ax: _Board, scene: Scene, ids: bool) -> None:
    """Links as their bundles: one line each, in one collection per style (healthy NVLink, PCIe, not reporting)
    unless SVG ids are wanted."""
    grouped: dict[tuple[str, Any], list[Bundle]] = {}
    for b in scene.bundles:
        grouped.setdefault(bundle_style(b), []).append(b)
    for (colour, style), chosen in grouped.items():
        segments = [_beside(b, scene) for b in chosen]
        widths = [0.9 if b.link_type == "pcie" else _width(b) for b in chosen]
        if ids:
            for b, (p, q), w in zip(chosen, segments, widths, strict=True):
                ax.plot([p[0], q[0]], [p[1], q[1]], color=colour, linewidth=w, linestyle=style, zorder=1,
                        gid=f"bundle-{b.u}-{b.v}{'-unread' if b.side < 0 else ''}".lower().replace(" ", ""))
        else:
            ax.add(LineCollection(segments, colors=colour, linewidths=widths, linestyles=style,
                                  zorder=1, capstyle="round"))


SIDE_GAP = 0.035  # how far apart the read and the unread links of one bundle are drawn (board units)


def _beside(b: Bundle, scene: Scene) -> tuple[tuple[float, float], tuple[float, float]]:
    """A bundle's line: between its ends, or beside that line when it is the read or the unread part of one."""
    (x1, y1), (x2, y2) = scene.pos[b.u], scene.pos[b.v]
    if not b.side:
        return (x1, y1), (x2, y2)
    length = math.hypot(x2 - x1, y2 - y1) or 1.0
    nx, ny = -(y2 - y1) / length * SIDE_GAP * b.side, (x2 - x1) / length * SIDE_GAP * b.side
    return (x1 + nx, y1 + ny), (x2 + nx, y2 + ny)


def _offset(h: Highlight, scene: Scene) -> tuple[float, float, float, float]:
    (x1, y1), (x2, y2) = scene.pos[h.u], scene.pos[h.v]
    length = math.hypot(x2 - x1, y2 - y1) or 1.0
    nx, ny = -(y2 - y1) / length * h.offset, (x2 - x1) / length * h.offset
    return x1 + nx, y1 + ny, x2 + nx, y2 + ny


def _draw_highlights(ax: _Board, scene: Scene) -> None:
    """Degraded links (under the nodes); `_labels` draws their labels over the nodes."""
    edges = [*([scene.suspect_edge] if scene.suspect_edge is not None else []), *scene.suspect_edges]
    for i, (u, v) in enumerate(edges):  # the headline's edge first; a shared suspect's each named by its ends
        (x1, y1), (x2, y2) = scene.pos[u], scene.pos[v]
        headline = i == 0 and (scene.suspect_edge is not None or (len(edges) == 1 and scene.suspect_node is None))
        ax.plot([x1, x2], [y1, y2], color=SUSPECT, alpha=0.28, linewidth=16,
                solid_capstyle="round", zorder=2, gid="suspect" if headline else f"suspect-{u}-{v}".lower()
                .replace(" ", ""))
    for h in scene.highlights:
        colour = SEVERITY_COLOURS.get(h.severity, SEVERITY_COLOURS[Severity.WARNING])
        x1, y1, x2, y2 = _offset(h, scene)
        ax.plot([x1, x2], [y1, y2], color=colour, linewidth=4.2, zorder=3,
                linestyle=(0, (3, 1.5)) if h.severity is Severity.DOWN else "-", solid_capstyle="round",
                gid=h.gid)


def _over_nodes(ax: _Board, scene: Scene, boxes: tuple[_Box, ...]) -> list[Artist]:
    """What goes over the node boxes: the degraded links' labels and the suspect's outline."""
    out: list[Artist] = []
    for h in scene.highlights:
        if not h.label:  # labelled per GPU (scene._gathered)
            continue
        colour = SEVERITY_COLOURS.get(h.severity, SEVERITY_COLOURS[Severity.WARNING])
        out.append(ax.text(*h.label_at, h.label, fontsize=9, ha="center", va="center", zorder=7,
                           color="#212529", bbox={"boxstyle": "round,pad=0.25", "facecolor": "white",
                                                  "edgecolor": colour, "linewidth": 1.5}, gid=f"{h.gid}-label"))
    marks = {m.node: m for m in scene.marks}
    for box in boxes:
        mark = marks.get(box.name)
        if mark is not None:
            colour = SEVERITY_COLOURS.get(mark.severity, SEVERITY_COLOURS[Severity.WARNING])
            ring = dataclasses.replace(box, w=box.w + 0.16, h=box.h + 0.16)  # outside a suspect outline
            if mark.ring:
                out.append(ax.add(_patch(ring, facecolor="none", edgecolor=colour, linewidth=3.0, zorder=6,
                                         gid=f"mark-{_gid(box.name)}")))
            out.append(ax.text(box.x, box.y - box.h / 2 - 0.25, mark.label, fontsize=8.5, ha="center", va="center",
                               zorder=7, color="#212529", bbox={"boxstyle": "round,pad=0.2", "facecolor": "white",
                                                                "edgecolor": colour, "linewidth": 1.2}))
        if box.name == scene.suspect_node or box.name in scene.suspect_nodes:
            gid = "suspect" if box.name == scene.suspect_node else f"suspect-{_gid(box.name)}"
            out.append(ax.add(_patch(box, facecolor="none", edgecolor=SUSPECT, linewidth=4.0, zorder=6, gid=gid)))
    return out


LEGEND_ROW = 0.21  # drawing units between legend rows (21 px)
LEGEND_WIDTH = 2.75  # drawing units, from 0.08 inside the right edge
LEGEND_FONT = 9.0


def _legend(ax: _Board, scene: Scene, judged: bool) -> None:
    """A legend drawn as one text block beside one set of sample lines (a matplotlib Legend costs 40 ms). Links are
    called healthy only where a diagnosis (`judged`) read them."""
    rows: list[tuple[str, str, float, Any, float]] = [
        (f"{'healthy ' if judged else ''}NVLinks (width: count)", HEALTHY, 1.6, "-", 1.0),
        ("PCIe", PCIE_HEALTHY, 1.0, (0, (2, 2)), 1.0),
        *[(s.value, c, 4.0, (0, (3, 1.5)) if s is Severity.DOWN else "-", 1.0) for s, c in SEVERITY_COLOURS.items()],
    ]
    if any(not b.reporting for b in scene.bundles):
        rows.append(("not reporting (GPU gone)", NOT_REPORTING, 2.0, SILENT_STYLE, 1.0))
    if any(not b.read for b in scene.bundles):
        rows.append(("not read in the input", NOT_READ, 1.6, NOT_READ_STYLE, 1.0))
    if scene.suspected:
        rows.append(("suspected component", SUSPECT, 8.0, "-", 0.45))
    right, top = WIDTH - 0.08, HEIGHT - 0.08
    left = right - LEGEND_WIDTH
    height = LEGEND_ROW * len(rows) + 0.16
    ax.add(FancyBboxPatch((left, top - height), right - left, height, boxstyle="round,pad=0,rounding_size=0.06",
                                facecolor="white", edgecolor="#ced4da", linewidth=0.8, zorder=8, alpha=0.95))
    ys = [top - 0.08 - LEGEND_ROW * (i + 0.5) for i in range(len(rows))]
    ax.add(LineCollection([((left + 0.12, y), (left + 0.55, y)) for y in ys],
                                     colors=[to_rgba(r[1], r[4]) for r in rows], linewidths=[r[2] for r in rows],
                                     linestyles=[r[3] for r in rows], zorder=9))
    ax.text(left + 0.68, ys[0], "\n".join(r[0] for r in rows), fontsize=LEGEND_FONT, va="top", zorder=9,
            linespacing=LEGEND_ROW * 72 / LEGEND_FONT, color="#212529",
            transform=ax.transData + ScaledTranslation(0, LEGEND_FONT * 0.62 / 72, ax.figure.dpi_scale_trans))


def _title(graph: NodeGraph, diagnosis: Diagnosis | None, window: str | None) -> tuple[str, str]:
    node = (diagnosis.node_id if diagnosis else None) or graph.node_id or "node"
    parts = [node, graph.either or "generic graph"]
    if diagnosis is not None:
        parts.append(window or f"{diagnosis.window_hours:g} h window")
        if diagnosis.degradation_pct is not None:
            parts.append(f"step time {diagnosis.degradation_pct:+.1f}%")
    elif window:
        parts.append(window)
    sub = ""
    if diagnosis is not None:
        failing = len(diagnosis.failing)
        warned = sum(1 for f in diagnosis.findings if f.severity is Severity.WARNING)
        sub = f"{failing} failing/down, {fmt.count(warned, 'warning link')}"
        if diagnosis.health_unknown() or diagnosis.unrated():  # drawn grey, but not cleared: said on the picture
            sub += ", health unknown (" + ("no link read" if diagnosis.health_unknown() else
                                            diagnosis.unrated_said()) + ")"
    elif not window:
        sub = "topology only (no findings)"
    return "  ·  ".join(parts), sub


def render_with_warnings(graph: NodeGraph, diagnosis: Diagnosis | None = None, *, fmt: str = "png",
                         window: str | None = None) -> tuple[bytes, list[str]]:
    """The picture and what could not be drawn (findings the graph lacks, a suspect it cannot place)."""
    if fmt not in ("png", "svg"):
        raise InputError("the picture format must be png or svg", field="format", value=fmt)
    scene = build_scene(graph, diagnosis)
    fig, canvas, ax = _blank()
    ids = fmt == "svg"
    _draw_bundles(ax, scene, ids)
    _draw_highlights(ax, scene)
    boxes = _boxes(scene, graph)
    if ids:
        _draw_nodes(ax, boxes, ids=True)
        _over_nodes(ax, scene, boxes)
    _legend(ax, scene, diagnosis is not None)
    title, sub = _title(graph, diagnosis, window)
    legend_left = (WIDTH - LEGEND_WIDTH - 0.18) * SIZE_PX[0] / WIDTH  # the headline ends before the legend
    fit(ax.text(0.15, 8.72, title, fontsize=15, fontweight="bold", va="center", color="#212529"), canvas, legend_left)
    if scene.suspect_label:
        sub = (sub + "  ·  " if sub else "") + f"suspected: {scene.suspect_label}"
    if sub:
        fit(ax.text(0.15, 8.38, sub, fontsize=10.5, va="center", color=SUSPECT if scene.suspect_label else "#495057"),
            canvas, legend_left)
    notes = [*graph.warnings, *scene.warnings]
    for i, note in enumerate(notes[:3]):
        ax.text(0.15, 0.52 - 0.2 * i, footnote(note, 160), fontsize=7.5, color="#862e9c", va="center")
    out = io.BytesIO()
    if fmt == "png":
        canvas.draw()
        pixels = np.asarray(canvas.buffer_rgba())
        _node_layer(boxes).over(pixels)
        renderer = canvas.get_renderer()
        for artist in _over_nodes(ax, scene, boxes):
            artist.draw(renderer)
        # RGB, not RGBA: the picture is opaque, and a quarter fewer bytes encode faster
        Image.fromarray(pixels[:, :, :3]).save(out, format="png", compress_level=PNG_COMPRESSION)
    else:
        fig.savefig(out, format="svg", metadata={"Date": None})
    return out.getvalue(), notes


def render_node(graph: NodeGraph, diagnosis: Diagnosis | None = None, *, fmt: str = "png",
                window: str | None = None) -> bytes:
    """PNG or SVG bytes of the node's fabric, with the diagnosis's findings drawn on it."""
    return render_with_warnings(graph, diagnosis, fmt=fmt, window=window)[0]


__all__ = ["SEVERITY_COLOURS", "render_node", "render_with_warnings"]
