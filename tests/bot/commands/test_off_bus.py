"""A GPU that left the bus, said only by the driver's off-the-bus message (no Xid line), reaches the diagnosis as a
fatal finding on that GPU through every door: the store, the files given to `analyze`, and one file alone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.bot.commands.conftest import Cli

SAMPLES = Path(__file__).resolve().parents[3] / "fixtures" / "samples"
LOG = ("Nov 29 16:00:01 gpu-n7 kernel: NVRM: GPU 0000:29:00.0: GPU has fallen off the bus.\n"
       "Nov 29 16:00:02 gpu-n7 kernel: NVRM: GPU 18:00.0: GPU has fallen off the bus.\n"
       "Nov 29 16:00:03 gpu-n7 kernel: NVRM: The NVIDIA GPU 0000:b3:00.0\n"
       "Nov 29 16:00:03 gpu-n7 kernel: NVRM: (PCI ID: 10de:26b5) installed in this system has\n"
       "Nov 29 16:00:03 gpu-n7 kernel: NVRM: fallen off the bus and is not responding to commands.\n")
BUSES = {"the GPU at PCI 0000:29:00.0", "the GPU at PCI 0000:18:00.0", "the GPU at PCI 0000:b3:00.0"}


def _off_bus(diagnosis: dict[str, Any]) -> dict[str, str]:
    return {f["component"]: f["severity"] for f in diagnosis["findings"]
            if any(c["rule"] == "xid_off_bus" for c in f["crossed"])}


def test_each_spelling_is_a_gpu_off_the_bus_through_every_door(tmp_path: Path, cli: Cli) -> None:
    log = tmp_path / "kern.log"
    log.write_text(LOG)
    store = tmp_path / "store"
    code, out, err = cli("ingest", str(log), "--store", str(store), "--at", "2026-11-29T16:10:00Z")
    assert code == 0 and "3 events" in out, err
    code, out, err = cli("analyze", "--store", str(store), "--node", "gpu-n7", "--json")
    assert code == 0, err
    stored = json.loads(out)
    assert stored["fault_detected"] and _off_bus(stored) == dict.fromkeys(BUSES, "down")
    code, out, err = cli("analyze", str(log), "--json")  # one file that is no snapshot: the node it names
    assert code == 0, err
    alone = json.loads(out)
    assert alone["node_id"] == "gpu-n7" and _off_bus(alone) == _off_bus(stored)
    code, out, err = cli("analyze", str(log), "--node", "gpu-n7")
    assert code == 0 and "fault=yes" in out and "xid_off_bus" in out, err


def test_with_the_gpu_table_the_message_names_the_gpu_and_localizes_it(tmp_path: Path, cli: Cli) -> None:
    store = tmp_path / "store"
    log = tmp_path / "kern.log"
    log.write_text("NVRM: GPU 0000:1b:00.0: GPU has fallen off the bus.\n")  # GPU 1 of the nvidia-smi -q sample
    assert cli("ingest", str(SAMPLES / "nvidia_smi_q_fabric_h100.txt"), "--store", str(store), "--node", "n1")[0] == 0
    assert cli("ingest", str(log), "--store", str(store), "--node", "n1", "--at", "2026-11-20T03:15:00Z")[0] == 0
    code, out, err = cli("analyze", "--store", str(store), "--node", "n1", "--json")
    assert code == 0, err
    diagnosis = json.loads(out)
    assert _off_bus(diagnosis) == {"GPU 1": "down"}
    assert diagnosis["localization"]["fault"] == "gpu-off-bus" and diagnosis["localization"]["gpu"] == 1


def test_a_file_that_is_neither_a_snapshot_nor_names_a_node_is_answered_unnamed(tmp_path: Path, cli: Cli) -> None:
    """A log that names no host is read as the log it is (not refused as bad JSON) and answered under a name that
    says so; a ticket asks for the node."""
    log = tmp_path / "dmesg.txt"
    log.write_text("[ 1843.308145] NVRM: GPU 0000:29:00.0: GPU has fallen off the bus.\n")
    code, out, err = cli("analyze", str(log))
    assert code == 0 and out.startswith("unnamed-node  priority=urgent") and "JSON" not in err
    assert "give --node NODE to name them" in out
    code, _, err = cli("ticket", str(log))
    assert code == 2 and "--node" in err and "JSON" not in err
    broken = tmp_path / "snap.json"
    broken.write_text('{"node_id": "n1", "fabric_errors": [\n')
    code, _, err = cli("analyze", str(broken))
    assert code == 2 and "not valid JSON" in err


def test_a_log_alone_names_the_suspect_by_its_bus_and_an_identity_line_gives_its_index(tmp_path: Path,
                                                                                       cli: Cli) -> None:
    """The driver's identity line ties the bus to a UUID; a GPU table with that UUID (`nvlink -s` here) gives
    the index. Alone, the log's suspect is the GPU at that bus, and the action says how to learn its index."""
    log = tmp_path / "kern.log"
    log.write_text("[ 4254.197816] NVRM: GPU at PCI:0000:5d:00: GPU-f1906b9b-557a-e961-045c-9fe4be3ce012\n"
                   "[ 4254.197871] NVRM: GPU 0000:5d:00.0: GPU has fallen off the bus.\n")
    code, out, err = cli("analyze", str(log), "--node", "gpu-n7", "--json")
    assert code == 0, err
    alone = json.loads(out)
    assert alone["isolated_component"] == "the GPU at PCI 0000:5d:00.0"
    assert alone["localization"]["fault"] == "gpu-off-bus" and alone["localization"]["gpu"] is None
    assert "nvidia-smi -q (which GPU index the GPU at PCI 0000:5d:00.0 is)" in alone["repair_action"]
    table = tmp_path / "nvlink-s.txt"
    table.write_text("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-00000000-557a-e961-045c-9fe4be3ce012)\n"
                     "         Link 0: 26.562 GB/s\n"
                     "GPU 3: NVIDIA H100 80GB HBM3 (UUID: GPU-f1906b9b-557a-e961-045c-9fe4be3ce012)\n"
                     "         Link 0: 26.562 GB/s\n")
    store = str(tmp_path / "store")
    for path in (table, log):
        assert cli("ingest", str(path), "--store", store, "--node", "gpu-n7", "--at", "2026-11-29T16:10:00Z")[0] == 0
    code, out, err = cli("analyze", "--store", store, "--node", "gpu-n7", "--json")
    assert code == 0, err
    known = json.loads(out)
    assert known["isolated_component"] == "GPU 3" and known["localization"]["gpu"] == 3
    assert _off_bus(known) == {"GPU 3": "down"} and "GPU 3's PCIe replay history" in known["repair_action"]


SMI_Q = SAMPLES / "nvidia_smi_q_fabric_h100.txt"  # GPU 0 at 0000:19:00.0, GPU 1 at 0000:1b:00.0
XID79 = "Nov 20 03:15:01 n1 kernel: NVRM: Xid (PCI:0000:1b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen " \
        "off the bus.\n"
SERIALS = {"GPU-33333333-3333-3333-3333-333333333333": "1650923011111",
           "GPU-44444444-4444-4444-4444-444444444444": "1650923022222"}


def _identity(ticket: dict[str, Any]) -> tuple[Any, ...]:
    ident = ticket["identity"]
    return ticket["gpu_index"], ident["gpu_serial"], ident["gpu_uuid"]


def test_a_gpu_named_by_its_bus_carries_its_serial_and_uuid_as_when_named_by_index(tmp_path: Path,
                                                                                   cli: Cli) -> None:
    """The log names the lost GPU by PCI address alone: mapped to GPU 1 by the node's `nvidia-smi -q` (in the
    store), or by its inventory (given to `ticket`), the ticket carries GPU 1's serial and UUID either way."""
    smi = tmp_path / "smi.txt"
    text = SMI_Q.read_text(encoding="utf-8")
    for uuid, serial in SERIALS.items():  # the sample with its boards' serials, as `nvidia-smi -q` prints them
        line = f"    GPU UUID                              : {uuid}\n"
        text = text.replace(line, f"    Serial Number                         : {serial}\n{line}")
    smi.write_text(text, encoding="utf-8")
    log = tmp_path / "kern.log"
    log.write_text(XID79, encoding="utf-8")
    store = str(tmp_path / "store")
    for path in (smi, log):
        assert cli("ingest", str(path), "--store", store, "--node", "n1", "--at", "2026-11-20T03:20:00Z")[0] == 0
    code, out, err = cli("ticket", "n1", "--store", store, "--rules", "--json")
    assert code == 0, err
    by_table = json.loads(out)
    want = (1, "1650923022222", "GPU-44444444-4444-4444-4444-444444444444")
    assert _identity(by_table) == want
    inventory = tmp_path / "inventory.toml"
    inventory.write_text('node_id = "n1"\n' + "".join(
        f'[[gpu]]\nindex = {i}\npci_bus_id = "00000000:{bus}:00.0"\nserial = "{serial}"\nuuid = "{uuid}"\n'
        for i, (bus, (uuid, serial)) in enumerate(zip(("19", "1B"), SERIALS.items(), strict=True))),
        encoding="utf-8")
    code, out, err = cli("ticket", str(log), "--node", "n1", "--rules", "--json", "--inventory", str(inventory))
    assert code == 0, err
    by_inventory = json.loads(out)
    assert by_inventory["component"] == "the GPU at PCI 0000:1b:00.0"  # the log alone names no index
    assert _identity(by_inventory) == want and by_inventory["identity"]["pci_bus_id"] == "0000:1b:00.0"
