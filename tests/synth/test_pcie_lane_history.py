"""A failing PCIe lane that slows its job: the job's history (the links a correlation reads beyond the window) was
read without what tells a GPU's own PCIe row from the port above it and the lane's (the same link's identity, other
counts), so the GPU's series mixed three devices' and every door said "the failing links do not track it: not this
node's fabric" at medium, while the eval, reading the tables whole, scored the scenario 1.00."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.cli import main
from diagnostics.synth import generate
from diagnostics.synth.evaluate import evaluate


@pytest.fixture(scope="module")
def lane_fleet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict[str, str]]]:
    out = tmp_path_factory.mktemp("lanes") / "fleet"
    truth = json.loads(generate(out=out, seed=11, nodes=12, hours=6, scrapes=0,
                                scenarios=["pcie_lane_errors"]).read_text(encoding="utf-8"))
    return out, {n: v["expect"] for n, v in truth["nodes"].items() if v["expect"].get("verdict") == "explains"}


def test_the_eval_reads_a_jobs_links_as_every_door_does(lane_fleet: tuple[Path, dict[str, dict[str, str]]]) -> None:
    fleet, explained = lane_fleet
    assert explained  # the fleet holds lanes that slow their jobs
    report = evaluate(fleet)
    assert not [(n.node_id, n.wrong) for n in report.nodes if n.wrong]


def test_a_lane_that_slows_its_job_explains_it_through_the_file_and_the_store(
        lane_fleet: tuple[Path, dict[str, dict[str, str]]], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    fleet, explained = lane_fleet
    store = tmp_path / "store"
    assert main(["ingest", str(fleet), "--store", str(store)]) == 0
    for node, expect in explained.items():
        for door in (["analyze", str(fleet), "--node", node], ["analyze", "--store", str(store), "--node", node]):
            capsys.readouterr()
            main([*door, "--json"])
            answer = json.loads(capsys.readouterr().out)
            assert answer["ticket_priority"] == expect["priority"], (door, answer["verdict"])
            assert " explains job " in answer["verdict"], (door, answer["verdict"])
