"""`nvidia-smi -q -i N` of one GPU of eight prints no index: its PCIe link, trained down to x8, is judged as the GPU at
its bus, as an Xid naming a GPU by its bus is, and every door names it so; no index is guessed."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import FIXTURES

from .conftest import Cli

# the real `nvidia-smi -q -i 0` of an eight-GPU H100 node, its link trained down to x8 of x16
SECTION = (FIXTURES / "real" / "smi_q_one_gpu_h100_1.txt").read_text().replace(
    "Max                       : 16x\n                Current                   : 16x",
    "Max                       : 16x\n                Current                   : 8x")
PART = "the GPU at PCI 0000:18:00.0 PCIe"


def test_a_downtrained_gpu_known_by_its_bus_alone_is_judged_at_every_door(tmp_path: Path, cli: Cli) -> None:
    paste = tmp_path / "smi_q_i.txt"
    assert "Current                   : 8x" in SECTION
    paste.write_text(SECTION)
    code, out, _ = cli("analyze", str(paste), "--node", "gpu-c3", "--json")
    by_file = json.loads(out)
    assert code == 0 and by_file["fault_detected"] and by_file["ticket_priority"] == "medium"
    assert by_file["isolated_component"] == PART and by_file["localization"]["fault"] == "pcie-downtrain"
    [link] = by_file["findings"]
    assert link["gpu"] is None and link["width"] == 8 and link["max_width"] == 16
    assert "GPU 0" not in by_file["repair_action"] and "0000:18:00.0" in by_file["repair_action"]
    code, out, _ = cli("analyze", str(paste), "--node", "gpu-c3")
    assert code == 0 and " fault=yes " in out.splitlines()[0] and f"isolated: {PART}" in out

    store = tmp_path / "store"
    assert cli("ingest", str(paste), "--store", str(store), "--node", "gpu-c3")[0] == 0
    code, out, _ = cli("analyze", "--store", str(store), "--node", "gpu-c3", "--json")
    by_store = json.loads(out)
    assert code == 0 and {k: by_store[k] for k in ("isolated_component", "ticket_priority", "repair_action")} \
        == {k: by_file[k] for k in ("isolated_component", "ticket_priority", "repair_action")}
    code, out, _ = cli("sweep", "--store", str(store), "--json")
    swept = json.loads(out)
    assert code == 1 and {o["component"] for o in swept["offenders"]} == {PART}
