"""The fleet sweep finds the same failing links and parts as the per-node analysis."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from diagnostics.schema import LINK_SAMPLES, ComponentKind
from diagnostics.sweep import sweep
from diagnostics.synth import load
from tests.analysis_helpers import node_links

FLEET = Path(__file__).resolve().parent.parent / "fixtures" / "fleet"


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
