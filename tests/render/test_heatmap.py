"""The fleet heat map, checked by its pixels: each cell in the colour of the worst finding on that node's GPU, a
silent node dark, the suspected part outlined, a large fleet folded into panels."""

from __future__ import annotations

import io
from datetime import UTC, datetime

import numpy as np
import pytest
from PIL import Image

from diagnostics.components import ComponentRef
from diagnostics.enums import LinkType, Severity
from diagnostics.model import Crossing, Diagnosis, Finding, Localization
from diagnostics.offenders import Offender, SweepResult
from diagnostics.render.colours import SEVERITY_COLOURS, SUSPECT
from diagnostics.render.heatmap import (
    HEALTHY_CELL,
    NO_GPU,
    NO_GPU_CELL,
    SILENT,
    SILENT_CELL,
    WIDTH_PX,
    fleet_grid,
    layout_of,
    render_fleet,
)
from diagnostics.service import fleet_result

AT = datetime(2026, 9, 17, 8, 0, tzinfo=UTC)


def rgb(colour: str) -> np.ndarray:
    return np.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)])


def offender(node: str, gpu: int | None, severity: Severity, rule: str = "nvlink_replay") -> Offender:
    return Offender(node_id=node, link_type=LinkType.NVLINK, gpu=gpu, link=1, rule=rule, severity=severity,
                    rate_per_hour=5000.0, above=1000.0)


def suspecting(node: str, gpu: int | None, switch: str | None = None) -> Diagnosis:
    ref = ComponentRef.nvswitch(switch) if switch else ComponentRef.nvlink(gpu, 1)
    loc = Localization(ref=ref, gpu=gpu, switch=switch, confidence=0.9, severity=Severity.FAILING)
    return Diagnosis(node_id=node, platform="hgx-h100-8gpu", window_hours=1.0, fault_detected=True,
                     isolated_component=ref.name, degradation_pct=None, repair_action="reseat",
                     ticket_priority="medium",  # type: ignore[arg-type]
                     findings=[], localization=loc, localizations=[loc])


def sweep(nodes: list[str], offenders: list[Offender], diagnoses: dict[str, Diagnosis],
          silent: tuple[str, ...] = ()) -> SweepResult:
    return SweepResult(at=AT, window_hours=1.0, source="store", offenders=offenders, diagnoses=diagnoses,
                       swept=nodes, silent=list(silent))


def picture(result: SweepResult) -> np.ndarray:
    img = Image.open(io.BytesIO(render_fleet(result)))
    assert img.size == (WIDTH_PX, layout_of(fleet_grid(result)).height)
    return np.asarray(img.convert("RGB")).astype(int)


def colour_at(img: np.ndarray, point: tuple[int, int]) -> np.ndarray:
    x, y = point
    return img[y, x]


def is_colour(img: np.ndarray, point: tuple[int, int], colour: str, tol: int = 12) -> bool:
    return bool(np.abs(colour_at(img, point) - rgb(colour)).max() <= tol)


@pytest.fixture(scope="module")
def small() -> tuple[SweepResult, np.ndarray]:
    nodes = [f"node-{i:02d}" for i in range(1, 7)]
    result = sweep(nodes, [offender("node-02", 3, Severity.FAILING), offender("node-03", 0, Severity.WARNING),
                           offender("node-03", 0, Severity.DOWN, "link_down"),
                           offender("node-03", 5, Severity.WARNING, "crc")],
                   {"node-02": suspecting("node-02", 3), "node-04": suspecting("node-04", None, "NVSwitch 1")},
                   silent=("node-06",))
    return result, picture(result)


def test_each_cell_has_the_colour_of_its_worst_finding(small: tuple[SweepResult, np.ndarray]) -> None:
    result, img = small
    grid, lay = fleet_grid(result), layout_of(fleet_grid(result))
    row = grid.nodes.index
    assert is_colour(img, lay.cell_centre(row("node-02"), 3), SEVERITY_COLOURS[Severity.FAILING])
    assert is_colour(img, lay.cell_centre(row("node-03"), 0), SEVERITY_COLOURS[Severity.DOWN])  # down beats warning
    assert is_colour(img, lay.cell_centre(row("node-03"), 5), SEVERITY_COLOURS[Severity.WARNING])
    for node, gpu in (("node-01", 0), ("node-02", 2), ("node-05", 7), ("node-03", 1)):
        assert is_colour(img, lay.cell_centre(row(node), gpu), HEALTHY_CELL), (node, gpu)
    assert all(is_colour(img, lay.cell_centre(row("node-06"), g), SILENT_CELL) for g in range(9))


def test_the_suspected_parts_are_outlined(small: tuple[SweepResult, np.ndarray]) -> None:
    result, img = small
    grid, lay = fleet_grid(result), layout_of(fleet_grid(result))

    def outlined(node: str, column: int) -> bool:
        x, y = lay.cell_centre(grid.nodes.index(node), column)
        edge = img[y, x - round(lay.cell_w / 2) + 1:x]  # from the cell's left edge to its centre
        return bool((np.abs(edge - rgb(SUSPECT)).max(axis=1) <= 40).any())

    assert outlined("node-02", 3)
    assert outlined("node-04", grid.gpus)  # a switch: the last column, in the part's severity
    assert is_colour(img, lay.cell_centre(grid.nodes.index("node-04"), grid.gpus), SEVERITY_COLOURS[Severity.FAILING])
    assert not outlined("node-03", 0) and not outlined("node-01", 3)


def test_a_thousand_nodes_fold_into_panels() -> None:
    nodes = [f"gpu-node-{i:04d}" for i in range(1024)]
    result = sweep(nodes, [offender("gpu-node-1000", 5, Severity.FAILING), offender("gpu-node-0007", 1,
                                                                                    Severity.DOWN)], {})
    grid, lay = fleet_grid(result), layout_of(fleet_grid(result))
    assert lay.panels == 8 and lay.rows == 128
    img = picture(result)
    assert is_colour(img, lay.cell_centre(1000, 5), SEVERITY_COLOURS[Severity.FAILING])
    assert is_colour(img, lay.cell_centre(7, 1), SEVERITY_COLOURS[Severity.DOWN])
    assert is_colour(img, lay.cell_centre(1000, 4), HEALTHY_CELL)
    assert grid.severity("gpu-node-1000", 5) is Severity.FAILING


def test_a_source_that_lists_only_offenders_says_so() -> None:
    result = sweep([], [offender("node-02", 3, Severity.FAILING)], {})
    grid = fleet_grid(result)
    assert grid.offenders_only and grid.nodes == ["node-02"]


def node_of(node: str, platform: str, offending_gpu: int | None = None) -> Diagnosis:
    """A node's diagnosis on its platform: within thresholds, or with one failing NVLink on `offending_gpu`."""
    findings = [] if offending_gpu is None else [Finding(
        ref=ComponentRef.nvlink(offending_gpu, 1), link_type=LinkType.NVLINK, link_id="nvlink-1", link=1,
        gpu=offending_gpu, severity=Severity.FAILING,
        crossed=[Crossing(rule="nvlink_replay", counter="replay", rate_per_hour=5000.0, above=1000.0,
                          severity=Severity.FAILING, message="replays")])]
    return Diagnosis(node_id=node, platform=platform, window_hours=1.0, fault_detected=bool(findings),
                     isolated_component="None", degradation_pct=None, repair_action="none",
                     ticket_priority="low",  # type: ignore[arg-type]
                     findings=findings)


def test_the_columns_are_the_gpus_of_the_nodes_platforms() -> None:
    """A GB200 rack swept: its compute trays have GPUs 0-3 and its switch trays none; no column or cell for a GPU
    that is not there, whichever nodes offend (the healthy ones' platforms count too)."""
    diagnoses = {"rack-01-c01": node_of("rack-01-c01", "gb200-nvl72-compute-tray", 2),
                 "rack-01-c02": node_of("rack-01-c02", "gb200-nvl72-compute-tray"),
                 "rack-01-s01": node_of("rack-01-s01", "gb200-nvl72-switch-tray")}
    result = fleet_result(diagnoses, window_hours=1.0, at=AT)
    grid, lay = fleet_grid(result), layout_of(fleet_grid(result))
    assert grid.gpus == 4 and grid.cells.shape == (3, 5)
    assert grid.severity("rack-01-c01", 2) is Severity.FAILING and grid.severity("rack-01-c02", 3) is Severity.OK
    assert [grid.severity("rack-01-s01", g) for g in range(4)] == [None] * 4  # a switch tray has no GPU
    assert grid.severity("rack-01-s01", grid.gpus) is Severity.OK  # its switches: the last column
    img = picture(result)
    assert is_colour(img, lay.cell_centre(2, 0), NO_GPU_CELL) and is_colour(img, lay.cell_centre(2, 4), HEALTHY_CELL)
    assert is_colour(img, lay.cell_centre(0, 2), SEVERITY_COLOURS[Severity.FAILING])


def test_a_mixed_fleet_blanks_the_gpus_a_smaller_platform_lacks() -> None:
    """An HGX node (8 GPUs), a GB200 tray (4) and a node of no known platform (the default 8), one silent."""
    result = sweep(["gb-1", "hgx-1", "odd-1"], [offender("hgx-1", 6, Severity.WARNING)], {}, silent=("gb-1",))
    result.platforms.update({"gb-1": "gb200-nvl72-compute-tray", "hgx-1": "hgx-h100-8gpu"})
    grid = fleet_grid(result)
    assert grid.gpus == 8
    assert [grid.severity("gb-1", g) for g in range(4, 8)] == [None] * 4
    assert int(grid.cells[grid.nodes.index("gb-1"), 4]) == NO_GPU and int(grid.cells[0, 0]) == SILENT
    assert grid.severity("odd-1", 7) is Severity.OK and grid.severity("hgx-1", 6) is Severity.WARNING


def test_a_node_whose_links_were_not_judged_is_drawn_apart_not_within_thresholds() -> None:
    """A node read once per link (totals, no rates) is not judged: the sweep says so, and the map draws it in a
    colour of its own, named in the legend, never the grey of a node within thresholds, nor a silent node's."""
    from diagnostics.service import Request, TableSource
    from diagnostics.service import sweep as sweep_source
    from tests.analysis.helpers import link_series, links, steady

    tables = {"link_samples": links(link_series(steady(20.0, 1), node="node-1"),
                                    link_series(steady(20.0, 3), node="node-2"))}
    result = sweep_source(TableSource(tables), Request())
    assert not result.complete and not result.offenders  # nothing flagged, and the view is not an all-clear
    grid, img = fleet_grid(result), picture(result)
    lay = layout_of(grid)
    judged = [colour_at(img, lay.cell_centre(grid.nodes.index("node-2"), g)) for g in range(grid.gpus)]
    assert all(is_colour(img, lay.cell_centre(grid.nodes.index("node-2"), g), HEALTHY_CELL)
               for g in range(grid.gpus)), judged
    cells = [lay.cell_centre(grid.nodes.index("node-1"), g) for g in range(grid.gpus + 1)]
    assert all(grid.severity("node-1", g) is None for g in range(grid.gpus + 1))  # no verdict on any of its GPUs
    shown = colour_at(img, cells[0])
    assert all((colour_at(img, c) == shown).all() for c in cells)
    for other in (HEALTHY_CELL, SILENT_CELL, NO_GPU_CELL, *SEVERITY_COLOURS.values()):
        assert np.abs(shown - rgb(other)).max() > 40, other
    right = round(lay.panel_left(0) + lay.columns * lay.cell_w) + 4  # the legend, right of the grid
    legend = img[:, right:]
    assert (np.abs(legend - shown).max(axis=2) <= 12).any()  # its colour has a legend entry


@pytest.mark.parametrize(("nodes", "said"), [(1, "Fleet: 1 node with offenders"),
                                             (2, "Fleet: 2 nodes with offenders")])
def test_an_offenders_only_title_counts_its_nodes_in_words_that_agree(nodes: int, said: str) -> None:
    from diagnostics.render.heatmap import _title

    bad = [offender(f"n{k}", 0, Severity.FAILING) for k in range(nodes)]
    title = _title(fleet_grid(sweep([], bad, {})))[0]  # a source that names only the offending nodes
    assert title.startswith(f"{said} (the others are not listed by the source)"), title


@pytest.mark.parametrize(("nodes", "said"), [(1, "Fleet: 1 node, 1 with offenders"),
                                             (2, "Fleet: 2 nodes, 1 with offenders")])
def test_a_fleet_title_counts_its_nodes_in_words_that_agree(nodes: int, said: str) -> None:
    """A source that lists every node: a fleet of one read 'Fleet: 1 nodes'."""
    from diagnostics.render.heatmap import _title

    names = [f"n{k}" for k in range(nodes)]
    title = _title(fleet_grid(sweep(names, [offender("n0", 0, Severity.FAILING)], {})))[0]
    assert title.startswith(said), title
