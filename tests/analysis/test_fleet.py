"""The fleet engine: the same failing links and parts for a fleet as for each node alone, whole or in pieces."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from diagnostics.analysis import analyze_fleet, analyze_tables
from diagnostics.analysis.rows import node_pieces
from diagnostics.enums import ComponentKind, FaultKind, Severity
from diagnostics.synth import build
from diagnostics.synth.fleet import load
from diagnostics.tables import LINK_SAMPLES
from tests.analysis.helpers import node_links

FLEET = Path(__file__).resolve().parents[2] / "fixtures" / "fleet"


def _failing(diagnosis: object) -> list[tuple[str, str]]:
    return sorted((f.ref.slug, f.severity.value) for f in diagnosis.findings  # type: ignore[attr-defined]
                  if f.severity in (Severity.FAILING, Severity.DOWN))


def _parts(diagnosis: object) -> list[str]:
    return [f"{loc.fault}:{loc.ref.slug}" for loc in diagnosis.localizations]  # type: ignore[attr-defined]


def test_fleet_localizes_per_node() -> None:
    a = node_links({(3, 7): 4000.0}, node="a")
    b = node_links({(g, 5): 3000.0 for g in (0, 2, 4)}, node="b")
    c = node_links(node="c")
    result = analyze_fleet({"link_samples": LINK_SAMPLES.conform(pd.concat([a, b, c], ignore_index=True))},
                           platforms=dict.fromkeys("abc", "hgx-h100-8gpu"))
    assert result.failing_nodes() == ["a", "b"]
    assert [(loc.kind, loc.gpu, loc.link) for loc in result.diagnoses["a"].localizations] == \
        [(ComponentKind.NVLINK, 3, 7)]
    assert [loc.kind for loc in result.diagnoses["b"].localizations] == [ComponentKind.NVSWITCH]
    assert result.links == 3 * 144
    assert result.diagnoses["c"].findings == []  # a fleet keeps findings for flagged links only


def test_the_committed_fleet_flags_its_replay_storm_node() -> None:
    tables, inventory = load(FLEET)
    result = analyze_fleet(tables, platforms=inventory)
    assert "hpc-gpu-node-12" in result.failing_nodes()
    assert "hpc-gpu-node-03" not in result.failing_nodes()


@pytest.fixture(scope="module")
def fresh() -> tuple[dict[str, pd.DataFrame], dict[str, object]]:
    """A fleet of a seed nothing was tuned on, with every scenario (Xid 79 and Blackwell included)."""
    tables, truth = build(seed=9173, nodes=24, hours=6)
    return tables, truth


def test_one_node_and_the_fleet_agree_on_a_fresh_seed(fresh: tuple[dict[str, pd.DataFrame], dict[str, object]]) -> None:
    tables, truth = fresh
    platforms = {n: v["platform"] for n, v in truth["nodes"].items()}  # type: ignore[attr-defined]
    end = pd.Timestamp(truth["end"])  # type: ignore[arg-type]
    fleet = analyze_fleet(tables, end=end, platforms=platforms)
    scenarios = {v["scenario"] for v in truth["nodes"].values()}  # type: ignore[attr-defined]
    assert {"xid79_gpu_lost", "healthy"} <= scenarios
    off_bus = [n for n, v in truth["nodes"].items() if v["scenario"] == "xid79_gpu_lost"]  # type: ignore[attr-defined]
    for node in sorted(platforms):
        alone = analyze_tables(tables, node_id=node, end=end, platform=platforms[node], platforms=platforms)
        swept = fleet.diagnoses[node]
        assert _failing(swept) == _failing(alone), node
        assert _parts(swept) == _parts(alone), node
        assert (swept.ticket_priority, swept.isolated_component, swept.verdict) == \
            (alone.ticket_priority, alone.isolated_component, alone.verdict), node
    for node in off_bus:
        assert fleet.diagnoses[node].localization is not None
        assert fleet.diagnoses[node].localization.fault is FaultKind.GPU_OFF_BUS


def test_a_gpu_that_never_reports_is_found_by_both_paths() -> None:
    links = node_links(node="n")
    links = links[links["gpu"] != 5]
    tables = {"link_samples": LINK_SAMPLES.conform(links.reset_index(drop=True))}
    platforms = {"n": "hgx-h100-8gpu"}
    swept = analyze_fleet(tables, platforms=platforms).diagnoses["n"]
    alone = analyze_tables(tables, node_id="n", platform="hgx-h100-8gpu")
    for diagnosis in (swept, alone):
        assert diagnosis.fault_detected
        assert diagnosis.localization is not None and diagnosis.localization.ref.slug == "gpu5"
        assert any(c.rule == "gpus_missing" and c.message.endswith("7 of 8 GPUs report")
                   for f in diagnosis.findings for c in f.crossed)


def test_pieces_find_what_the_whole_table_shows() -> None:
    tables, inventory = load(FLEET)
    links = tables["link_samples"]
    whole = analyze_fleet(tables, platforms=inventory, piece_rows=len(links) + 1)
    pieces = analyze_fleet(tables, platforms=inventory, piece_rows=5_000)
    assert len(node_pieces(links, 5_000)) > 4
    assert pieces.failing_nodes() == whole.failing_nodes()
    assert (pieces.links, pieces.rows_used) == (whole.links, whole.rows_used)
    assert {n: d.model_dump() for n, d in pieces.diagnoses.items()} == \
        {n: d.model_dump() for n, d in whole.diagnoses.items()}


def test_pieces_are_cut_only_between_nodes_and_only_when_each_node_lies_together() -> None:
    grouped = LINK_SAMPLES.conform(pd.concat([node_links(node=n) for n in "abcd"], ignore_index=True))
    bounds = node_pieces(grouped, 200)
    nodes = grouped["node_id"].astype(str)
    assert bounds[0][0] == 0 and bounds[-1][1] == len(grouped) and len(bounds) == 4
    for lo, hi in bounds:
        assert nodes.iloc[lo:hi].nunique() == 1
    interleaved = grouped.sort_values(["timestamp", "node_id"], kind="stable", ignore_index=True)
    assert node_pieces(interleaved, 200) == [(0, len(interleaved))]


def test_the_store_hands_the_engine_each_node_together(tmp_path: Path) -> None:
    from diagnostics.store.telemetry import open_store

    store = open_store(tmp_path / "store")
    store.ingest([FLEET / "link_samples.parquet"])
    links = store.link_samples()
    assert len(node_pieces(links, 5_000)) > 4
    tables, inventory = load(FLEET)
    direct = analyze_fleet({"link_samples": tables["link_samples"]}, platforms=inventory)
    stored = analyze_fleet({"link_samples": links}, platforms=inventory, piece_rows=5_000)
    assert stored.failing_nodes() == direct.failing_nodes()
    assert stored.links == direct.links


def test_a_platforms_template_is_built_once_and_each_request_is_judged_alike(monkeypatch: pytest.MonkeyPatch,
                                                                             tmp_path: Path) -> None:
    """One node's view asked again reads the same template and the ports found on it: the same answer; another
    folder of platform files is another template."""
    from diagnostics.config.platforms import ENV_DIRS
    from diagnostics.topology.templates import template

    first = template("hgx-h100-8gpu", None, None)
    assert template("hgx-h100-8gpu", None, None) is first
    frame = LINK_SAMPLES.conform(node_links({(3, 7): 4000.0, (5, 2): 2500.0}, node="a"))
    once = analyze_tables({"link_samples": frame}, node_id="a", platform="hgx-h100-8gpu")
    again = analyze_tables({"link_samples": frame}, node_id="a", platform="hgx-h100-8gpu")
    assert once.model_dump() == again.model_dump() and _failing(once) == [("gpu3-nvlink7", "failing"),
                                                                          ("gpu5-nvlink2", "failing")]
    assert {(f.switch, f.switch_port) for f in once.findings if f.ref.slug == "gpu3-nvlink7"} == {
        (first.port_of(3, 7).switch, first.port_of(3, 7).switch_port)}
    monkeypatch.setenv(ENV_DIRS, str(tmp_path))
    assert template("hgx-h100-8gpu", None, None) is not first
