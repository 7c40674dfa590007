"""`dcgmi nvlink -s` and `-e -g N` pasted together, through each door: `analyze FILE`, `ingest` then `analyze
--store`, and `ticket` from each: one answer, naming the GPU and link the paste shows down and the counts it shows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main
from tests.conftest import FIXTURES
from tests.shared import answered_exit

PASTE = FIXTURES / "samples" / "dcgmi_nvlink_down_replay_h100.txt"  # GPU 3 link 5 down; GPU 3 link 2: 48,213 replays
REAL = FIXTURES / "real" / "dcgmi_nvlink_s_all_down_1.txt"
AT = "2026-11-30T12:00:00Z"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == (answered_exit(out) if argv[0] == "analyze" else 0), err
    return dict(json.loads(out))


@pytest.mark.parametrize("platform", [[], ["--platform", "hgx-h100-8gpu"]])
def test_each_door_names_the_down_link_and_the_replays_of_the_paste(platform: list[str], tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    store = str(tmp_path / "store")
    direct = _run(capsys, "analyze", str(PASTE), "--node", "n1", "--end", AT, *platform, "--json")
    _run(capsys, "ingest", str(PASTE), "--store", store, "--node", "n1", "--at", AT, "--json")
    stored = _run(capsys, "analyze", "--store", store, "--node", "n1", *platform, "--json")
    tickets = [_run(capsys, "ticket", str(PASTE), "--node", "n1", "--end", AT, *platform, "--json", "--rules"),
               _run(capsys, "ticket", "n1", "--store", store, *platform, "--json", "--rules")]
    for answer in (direct, stored):
        assert answer["fault_detected"] and answer["isolated_component"].startswith("GPU 3 NVLink 5")
        down = next(f for f in answer["findings"] if (f["gpu"], f["link"]) == (3, 5))
        assert down["link_state"] == "down" and down["severity"] == "down"
        replays = next(f for f in answer["findings"] if (f["gpu"], f["link"]) == (3, 2))
        assert (replays["counts"]["replay"], replays["counts"]["recovery"]) == (48213, 3)
    assert {k: v for k, v in direct.items() if k != "warnings"} == {k: v for k, v in stored.items() if k != "warnings"}
    for ticket in tickets:
        assert ticket["gpu_index"] == 3 and ticket["priority"] == direct["ticket_priority"]
    assert tickets[0]["replacement_part"] == tickets[1]["replacement_part"]


def test_the_real_all_down_status_gives_one_answer_through_each_door(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """DCGM issue 198: both GPUs' 18 links down at once: one cause above the links, through the file and the store."""
    store = str(tmp_path / "store")
    direct = _run(capsys, "analyze", str(REAL), "--node", "n1", "--end", AT, "--json")
    _run(capsys, "ingest", str(REAL), "--store", store, "--node", "n1", "--at", AT, "--json")
    stored = _run(capsys, "analyze", "--store", store, "--node", "n1", "--json")
    assert direct["fault_detected"] and direct["isolated_component"] == stored["isolated_component"]
    assert {(f["gpu"], f["link"]) for f in direct["findings"] if f["link_state"] == "down"} == {
        (gpu, link) for gpu in (0, 1) for link in range(18)}
    assert {k: v for k, v in direct.items() if k != "warnings"} == {k: v for k, v in stored.items() if k != "warnings"}


def test_two_gpus_all_down_are_said_as_both(capsys: pytest.CaptureFixture[str]) -> None:
    """The evidence read 'all 36 NVLinks on all 2 GPUs are inactive at once'."""
    direct = _run(capsys, "analyze", str(REAL), "--node", "n1", "--end", AT, "--json")
    said = [w for w in direct["warnings"] if "at once" in w]
    assert said == ["all 36 NVLinks on both GPUs are inactive at once: no NVSwitch board holds two GPUs (a bridged "
                    "pair, or a board of direct links): no Fabric Manager runs there, so judged as what every link "
                    "shares (the bridge or board, the driver, firmware or power)"], said


def test_two_gpus_all_down_are_no_fabric_manager_fault(capsys: pytest.CaptureFixture[str]) -> None:
    """DCGM issue 198's two GPUs (no NVSwitch found) had every NVLink down: answered "restart Fabric Manager" at
    every door, where no NVSwitch board holds two GPUs, so none runs; what every link shares is the suspect. Its
    ticket's Fabric Manager hypothesis once read 'link errors are confined to specific links'."""
    direct = _run(capsys, "analyze", str(REAL), "--node", "n1", "--end", AT, "--json")
    assert direct["fault_detected"] and direct["isolated_component"] == "the NVLink mesh (every GPU's NVLinks)"
    assert "fabricmanager" not in direct["repair_action"].lower()
    ticket = _run(capsys, "ticket", str(REAL), "--node", "n1", "--end", AT, "--json", "--rules")
    first = ticket["hypotheses"][0]
    assert first["kind"] == "nvlink-mesh" and first["agrees_with_analysis"]
    software = next(h for h in ticket["hypotheses"] if h["kind"] == "fabric-software")
    assert software["evidence"] == ["every failing link is down on 2 GPUs, but no NVSwitch board holds two GPUs (a "
                                    "bridged pair, or a board of direct links): no Fabric Manager runs there"]
    assert not any("fabricmanager" in (s.get("command") or "") for s in ticket["repair_steps"])


def test_a_node_in_mig_mode_is_not_a_fault_through_either_door(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """The same status from a node with a GPU in MIG mode: DCGM writes X for every link NVML reports down (NVML
    reports a MIG GPU's links down) and its health check skips them; so does this one, and says why."""
    paste = tmp_path / "mig.txt"
    states = REAL.read_text(encoding="utf-8").splitlines(keepends=True)
    paste.write_text("".join(line.replace("D", "X") if set(line.split()) == {"D"} else line for line in states),
                     encoding="utf-8")
    store = str(tmp_path / "store")
    direct = _run(capsys, "analyze", str(paste), "--node", "n1", "--end", AT, "--json")
    _run(capsys, "ingest", str(paste), "--store", store, "--node", "n1", "--at", AT, "--json")
    stored = _run(capsys, "analyze", "--store", store, "--node", "n1", "--json")
    for answer in (direct, stored):
        assert not answer["fault_detected"] and answer["ticket_priority"] == "low"
        assert not [f for f in answer["findings"] if f["severity"] != "ok"]
        assert any("MIG mode" in w for w in answer["warnings"])
    assert {k: v for k, v in direct.items() if k != "warnings"} == {k: v for k, v in stored.items() if k != "warnings"}


def test_four_gpus_or_a_bridged_model_all_down_are_no_fabric_manager_fault(tmp_path: Path,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """The same status of four GPUs, and an H100 NVL pair whose platform only its model tells: "restart Fabric
    Manager" still, where a 4-GPU board and bridged pairs have no NVSwitch."""
    four = tmp_path / "four.txt"
    lines = REAL.read_text(encoding="utf-8").splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if "gpuId 1:" in line)
    four.write_text("".join([*lines[:at + 2], "    gpuId 2:\n", lines[at + 1], "    gpuId 3:\n", lines[at + 1],
                             *lines[at + 2:]]), encoding="utf-8")
    pair = tmp_path / "pair.txt"
    pair.write_text("".join(f"GPU {g}: NVIDIA H100 NVL (UUID: GPU-c{g}c{g}c{g}c{g}-1111-2222-3333-444444444444)\n"
                            "NVML: Unable to retrieve NVLink information as all links are inActive\n" for g in (0, 1)),
                    encoding="utf-8")
    for path, why in ((four, "a 4-GPU board joins its GPUs directly"),
                      (pair, "h100-nvl-8gpu (taken from the GPU model")):
        answer = _run(capsys, "analyze", str(path), "--node", "n1", "--end", AT, "--json")
        assert answer["fault_detected"] and "Fabric Manager" not in answer["isolated_component"], answer
        assert "fabricmanager" not in answer["repair_action"].lower() and not answer["held"]
        assert [w for w in answer["warnings"] if why in w and "no Fabric Manager runs there" in w], answer["warnings"]
    ticket = _run(capsys, "ticket", str(four), "--node", "n1", "--end", AT, "--json", "--rules")
    software = next(h for h in ticket["hypotheses"] if h["kind"] == "fabric-software")  # the analysis's reason, too
    assert software["evidence"] == ["every failing link is down on 4 GPUs, but four GPUs and no platform named: a "
                                    "4-GPU board joins its GPUs directly, with no NVSwitch: no Fabric Manager runs "
                                    "there"], software
