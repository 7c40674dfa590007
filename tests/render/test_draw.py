"""The node picture, checked by its pixels: degraded edges in their severity colour, healthy ones grey."""

from __future__ import annotations

import io
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from diagnostics import diagnose_snapshot
from diagnostics import format as fmt
from diagnostics.analysis.absence import missing_gpus
from diagnostics.components import ComponentRef
from diagnostics.enums import FaultKind, LinkType, Severity
from diagnostics.model import Diagnosis, Finding, Localization
from diagnostics.render.colours import NOT_READ, NOT_REPORTING
from diagnostics.render.draw import (
    HEALTHY,
    LEGEND_WIDTH,
    SEVERITY_COLOURS,
    SIZE_PX,
    SUSPECT,
    _blank,
    render_node,
    render_with_warnings,
)
from diagnostics.render.scene import HEIGHT, WIDTH, Scene, build_scene, layout
from diagnostics.render.text import fit, footnote
from diagnostics.service import Request, StoreSource, diagnose, files_source, fleet
from diagnostics.snapshots import Snapshot
from diagnostics.topology import generic_graph, graph_from_topology, platform_graph
from tests.topology.test_build import nv_matrix

MAX_BYTES = 300 * 1024


def pixels(png: bytes) -> np.ndarray:
    image = Image.open(io.BytesIO(png))
    assert image.size == SIZE_PX
    return np.asarray(image.convert("RGB")).astype(int)


def rgb(colour: str) -> np.ndarray:
    return np.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)])


def to_px(x: float, y: float) -> tuple[int, int]:
    return round(x / WIDTH * SIZE_PX[0]), round((HEIGHT - y) / HEIGHT * SIZE_PX[1])


def near(img: np.ndarray, point: tuple[float, float], colour: str, radius: int = 6, tol: int = 30) -> bool:
    """Whether `colour` appears within `radius` px of a point given in drawing units."""
    px, py = to_px(*point)
    window = img[max(py - radius, 0):py + radius + 1, max(px - radius, 0):px + radius + 1]
    return bool((np.abs(window - rgb(colour)).max(axis=2) <= tol).any())


def midpoint(scene: Scene, u: str, v: str) -> tuple[float, float]:
    (x1, y1), (x2, y2) = scene.pos[u], scene.pos[v]
    return (x1 + x2) / 2, (y1 + y2) / 2


def distance(p: tuple[float, float], a: tuple[float, float], b: tuple[float, float]) -> float:
    """From point p to the segment a-b, in drawing units."""
    pa, ba = np.subtract(p, a), np.subtract(b, a)
    t = float(np.clip(np.dot(pa, ba) / np.dot(ba, ba), 0.0, 1.0))
    return float(np.hypot(*(pa - t * ba)))


def finding(gpu: int, link: int | None, severity: Severity, *, peer_gpu: int | None = None,
            link_type: LinkType = LinkType.NVLINK, replay: float = 8900.0) -> Finding:
    ref = ComponentRef.of_link(link_type.value, gpu, link, f"GPU {peer_gpu}" if peer_gpu is not None else None)
    return Finding(ref=ref, link_type=link_type, link_id=f"nvlink-{link}", link=link,
                   gpu=gpu, peer_gpu=peer_gpu, severity=severity, rates_per_hour={"replay": replay})


def diagnosis(findings: list[Finding], **extra: object) -> Diagnosis:
    fields: dict[str, object] = {
        "node_id": "node-7", "platform": "hgx-h100-8gpu", "window_hours": 1.0, "fault_detected": True,
        "isolated_component": findings[0].component, "degradation_pct": 12.5, "repair_action": "reseat",
        "ticket_priority": "high", "findings": findings, **extra}
    return Diagnosis.model_validate(fields)


@pytest.fixture(scope="module")
def h100() -> tuple[Diagnosis, bytes, Scene]:
    graph = platform_graph("hgx-h100-8gpu")
    diag = diagnosis([finding(2, 1, Severity.FAILING), finding(5, 10, Severity.WARNING, replay=120.0),
                      finding(6, 16, Severity.DOWN), finding(0, 0, Severity.OK, replay=0.0)])
    return diag, render_node(graph, diag), build_scene(graph, diag)


def test_degraded_edges_carry_their_severity_colour(h100: tuple[Diagnosis, bytes, Scene]) -> None:
    _, png, scene = h100
    img = pixels(png)
    expected = {("GPU 2", "NVSwitch 0"): Severity.FAILING, ("GPU 5", "NVSwitch 2"): Severity.WARNING,
                ("GPU 6", "NVSwitch 3"): Severity.DOWN}
    drawn = {(h.u, h.v): h.severity for h in scene.highlights}
    assert drawn == expected  # GPU 2 link 1 lands on NVSwitch 0, link 10 on NVSwitch 2, link 16 on NVSwitch 3
    for (u, v), severity in expected.items():
        assert near(img, midpoint(scene, u, v), SEVERITY_COLOURS[severity], radius=8), (u, v, severity)
    for severity in (Severity.WARNING, Severity.DOWN):  # each colour only where its edge is
        assert not near(img, midpoint(scene, "GPU 2", "NVSwitch 0"), SEVERITY_COLOURS[severity], radius=8)


def test_healthy_edges_are_grey(h100: tuple[Diagnosis, bytes, Scene]) -> None:
    _, png, scene = h100
    img = pixels(png)
    degraded = {frozenset((h.u, h.v)) for h in scene.highlights}
    checked = 0
    for b in scene.bundles:
        if b.link_type != "nvlink" or frozenset((b.u, b.v)) in degraded:
            continue
        mid = midpoint(scene, b.u, b.v)
        if any(abs(mid[0] - x) < 0.8 and abs(mid[1] - y) < 0.4 for x, y in scene.pos.values()):
            continue  # the midpoint is under a box
        if any(distance(mid, scene.pos[h.u], scene.pos[h.v]) < 0.3 for h in scene.highlights):
            continue  # a degraded line passes close by
        if any(abs(mid[0] - h.label_at[0]) < 1.5 and abs(mid[1] - h.label_at[1]) < 0.25 for h in scene.highlights):
            continue  # under a label
        assert near(img, mid, HEALTHY, radius=3, tol=25), (b.u, b.v)
        for colour in SEVERITY_COLOURS.values():
            assert not near(img, mid, colour, radius=3, tol=40), (b.u, b.v, colour)
        checked += 1
    assert checked >= 10


def test_image_and_file_size_in_bounds(h100: tuple[Diagnosis, bytes, Scene]) -> None:
    _, png, _ = h100
    assert png.startswith(b"\x89PNG") and 20_000 < len(png) < MAX_BYTES
    assert pixels(png).shape == (900, 1200, 3)


def test_labels_carry_rates(h100: tuple[Diagnosis, bytes, Scene]) -> None:
    _, _, scene = h100
    labels = {h.severity: h.label for h in scene.highlights}
    assert labels[Severity.FAILING] == "NVLink 1 -> port 9: 8.9k replays/h"
    assert labels[Severity.WARNING] == "NVLink 10 -> port 26: 120 replays/h"
    assert labels[Severity.DOWN].endswith(": down")
    compact = [fmt.number(v, compact=True) for v in (8900, 45120, 1_250_000, 12, 0.25)]
    assert compact == ["8.9k", "45k", "1.2M", "12", "0.25"]


def test_suspected_component_is_outlined() -> None:
    graph = platform_graph("hgx-h100-8gpu")
    loc = Localization(ref=ComponentRef.nvswitch("NVSwitch 1"), switch="NVSwitch 1", confidence=0.8)
    diag = diagnosis([finding(2, 5, Severity.FAILING), finding(3, 6, Severity.FAILING)], localization=loc)
    scene = build_scene(graph, diag)
    assert scene.suspect_node == "NVSwitch 1"
    img = pixels(render_node(graph, diag))
    x, y = scene.pos["NVSwitch 1"]
    assert near(img, (x, y + 0.24), SUSPECT, radius=5, tol=30)  # the box's top edge in the outline colour
    assert not near(img, scene.pos["NVSwitch 2"], SUSPECT, radius=40, tol=30)


def test_seed_snapshot_without_platform_draws_the_stated_link(seed_cases: list[dict[str, object]]) -> None:
    snapshot = Snapshot.model_validate(seed_cases[0]["input"])
    diag = diagnose_snapshot(snapshot)
    graph = generic_graph(8, node_id=snapshot.node_id)
    png, warnings = render_with_warnings(graph, diag)
    assert any("no platform" in w for w in warnings)
    scene = build_scene(graph, diag)
    assert [(h.u, h.v, h.severity) for h in scene.highlights] == [("GPU 2", "GPU 3", Severity.FAILING)]
    assert scene.suspect_edge == ("GPU 2", "GPU 3")
    img = pixels(png)
    assert near(img, midpoint(scene, "GPU 2", "GPU 3"), SEVERITY_COLOURS[Severity.FAILING], radius=8)
    assert near(img, midpoint(scene, "GPU 0", "GPU 1"), HEALTHY, radius=3)  # the healthy link, grey


def test_finding_the_graph_lacks_is_a_warning_and_the_picture_is_drawn() -> None:
    graph = platform_graph("hgx-h100-8gpu")
    diag = diagnosis([finding(2, 1, Severity.FAILING), finding(11, 0, Severity.FAILING),
                      finding(3, 25, Severity.WARNING)])
    png, warnings = render_with_warnings(graph, diag)
    assert any("GPU 11 is not in the node's graph" in w for w in warnings)
    assert any("GPU 3 has no nvlink link 25" in w for w in warnings)
    assert len(png) > 20_000 and near(pixels(png), midpoint(build_scene(graph, diag), "GPU 2", "NVSwitch 0"),
                                      SEVERITY_COLOURS[Severity.FAILING], radius=8)


def test_pcie_finding_lands_on_the_pcie_edge() -> None:
    graph = platform_graph("dgx-a100-8gpu")
    diag = diagnosis([finding(3, None, Severity.FAILING, link_type=LinkType.PCIE)], platform="dgx-a100-8gpu")
    scene = build_scene(graph, diag)
    assert [(h.u, h.v) for h in scene.highlights] == [("GPU 3", "PCIe switch 1")]
    assert near(pixels(render_node(graph, diag)), midpoint(scene, "GPU 3", "PCIe switch 1"),
                SEVERITY_COLOURS[Severity.FAILING], radius=8)


def test_svg_carries_ids_per_link_and_node() -> None:
    graph = platform_graph("hgx-h100-8gpu")
    svg = render_node(graph, diagnosis([finding(2, 1, Severity.FAILING)]), fmt="svg").decode()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    assert 'id="link-gpu2-nvlink1"' in svg
    assert 'id="node-nvswitch0"' in svg and 'id="bundle-gpu0-nvswitch0"' in svg


@pytest.mark.parametrize("gpus", [4, 16])
def test_generic_layouts_keep_every_gpu_on_the_canvas(gpus: int) -> None:
    pos = layout(generic_graph(gpus))
    assert len(pos) == gpus
    assert all(0.5 < x < WIDTH - 0.5 and 3.0 < y < HEIGHT - 1.0 for x, y in pos.values())
    assert len({(round(x, 2), round(y, 2)) for x, y in pos.values()}) == gpus


def test_layout_is_deterministic() -> None:
    assert layout(platform_graph("dgx-a100-8gpu")) == layout(platform_graph("dgx-a100-8gpu"))
    png = render_node(platform_graph("dgx1-v100-8gpu"))
    assert png == render_node(platform_graph("dgx1-v100-8gpu"))
    assert re.search(rb"IEND", png)


def test_a_finding_over_all_of_a_gpus_links_marks_the_gpu() -> None:
    graph = platform_graph("hgx-h100-8gpu")
    diag = diagnosis([finding(4, None, Severity.FAILING, replay=2500.0)])
    png, warnings = render_with_warnings(graph, diag)
    scene = build_scene(graph, diag)
    assert [(m.node, m.severity, m.label) for m in scene.marks] == [
        ("GPU 4", Severity.FAILING, "all NVLinks: 2.5k replays/h")]
    assert not any("GPU 4" in w for w in warnings)
    x, y = scene.pos["GPU 4"]
    assert near(pixels(png), (x + 0.6, y), SEVERITY_COLOURS[Severity.FAILING], radius=4)  # a ring round the box


def _strokes(svg: str) -> dict[str, str]:
    """Each bundle's stroke colour as the SVG draws it: bundle id -> colour."""
    return dict(re.findall(r'<g id="(bundle-[^"]+)">\s*<path [^>]*?stroke: (#[0-9a-f]{6})', svg))


def test_a_gpu_gone_from_the_bus_draws_its_links_as_not_reporting() -> None:
    """The picture says what the diagnosis says: a GPU judged gone (its series all silent) is marked, and every
    link of it drawn in the down colour, dotted, never as a healthy grey bundle."""
    graph = platform_graph("hgx-h100-8gpu")
    gone = missing_gpus({0, 1, 3, 4, 5, 6, 7}, 8, {})  # what the analysis makes of a GPU that reports nothing
    diag = diagnosis([*gone, finding(5, 10, Severity.WARNING, replay=120.0)])
    scene = build_scene(graph, diag)
    silent = {(b.u, b.v) for b in scene.bundles if not b.reporting}
    assert silent == {(b.u, b.v) for b in scene.bundles if "GPU 2" in (b.u, b.v)} and len(silent) == 5
    assert [(m.node, m.severity) for m in scene.marks] == [("GPU 2", Severity.DOWN)]
    assert "not reporting" in scene.marks[0].label
    assert [h.finding.component for h in scene.highlights if h.finding] == ["GPU 5 NVLink 10"]  # no 'down' label
    strokes = _strokes(render_node(graph, diag, fmt="svg").decode())
    assert {k for k, c in strokes.items() if c == NOT_REPORTING} == {
        f"bundle-gpu2-{v.lower().replace(' ', '')}" for v in ("NVSwitch 0", "NVSwitch 1", "NVSwitch 2",
                                                             "NVSwitch 3", "PCIe switch 2")}
    assert strokes["bundle-gpu1-nvswitch0"] == HEALTHY
    assert near(pixels(render_node(graph, diag)), midpoint(scene, "GPU 2", "NVSwitch 0"), NOT_REPORTING, radius=5)


def test_a_bundle_read_in_part_is_drawn_as_its_links_read_and_beside_them_the_others() -> None:
    """A snapshot of two of GPU 0's links to NVSwitch 0: that bundle is two lines side by side, the two links
    healthy and the others not read; the GPU's other bundles not read."""
    graph = platform_graph("hgx-h100-8gpu")
    whole = next(b.count for b in build_scene(graph).bundles if {b.u, b.v} == {"GPU 0", "NVSwitch 0"})
    assert whole > 2
    diag = diagnosis([finding(0, 0, Severity.OK), finding(0, 1, Severity.OK)]).model_copy(
        update={"lists_every_link": True})
    scene = build_scene(graph, diag)
    mine = [(b.count, b.read, b.side) for b in scene.bundles if {b.u, b.v} == {"GPU 0", "NVSwitch 0"}]
    assert sorted(mine, key=lambda m: m[2]) == [(whole - 2, False, -1), (2, True, 1)]
    assert all(not b.read for b in scene.bundles if "GPU 0" in (b.u, b.v) and b.link_type == "nvlink"
               and "NVSwitch 0" not in (b.u, b.v))
    strokes = _strokes(render_node(graph, diag, fmt="svg").decode())
    assert strokes["bundle-gpu0-nvswitch0"] == HEALTHY and strokes["bundle-gpu0-nvswitch0-unread"] == NOT_READ


def test_a_node_read_whole_has_no_link_drawn_not_read(bundled_store: Path) -> None:
    """Every node of the bundled store, on every platform it holds (per-link series, per-GPU totals, a GPU gone):
    each NVLink bundle either read or not reporting, none drawn as not read; a fleet sweep's diagnosis, which names
    the flagged links only, draws no link as not read either."""
    source = StoreSource(bundled_store)
    drawn = 0
    for node in source.nodes():
        answer = diagnose(source, Request(node=node))
        if answer.graph is None:
            continue
        assert answer.diagnosis.lists_every_link
        scene = build_scene(answer.graph, answer.diagnosis)
        assert all(b.read for b in scene.bundles), (node, [(b.u, b.v) for b in scene.bundles if not b.read])
        drawn += 1
    assert drawn >= 40
    swept = fleet(source, Request()).diagnoses["hpc-gpu-node-12"]
    assert not swept.lists_every_link
    assert all(b.read for b in build_scene(platform_graph("h100-nvl-8gpu"), swept).bundles)


def test_a_long_headline_is_set_smaller_to_end_left_of_the_legend() -> None:
    """The seed snapshot's headline (node, no platform, a snapshot's window, the step time) ran under the legend,
    hiding the step time: it is set smaller until it ends left of the legend; a short one keeps its size."""
    _, canvas, board = _blank()
    long = board.text(0.15, 8.72, "hpc-gpu-node-12  ·  generic graph  ·  window 1 h (a snapshot: no clock time)  ·  "
                                  "step time +89.2%", fontsize=15, fontweight="bold")
    short = board.text(0.15, 8.38, "node-1  ·  hgx-h100-8gpu", fontsize=15, fontweight="bold")
    renderer = canvas.get_renderer()
    legend_left = (WIDTH - LEGEND_WIDTH - 0.08) * SIZE_PX[0] / WIDTH
    assert long.get_window_extent(renderer).x1 > legend_left  # as it was drawn
    fit(long, canvas, legend_left)
    fit(short, canvas, legend_left)
    assert long.get_window_extent(renderer).x1 < legend_left and 11 <= long.get_fontsize() < 15
    assert short.get_fontsize() == 15


def test_a_topology_alone_calls_its_links_links_not_healthy() -> None:
    """A bare `topo -m` has no counters: its picture's legend says NVLinks, where it said healthy NVLinks; a
    diagnosis's picture still says healthy for the links it read."""
    graph = platform_graph("hgx-h100-8gpu")
    bare = render_node(graph, None, fmt="svg").decode()
    judged = render_node(graph, diagnosis([finding(0, 0, Severity.OK, replay=0.0)]), fmt="svg").decode()
    assert "NVLinks (width: count)" in bare and "healthy NVLinks" not in bare
    assert "healthy NVLinks (width: count)" in judged


@pytest.mark.parametrize(("platform", "model"), [("hgx-h100-8gpu", "NVIDIA H100 80GB HBM3"),
                                                  ("dgx1-v100-8gpu", "Tesla V100-SXM2-32GB")])
def test_a_suspect_shared_by_every_gpu_outlines_what_it_stands_for(tmp_path: Path, platform: str, model: str) -> None:
    """Every link of all 8 GPUs replaying: the suspect (every NVSwitch, or a DGX-1's NVLink mesh) is not one node of
    the graph; it was warned of and not drawn. Every NVSwitch is outlined, or every GPU's NVLink bundle; each failing
    link keeps its colour; the links are labelled per GPU, not one label per link over each other."""
    from tests.tickets.test_node_switch_tickets import NODE, _readings

    source, _, _ = files_source(_readings(tmp_path, platform, model, dict.fromkeys(range(8))), node=NODE)
    diag = diagnose(source, Request(node=NODE, platform=platform)).diagnosis
    graph = platform_graph(platform)
    png, warnings = render_with_warnings(graph, diag)
    scene = build_scene(graph, diag)
    assert not any("not outlined" in w for w in warnings), warnings
    switches = [n for n, k in scene.kinds.items() if k == "nvswitch"]
    nvlinks = {frozenset((b.u, b.v)) for b in scene.bundles if b.link_type == "nvlink"}
    if switches:
        assert sorted(scene.suspect_nodes) == sorted(switches) and not scene.suspect_edges
    else:
        assert {frozenset(e) for e in scene.suspect_edges} == nvlinks and not scene.suspect_nodes
    img = pixels(png)
    for name in switches:
        x, y = scene.pos[name]
        assert near(img, (x, y + 0.24), SUSPECT, radius=5, tol=30), name
    failing = [f for f in diag.findings if f.severity is Severity.FAILING]
    assert len(failing) >= 8 * 6
    assert len([h for h in scene.highlights if h.severity is Severity.FAILING]) == len(failing)
    assert {frozenset((h.u, h.v)) for h in scene.highlights} == nvlinks
    for bundle in nvlinks:
        u, v = sorted(bundle)
        mid = midpoint(scene, u, v)
        if not any(abs(mid[0] - x) < 0.8 and abs(mid[1] - y) < 0.4 for x, y in scene.pos.values()):
            assert near(img, mid, SEVERITY_COLOURS[Severity.FAILING], radius=6), (u, v)
    labels = [h.label for h in scene.highlights if h.label] + [m.label for m in scene.marks]
    assert len(labels) == 8, labels  # one per GPU
    per_gpu = Counter(f.gpu for f in failing)
    assert all(m.label.startswith(f"{per_gpu[int(m.node.split()[1])]} NVLinks failing") for m in scene.marks)


@pytest.mark.parametrize(("platform", "model"), [("hgx-h100-8gpu", "NVIDIA H100 80GB HBM3"),
                                                  ("dgx1-v100-8gpu", "Tesla V100-SXM2-32GB")])
def test_a_shared_suspect_after_the_headline_is_outlined_too(tmp_path: Path, platform: str, model: str) -> None:
    """GPU 3 off the bus heads the suspects, and every GPU failing alike makes a shared suspect after it (every
    NVSwitch, or a DGX-1's NVLink mesh): the picture outlined GPU 3 alone, as if the switches were not suspected.
    Each part the shared suspect stands for is outlined beside the headline's own outline, and the subtitle names
    both."""
    from tests.tickets.test_node_switch_tickets import NODE, _readings

    log = tmp_path / "kern.log"
    log.write_text("[99.0] NVRM: GPU at PCI:0000:91:00: GPU-abcdefab-cdef-abdc-abcd-abababab0003\n"
                   "[100.0] NVRM: Xid (PCI:0000:91:00): 79, pid=1, name=x, GPU has fallen off the bus.\n",
                   encoding="utf-8")
    source, _, _ = files_source([*_readings(tmp_path, platform, model, dict.fromkeys(range(8))), log], node=NODE)
    diag = diagnose(source, Request(node=NODE, platform=platform)).diagnosis
    head = diag.localization
    assert head is not None and head.ref == ComponentRef.of_gpu(3)
    (shared,) = [loc for loc in diag.localizations if loc.fault in (FaultKind.NVSWITCH_SHARED,
                                                                    FaultKind.NVLINK_SHARED)]
    graph = platform_graph(platform)
    svg, warnings = render_with_warnings(graph, diag, fmt="svg")
    drawn = set(re.findall(r'id="(suspect[^"]*)"', svg.decode()))
    assert not any("not outlined" in w for w in warnings), warnings
    scene = build_scene(graph, diag)
    switches = [n for n, k in scene.kinds.items() if k == "nvswitch"]
    if shared.fault is FaultKind.NVSWITCH_SHARED:
        want = {f"suspect-node-{n.lower().replace(' ', '')}" for n in switches}
    else:
        want = {f"suspect-{b.u}-{b.v}".lower().replace(" ", "") for b in scene.bundles
                if b.link_type == "nvlink" and b.side >= 0}
    assert len(want) >= 2 and drawn == {"suspect", *want}, drawn
    assert f"also {shared.component}" in svg.decode()
    img = pixels(render_node(graph, diag))
    for name in switches:
        x, y = scene.pos[name]
        assert near(img, (x, y + 0.24), SUSPECT, radius=5, tol=30), name


@pytest.mark.parametrize(("warned", "said"), [(1, "1 failing/down, 1 warning link"),
                                              (2, "1 failing/down, 2 warning links")])
def test_the_subtitle_counts_the_links_in_words_that_agree(warned: int, said: str) -> None:
    from diagnostics.render.draw import _title

    diag = diagnosis([finding(2, 1, Severity.FAILING),
                      *(finding(5, 10 + k, Severity.WARNING, replay=120.0) for k in range(warned))])
    assert _title(platform_graph("hgx-h100-8gpu"), diag, None)[1] == said


def test_a_long_warning_under_the_picture_is_cut_at_a_word_with_an_ellipsis() -> None:
    """The alike boards' warning ran past its line and was cut mid-word ("their NVSwitch chips and p")."""
    graph = graph_from_topology(nv_matrix(8, 18))
    (said,) = [w for w in graph.warnings if "alike" in w]
    note = footnote(said, 160)
    assert len(note) <= 160 and note.endswith(" …") and note.startswith("! the description fits")
    assert said.startswith(note.removeprefix("! ").removesuffix(" …"))  # cut after a whole word
    assert said[len(note.removeprefix("! ").removesuffix(" …"))] == " "
    assert footnote("GPU 2 is short", 160) == "! GPU 2 is short"
