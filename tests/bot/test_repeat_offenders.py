"""Repeat offenders: a GPU's history follows its serial (or UUID) from node to node, read from `nvidia-smi -q`, the
kernel log's identity lines or an inventory; its third ticket says so and escalates to replacing the GPU's own
part, through the tracker, the Slack draft and filing, and the CLI."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest

from bot.cli import main
from bot.demo import bundled
from bot.nodes import TableNodeSource
from bot.settings import Settings
from bot.storage import open_db
from bot.transport.local import LocalSlack
from bot.transport.mock_slack import Message
from bot.workflow.history import part_history
from bot.workflow.tracker import SqliteTracker
from diagnostics.analysis.identity import gpu_identities
from diagnostics.ingest.detect import read
from diagnostics.service import TableSource
from diagnostics.tables import GPUS
from diagnostics.tickets import Hardware, RulesDrafter, escalate, hardware_of

from .helpers import OPS, buttons, local_bot, posted, summary_for

ROOT = Path(__file__).resolve().parents[2]
NODE = "hpc-gpu-node-12"
SERIAL = "1652221012345"
UUID = "GPU-5fc0bcec-c2e1-38dc-8994-2a9f9f3b709e"
# `nvidia-smi -q`'s head of one GPU's section, in the layout of the nvidia-smi manual's -q output
SMI_Q = """==============NVSMI LOG==============

Timestamp                                 : Mon Mar  2 10:00:00 2026
Driver Version                            : 550.90.07
CUDA Version                              : 12.4

Attached GPUs                             : 1
GPU 00000000:18:00.0
    Product Name                          : NVIDIA H100 80GB HBM3
    Serial Number                         : 1652221012345
    GPU UUID                              : GPU-5fc0bcec-c2e1-38dc-8994-2a9f9f3b709e
    PCI
        Bus Id                            : 00000000:18:00.0
        Replays Since Reset               : 0
        Replay Number Rollovers           : 0
"""


def _file(tracker: SqliteTracker, node: str, component: str, gpu: Hardware | None, *, repaired: bool = False,
          held: bool = True) -> str:
    result = tracker.file(node_id=node, component=component, slug=component.lower().replace(" ", "-"),
                          title=f"{node}: {component}", body="", priority="high", actor="UALICE", evidence=[],
                          hardware=gpu)
    ticket = result.ticket.id
    if repaired:
        tracker.report_repair(ticket, actor="tech", note="reseated")
        if held:
            tracker.close(ticket, actor="fabricbot", evidence=["24 h clean"])
        else:
            tracker.reopen(ticket, actor="fabricbot", evidence=["errors back"])
    return ticket


def test_the_serial_is_read_from_nvidia_smi_q_and_the_kernel_logs_identity_lines(tmp_path: Path) -> None:
    smi = tmp_path / "smi-q.txt"
    smi.write_text(SMI_Q, encoding="utf-8")
    gpus = read(smi, node_id="n1")["gpus"]
    assert (gpus["serial"].tolist(), gpus["uuid"].tolist()) == ([SERIAL], [UUID])
    # a real log (NVIDIA/open-gpu-kernel-modules issue 446): the serial line comes after an SXid of another device
    events = read(ROOT / "fixtures/real/sxid_24007_xid_a100_1.txt", node_id="n1")["events"]
    mine = events[events["pci_bus_id"] == "0000:48:00.0"]
    assert len(mine) == 3 and set(mine["gpu_serial"]) == {"1563521020414"} and set(mine["gpu_uuid"]) == {UUID}
    assert events.loc[events["pci_bus_id"] == "0000:aa:00.0", "gpu_serial"].isna().all()  # the switch is no GPU
    na = tmp_path / "kern.log"
    na.write_text("NVRM: GPU at PCI:0000:06:00: GPU-97363126-e553-8dd4-9ad8-56844b42694b\n"
                  "NVRM: GPU Board Serial Number: [N/A]\n"
                  "NVRM: Xid (PCI:0000:06:00): 74, pid=1, name=python, NVLink: fatal error detected on link 3\n",
                  encoding="utf-8")
    (row,) = read(na, node_id="n1")["events"].to_dict("records")
    assert row["gpu_uuid"].endswith("694b") and pd.isna(row["gpu_serial"])  # `[N/A]` is no serial


def test_identities_are_placed_on_an_index_by_bus_and_uuid_the_gpu_table_first() -> None:
    gpus = GPUS.conform(pd.DataFrame({"node_id": ["n1", "n1"], "gpu": [0, 2], "pci_bus_id": ["0000:18:00.0",
                                      "0000:48:00.0"], "uuid": ["GPU-a", UUID], "source": ["smi", "smi"]}))
    events = pd.DataFrame({"node_id": ["n1", "n1", "n2"], "gpu": [pd.NA] * 3,
                           "pci_bus_id": ["0000:48:00.0", "0000:18:00.0", "0000:48:00.0"],
                           "gpu_uuid": [UUID, pd.NA, "GPU-other"], "gpu_serial": ["1563521020414", "777", "999"],
                           "timestamp": pd.to_datetime(["2026-03-01T10:00Z", "2026-03-01T11:00Z",
                                                        "2026-03-01T10:00Z"])})
    ids, alone = gpu_identities({"gpus": gpus, "events": events}, "n1")
    assert (ids[2].serial, ids[2].uuid, ids[0].serial, ids[0].uuid) == ("1563521020414", UUID, "777", "GPU-a")
    assert "kernel log" in ids[2].read_from and alone == {} and gpu_identities({"gpus": gpus}, "n2") == ({}, {})


@pytest.fixture(scope="module")
def fleet() -> TableNodeSource:
    """The bundled fleet with `nvidia-smi -q`'s word on hpc-gpu-node-12's GPU 2: its serial and UUID."""
    tables = bundled()[0].source
    assert isinstance(tables, TableSource)
    gpus = GPUS.conform(pd.DataFrame({"node_id": [NODE], "gpu": [2], "uuid": [UUID], "serial": [SERIAL],
                                      "source": ["nvidia-smi -q"]}))
    return TableNodeSource({**tables.tables, "gpus": gpus}, tables.platforms())


def test_the_third_ticket_on_a_gpu_moved_between_nodes_escalates_to_replacing_it(fleet: TableNodeSource) -> None:
    tracker = SqliteTracker(open_db(None))
    gpu = Hardware(serial=SERIAL)
    first = _file(tracker, "hpc-gpu-node-07", "GPU 5 NVLink 3", gpu, repaired=True)  # before the GPU moved
    second = _file(tracker, "hpc-gpu-node-07", "GPU 5 PCIe", gpu, repaired=True, held=False)
    _file(tracker, "hpc-gpu-node-07", "GPU 1 NVLink 2", Hardware(serial="other"))  # another GPU: not counted
    diagnosis = fleet.diagnose(NODE)
    ticket = RulesDrafter().draft(diagnosis)
    assert hardware_of(ticket.identity) == Hardware(serial=SERIAL, uuid=UUID)  # from the node's readings
    history = part_history(tracker, Hardware(serial=SERIAL), node_id=NODE, slug="x")
    assert [t.id for t in history.tickets] == [first, second] and history.repeat_offender
    assert history.tickets[0].outcome == "closed, the repair held"
    assert history.tickets[1].outcome == "repair did not hold: reopened"
    escalated = escalate(ticket, history, diagnosis)
    assert escalated.replacement_part is not None and escalated.replacement_part.id == "h100-nvl-card"
    assert escalated.next_part == ticket.replacement_part  # what the plan named first comes after
    text = escalated.to_markdown()
    assert f"3rd ticket on GPU serial {SERIAL} ({first}, {second} before it): replace the H100 NVL card" in text
    assert "## The GPU's history" in text and f"{first} (" in text and "repairs: 2; failed again after" in text
    on_second = history.model_copy(update={"tickets": history.tickets[:1]})
    assert escalate(ticket, on_second, diagnosis).escalation is None  # the second ticket: history, no escalation
    filed = tracker.file(node_id=NODE, component=ticket.component, slug="gpu2", title="t", body="", priority="high",
                         actor="UBOB", evidence=[], hardware=gpu)
    assert filed.repeat_offender == f"3rd ticket on GPU serial {SERIAL}" and filed.ticket.escalated
    assert "3rd ticket on GPU serial 1652221012345: replace the GPU" in filed.ticket.title
    assert filed.ticket.linked_to == second


def test_a_recurrence_on_a_new_gpu_in_the_same_slot_looks_past_the_gpu() -> None:
    tracker = SqliteTracker(open_db(None))
    old = _file(tracker, NODE, "GPU 2 NVLink 1", Hardware(serial="111"), repaired=True)
    again = tracker.file(node_id=NODE, component="GPU 2 NVLink 1", slug="gpu-2-nvlink-1", title="t", body="",
                         priority="high", actor="UBOB", evidence=[], hardware=Hardware(serial="222"))
    assert again.recurrence_of == old and again.repeat_offender is None
    assert "on a new GPU: the fault stayed with the slot" in again.ticket.title
    assert "look past the GPU" in tracker.history(again.ticket.id)[0]["note"]


def _draft(local: LocalSlack, summary: Message) -> Message:
    before = len(posted(local.slack, thread=summary.ts))
    (button,) = buttons(summary)
    assert local.injector.action(button, user="UALICE", channel=OPS, message_ts=summary.ts).status == 200
    assert local.slack.wait_for(lambda s: len(posted(s, thread=summary.ts)) > before
                                and posted(s, thread=summary.ts)[before].edits > 0, timeout=60)
    return copy.deepcopy(posted(local.slack, thread=summary.ts)[before])


@pytest.fixture
def local(fleet: TableNodeSource) -> Iterator[LocalSlack]:
    with local_bot(Settings(), source=fleet) as bot:
        assert bot.app is not None
        bot.app.services.renderer = None
        yield bot


def test_the_draft_says_so_and_filing_it_escalates_in_slack(local: LocalSlack) -> None:
    tracker = local.tracker
    assert isinstance(tracker, SqliteTracker)
    gpu = Hardware(serial=SERIAL)
    _file(tracker, "hpc-gpu-node-07", "GPU 5 NVLink 3", gpu, repaired=True)
    _file(tracker, "hpc-gpu-node-07", "GPU 5 NVLink 9", gpu, repaired=True)
    preview = _draft(local, summary_for(local, NODE))
    assert "Repeat offender" in preview.shown_blocks and f"3rd ticket on GPU serial {SERIAL}" in preview.shown_blocks
    (file_button,) = [b for b in buttons(preview) if b["action_id"] == "file_ticket"]
    assert local.injector.action(file_button, user="UBOB", channel=OPS, message_ts=preview.ts,
                                 thread_ts=preview.thread_ts).status == 200
    assert local.slack.wait_for(lambda s: "repeat offender" in (s.find(preview.ts) or preview).text)
    filed = tracker.tickets()[-1]
    assert filed.escalated and filed.gpu_serial == SERIAL and filed.node_id == NODE
    entry = [e for e in local.audit.entries("filing")][-1]
    assert entry["detail"]["repeat_offender"] == f"3rd ticket on GPU serial {SERIAL}"


def test_the_cli_prints_a_gpus_history_by_serial_or_uuid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tracker = SqliteTracker(open_db(tmp_path), clock=lambda: "2026-03-01T10:00:00+00:00")
    gpu = Hardware(serial=SERIAL, uuid=UUID)
    first = _file(tracker, "n1", "GPU 2 NVLink 1", gpu, repaired=True)
    tracker.clock = lambda: (datetime(2026, 3, 1, 10, tzinfo=UTC) + timedelta(days=9)).isoformat()
    _file(tracker, "n2", "GPU 2 PCIe", gpu)
    for key in (SERIAL, UUID):
        assert main(["tickets", "--store", str(tmp_path), "history", key]) == 0
        out = capsys.readouterr().out
        assert "2 tickets (a repeat offender: its next ticket replaces it)" in out
        assert f"{first} (2026-03-01): GPU 2 NVLink 1 on n1" in out and "time between tickets: 9 days" in out
        assert f"failed again after 1 of them (9 days after {first}'s repair)" in out
    assert main(["tickets", "--store", str(tmp_path), "history", "nothing-like-it"]) == 0
    assert "0 tickets" in capsys.readouterr().out


def test_an_inventory_in_the_store_gives_serials_a_later_scrape_keeps_and_the_driver(tmp_path: Path) -> None:
    """An inventory's GPU serials go to the store's GPU table and stay when a dcgm-exporter scrape that names only
    UUIDs comes after (a real one: DCGM issue 149); the diagnosis names both; the inventory's driver is the node's."""
    from diagnostics.service import StoreSource, diagnose
    from diagnostics.service.request import Request
    from diagnostics.store import open_store

    (tmp_path / "inventory.csv").write_text("node_id,gpu,serial,platform,driver_version\n"
                                            "axa,0,1563521020414,dgx-a100-8gpu,535.161.08\n", encoding="utf-8")
    store = open_store(tmp_path / "st")
    store.ingest([tmp_path / "inventory.csv"])
    store.ingest([ROOT / "fixtures/real/dcgm_metrics_a100_1.txt"], at=datetime(2026, 3, 2, 10, tzinfo=UTC))
    ids = diagnose(StoreSource(tmp_path / "st"), Request(node="axa")).diagnosis.gpu_ids
    assert ids[0].serial == "1563521020414" and ids[0].uuid == "GPU-715daa1d-db6f-9e69-ab48-190158bd5360"
    assert ids[1].serial is None and ids[1].uuid == "GPU-02348a17-a825-300c-0336-48e33d0dadb2"
    assert store.db["nodes"].get("axa")["driver_version"] == "535.161.08"


def test_the_ticket_command_finds_the_history_through_an_inventory_and_the_stores_tracker(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The command line's door: the serial from `--inventory`, the earlier tickets from `--store`'s tracker; the
    same escalation the Slack draft shows."""
    tracker = SqliteTracker(open_db(tmp_path / "st"))
    gpu = Hardware(serial=SERIAL)
    _file(tracker, "hpc-gpu-node-07", "GPU 5 NVLink 3", gpu, repaired=True)
    _file(tracker, "hpc-gpu-node-07", "GPU 5 NVLink 9", gpu, repaired=True)
    (tmp_path / "inv.csv").write_text(f"node_id,gpu,serial\n{NODE},2,{SERIAL}\n", encoding="utf-8")
    assert main(["ticket", str(ROOT / "fixtures/seed_examples.json"), "--inventory", str(tmp_path / "inv.csv"),
                 "--store", str(tmp_path / "st"), "--rules"]) == 0
    out = capsys.readouterr().out
    assert f"3rd ticket on GPU serial {SERIAL}" in out and "## Repeat offender" in out
    assert main(["ticket", str(ROOT / "fixtures/seed_examples.json"), "--rules"]) == 0  # no tracker: no history
    assert "Repeat offender" not in capsys.readouterr().out
