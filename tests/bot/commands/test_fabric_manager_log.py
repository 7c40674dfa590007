"""Fabric Manager's log reaches the same answer through every door: `analyze FILE`, `ingest` then `analyze --store`,
and `ticket` of either: the NVSwitch and port its fatal error names, and the repair the SXid's handling gives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.bot.commands.conftest import Cli
from tests.conftest import FIXTURES

LOG = FIXTURES / "real" / "fabricmanager_sxid20034_gpud_1.txt"
NODE, PLATFORM = "n1", "hgx-h100-8gpu"
SWITCH = "NVSwitch 0000:86:00.0 port 33"  # the bus id and port the log's fatal line names


def _json(cli: Cli, *argv: str) -> dict[str, Any]:
    code, out, err = cli(*argv, "--platform", PLATFORM, "--json")
    assert code == 0, err
    answer: dict[str, Any] = json.loads(out)
    return answer


def test_the_switch_and_port_the_log_names_are_the_answer_through_each_door(cli: Cli, tmp_path: Path) -> None:
    store = tmp_path / "store"
    code, out, err = cli("ingest", str(LOG), "--store", str(store), "--node", NODE)
    assert code == 0 and "stored as fabric_manager: 2 events" in out, err
    file_door = _json(cli, "analyze", str(LOG), "--node", NODE)
    store_door = _json(cli, "analyze", "--store", str(store), "--node", NODE)
    for answer in (file_door, store_door):
        assert answer["isolated_component"] == SWITCH and answer["fault_detected"]
    assert store_door["repair_action"] == file_door["repair_action"]
    assert "fatal SXid" in file_door["repair_action"] and "HGX H100 baseboard" in file_door["repair_action"]
    tickets = [_json(cli, "ticket", str(LOG), "--node", NODE),
               _json(cli, "ticket", NODE, "--store", str(store))]
    for ticket in tickets:
        assert ticket["component"] == SWITCH and ticket["switch_port"] == 33
        assert ticket["replacement_part"]["id"] == "hgx-h100-baseboard"
    assert tickets[0]["repair_steps"] == tickets[1]["repair_steps"]


def test_one_switch_said_by_fabric_manager_and_the_kernel_is_one_component(cli: Cli, tmp_path: Path) -> None:
    """Fabric Manager names the switch by its bus id; the kernel's SXid line of the same fault names it `nvidia-
    nvswitch3` beside the same bus id: the answer is one switch, by the driver's name, its fault counted once."""
    fm = tmp_path / "fabricmanager.log"
    fm.write_text("[Jul 23 2024 07:53:55] [ERROR] [tid 841] detected NVSwitch fatal error 20034 on fid 0 on NVSwitch "
                  "pci bus id 00000000:86:00.0 physical id 3 port 33\n", encoding="utf-8")
    kernel = tmp_path / "kern.log"
    kernel.write_text("Tue Jul 23 07:54:00 UTC 2024\nJul 23 07:53:55 n1 kernel: [6781753.400584] nvidia-nvswitch3: "
                      "SXid (PCI:0000:86:00.0): 20034, Fatal, Link 33 LTSSM Fault Up\n", encoding="utf-8")
    store = tmp_path / "store"
    for path in (fm, kernel):
        code, _, err = cli("ingest", str(path), "--store", str(store), "--node", NODE)
        assert code == 0, err
    answer = _json(cli, "analyze", "--store", str(store), "--node", NODE)
    assert answer["isolated_component"] == "NVSwitch 3 port 33"
    switches = [f for f in answer["findings"] if f["component"].startswith("NVSwitch")]
    assert [f["component"] for f in switches] == ["NVSwitch 3 port 33"]
    assert "1 SXid 20034" in " ".join(c["message"] for c in switches[0]["crossed"])


KERNEL_SXID = ("Tue Jul 23 07:54:00 UTC 2024\nJul 23 07:53:55 n1 kernel: [6781753.400584] nvidia-nvswitch3: SXid "
               "(PCI:0000:86:00.0): 20034, Fatal, Link 33 LTSSM Fault Up\n")


def test_a_switch_tickets_physical_identity_gives_the_bus_id_its_log_names(cli: Cli, tmp_path: Path) -> None:
    """The switch Fabric Manager's log names by its bus id, and the one a kernel SXid line names beside its bus id:
    the ticket's physical identity gives that bus id, not `unknown`, whether asked of the file or the store."""
    kernel = tmp_path / "kern.log"
    kernel.write_text(KERNEL_SXID, encoding="utf-8")
    for log, switch in ((LOG, "NVSwitch 0000:86:00.0"), (kernel, "NVSwitch 3")):
        store = tmp_path / f"store-{log.stem}"
        code, _, err = cli("ingest", str(log), "--store", str(store), "--node", NODE)
        assert code == 0, err
        for target in ((str(log), "--node", NODE), (NODE, "--store", str(store))):
            ticket = _json(cli, "ticket", *target, "--rules")
            assert ticket["component"] == f"{switch} port 33"
            assert ticket["identity"]["pci_bus_id"] == "0000:86:00.0", (log.name, target)
            code, out, err = cli("ticket", *target, "--rules", "--platform", PLATFORM)
            assert code == 0, err
            assert "| pci bus id | 0000:86:00.0 |" in out
