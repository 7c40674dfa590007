"""`fabricbot ticket`: Markdown and JSON tickets from a snapshot file; model calls land in the audit table."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import sqlite_utils
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models.function import AgentInfo, FunctionModel

from bot.audit import AuditLog
from bot.commands import ticket as ticket_command
from diagnostics.service import Request, StoreSource, diagnose
from diagnostics.store.telemetry import open_store
from diagnostics.synth.fleet import generate
from diagnostics.tickets import ClaudeDrafter, ModelCall
from tests.bot.commands.conftest import Cli
from tests.conftest import FIXTURES
from tests.tickets.helpers import SEED_INPUT

LOGGED = datetime(2026, 3, 1, 12, tzinfo=UTC)  # when a log printed without dates was taken, as `ingest --at` says

FIELDS = {"node_id", "component_kind", "gpu_index", "peer", "link_id", "lanes", "switch", "switch_port",
          "port_source", "port_find_with", "identity", "replacement_part", "isolation_steps", "repair_steps",
          "capture_first", "priority", "evidence", "estimated_cost", "human_review_required", "drafted_by"}




def test_seed_file_prints_the_urgent_ticket_and_skips_the_healthy_case(cli: Cli) -> None:
    code, out, err = cli("ticket", str(FIXTURES / "seed_examples.json"))
    assert code == 0
    assert out.startswith("# Repair ticket: GPU 2 -> GPU 3 NVLink 1 on hpc-gpu-node-12")
    assert "**Priority:** urgent" in out and "nvidia-smi nvlink -R -i 2" in out
    assert "hpc-gpu-node-03" in err and "nothing to repair" in err


def test_json_has_the_ticket_fields(tmp_path: Path, cli: Cli) -> None:
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(SEED_INPUT | {"platform": "hgx-h100-8gpu"}))
    code, out, _ = cli("ticket", str(path), "--json")
    data = json.loads(out)
    assert code == 0 and set(data) >= FIELDS
    assert (data["gpu_index"], data["peer"], data["link_id"], data["priority"]) == (2, "GPU 3", "nvlink-1", "urgent")
    assert data["port_source"] == "assumed" and data["switch"].startswith("NVSwitch")
    assert data["human_review_required"] is True
    assert "ANTHROPIC_API_KEY is not set" in data["fallback_notes"][0]


def test_a_snapshot_case_that_cannot_be_read_is_an_input_error_not_nothing_to_repair(tmp_path: Path,
                                                                                      cli: Cli) -> None:
    """Exit 1 tells a cron job "nothing to repair": a file with an unknown platform is an input error (2), as
    `ticket --help` says, alone or beside a case that is drafted."""
    bad = SEED_INPUT | {"platform": "hgx-h100"}
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(bad))
    code, out, err = cli("ticket", str(path))
    assert code == 2 and out == "" and "hgx-h100" in err
    path.write_text(json.dumps([bad, SEED_INPUT]))
    code, out, err = cli("ticket", str(path))
    assert code == 2 and out.startswith("# Repair ticket: GPU 2 -> GPU 3 NVLink 1") and "hgx-h100" in err


def test_link_option_and_unknown_link(tmp_path: Path, cli: Cli) -> None:
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(SEED_INPUT))
    code, out, _ = cli("ticket", str(path), "--link", "gpu2", "--json")
    assert code == 0 and json.loads(out)["component_kind"] == "gpu"
    code, _, err = cli("ticket", str(path), "--link", "nvlink-7")
    assert code == 2 and "nvlink-7" in err and "Traceback" not in err


def test_missing_node_file_is_one_line(cli: Cli) -> None:
    code, _, err = cli("ticket", "node-17")
    assert code == 2 and "Traceback" not in err
    (line,) = err.splitlines()  # the error alone, not after a note about the drafter
    assert "node-17" in line


def test_model_calls_are_recorded_in_the_store_audit_table(tmp_path: Path, cli: Cli,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-ant-secret-value"
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)

    def broken(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise ConnectionError(f"upstream refused key {secret}")

    def claude(*, on_model_call: Callable[[ModelCall], None] | None = None) -> ClaudeDrafter:
        return ClaudeDrafter(model=FunctionModel(broken, model_name="claude-under-test"), on_model_call=on_model_call)

    monkeypatch.setattr(ticket_command, "drafter_from_env", claude)
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(SEED_INPUT))
    code, out, _ = cli("ticket", str(path), "--store", str(tmp_path / "store"))
    assert code == 0 and "drafted by rules" in out
    entries = list(AuditLog(sqlite_utils.Database(tmp_path / "store" / "fabricbot.db")).entries("model_call"))
    assert [e["detail"]["outcome"] for e in entries] == ["error", "fallback"]
    assert entries[0]["subject"] == "claude-under-test" and entries[0]["actor"] == "fabricbot ticket"
    assert secret not in json.dumps(entries) and secret not in out


def test_node_from_the_store(tmp_path: Path, cli: Cli) -> None:
    truth = json.loads(generate(out=tmp_path / "fleet", seed=0, nodes=2, hours=2, scrapes=0).read_text())
    faulty = next(n for n, v in truth["nodes"].items() if v["faults"])
    fault = truth["nodes"][faulty]["faults"][0]
    store = tmp_path / "store"
    open_store(store).ingest([tmp_path / "fleet" / f"{t}.parquet" for t in ("link_samples", "events",
                                                                             "step_samples")])
    code, out, _ = cli("ticket", faulty, "--store", str(store), "--json", "--rules",
                       "--platform", truth["nodes"][faulty]["platform"])
    data = json.loads(out)
    assert code == 0 and data["node_id"] == faulty and data["gpu_index"] == fault["gpu"]
    assert data["replacement_part"] is not None
    code, _, err = cli("ticket", "node-missing", "--store", str(store))
    assert code == 2 and faulty in err
    # the node named as `analyze --store DIR --node NODE` names it: the same ticket (it was a usage error)
    asked = cli("ticket", "--store", str(store), "--node", faulty, "--json", "--rules",
                "--platform", truth["nodes"][faulty]["platform"])
    assert asked[0] == 0 and json.loads(asked[1]) == data
    code, _, err = cli("ticket", "--node", faulty)
    assert code == 2 and "FILE|NODE" in err and "--store" in err


def test_a_stored_node_is_judged_with_the_nodes_sharing_its_job(tmp_path: Path) -> None:
    def shared(truth: dict[str, Any]) -> tuple[str, str] | None:
        """A slowed job of several nodes: the node whose fault explains it and one with no fault."""
        for job in truth["jobs"].values():
            nodes = {n: truth["nodes"][n] for n in job["nodes"]}
            culprit = [n for n, v in nodes.items() if v["expect"]["verdict"] == "explains"]
            clean = [n for n, v in nodes.items() if not v["faults"]]
            if job["slowdown_pct"] > 10 and culprit and clean:
                return culprit[0], clean[0]
        return None

    # seed 1: the first 6-node fleet with one (seed 0 has none), written once rather than searched for again
    truth = json.loads(generate(out=tmp_path / "fleet", seed=1, nodes=6, hours=6, scrapes=0).read_text())
    pair = shared(truth)
    assert pair is not None, "seed 1's fleet no longer has a slowed job across a faulty and a clean node"
    culprit, bystander = pair
    open_store(tmp_path / "store").ingest([tmp_path / "fleet" / f"{t}.parquet"
                                           for t in ("link_samples", "events", "step_samples")])
    request = Request(node=bystander, platform=truth["nodes"][bystander]["platform"])
    diagnosis = diagnose(StoreSource(tmp_path / "store"), request).diagnosis
    assert not diagnosis.fault_detected
    assert diagnosis.verdict is not None and diagnosis.verdict.startswith(culprit)  # not "not the fabric"


def test_inspect_ranks_hypotheses(tmp_path: Path, cli: Cli) -> None:
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(SEED_INPUT))
    code, out, _ = cli("ticket", str(path), "--inspect", "--json")
    data = json.loads(out)
    assert code == 0 and data["analysis_component"] == "GPU 2 -> GPU 3 NVLink 1" and data["agrees"] is True
    assert data["hypotheses"][0]["kind"] == "nvlink" and data["hypotheses"][0]["agrees_with_analysis"]
    code, out, _ = cli("ticket", str(path), "--inspect")
    assert out.startswith("# Topology inspection: hpc-gpu-node-12") and "1. GPU 2 -> GPU 3 NVLink 1" in out


def test_platform_given_wins_over_the_one_a_snapshot_names(tmp_path: Path, cli: Cli) -> None:
    snap = {"node_id": "n9", "platform": "dgx-a100-8gpu", "step_time_ms": 300.0, "baseline_step_time_ms": 180.0,
            "fabric_errors": [{"gpu_src": 2, "gpu_dst": 3, "link_id": "nvlink-1", "crc_errors": 45120,
                               "replay_count": 8900}]}
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(snap))
    code, out, _ = cli("ticket", str(path), "--platform", "hgx-h100-8gpu")
    assert code == 0 and "on hgx-h100-8gpu every GPU NVLink lands on an NVSwitch" in out
    assert json.loads(cli("ticket", str(path), "--platform", "hgx-h100-8gpu", "--json")[1])["switch"] == "NVSwitch 0"


def test_lspci_paste_names_the_gpu_the_lane_the_end_and_the_part(cli: Cli) -> None:
    paste = FIXTURES / "samples" / "lspci_vvv_lane_h100.txt"
    # one paste dates no lane status (it is sticky: set at some time since it was cleared): a warning, no fault
    code, _, err = cli("ticket", str(paste), "--node", "gpu-node-7", "--platform", "hgx-h100-8gpu")
    assert code == 3 and "gpu-node-7: one reading per link, so no error rate is known" in err, err
    code, out, _ = cli("ticket", str(paste), "--node", "gpu-node-7", "--platform", "hgx-h100-8gpu", "--json",
                       "--link", "gpu0-pcie")
    data = json.loads(out)
    assert code == 0 and (data["node_id"], data["gpu_index"], data["component_kind"]) == ("gpu-node-7", 0, "pcie")
    assert (data["lanes"], data["end"]) == ([6], "gpu")
    # received at the GPU end, the port above it replaying: the end is evidence, the parts keep the catalog's order
    assert (data["replacement_part"]["id"], data["next_part"]["id"]) == ("hgx-h100-pcie-path", "hgx-h100-sxm5-module")
    assert any("0000:18:00.0" in e and "replays it sent" in e for e in data["evidence"]["notes"])
    code, out, _ = cli("ticket", str(paste), "--node", "gpu-node-7", "--platform", "hgx-h100-8gpu", "--link",
                       "gpu0-pcie")
    assert "| lanes | 6 |" in out and "| end | errors received at the GPU's end |" in out


def test_a_paste_naming_no_node_asks_for_one(cli: Cli) -> None:
    code, _, err = cli("ticket", str(FIXTURES / "samples" / "lspci_vvv_lane_h100.txt"))
    assert code == 2 and "--node" in err and "Traceback" not in err


def test_a_real_listing_names_the_upstream_end(tmp_path: Path, cli: Cli) -> None:
    """The ROCK 5 ITX listing as printed: its root port (secondary bus 11) reports lane 1 in error and receiver
    errors; the device below it none. Under an NVIDIA header (the one line changed) that device is a GPU, and the
    ticket names its upstream end: the PCIe path first."""
    text = (FIXTURES / "real" / "lspci_vv_laneerr_rk3588_1.txt").read_text(encoding="utf-8")
    paste = tmp_path / "lspci.txt"
    paste.write_text(text.replace("SATA controller: ASMedia Technology Inc. ASM1164 Serial ATA AHCI Controller",
                                  "3D controller: NVIDIA Corporation GH100"), encoding="utf-8")
    code, _, err = cli("ticket", str(paste), "--node", "n1")
    assert code == 2 and "rock-5-itx" in err  # the prompt names the node
    code, out, _ = cli("ticket", str(paste), "--platform", "pcie-8gpu", "--json", "--link", "gpu0-pcie")
    data = json.loads(out)
    assert code == 0 and (data["node_id"], data["gpu_index"], data["lanes"], data["end"]) == \
        ("rock-5-itx", 0, [1], "upstream")
    assert data["replacement_part"]["id"] == "pcie-riser-retimer"
    assert any("0001:10:00.0" in note and "received errors" in note for note in data["evidence"]["notes"])


def test_the_format_its_error_suggests_is_an_option_ticket_takes(tmp_path: Path, cli: Cli) -> None:
    """A real `nvidia-smi nvlink -s` cut inside its first GPU line is not recognized, and the error says to force a
    reader with --format: `ticket` takes it (as `analyze` and `ingest` do) and refuses a format that does not exist."""
    lines = (FIXTURES / "real" / "nvlink_s_a100_1.txt").read_text().splitlines()
    cut = tmp_path / "cut.txt"
    cut.write_text(next(line for line in lines if line.startswith("GPU 0"))[:40])
    code, _, err = cli("ticket", str(cut))
    assert code == 2 and "unrecognized format; force one with --format" in err
    whole = tmp_path / "links.txt"
    whole.write_text("\n".join(lines[:6]) + "\n")  # the header and three links
    code, _, err = cli("ticket", str(whole), "--format", "nvlink", "--node", "n1")
    assert code == 3 and "n1: link states only, no error counter" in err  # three links up, but no error rate: unknown
    code, _, err = cli("ticket", str(whole), "--format", "nvlink-x", "--node", "n1")
    assert code == 2 and "unknown format 'nvlink-x'" in err


def test_a_parquet_table_and_a_kernel_log_starting_with_a_bracket_are_read_as_ingest_reads_them(
        tmp_path: Path, cli: Cli) -> None:
    """Neither is a snapshot: a Parquet table is no text at all and a raw dmesg starts with `[` as JSON does. Both are
    telemetry `ingest` takes, so `ticket` drafts from them as `analyze` answers them (a real log, its source in its
    first line, and the committed fleet's events)."""
    events = str(FIXTURES / "fleet" / "events.parquet")
    code, out, err = cli("ticket", events, "--node", "hpc-gpu-node-01", "--json")
    assert code == 0, err
    assert (json.loads(out)["fault"], json.loads(out)["gpu_index"]) == ("gpu-off-bus", 3)
    assert json.loads(cli("analyze", events, "--node", "hpc-gpu-node-01", "--json")[1])["isolated_component"] == "GPU 3"
    code, _, err = cli("analyze", events)
    assert code == 2 and "give --node NODE" in err and "UTF-8" not in err
    lines = (FIXTURES / "real" / "kernel_xid79_sxid20034_gpud_1.txt").read_text().splitlines()
    dmesg = tmp_path / "dmesg.log"
    dmesg.write_text("\n".join(line for line in lines if not line.startswith("#")) + "\n")
    assert dmesg.read_text().startswith("[")
    code, out, err = cli("ticket", str(dmesg), "--node", "n1", "--json")
    assert code == 0 and "JSON" not in err, err
    assert json.loads(out)["fault"] == "gpu-off-bus" and json.loads(out)["node_id"] == "n1"


def test_a_folder_is_read_as_analyze_reads_it(tmp_path: Path, cli: Cli) -> None:
    """A folder of telemetry (a real kernel log beside a real dcgm-exporter scrape): `ticket DIR --node N` drafts
    for the part `analyze DIR --node N` isolates, and a folder naming one node is answered without --node by
    both."""
    folder = tmp_path / "captures"
    folder.mkdir()
    for name in ("kernel_xid79_sxid20034_gpud_1.txt", "dcgm_metrics_a100_1.txt"):
        (folder / name).write_bytes((FIXTURES / "real" / name).read_bytes())
    code, out, err = cli("analyze", str(folder), "--node", "n1", "--json")
    assert code == 0, err
    found = json.loads(out)
    code, out, err = cli("ticket", str(folder), "--node", "n1", "--json")
    assert code == 0 and "Is a directory" not in err, err
    ticket = json.loads(out)
    assert ticket["node_id"] == "n1" and ticket["priority"] == found["ticket_priority"] == "urgent"
    assert ticket["fault"] == "gpu-off-bus" and found["isolated_component"] in json.dumps(ticket)
    (folder / "kernel_xid79_sxid20034_gpud_1.txt").unlink()  # the scrape alone names its node
    code, out, err = cli("analyze", str(folder), "--json")
    assert code == 3 and json.loads(out)["node_id"] == "axa", err  # one scrape: incomplete, as `ticket` says
    code, out, err = cli("ticket", str(folder))
    assert code == 3 and "axa: link states only, no error counter" in out + err, err  # no rate, as for the file


def test_a_node_asked_of_a_folder_with_no_store_says_so_and_leaves_no_store_behind(tmp_path: Path, cli: Cli) -> None:
    """A mistyped --store is no store: `ticket NODE` says so as `analyze` does, and creates nothing there, so the other
    doors still say so too instead of answering an empty store's all-clear."""
    typo = tmp_path / "stroe"
    code, _, err = cli("ticket", "hpc-gpu-node-01", "--store", str(typo))
    assert code == 2 and "no telemetry store here" in err and str(typo) in err
    assert not typo.exists()
    code, _, err = cli("watch", "--store", str(typo))
    assert code == 2 and "no telemetry store here" in err


def test_format_snapshot_reads_a_snapshot_or_says_why_the_file_is_none(cli: Cli) -> None:
    """`--format snapshot` is the one reader `ticket` uses, as `analyze --format snapshot` does: a real `nvidia-smi
    nvlink -s` paste is refused as JSON, naming the file and line, not drafted from as the paste it is."""
    paste = str(FIXTURES / "real" / "nvlink_s_v100_inactive_1.txt")
    code, out, err = cli("ticket", paste, "--node", "n1", "--format", "snapshot")
    assert code == 2 and out == "" and f"{paste}:1: not valid JSON" in err
    code, out, _ = cli("ticket", paste, "--node", "n1")
    assert code == 0 and out.startswith("# Repair ticket: GPU 3 on n1")  # its down links to GPU 2 and 7 share it
    code, out, _ = cli("ticket", str(FIXTURES / "seed_examples.json"), "--format", "snapshot")
    assert code == 0 and out.startswith("# Repair ticket: GPU 2 -> GPU 3 NVLink 1 on hpc-gpu-node-12")


def test_a_gpu_a_log_names_by_its_pci_address_alone_has_that_address_in_its_identity(cli: Cli) -> None:
    """Real Xid 145/149 lines name each GPU by its PCI address and no index: the ticket for the GPU at 0000:97:00.0
    says that address in its physical identity, not `unknown` with where to read it."""
    code, out, err = cli("ticket", str(FIXTURES / "real" / "xid_145_149_log_1.txt"), "--node", "n1", "--json",
                         "--link", "gpu-0000-97-00-0")
    assert code == 0, err
    ticket = json.loads(out)
    assert ticket["component"] == "the GPU at PCI 0000:97:00.0" and ticket["gpu_index"] is None
    assert ticket["identity"]["pci_bus_id"] == "0000:97:00.0" and "pci_bus_id" not in ticket["identity"]["where"]


def test_a_gpu_an_nvidia_smi_q_paste_reads_by_index_has_its_bus_address_and_driver_in_its_identity(
        tmp_path: Path, cli: Cli) -> None:
    """The two-GPU `nvidia-smi -q` paste gives GPU 1's 'Bus Id' and the 'Driver Version': its PCIe ticket names both,
    where it said `unknown` and sent the technician to read 'PCI > Bus Id' in the very output it was given; the
    stored node's ticket says the same."""
    paste = FIXTURES / "samples" / "nvidia_smi_q_fabric_h100.txt"
    code, out, err = cli("ticket", str(paste), "--node", "h1", "--json", "--rules")
    assert code == 0, err
    ticket = json.loads(out)
    identity = ticket["identity"]
    assert ticket["component"] == "GPU 1 PCIe" and identity["pci_bus_id"] == "0000:1b:00.0"
    assert identity["driver_version"] == "550.54.15"
    assert {"pci_bus_id", "driver_version"}.isdisjoint(identity["where"])
    code, out, _ = cli("analyze", str(paste), "--node", "h1", "--json")
    assert json.loads(out)["gpu_ids"]["1"]["pci_bus_id"] == "0000:1b:00.0"
    code, out, err = cli("ticket", str(paste), "--node", "h1", "--link", "fabric-software", "--json", "--rules")
    assert code == 0, err  # a part of no GPU's: the node's one driver, where the driver matters most
    assert json.loads(out)["identity"]["driver_version"] == "550.54.15"
    store = tmp_path / "store"
    open_store(store).ingest([paste], node_id="h1")
    code, out, err = cli("ticket", "h1", "--store", str(store), "--json", "--rules")
    assert code == 0, err
    assert json.loads(out)["identity"] == identity


def test_a_gpu_a_kernel_log_names_by_address_alone_has_the_uuid_and_serial_its_lines_give(
        tmp_path: Path, cli: Cli) -> None:
    """gpud's published log (Xid 79 with SXid 20034) names the fallen GPU by its PCI address, after the driver's
    identity line for that address (`NVRM: GPU at PCI:0000:91:00: GPU-b6c3...`): its ticket names that UUID, and the
    serial the log gives, where both said `unknown` because nothing placed the address on an index; from a store too."""
    log = FIXTURES / "real" / "kernel_xid79_sxid20034_gpud_1.txt"
    code, out, err = cli("ticket", str(log), "--node", "k1", "--json", "--rules")
    assert code == 0, err
    ticket = json.loads(out)
    identity = ticket["identity"]
    assert ticket["component"] == "the GPU at PCI 0000:91:00.0" and ticket["gpu_index"] is None
    assert identity["gpu_uuid"] == "GPU-b6c3b2be-c55b-d076-fa0e-d464e4c7e08b" and identity["gpu_serial"] != "unknown"
    assert {"gpu_uuid", "gpu_serial"}.isdisjoint(identity["where"])
    code, out, _ = cli("analyze", str(log), "--node", "k1", "--json")
    assert json.loads(out)["bus_gpu_ids"]["0000:91:00.0"]["uuid"] == identity["gpu_uuid"]
    store = tmp_path / "store"
    open_store(store).ingest([log], node_id="k1", at=LOGGED)  # dmesg's seconds since boot: a store needs the time
    code, out, err = cli("ticket", "k1", "--store", str(store), "--json", "--rules")
    assert code == 0, err
    assert json.loads(out)["identity"] == identity


def test_a_gpu_of_a_kernel_log_has_the_driver_version_its_banner_gives(tmp_path: Path, cli: Cli) -> None:
    """NVSentinel's published dmesg: a GPU falls off the bus, then the driver reloads and prints its banner
    (`NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  570.158.01 ...`): the ticket names that driver, where
    it said `unknown` and asked for `nvidia-smi -q` of a GPU that no longer answers; from a store too."""
    log = FIXTURES / "real" / "kernel_off_bus_no_xid_nvsentinel_1.txt"
    code, out, err = cli("ticket", str(log), "--node", "k1", "--json", "--rules")
    assert code == 0, err
    identity = json.loads(out)["identity"]
    assert identity["pci_bus_id"] == "0000:b3:00.0" and identity["driver_version"] == "570.158.01"
    assert "driver_version" not in identity["where"]
    store = tmp_path / "store"
    open_store(store).ingest([log], node_id="k1", at=LOGGED)  # dmesg's seconds since boot: a store needs the time
    code, out, err = cli("ticket", "k1", "--store", str(store), "--json", "--rules")
    assert code == 0, err
    assert json.loads(out)["identity"] == identity


def test_a_ticket_for_a_past_window_is_the_one_analyze_end_answers(tmp_path: Path, cli: Cli) -> None:
    """Every link of an H100 replaying from 10:00 to 11:00, quiet to 12:00: `analyze --end 11:00` answers the fault,
    and `ticket --end 11:00` drafts its ticket; without --end both answer the newest hour, healthy."""
    from tests.tickets.test_node_switch_tickets import NODE, _readings

    first, second = _readings(tmp_path / "in", "hgx-h100-8gpu", "NVIDIA H100 80GB HBM3", dict.fromkeys(range(8)))
    third = tmp_path / "in" / "nvlink-2.txt"
    third.write_text(second.read_text().replace("2026-12-04T11:00:00Z", "2026-12-04T12:00:00Z"), encoding="utf-8")
    store = str(tmp_path / "store")
    assert cli("ingest", str(first), str(second), str(third), "--store", store, "--node", NODE)[0] == 0
    end = "2026-12-04T11:00:00Z"
    asked = ["--store", store, "--platform", "hgx-h100-8gpu"]
    code, out, err = cli("analyze", "--node", NODE, *asked, "--end", end, "--json")
    analyzed = json.loads(out)
    assert analyzed["fault_detected"] and analyzed["window_end"].startswith("2026-12-04T11:00"), err
    code, out, err = cli("ticket", NODE, *asked, "--end", end, "--json", "--rules")
    assert code == 0, err
    ticket = json.loads(out)
    assert ticket["component"] == analyzed["isolated_component"] and ticket["fault"] == "nvswitch-shared"
    assert not json.loads(cli("analyze", "--node", NODE, *asked, "--json")[1])["fault_detected"]
    assert "nothing to repair" in " ".join(cli("ticket", NODE, *asked, "--rules")[1:])


def test_a_ticket_for_a_window_before_the_readings_says_its_health_is_unknown_as_analyze_does(
        tmp_path: Path, cli: Cli) -> None:
    """An --end before the node's first reading: `analyze` exits 3 saying where its readings run; `ticket` said
    "nothing to repair" (exit 1), an all-clear over a window that holds none of them."""
    from tests.tickets.test_node_switch_tickets import NODE, _readings

    first, second = _readings(tmp_path / "in", "hgx-h100-8gpu", "NVIDIA H100 80GB HBM3", dict.fromkeys(range(8)))
    store = str(tmp_path / "store")
    assert cli("ingest", str(first), str(second), "--store", store, "--node", NODE)[0] == 0
    asked = ["--store", store, "--platform", "hgx-h100-8gpu", "--end", "2026-01-01T00:00:00Z"]
    analyzed = cli("analyze", "--node", NODE, *asked)
    drafted = cli("ticket", NODE, *asked, "--rules")
    assert analyzed[0] == drafted[0] == 3
    said = [line for line in analyzed[2].splitlines() if "INCOMPLETE" in line]
    assert said and all(line in drafted[2] for line in said)
    assert "nothing to repair" not in drafted[2]


def test_the_xids_read_and_not_judged_are_said_by_the_ticket_as_analyze_says_them(tmp_path: Path, cli: Cli) -> None:
    """A contained memory error (94) and a non-fatal Xid 144 beside a fatal Xid 149: `analyze` said them, the
    ticket's warnings did not; and a log of the Xid 144 alone drafted nothing and said nothing of it."""
    log = FIXTURES / "real" / "kernel_xid14x_gpud_1.txt"
    code, out, _ = cli("analyze", "--node", "gb1", str(log))
    analyzed = [line.removeprefix("  warning: ") for line in out.splitlines() if line.startswith("  warning: Xid ")]
    assert len(analyzed) == 3 and code == 0, out  # 94, 144 and 145 (an error status NVIDIA's decode ignores)
    code, out, _ = cli("ticket", "--node", "gb1", str(log))
    assert code == 0 and all(f"- {note}" in out for note in analyzed), out
    alone = tmp_path / "kern.log"
    alone.write_text(log.read_text().splitlines()[5] + "\n")  # the Xid 144 line
    code, _, err = cli("ticket", "--node", "gb1", str(alone))
    assert code == 3 and f"gb1: {analyzed[1]}" in err, err
