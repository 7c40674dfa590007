"""The rack eval: a synthetic GB200 NVL72 fleet on a fresh seed, written by `fabricbot synth --platform` and scored by
`fabricbot eval`, scores every rack scenario at 0.95 or better, with no benign rack urgent or high. More seeds:
FABRICBOT_SOAK=1 (`make soak`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bot.cli import main
from diagnostics.synth.evaluate import SCORES
from diagnostics.synth.rack_scenarios import RACK_SCENARIOS

SOAK = bool(os.environ.get("FABRICBOT_SOAK"))
SEEDS = [2026, 7919] if SOAK else [2026]
PER_SCENARIO = 2 if SOAK else 1  # racks of each scenario; the long run places each fault twice
OUTSIDE = ("switch_port", "switch_chip", "switch_tray", "cartridge")


@pytest.mark.parametrize("seed", SEEDS)
def test_a_fresh_seed_scores_every_rack_scenario_at_least_095(seed: int, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "racks"
    racks = len(RACK_SCENARIOS) * PER_SCENARIO
    assert main(["synth", "--platform", "gb200-nvl72", "--racks", str(racks), "--hours", "8", "--seed", str(seed),
                 "--out", str(out), "--no-life"]) == 0  # the alert loop's scenarios are scored elsewhere
    nodes = (out / "nodes.csv").read_text(encoding="utf-8").splitlines()
    assert nodes[0] == "node_id,platform,rack,tray" and len(nodes) == 1 + racks * 27
    truth = json.loads((out / "ground_truth.json").read_text(encoding="utf-8"))
    assert {r["scenario"] for r in truth["racks"].values()} == set(RACK_SCENARIOS)
    capsys.readouterr()
    assert main(["eval", str(out), "--json", "--min-score", "0.95"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report["scenarios"]) == set(RACK_SCENARIOS)
    for name, s in report["scenarios"].items():
        for what in SCORES:
            assert s[what] is None or s[what] >= 0.95, (name, what, s[what])
    assert report["false_urgent_high"] == 0
    outside = [n for n in report["nodes"] if n["scenario"] in OUTSIDE]
    assert outside and all(n["given"]["headline"] == n["expected"]["headline"] for n in outside)  # not a GPU's tray


def test_synth_refuses_a_platform_that_is_no_rack(tmp_path: Path) -> None:
    assert main(["synth", "--platform", "hgx-h100-8gpu", "--out", str(tmp_path / "x")]) != 0
