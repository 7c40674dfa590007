"""The rack picture, checked by its pixels: each GPU link's cell in its severity colour, the suspect outlined."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from diagnostics.analysis.absence import missing_gpus
from diagnostics.components import ComponentRef
from diagnostics.enums import FaultKind, LinkType, Severity
from diagnostics.errors import InputError
from diagnostics.model import Diagnosis, Finding, Localization, RackPlace
from diagnostics.render.draw import SEVERITY_COLOURS, SIZE_PX, SUSPECT
from diagnostics.render.rack import GRID, HEALTHY, UNREAD, render_rack, severity_grid
from diagnostics.topology.rack import rack_graph

RACK = rack_graph("gb200-nvl72")


def _px(tray: int, link: int, gpu: float) -> tuple[int, int]:
    """The pixel at the middle of a GPU link's stripe (gpu may be fractional: 0 .. 4 across the cell)."""
    left, bottom, width, height = GRID
    x = (left + width * (link + (gpu + 0.5) / 4) / 18) * SIZE_PX[0]
    y = (1 - bottom - height + height * (tray - 0.5) / 18) * SIZE_PX[1]
    return round(x), round(y)


def _rgb(colour: str) -> np.ndarray:
    return np.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)])


def _is(img: np.ndarray, at: tuple[int, int], colour: str, tol: int = 12) -> bool:
    return bool(np.abs(img[at[1], at[0]] - _rgb(colour)).max() <= tol)


def _link(tray: int, gpu: int, link: int, severity: Severity) -> Finding:
    end = RACK.end(tray, gpu, link)
    return Finding(ref=end.ref(), link_type=LinkType.NVLINK, link_id=f"nvlink-{link}", link=link, gpu=gpu,
                   severity=severity, rates_per_hour={"replay": 9000.0})


def _port(switch_tray: int, chip: int, port: int) -> Finding:
    return Finding(ref=ComponentRef.switch_chip(str(switch_tray), chip, port), link_type=LinkType.NVSWITCH,
                   link_id=f"port-{port}", severity=Severity.DOWN)


def _diagnosis(findings: list[Finding], loc: Localization | None, trays: int = 18) -> Diagnosis:
    place = RackPlace(rack_id="r7", platform="gb200-nvl72",
                      compute={str(t): f"r7-c{t:02d}" for t in range(1, trays + 1)})
    return Diagnosis(node_id="r7", platform="gb200-nvl72", window_hours=1.0, fault_detected=bool(findings),
                     isolated_component=loc.component if loc else "none", localization=loc,
                     localizations=[loc] if loc else [], repair_action="drain", degradation_pct=None,
                     ticket_priority="urgent", findings=findings, rack=place)  # type: ignore[arg-type]


def _img(d: Diagnosis) -> tuple[np.ndarray, int]:
    png = render_rack(d)
    image = Image.open(io.BytesIO(png))
    assert image.size == SIZE_PX
    return np.asarray(image.convert("RGB")).astype(int), len(png)


def test_each_link_is_its_severity_colour_and_a_switch_port_lands_on_its_gpu_link() -> None:
    end = RACK.end(12, 3, 9)  # the GPU link on the port the switch side reports
    d = _diagnosis([_link(3, 1, 4, Severity.FAILING), _link(5, 2, 14, Severity.WARNING),
                    _port(end.switch_tray, end.chip, end.port)], None)
    img, size = _img(d)
    assert size < 300 * 1024
    assert _is(img, _px(3, 4, 1), SEVERITY_COLOURS[Severity.FAILING])
    assert _is(img, _px(3, 4, 2), HEALTHY) and _is(img, _px(3, 5, 1), HEALTHY)  # the next GPU, the next chip
    assert _is(img, _px(5, 14, 2), SEVERITY_COLOURS[Severity.WARNING])
    assert _is(img, _px(12, 9, 3), SEVERITY_COLOURS[Severity.DOWN])
    grid, unplaced = severity_grid(d, RACK)
    assert int((grid > 0).sum()) == 3 and unplaced == []


def test_a_trays_own_diagnosis_drawn_as_its_rack_colours_its_links_in_its_row() -> None:
    """A tray whose suspect is outside it is drawn as the rack view; its findings name no tray (they are its own),
    so its row is the tray's slot: its failing link is coloured there, not left out."""
    end = RACK.end(5, 2, 10)
    own = Finding(ref=ComponentRef.nvlink(2, 10, switch=f"Switch tray {end.switch_tray} chip {end.chip}",
                                          port=end.port), link_type=LinkType.NVLINK, link_id="nvlink-10", link=10,
                  gpu=2, severity=Severity.FAILING)
    d = _diagnosis([own], None).model_copy(update={"node_id": "r7-c05", "tray": "5"})
    grid, unplaced = severity_grid(d, RACK)
    assert unplaced == [] and int((grid > 0).sum()) == 1
    img, _ = _img(d)
    assert _is(img, _px(5, 10, 2), SEVERITY_COLOURS[Severity.FAILING])


def test_a_switch_trays_own_ports_land_on_their_gpu_links_not_on_the_compute_tray_of_its_number() -> None:
    """A switch tray host names its own ports as it counts its chips, from 0 ("NVSwitch 1 port 17" is chip 2's), and
    its diagnosis's tray is a switch tray's slot: drawn as its rack, each failing port colours the GPU link it lands
    on, and nothing lands on the compute tray that shares the switch tray's number."""
    end = RACK.end(12, 3, 9)
    own = Finding(ref=ComponentRef.nvswitch(f"NVSwitch {end.chip - 1}", end.port), link_type=LinkType.NVSWITCH,
                  link_id=f"port-{end.port}", severity=Severity.FAILING)
    slot = str(end.switch_tray)
    d = _diagnosis([own], None)
    d = d.model_copy(update={"node_id": f"r7-s{slot}", "tray": slot, "rack": d.rack.model_copy(  # type: ignore[union-attr]
        update={"switch": {slot: f"r7-s{slot}"}})})
    grid, unplaced = severity_grid(d, RACK)
    assert unplaced == [] and int((grid > 0).sum()) == 1
    assert grid[12 - 1, 9, 3] == 2  # failing, on tray 12 GPU 3 link 9
    img, _ = _img(d)
    assert _is(img, _px(12, 9, 3), SEVERITY_COLOURS[Severity.FAILING])


def test_a_switch_tray_suspect_is_outlined_across_its_two_chips_and_a_missing_tray_is_unread() -> None:
    loc = Localization(ref=ComponentRef.switch_tray_unit("4"), fault=FaultKind.SWITCH_TRAY, switch_tray="4",
                       severity=Severity.FAILING, confidence=0.85)
    img, _ = _img(_diagnosis([_link(2, 0, 6, Severity.FAILING), _link(9, 3, 7, Severity.FAILING)], loc, trays=17))
    top = _px(1, 6, 0)[1] - 17  # just inside the grid's top edge, over the switch tray's chips
    band = img[top - 3:top + 4, _px(1, 6, 0)[0]:_px(1, 7, 3)[0]]
    assert (np.abs(band - _rgb(SUSPECT)).max(axis=2) <= 20).any()
    outside = img[top - 3:top + 4, _px(1, 2, 0)[0]:_px(1, 3, 3)[0]]
    assert not (np.abs(outside - _rgb(SUSPECT)).max(axis=2) <= 20).any()
    assert _is(img, _px(18, 0, 0), UNREAD, tol=4)  # tray 18 is not in the inventory


def test_the_svg_names_every_tray_row_every_chip_column_and_the_suspect() -> None:
    loc = Localization(ref=ComponentRef.compute_tray("7"), fault=FaultKind.COMPUTE_TRAY, tray="7",
                       severity=Severity.FAILING, confidence=0.8)
    svg = render_rack(_diagnosis([_link(7, 0, 1, Severity.FAILING)], loc), fmt="svg").decode()
    assert 'id="unit-tray7"' in svg and 'id="unit-switch-tray9-chip2"' in svg and 'id="suspect"' in svg


def test_a_node_diagnosis_is_not_drawn_as_a_rack() -> None:
    d = _diagnosis([], None).model_copy(update={"rack": None})
    with pytest.raises(InputError, match="not a rack's diagnosis"):
        render_rack(d)


def test_a_gpu_gone_from_the_bus_has_none_of_its_links_drawn_healthy() -> None:
    """Compute tray 5's GPU 2 reports nothing (every series stopped): all 18 of its links read down, not healthy;
    its neighbours' links stay healthy."""
    gone = missing_gpus({0, 1, 3}, 4, {})[0]
    gone = gone.model_copy(update={"ref": gone.ref.model_copy(update={"tray": "5"})})
    d = _diagnosis([gone, _link(9, 1, 4, Severity.WARNING)], None)
    grid, unplaced = severity_grid(d, RACK)
    assert (grid[4, :, 2] == 3).all() and (grid[4, :, [0, 1, 3]] == 0).all()
    assert grid[8, 4, 1] == 1 and gone not in unplaced
    img, _ = _img(d)
    assert _is(img, _px(5, 7, 2), SEVERITY_COLOURS[Severity.DOWN]) and _is(img, _px(5, 7, 1), HEALTHY)
