"""The synthetic fleet (seeded, labelled) and the evaluation against its ground truth; the CLI around them."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from bot.cli import main
from diagnostics.synth.evaluate import evaluate
from diagnostics.synth.fleet import build, generate
from diagnostics.synth.scenarios import BENIGN, SCENARIOS

FLEET = Path(__file__).resolve().parents[2] / "fixtures" / "fleet"


@pytest.fixture(scope="module")
def report():  # type: ignore[no-untyped-def]
    return evaluate(FLEET)


def test_committed_fleet_meets_the_targets(report) -> None:  # type: ignore[no-untyped-def]
    loc = report.overall("localization")
    assert loc.f1 is not None and loc.f1 >= 0.95
    assert report.false_urgent_high == 0
    assert report.overall("detection").f1 == pytest.approx(1.0, abs=0.1)
    for name in BENIGN:  # resets, gaps, bursts, 12-link parts: no false alarm
        det = report.detection.get(name)
        assert det is None or det.fp == 0, name


def test_committed_fleet_holds_every_scenario_and_the_demo_nodes() -> None:
    truth = json.loads((FLEET / "ground_truth.json").read_text())
    assert {n["scenario"] for n in truth["nodes"].values()} == set(SCENARIOS)
    node12 = truth["nodes"]["hpc-gpu-node-12"]
    assert node12["faults"][0] | {"gpu": 2, "link": 1, "peer": "GPU 3"} == node12["faults"][0]
    assert truth["nodes"]["hpc-gpu-node-03"]["scenario"] == "healthy"
    assert "hpc-gpu-node-12" in truth["jobs"]["4411"]["nodes"]
    own = [job for job in truth["jobs"].values() if "hpc-gpu-node-03" in job["nodes"]]
    assert own == [own[0] | {"nodes": ["hpc-gpu-node-03"], "slowdown_pct": 0.0}]  # its own job, not slow
    assert sum(f.stat().st_size for f in FLEET.rglob("*") if f.is_file()) < 4_000_000


def test_same_seed_same_fleet_other_seed_other_fleet() -> None:
    a, truth_a = build(seed=5, nodes=4, hours=6)
    b, truth_b = build(seed=5, nodes=4, hours=6)
    c, _ = build(seed=6, nodes=4, hours=6)
    pd.testing.assert_frame_equal(a["link_samples"], b["link_samples"])
    assert truth_a == truth_b
    assert not a["link_samples"]["replay"].equals(c["link_samples"]["replay"])


def test_fresh_seed_meets_the_targets(tmp_path: Path) -> None:
    generate(out=tmp_path, seed=101, nodes=5, hours=6, scrapes=0)
    fresh = evaluate(tmp_path)
    f1 = fresh.overall("localization").f1
    assert f1 is not None and f1 >= 0.95
    assert fresh.false_urgent_high == 0


def test_cli_synth_eval_and_analyze(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "fleet"
    assert main(["synth", "--out", str(out), "--seed", "3", "--nodes", "2", "--hours", "6", "--format", "csv",
                 "--scrapes", "0"]) == 0
    assert (out / "link_samples.csv").exists() and (out / "ground_truth.json").exists()
    capsys.readouterr()
    assert main(["eval", str(out)]) == 0
    text = capsys.readouterr().out
    assert "false urgent/high: 0" in text and "overall" in text
    assert main(["analyze", str(FLEET / "link_samples.parquet"), str(FLEET / "step_samples.parquet"),
                 str(FLEET / "nodes.csv"), "--node", "hpc-gpu-node-12", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["fault_detected"] is True and data["isolated_component"] == "GPU 2 -> GPU 3 NVLink 1"
    assert data["ticket_priority"] == "urgent" and data["job_id"] == "4411"
    failing = [f for f in data["findings"] if f["severity"] == "failing"]
    assert failing[0]["explains_slowdown"] is True and failing[0]["rates_per_hour"]["replay"] > 1000


def test_cli_analyze_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(FLEET / "link_samples.parquet"), "--node", "no-such-node"]) == 0
    assert "no link telemetry" in capsys.readouterr().out
    assert main(["analyze", "--node", "x"]) == 2
    assert "fabricbot:" in capsys.readouterr().err
    assert main(["eval", "/nonexistent-fleet"]) == 2


def test_cli_analyze_from_the_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    generate(out=tmp_path / "fleet", seed=4, nodes=2, hours=6, scrapes=0)
    store = tmp_path / "store"
    files = [str(tmp_path / "fleet" / f"{t}.parquet") for t in ("link_samples", "step_samples", "events")]
    assert main(["ingest", "--store", str(store), *files]) == 0
    capsys.readouterr()
    assert main(["analyze", "--store", str(store), "--node", "hpc-gpu-node-01", "--window", "1h", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    truth = json.loads((tmp_path / "fleet" / "ground_truth.json").read_text())["nodes"]["hpc-gpu-node-01"]
    assert data["fault_detected"] is bool(truth["faults"])
    assert main(["analyze", "--store", str(store), "--node", "nope"]) == 2
    assert "no node 'nope'" in capsys.readouterr().err
