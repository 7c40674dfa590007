"""The rack picture (PNG or SVG): compute trays as rows, switch chips as columns, the suspected unit outlined.

Each cell holds the links of one compute tray's GPUs to one switch chip, one stripe per GPU (GB200 NVL72: 18 rows,
18 columns of 4 stripes, every GPU link of the rack once), coloured by the worst severity either end of the link
reads; a switch port's finding is drawn on the GPU link that lands on it. The suspect (a GPU, a compute tray, a
chip or port, a switch tray, a cartridge) is outlined where its links are. Sized as the node picture is (1200x900 px,
under 300 KB). In SVG each compute tray row, switch chip column and the suspect carry an id (`unit-tray7`,
`unit-switch-tray3-chip2`, `suspect`) for a clickable view.
"""

from __future__ import annotations

import io

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle
from PIL import Image

from ..analysis.absence import gpu_gone
from ..components import ComponentRef, tray_chip
from ..enums import ComponentKind, Severity, severity_rank
from ..errors import InputError
from ..model import Diagnosis, Finding, Localization
from ..topology.rack import RackGraph, rack_graph
from .draw import PNG_COMPRESSION, SEVERITY_COLOURS, SIZE_PX, SUSPECT
from .text import footnote

HEALTHY = "#dee2e6"
UNREAD = "#f8f9fa"  # a tray the inventory does not name: its links are not read
DOWNSTREAM = "#e5dbff"  # a GPU whose Xids echo the suspect's fault: dimmed, not a suspect
GRID = (0.16, 0.1, 0.8, 0.68)  # the grid's axes, in figure fractions: left, bottom, width, height
Cell = tuple[int, int, int]  # (compute tray, GPU, link): one GPU link of the rack

_COLOURS = np.array([to_rgb(HEALTHY), to_rgb(SEVERITY_COLOURS[Severity.WARNING]),
                     to_rgb(SEVERITY_COLOURS[Severity.FAILING]), to_rgb(SEVERITY_COLOURS[Severity.DOWN]),
                     to_rgb(UNREAD), to_rgb(DOWNSTREAM)])


def _cell_of(ref: ComponentRef, rack: RackGraph, tray: str | None = None) -> Cell | None:
    """The GPU link a ref names, by its GPU end (in `tray`, a tray's own diagnosis, when the ref names none) or by
    the switch port it lands on."""
    tray = ref.tray if ref.tray is not None else tray
    if ref.kind is ComponentKind.NVLINK and tray is not None and str(tray).isdigit() \
            and ref.gpu is not None and ref.link is not None and rack.has(int(tray), ref.gpu, ref.link):
        return int(tray), ref.gpu, ref.link
    if ref.kind is ComponentKind.NVSWITCH and ref.switch_tray is not None and str(ref.switch_tray).isdigit() \
            and ref.chip is not None and ref.port is not None:
        end = rack.from_port(int(ref.switch_tray), ref.chip, ref.port)
        return (end.tray, end.gpu, end.link) if end is not None else None
    return None


def severity_grid(diagnosis: Diagnosis, rack: RackGraph) -> tuple[np.ndarray, list[Finding]]:
    """Per (tray, chip, GPU) the worst severity rank of its link (0 healthy .. 3 down; 4 not read; 5 a healthy link
    of a GPU downstream of the suspect), and the findings no cell can show (a GPU's totals, an Xid, a tray known
    only by its host), the downstream GPUs' echoes left out."""
    spec = rack.spec
    grid = np.zeros((spec.compute_trays, spec.chips, spec.gpus_per_tray), dtype=np.int8)
    place = diagnosis.rack
    if place is not None and place.slots_known:
        named = {int(t) for t in place.compute if t.isdigit()}
        for tray in set(rack.compute_trays) - named:
            grid[tray - 1] = 4
    echoes = _downstream(diagnosis)
    own_switch = switch_slot(diagnosis)
    unplaced = []
    for f in diagnosis.findings:
        gone = _gone_gpu(f, rack, None if own_switch is not None else diagnosis.tray)
        if gone is not None:  # a GPU gone from the bus: none of its links reads, so none is drawn healthy
            cells = grid[gone[0] - 1, :, gone[1]]
            cells[(cells < DOWN) | (cells == 4)] = DOWN
            continue
        cell = _cell_of(_on_switch_tray(f.ref, own_switch), rack, None if own_switch is not None else diagnosis.tray)
        if cell is None:
            if f.severity is not Severity.OK and (f.ref.tray, f.ref.gpu) not in echoes:
                unplaced.append(f)
            continue
        tray, gpu, link = cell
        rank = severity_rank(f.severity)
        if grid[tray - 1, link, gpu] < rank or grid[tray - 1, link, gpu] == 4:
            grid[tray - 1, link, gpu] = rank
    for tray_label, echo in echoes:  # downstream GPUs' healthy links are dimmed: their Xids are the suspect's echo
        if tray_label is not None and tray_label.isdigit() and echo is not None \
                and 1 <= int(tray_label) <= spec.compute_trays and 0 <= echo < spec.gpus_per_tray:
            cells = grid[int(tray_label) - 1, :, echo]
            cells[cells == 0] = 5
    return grid, unplaced


DOWN = severity_rank(Severity.DOWN)


def _gone_gpu(f: Finding, rack: RackGraph, tray: str | None) -> tuple[int, int] | None:
    """(compute tray, GPU) of a finding that says its GPU is gone (an Xid 79, every series silent), where the rack
    has that GPU."""
    slot = f.ref.tray if f.ref.tray is not None else tray
    if not gpu_gone(f) or f.gpu is None or slot is None or not str(slot).isdigit():
        return None
    spec = rack.spec
    return (int(slot), f.gpu) if 1 <= int(slot) <= spec.compute_trays and 0 <= f.gpu < spec.gpus_per_tray else None


def switch_slot(diagnosis: Diagnosis) -> int | None:
    """A switch tray host's own slot: its diagnosis's `tray` is a switch tray's, not the compute tray of that
    number."""
    place = diagnosis.rack
    if place is None or diagnosis.tray is None:
        return None
    slot = next((s for s, host in place.switch.items() if host == diagnosis.node_id), None)
    return int(slot) if slot is not None and slot.isdigit() else None


def _on_switch_tray(ref: ComponentRef, slot: int | None) -> ComponentRef:
    """A switch tray host's own port ("NVSwitch 1 port 17": the host counts its chips from 0) as the rack's chip
    and port ("Switch tray 3 chip 2 port 17"), so it lands on its GPU link."""
    chip = tray_chip(ref.switch)
    if slot is None or ref.kind is not ComponentKind.NVSWITCH or ref.switch_tray is not None or ref.port is None \
            or chip is None:
        return ref
    return ComponentRef.switch_chip(str(slot), chip, ref.port)


def _downstream(diagnosis: Diagnosis) -> set[tuple[str | None, int | None]]:
    loc = diagnosis.localization
    return {(r.tray, r.gpu) for r in loc.downstream} if loc is not None else set()


def suspect_boxes(loc: Localization, rack: RackGraph) -> list[tuple[float, float, float, float]]:
    """The suspect's outline(s) in grid units (x = chip column + GPU stripe / GPUs, y = tray row): x, y, w, h."""
    spec, ref = rack.spec, loc.ref
    rows, cols = float(spec.compute_trays), float(spec.chips)
    stripe = 1.0 / spec.gpus_per_tray
    tray = int(ref.tray) if ref.tray is not None and str(ref.tray).isdigit() else None
    if ref.kind is ComponentKind.COMPUTE_TRAY and tray is not None:
        return [(0.0, tray - 1.0, cols, 1.0)]
    if ref.kind is ComponentKind.GPU and tray is not None and ref.gpu is not None:
        return [(c + ref.gpu * stripe, tray - 1.0, stripe, 1.0) for c in range(spec.chips)]
    if ref.kind is ComponentKind.SWITCH_TRAY and ref.switch_tray is not None and str(ref.switch_tray).isdigit():
        first = rack.chip_index(int(ref.switch_tray), 1)
        return [(float(first), 0.0, float(spec.chips_per_switch_tray), rows)]
    if ref.kind is ComponentKind.CARTRIDGE:
        cart = next((c for c in spec.cartridge if c.id == ref.cartridge), None)
        if cart is None:
            return []
        return [(float(cart.links[0]), cart.compute_trays[0] - 1.0, cart.links[1] - cart.links[0] + 1.0,
                 cart.compute_trays[1] - cart.compute_trays[0] + 1.0)]
    cell = _cell_of(ref, rack)
    if cell is not None:
        return [(cell[2] + cell[1] * stripe, cell[0] - 1.0, stripe, 1.0)]
    if ref.kind is ComponentKind.NVSWITCH and ref.switch_tray is not None and str(ref.switch_tray).isdigit() \
            and ref.chip is not None:
        return [(float(rack.chip_index(int(ref.switch_tray), ref.chip)), 0.0, 1.0, rows)]
    return []


def wants_rack_view(diagnosis: Diagnosis) -> bool:
    """Whether a diagnosis is drawn as its rack: a rack's own, or a tray's whose ticket is not its own (its suspect
    is outside the tray)."""
    if diagnosis.rack is None:
        return False
    if diagnosis.tray is None:
        return True
    return diagnosis.fault_detected and diagnosis.ticket_owner != diagnosis.node_id


def _pixels(grid: np.ndarray) -> np.ndarray:
    """The grid as an RGB image, one pixel per GPU link: rows are trays, columns chip-major, GPU-minor."""
    trays, chips, gpus = grid.shape
    return _COLOURS[grid.reshape(trays, chips * gpus)]


def render_rack(diagnosis: Diagnosis, *, fmt: str = "png") -> bytes:
    """PNG or SVG bytes of a rack's Diagnosis (one `analyze_fleet` gives for each rack of its inventory)."""
    if fmt not in ("png", "svg"):
        raise InputError("the picture format must be png or svg", field="format", value=fmt)
    if diagnosis.rack is None:
        raise InputError(f"{diagnosis.node_id} is not a rack's diagnosis: draw it with the node picture",
                         field="diagnosis", value=diagnosis.node_id)
    rack = rack_graph(diagnosis.rack.platform)
    spec = rack.spec
    grid, unplaced = severity_grid(diagnosis, rack)
    fig = Figure(figsize=(SIZE_PX[0] / 100, SIZE_PX[1] / 100), dpi=100, facecolor="white")
    canvas = FigureCanvasAgg(fig)
    ax = fig.add_axes(GRID)
    rows, cols = spec.compute_trays, spec.chips
    ax.imshow(_pixels(grid), extent=(0, cols, rows, 0), interpolation="nearest", aspect="auto")
    ax.set_xlim(0, cols)
    ax.set_ylim(rows, 0)
    ax.vlines(range(1, cols), 0, rows, colors="white", linewidth=2.5)
    ax.vlines(range(spec.chips_per_switch_tray, cols, spec.chips_per_switch_tray), 0, rows, colors="#495057",
              linewidth=1.0)
    ax.hlines(range(1, rows), 0, cols, colors="white", linewidth=2.5)
    ax.set_xticks([c + 0.5 for c in range(cols)], [f"U{rack.chip_of(c)[1]}" for c in range(cols)], fontsize=7.5)
    ax.set_yticks([r + 0.5 for r in range(rows)], [_tray_label(diagnosis, r + 1) for r in range(rows)], fontsize=8)
    ax.tick_params(length=0)
    for st in rack.switch_trays:
        ax.text(rack.chip_index(st, 1) + spec.chips_per_switch_tray / 2, -0.35, f"Switch tray {st}", ha="center",
                va="bottom", fontsize=8, color="#343a40")
    for spine in ax.spines.values():
        spine.set_visible(False)
    ids = fmt == "svg"
    if ids:  # clickable units: a transparent box per compute tray row and per switch chip column
        for r in range(rows):
            ax.add_patch(Rectangle((0, r), cols, 1, fill=False, linewidth=0, gid=f"unit-tray{r + 1}"))
        for c in range(cols):
            st, chip = rack.chip_of(c)
            ax.add_patch(Rectangle((c, 0), 1, rows, fill=False, linewidth=0, gid=f"unit-switch-tray{st}-chip{chip}"))
    loc = diagnosis.localization
    for i, (x, y, w, h) in enumerate(suspect_boxes(loc, rack) if loc is not None else []):
        ax.add_patch(Rectangle((x, y), w, h, fill=False, edgecolor=SUSPECT, linewidth=3.0, zorder=5,
                               gid="suspect" if i == 0 and ids else None))
    _header(fig, diagnosis, loc, unplaced)
    handles = [Patch(color=HEALTHY, label="healthy"),
               *[Patch(color=SEVERITY_COLOURS[s], label=s.value) for s in SEVERITY_COLOURS],
               Patch(facecolor="white", edgecolor=SUSPECT, linewidth=2, label="suspected unit"),
               *([Patch(color=DOWNSTREAM, label="downstream of it")] if loc is not None and loc.downstream else [])]
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), frameon=False, fontsize=9,
               bbox_to_anchor=(0.5, 0.005))
    out = io.BytesIO()
    if fmt == "png":
        canvas.draw()
        pixels = np.asarray(canvas.buffer_rgba())
        Image.fromarray(pixels[:, :, :3]).save(out, format="png", compress_level=PNG_COMPRESSION)
    else:
        fig.savefig(out, format="svg", metadata={"Date": None})
    return out.getvalue()


def _tray_label(diagnosis: Diagnosis, tray: int) -> str:
    host = diagnosis.rack.compute.get(str(tray)) if diagnosis.rack is not None else None
    return f"Tray {tray}  {host}" if host else f"Tray {tray}"


def _header(fig: Figure, d: Diagnosis, loc: Localization | None, unplaced: list[Finding]) -> None:
    place = d.rack
    rack = place.rack_id if place else d.node_id
    slot = switch_slot(d)
    on_it = slot is not None and loc is not None and loc.ref.switch_tray == str(slot)
    tray = ("" if d.tray is None else
            f"  ·  switch tray {slot} ({d.node_id}): the suspect is on it" if on_it else
            f"  ·  {'switch tray' if slot is not None else 'tray'} {d.tray} ({d.node_id}): the fault is outside it")
    title = f"Rack {rack}  ·  {place.platform if place else d.platform}  ·  {d.ticket_priority.value}{tray}"
    fig.text(0.012, 0.965, title, fontsize=15, fontweight="bold", va="center", color="#212529")
    sub = (f"suspected: {loc.component}" if loc is not None else
           "no failing link" if not d.fault_detected else "no unit localized")
    fig.text(0.012, 0.928, sub, fontsize=11, va="center", color=SUSPECT if loc is not None else "#495057")
    lines = [f"{f.component}: {f.severity.value}" for f in unplaced[:2]] + list(d.warnings[:2])
    for i, line in enumerate(lines[:3]):
        fig.text(0.012, 0.895 - 0.024 * i, footnote(line, 170), fontsize=7.5, va="center", color="#862e9c")


__all__ = ["render_rack", "severity_grid", "suspect_boxes", "wants_rack_view"]
