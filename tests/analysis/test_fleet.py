"""The fleet sweep finds the same failing links and parts as the per-node analysis."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from diagnostics.analysis.fleet import node_pieces, sweep
from diagnostics.enums import ComponentKind
from diagnostics.synth.fleet import load
from diagnostics.tables import LINK_SAMPLES
from tests.analysis.helpers import node_links

FLEET = Path(__file__).resolve().parents[2] / "fixtures" / "fleet"


def test_sweep_localizes_per_node() -> None:
    a = node_links({(3, 7): 4000.0}, node="a")
    b = node_links({(g, 5): 3000.0 for g in (0, 2, 4)}, node="b")
    c = node_links(node="c")
    result = sweep(LINK_SAMPLES.conform(pd.concat([a, b, c], ignore_index=True)),
                   platforms=dict.fromkeys("abc", "hgx-h100-8gpu"))
    assert result.failing_nodes() == ["a", "b"]
    assert [(loc.kind, loc.gpu, loc.link) for loc in result.localizations["a"]] == [(ComponentKind.NVLINK, 3, 7)]
    assert [loc.kind for loc in result.localizations["b"]] == [ComponentKind.NVSWITCH]
    assert result.links == 3 * 144


def test_sweep_on_the_committed_fleet_flags_its_replay_storm_node() -> None:
    tables, inventory = load(FLEET)
    result = sweep(tables["link_samples"], platforms=inventory)
    assert "hpc-gpu-node-12" in result.failing_nodes()
    assert "hpc-gpu-node-03" not in result.failing_nodes()


def test_sweeping_in_pieces_finds_what_the_whole_table_shows() -> None:
    tables, inventory = load(FLEET)
    links = tables["link_samples"]
    whole = sweep(links, platforms=inventory, piece_rows=len(links) + 1)
    pieces = sweep(links, platforms=inventory, piece_rows=5_000)
    assert len(node_pieces(links, 5_000)) > 4
    assert pieces.failing_nodes() == whole.failing_nodes()
    assert (pieces.links, pieces.rows_used) == (whole.links, whole.rows_used)
    assert {n: [f.model_dump() for f in fs] for n, fs in pieces.findings.items()} == \
        {n: [f.model_dump() for f in fs] for n, fs in whole.findings.items()}
    assert pieces.localizations == whole.localizations


def test_pieces_are_cut_only_between_nodes_and_only_when_each_node_lies_together() -> None:
    grouped = LINK_SAMPLES.conform(pd.concat([node_links(node=n) for n in "abcd"], ignore_index=True))
    bounds = node_pieces(grouped, 200)
    nodes = grouped["node_id"].astype(str)
    assert bounds[0][0] == 0 and bounds[-1][1] == len(grouped) and len(bounds) == 4
    for lo, hi in bounds:
        assert nodes.iloc[lo:hi].nunique() == 1
    interleaved = grouped.sort_values(["timestamp", "node_id"], kind="stable", ignore_index=True)
    assert node_pieces(interleaved, 200) == [(0, len(interleaved))]


def test_the_store_hands_the_sweep_each_node_together(tmp_path: Path) -> None:
    from diagnostics.store.telemetry import open_store

    store = open_store(tmp_path / "store")
    store.ingest([FLEET / "link_samples.parquet"])
    links = store.link_samples()
    assert len(node_pieces(links, 5_000)) > 4
    tables, inventory = load(FLEET)
    direct = sweep(tables["link_samples"], platforms=inventory)
    stored = sweep(links, platforms=inventory, piece_rows=5_000)
    assert stored.failing_nodes() == direct.failing_nodes()
    assert stored.links == direct.links
