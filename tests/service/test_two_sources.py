"""One link read by two sources at the same instants (the fleet's tables, stating the link's state, and its
dcgm-exporter scrapes, which state none): the file door and the store door read one reading per instant, with
each column from the source that gives it, so they flag the same links."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.cli import main
from diagnostics.synth import fleet as synth


def _flagged(answer: dict[str, object]) -> set[tuple[object, ...]]:
    findings = answer["findings"]
    assert isinstance(findings, list)
    return {(f["link_type"], f["gpu"], f["link"], f["link_state"], f["severity"]) for f in findings
            if f["severity"] != "ok"}


def test_a_link_a_table_states_inactive_beside_its_scrape_is_down_through_both_doors(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "fleet"
    truth = json.loads(synth.generate(out=folder, seed=3, nodes=1, hours=6, scrapes=1,
                                      scenarios=["link_inactive"]).read_text())
    node, = truth["nodes"]
    assert list((folder / "dcgm").iterdir()), "the node's scrapes are beside its tables"
    down = {(f["gpu"], f["link"]) for f in truth["nodes"][node]["faults"] if f["severity"] == "down"}
    assert down, "the scenario takes a link down"

    def ask(*argv: str) -> dict[str, object]:
        capsys.readouterr()
        assert main([*argv, "--json"]) == 0
        answer: dict[str, object] = json.loads(capsys.readouterr().out)
        return answer

    direct = ask("analyze", str(folder), "--node", node)
    assert main(["ingest", str(folder), "--store", str(tmp_path / "store")]) == 0
    stored = ask("analyze", "--store", str(tmp_path / "store"), "--node", node)
    assert _flagged(direct) == _flagged(stored)
    for answer in (direct, stored):
        assert {(g, k) for t, g, k, state, _ in _flagged(answer) if state == "inactive"} == down
        assert answer["ticket_priority"] == truth["nodes"][node]["expect"]["priority"]
