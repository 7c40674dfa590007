"""The life nodes: planned restarts, slow failures and repairs over four days, and the eval lines that judge them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from bot.cli import main
from diagnostics.analysis import absence, trends
from diagnostics.config.watch import load_watch
from diagnostics.synth import life_eval
from diagnostics.synth.evaluate import EvalReport
from diagnostics.synth.fleet import generate
from diagnostics.synth.life import LIFE_SCENARIOS, build_life, load_life
from diagnostics.synth.life_eval import LifeReport, score_life

FLEET = Path(__file__).resolve().parents[2] / "fixtures" / "fleet"


@pytest.fixture(scope="module")
def life() -> tuple[dict[str, pd.DataFrame], dict[str, str], dict[str, Any]]:
    """The committed fleet's life nodes, as `fabricbot synth` wrote them."""
    found = load_life(FLEET)
    assert found is not None
    return found


@pytest.fixture(scope="module")
def report(committed_eval: EvalReport) -> LifeReport:
    """The committed life nodes as `fabricbot eval` scores them (once per run, with the rest of the fleet)."""
    assert committed_eval.life is not None
    return committed_eval.life


def _only(life: tuple[dict[str, pd.DataFrame], dict[str, str], dict[str, Any]],
          *scenarios: str) -> tuple[dict[str, pd.DataFrame], dict[str, str], dict[str, Any]]:
    """The life nodes of those scenarios alone, their rows and their truth (a negative check needs no other)."""
    tables, inventory, truth = life
    nodes = {n: v for n, v in truth["nodes"].items() if v["scenario"] in scenarios}
    mine = {name: frame[frame["node_id"].astype(str).isin(nodes)] if "node_id" in frame.columns else frame
            for name, frame in tables.items()}
    return mine, inventory, {**truth, "nodes": nodes}


def test_every_life_scenario_is_labelled_once_per_node(
        life: tuple[dict[str, pd.DataFrame], dict[str, str], dict[str, Any]]) -> None:
    tables, _, truth = life
    scenarios = [v["scenario"] for v in truth["nodes"].values()]
    assert {s: scenarios.count(s) for s in LIFE_SCENARIOS} == LIFE_SCENARIOS
    assert set(tables["link_samples"]["node_id"].unique()) == set(truth["nodes"])
    assert all(n.startswith("hpc-gpu-life-") for n in truth["nodes"])  # never a fleet node's name
    span = tables["link_samples"]["timestamp"].max() - tables["link_samples"]["timestamp"].min()
    assert span == pd.Timedelta(hours=96)
    for t in truth["nodes"].values():
        if t["scenario"] == "slow_degradation":
            assert 30 <= t["lead_hours"] <= 120
        if t["scenario"] == "repair_fails":
            assert pd.Timestamp(t["returns_at"]) > pd.Timestamp(t["repaired_at"])


def test_same_seed_same_life() -> None:
    a, b, c = build_life(seed=11)[0], build_life(seed=11)[0], build_life(seed=12)[0]
    assert a["link_samples"].equals(b["link_samples"]) and not a["link_samples"].equals(c["link_samples"])


def test_the_engine_passes_every_life_check(report: LifeReport,
                                            life: tuple[dict[str, pd.DataFrame], dict[str, str], dict[str, Any]]
                                            ) -> None:
    assert report.restarts == 4 and report.restarts_ticketed == []
    assert report.quiet_nodes == 7 and report.false_warnings == []
    assert len(report.leads) == 3 and report.min_lead is not None and report.min_lead >= 24
    assert sorted(report.repairs.values()) == ["failed", "failed", "held", "held"]
    assert len(report.repairs_right) == 4 and report.ok
    # the watch loop replayed: each repair's storm alerts once on its part, nothing else alerts
    truth_parts = {f"{n} / {t['component']}" for n, t in life[2]["nodes"].items() if t["scenario"].startswith("repair")}
    assert report.faults == 4 and set(report.alerted) == truth_parts and report.false_alerts == []


def test_the_lines_are_the_ones_the_checks_read(report: LifeReport) -> None:
    text = "\n".join(report.lines())
    assert re.search(r"^reboots ticketed: 0\b", text, re.M)
    assert re.search(r"^false warnings: 0\b", text, re.M)
    lead = re.search(r"^warning lead time: min (\d+) h", text, re.M)
    assert lead is not None and int(lead.group(1)) == round(report.min_lead or 0)
    assert re.search(r"^repairs verified: 4/4\b", text, re.M)
    assert re.search(r"^alerts: 4 for 4 faults, 0 false\b", text, re.M)


def test_reboots_without_restart_recognition_are_ticketed(
        life: tuple[dict[str, pd.DataFrame], dict[str, str], dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    """The check can fail: with no restart recognised, the links down after each restart page."""
    monkeypatch.setattr(absence, "RESTART_SHARE", 1.01)
    got = score_life(*_only(life, "planned_reboot", "driver_reload"))
    assert got.restarts_ticketed and not got.ok


def test_a_watch_too_short_sighted_gives_no_lead(
        life: tuple[dict[str, pd.DataFrame], dict[str, str], dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    short = load_watch(horizon_hours=12.0)
    monkeypatch.setattr(life_eval, "watch_list", lambda tables, **kw: trends.watch_list(tables, policy=short, **kw))
    got = score_life(*_only(life, "slow_degradation"))
    assert got.min_lead == 0.0 and not got.ok
    assert "warning lead time: min 0 h (0/3 slow failures warned)" in got.lines()


def test_a_repair_judged_against_the_wrong_outcome_is_counted_wrong(
        life: tuple[dict[str, pd.DataFrame], dict[str, str], dict[str, Any]]) -> None:
    tables, inventory, truth = _only(life, "repair_holds", "repair_fails")
    flipped = {**truth, "nodes": {n: ({**v, "holds": not v["holds"]} if "holds" in v else v)
                                  for n, v in truth["nodes"].items()}}
    got = score_life(tables, inventory, flipped)
    assert got.repairs_right == [] and "repairs verified: 0/4" in got.lines()[3]


def test_synth_writes_life_and_eval_prints_its_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "fleet"
    assert main(["synth", "--out", str(out), "--seed", "2", "--nodes", "2", "--hours", "6", "--scrapes", "0"]) == 0
    assert load_life(out) is not None
    capsys.readouterr()
    assert main(["eval", str(out), "--min-score", "0.5"]) == 0
    printed = capsys.readouterr().out
    assert "reboots ticketed: 0" in printed and "repairs verified: 4/4" in printed
    assert "alerts: 4 for 4 faults, 0 false" in printed
    assert "storm incidents: 1, per-node alerts held: 40" in printed and "driver 550.90.07" in printed


def test_the_json_summary_carries_the_life_figures(report: LifeReport) -> None:
    life = EvalReport(fleet="f", life=report).summary()["life"]
    assert life["ok"] is True and life["min_lead_hours"] == report.min_lead
    assert life["restarts"] == 4 and life["restarts_ticketed"] == []


def test_a_fleet_without_life_prints_no_life_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    generate(out=tmp_path, seed=2, nodes=2, hours=6, scrapes=0)
    assert load_life(tmp_path) is None
    assert main(["eval", str(tmp_path)]) == 0
    assert "reboots ticketed" not in capsys.readouterr().out
