"""The rack eval: a synthetic GB200 NVL72 fleet on fresh seeds scores every rack scenario at 0.95 or better, with no
benign rack urgent or high, and `fabricbot synth --platform` writes what `fabricbot eval` scores."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.cli import main
from diagnostics.synth.evaluate import SCORES, score
from diagnostics.synth.rack_fleet import build_racks
from diagnostics.synth.rack_scenarios import RACK_SCENARIOS


@pytest.mark.parametrize("seed", [2026, 7919])
def test_fresh_seeds_score_every_rack_scenario_at_least_095(seed: int) -> None:
    tables, truth, slots, platforms = build_racks(seed=seed, racks=len(RACK_SCENARIOS) * 2, hours=8)
    report = score(tables, truth, platforms, name=f"racks-{seed}", racks=slots)
    assert set(report.scenarios) == set(RACK_SCENARIOS)
    for name, s in report.scenarios.items():
        for what in SCORES:
            value = s.value(what)
            assert value is None or value >= 0.95, (name, what, value, report.render())
    assert report.false_urgent_high == 0
    outside = [n for n in report.nodes if n.scenario in ("switch_port", "switch_chip", "switch_tray", "cartridge")]
    assert outside and all(n.given["headline"] == n.expected["headline"] for n in outside)  # not a GPU's tray


def test_synth_writes_a_rack_fleet_that_eval_scores(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "racks"
    racks = len(RACK_SCENARIOS)
    assert main(["synth", "--platform", "gb200-nvl72", "--racks", str(racks), "--hours", "6", "--seed", "3",
                 "--out", str(out), "--no-life"]) == 0  # the alert loop's scenarios are scored elsewhere
    nodes = (out / "nodes.csv").read_text(encoding="utf-8").splitlines()
    assert nodes[0] == "node_id,platform,rack,tray" and len(nodes) == 1 + racks * 27
    truth = json.loads((out / "ground_truth.json").read_text(encoding="utf-8"))
    assert {r["scenario"] for r in truth["racks"].values()} == set(RACK_SCENARIOS)
    assert main(["eval", str(out), "--min-score", "0.95"]) == 0
    assert "switch_tray" in capsys.readouterr().out
    assert main(["synth", "--platform", "hgx-h100-8gpu", "--out", str(tmp_path / "x")]) != 0
