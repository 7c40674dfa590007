"""Each node's graph from its own topology rows: drawn once per description, each node judged on a copy of its own."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from diagnostics.analysis import boards
from diagnostics.analysis.boards import Boards
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
