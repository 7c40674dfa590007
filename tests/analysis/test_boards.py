"""Each node's graph from its own topology rows: drawn once per description, each node judged on a copy of its own."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from diagnostics.analysis import analyze_tables, boards
from diagnostics.analysis.boards import Boards
from diagnostics.config.thresholds import GPU_MISSING_RULE
from diagnostics.ingest.detect import read

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"


def described(name: str, *nodes: str) -> pd.DataFrame:
    """The real `topo -m` sample as each of `nodes` describes itself."""
    frames = [read(REAL / name, node_id=node)["topology"] for node in nodes]
    return pd.concat(frames, ignore_index=True)


def test_nodes_that_describe_themselves_alike_are_drawn_once_and_each_keeps_its_own_graph(
        monkeypatch: pytest.MonkeyPatch) -> None:
    drawn: list[str | None] = []
    draw = boards.graph_from_topology

    def counted(rows: pd.DataFrame, **kw: object):  # type: ignore[no-untyped-def]
        drawn.append(str(rows["node_id"].iloc[0]))
        return draw(rows, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(boards, "graph_from_topology", counted)
    topology = pd.concat([described("topo_m_hgx_h100_1.txt", "a", "b", "c"),
                          described("topo_m_dgx_a100_1.txt", "d")], ignore_index=True)
    graph_of = Boards({}, {}, None, topology)
    graphs = {n: graph_of(n) for n in "abcd"}
    assert drawn == ["a", "d"]  # the second and third H100 describe what the first did; the A100 itself
    a, b, c, d = (graphs[n] for n in "abcd")
    assert a is not None and b is not None and c is not None and d is not None
    assert [g.node_id for g in (a, b, c, d)] == ["a", "b", "c", "d"]
    assert a is not b and a.graph is not b.graph and a.warnings is not b.warnings
    assert a.platform == b.platform == "hgx-h100-8gpu" and d.platform == "dgx-a100-8gpu"
    assert sorted(a.graph.edges(keys=True)) == sorted(b.graph.edges(keys=True))
    assert graph_of.warnings("b") == graph_of.warnings("a") and graph_of.guess("b") == graph_of.guess("a")
    assert graph_of("b") is b  # a node asked again keeps the graph it was judged on


def test_a_platform_taken_from_the_gpu_model_says_its_peers_are_its_wiring_unless_the_node_describes_itself() -> None:
    """The real V100 output is from a 4-GPU carrier board (GPU 0 link 3 joins GPU 2 link 0), read as a DGX-1 from
    its model: the peers shown are the DGX-1's wiring, and its note said only where the platform came from. A node
    whose own topology rows draw its graph keeps the note without that sentence; a named platform has none."""
    gpus = read(REAL / "nvlink_e_v100_short_form_1.txt", node_id="v")["gpus"]
    wiring = "each NVLink is shown joining is that platform's wiring, assumed until the node's own is read"
    guessed = Boards({}, {}, gpus, None)
    assert guessed.platform("v") == "dgx1-v100-8gpu"
    assert any(wiring in w and "nvidia-smi nvlink -R" in w for w in guessed.warnings("v")), guessed.warnings("v")
    own = Boards({}, {}, gpus, described("topo_m_dgx1_v100_1.txt", "v"))
    assert any("taken from the GPU model" in w for w in own.warnings("v"))
    assert not [w for w in own.warnings("v") if wiring in w]
    assert not Boards({"v": "dgx1-v100-8gpu"}, {}, gpus, None).warnings("v")


def test_a_link_to_gpu_0_keeps_its_peer_when_placed_on_the_board() -> None:
    """DGX-1 V100: GPU 2's NVLink 0 joins GPU 0; placing it on the board's wiring read the peer as `peer or ...`, so
    GPU 0 (falsy) was lost: the finding named 'GPU 2 -> GPU 0' with no peer GPU, and no pair could form with it."""
    from diagnostics.analysis import analyze_tables

    tables = read(REAL / "nvlink_e_v100_short_form_1.txt").tables
    tables["link_samples"] = tables["link_samples"].assign(node_id="n1")
    d = analyze_tables(tables, node_id="n1", platform="dgx1-v100-8gpu")
    peers = {(f.gpu, f.link): f.peer_gpu for f in d.findings}
    assert peers[(2, 0)] == 0 and peers[(0, 0)] == 1


def test_a_pcie_servers_gpus_never_read_are_said_not_paged_where_a_boards_are_gone() -> None:
    """`pcie-8gpu` holds up to eight cards: a two-card A30 box named so was paged urgent for six GPUs "off the bus"
    that were never fitted. GPUs no reading ever named are said (with the reads that tell a card gone from a slot
    never fitted), its own fault stays the answer; a GPU that stopped reporting is still judged; an HGX board's
    eight are its own, so a GPU never read there is one gone."""
    from tests.analysis.helpers import link_series, links, steady

    def pcie(gpus: range, stop: int | None = None) -> pd.DataFrame:
        return links(*(link_series(steady(5400.0 if g == 1 else 0.0), gpu=g, link=None, link_type="pcie",
                                   peer=None)[: stop if g == 0 and stop else None] for g in gpus))

    d = analyze_tables({"link_samples": pcie(range(2))}, node_id="n1", platform="pcie-8gpu")
    assert not [f for f in d.findings if any(c.rule == GPU_MISSING_RULE for c in f.crossed)]
    assert d.localization is not None and d.localization.component == "GPU 1 PCIe" and d.ticket_priority != "urgent"
    assert any(w.startswith("pcie-8gpu holds up to 8 GPUs and the readings name 2 GPUs (0, 1): GPUs 2-7 never "
                            "reported, not judged missing") for w in d.warnings), d.warnings
    stopped = analyze_tables({"link_samples": pcie(range(2), stop=4)}, node_id="n1", platform="pcie-8gpu")
    assert [f.gpu for f in stopped.findings if any(c.rule == GPU_MISSING_RULE for c in f.crossed)] == [0]
    board = analyze_tables({"link_samples": pcie(range(7))}, node_id="n1", platform="hgx-h100-8gpu")
    assert [f.gpu for f in board.findings if any(c.rule == GPU_MISSING_RULE for c in f.crossed)] == [7]
