"""The fleet heat map (PNG): nodes by GPUs, each cell coloured by the worst finding on that GPU, the suspected parts
outlined, from a sweep's result (the engine's offenders and the offending nodes' diagnoses).

The columns are the GPUs of the nodes' platforms (a GB200 compute tray's 4, an HGX board's 8; a node of no known
platform is taken to have the default 8); a GPU a node's platform does not have is left blank, never healthy. A last
column holds what belongs to no one GPU (an NVSwitch port, the node's GPU count); a node with no reading in the span
is dark, and a node whose links were not judged (one reading per link: totals, no rates) pale blue, never
healthy. Up to 64 nodes are one panel with every name; a larger fleet is folded into
panels of up to 128 rows, side by side, named every few rows.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from datetime import datetime

import matplotlib
import numpy as np

matplotlib.use("Agg")

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection, PatchCollection
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle
from PIL import Image  # matplotlib's own dependency

from .. import format as fmt
from ..analysis.boards import gpu_count
from ..enums import Severity, severity_rank
from ..offenders import SweepResult
from ..snapshots import DEFAULT_GPU_COUNT
from .colours import INK, MUTED, SEVERITY_COLOURS, SUSPECT

WIDTH_PX = 1200
HEALTHY_CELL = "#e9ecef"
SILENT_CELL = "#343a40"
UNJUDGED_CELL = "#74c0fc"  # read, but not judged: neither the grey of within thresholds nor a severity
NO_GPU_CELL = "#ffffff"  # as the background: nothing is there
SILENT = -1  # a cell's code for a node with no reading
NO_GPU = -2  # ... for a GPU the node's platform does not have
UNJUDGED = -3  # ... for a node whose links were not judged (a flagged cell of it keeps its severity)
LEVELS = (Severity.OK, Severity.WARNING, Severity.FAILING, Severity.DOWN)  # a cell's code is its index here
NAMED_ROWS = 64  # up to this many nodes: one panel, every node named
PANEL_ROWS = 128
MARGIN = {"left": 150, "right": 170, "top": 92, "bottom": 44, "gap": 46}  # px
FOLDED_LEFT = 44  # a folded fleet names each panel's first node above it, and rows by their offset
MIN_HEIGHT_PX = 300  # room for the legend's every entry below the title, however few nodes the grid has


@dataclass(frozen=True)
class FleetGrid:
    """What the heat map shows: per node (row) and GPU (column; the last: no one GPU) the worst severity's code."""

    nodes: list[str]
    gpus: int
    cells: np.ndarray  # int8 [nodes, gpus + 1]: index into LEVELS, or SILENT, NO_GPU or UNJUDGED
    suspects: list[tuple[int, int]]  # (row, column) of each suspected part
    at: datetime
    window_hours: float
    complete: bool
    offenders_only: bool = False  # the source named only the offending nodes (a Prometheus sweep)

    def severity(self, node: str, column: int) -> Severity | None:
        """A cell's worst severity; None for a node with no reading or not judged, or a GPU its platform does not
        have."""
        code = int(self.cells[self.nodes.index(node), column])
        return None if code < 0 else LEVELS[code]


def fleet_grid(result: SweepResult) -> FleetGrid:
    """Every node of the sweep (those it swept, offending, silent or not judged), each GPU's worst offender, the
    parts the offending nodes' diagnoses suspect, in their severity (not for a node in planned work: it is not
    paged). As many GPU columns as the nodes' platforms have (the default 8 for a node of no known platform, more
    where an offender names a higher GPU); a GPU its node's platform lacks is NO_GPU."""
    offenders = result.offenders
    nodes = sorted(set(result.swept) | set(result.silent) | set(result.unjudged) | {o.node_id for o in offenders})
    platforms = {**{n: d.platform for n, d in result.diagnoses.items() if d.platform}, **result.platforms}
    counts = {n: gpu_count(platforms.get(n)) for n in nodes}
    seen = [o.gpu + 1 for o in offenders if o.gpu is not None]
    gpus = max([*(DEFAULT_GPU_COUNT if c is None else c for c in counts.values()), *seen], default=DEFAULT_GPU_COUNT)
    row = {n: i for i, n in enumerate(nodes)}
    cells = np.zeros((len(nodes), gpus + 1), dtype=np.int8)
    for node in result.silent:
        cells[row[node]] = SILENT
    for node in result.unjudged:  # a cell its offenders flag keeps their severity (max below)
        cells[row[node]] = UNJUDGED
    for node, count in counts.items():
        if count is not None:
            cells[row[node], count:gpus] = NO_GPU
    for o in offenders:  # an offender's GPU is there, whatever its platform says
        column = o.gpu if o.gpu is not None else gpus
        cells[row[o.node_id], column] = max(int(cells[row[o.node_id], column]), severity_rank(o.severity))
    suspects = []
    for node, d in sorted(result.diagnoses.items()):
        if node not in row or d.maintenance:
            continue
        for loc in d.localizations or ([d.localization] if d.localization else []):
            at = (row[node], loc.gpu if loc.gpu is not None and loc.gpu < gpus else gpus)
            suspects.append(at)
            cells[at] = max(int(cells[at]), severity_rank(loc.severity))  # a switch is no offender's GPU
    return FleetGrid(nodes, gpus, cells, sorted(set(suspects)), result.at, result.window_hours, result.complete,
                     offenders_only=not result.swept)


@dataclass(frozen=True)
class Layout:
    """Where each panel and cell lands, in pixels from the top left."""

    height: int
    rows: int  # per panel
    columns: int
    panels: int
    cell_w: float
    cell_h: float

    def panel_left(self, panel: int) -> float:
        left = MARGIN["left"] if self.panels == 1 else FOLDED_LEFT
        return left + panel * (self.columns * self.cell_w + MARGIN["gap"])

    def cell_centre(self, row: int, column: int) -> tuple[int, int]:
        panel, r = divmod(row, self.rows)
        x = self.panel_left(panel) + (column + 0.5) * self.cell_w
        return round(x), round(MARGIN["top"] + (r + 0.5) * self.cell_h)


def layout_of(grid: FleetGrid) -> Layout:
    n = max(len(grid.nodes), 1)
    panels = 1 if n <= NAMED_ROWS else math.ceil(n / PANEL_ROWS)
    rows = math.ceil(n / panels)
    columns = grid.gpus + 1
    cell_h = 18.0 if rows <= 32 else 12.0 if rows <= NAMED_ROWS else 5.0
    left = MARGIN["left"] if panels == 1 else FOLDED_LEFT
    room = WIDTH_PX - left - MARGIN["right"] - (panels - 1) * MARGIN["gap"]
    cell_w = min(room / panels / columns, 56.0)
    height = max(round(MARGIN["top"] + rows * cell_h + MARGIN["bottom"]), MIN_HEIGHT_PX)
    return Layout(height, rows, columns, panels, cell_w, cell_h)


def _palette() -> np.ndarray:
    """RGB per code: LEVELS in order, then UNJUDGED (index -3), NO_GPU (index -2) and SILENT (index -1)."""
    colours = [HEALTHY_CELL, *(SEVERITY_COLOURS[s] for s in LEVELS[1:]), UNJUDGED_CELL, NO_GPU_CELL, SILENT_CELL]
    return (np.array([to_rgb(c) for c in colours]) * 255).astype(np.uint8)


def _title(grid: FleetGrid) -> tuple[str, str]:
    bad = int((grid.cells > 0).any(axis=1).sum())
    dark = grid.cells == SILENT
    silent = int(((dark | (grid.cells == NO_GPU)).all(axis=1) & dark.any(axis=1)).sum()) if grid.cells.size else 0
    unjudged = int((grid.cells == UNJUDGED).any(axis=1).sum()) if grid.cells.size else 0
    if grid.offenders_only:
        title = f"Fleet: {fmt.count(bad, 'node')} with offenders (the others are not listed by the source)"
    else:
        title = f"Fleet: {fmt.count(len(grid.nodes), 'node')}, {bad} with offenders" + (
            f", {silent} silent" if silent else "") + (f", {unjudged} not judged" if unjudged else "")
    if not grid.complete:
        title += "  (INCOMPLETE: not an all-clear)"
    sub = f"{fmt.window(grid.window_hours, grid.at)}  ·  worst finding per GPU  ·  suspected parts outlined"
    return title, sub


def render_fleet(result: SweepResult) -> bytes:
    """PNG bytes of the sweep's heat map: nodes by GPUs, coloured by the worst finding."""
    grid = fleet_grid(result)
    lay = layout_of(grid)
    fig = Figure(figsize=(WIDTH_PX / 100, lay.height / 100), dpi=100, facecolor="white")
    canvas = FigureCanvasAgg(fig)
    colours = _palette()[grid.cells.astype(np.int64)]
    named = lay.panels == 1
    for panel in range(lay.panels):
        lo, hi = panel * lay.rows, min((panel + 1) * lay.rows, len(grid.nodes))
        if lo >= hi:
            break
        left, top = lay.panel_left(panel), MARGIN["top"]
        width, height = lay.columns * lay.cell_w, (hi - lo) * lay.cell_h
        ax = fig.add_axes((left / WIDTH_PX, 1 - (top + height) / lay.height, width / WIDTH_PX,
                           height / lay.height))
        ax.imshow(colours[lo:hi], aspect="auto", interpolation="nearest", extent=(0, lay.columns, hi - lo, 0))
        ax.add_collection(LineCollection([((c, 0), (c, hi - lo)) for c in range(1, lay.columns)],
                                         colors="white", linewidths=1.0))
        if lay.cell_h >= 12:
            ax.add_collection(LineCollection([((0, r), (lay.columns, r)) for r in range(1, hi - lo)],
                                             colors="white", linewidths=1.0))
        marks = [Rectangle((c + 0.08, r - lo + 0.1), 0.84, 0.8) for r, c in grid.suspects if lo <= r < hi]
        if marks:
            ax.add_collection(PatchCollection(marks, facecolor="none", edgecolor=SUSPECT,
                                              linewidth=2.2 if lay.cell_h >= 12 else 1.2))
        ax.set_xlim(0, lay.columns)
        ax.set_ylim(hi - lo, 0)
        ax.set_xticks([c + 0.5 for c in range(lay.columns)],
                      [str(g) for g in range(grid.gpus)] + ["sw"], fontsize=8 if named else 6.5)
        if named:
            ax.xaxis.tick_top()
            ax.set_yticks([r + 0.5 for r in range(hi - lo)], grid.nodes[lo:hi],
                          fontsize=8.5 if lay.cell_h >= 12 else 6.5)
        else:  # the panel's first node above it; rows by their offset in the panel
            ax.set_title(grid.nodes[lo], fontsize=7, color=INK, loc="left", pad=3)
            ticks = list(range(0, hi - lo, 16)) if panel == 0 else []
            ax.set_yticks([r + 0.5 for r in ticks], [f"+{r}" for r in ticks], fontsize=6.5)
        ax.tick_params(length=0, pad=2, colors=INK)
        for spine in ax.spines.values():
            spine.set_visible(False)
    handles = [Patch(facecolor=HEALTHY_CELL, label="within thresholds"),
               *(Patch(facecolor=SEVERITY_COLOURS[s], label=s.value) for s in LEVELS[1:]),
               Patch(facecolor=SILENT_CELL, label="no reading"),
               *([Patch(facecolor=UNJUDGED_CELL, label="not judged")]
                 if (grid.cells == UNJUDGED).any() else []),
               *([Patch(facecolor=NO_GPU_CELL, edgecolor="#ced4da", label="no such GPU")]
                 if (grid.cells == NO_GPU).any() else []),
               Patch(facecolor="none", edgecolor=SUSPECT, linewidth=2.0, label="suspected part")]
    fig.legend(handles=handles, loc="upper right", bbox_to_anchor=(1 - 8 / WIDTH_PX, 1 - MARGIN["top"] / lay.height),
               fontsize=8.5, frameon=False, title=f"GPU 0-{grid.gpus - 1} · sw: switch/node",
               title_fontsize=8)
    title, sub = _title(grid)
    fig.text(16 / WIDTH_PX, 1 - 24 / lay.height, title, fontsize=13.5, fontweight="bold", color=INK, va="center")
    fig.text(16 / WIDTH_PX, 1 - 48 / lay.height, sub, fontsize=10, color=MUTED, va="center")
    canvas.draw()
    out = io.BytesIO()
    Image.fromarray(np.asarray(canvas.buffer_rgba())[:, :, :3]).save(out, format="png", compress_level=6)
    return out.getvalue()


__all__ = ["FleetGrid", "Layout", "fleet_grid", "layout_of", "render_fleet"]
