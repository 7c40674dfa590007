"""Xids an application causes (13, 31, 43, 68, 109): said as the job's to debug, with the GPUs and processes the
lines name, never judged as the fabric's; alike through the file and the store they were ingested into. A GPU's own
fatal Xids (an uncontained memory error, a GSP error) are said with the Xid catalog's action, not judged either."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from diagnostics.analysis.applications import application_notes
from diagnostics.config.catalogs import load_xid_catalog
from diagnostics.enums import CodeSeverity
from diagnostics.model import Diagnosis
from diagnostics.service import Request, StoreSource, diagnose, files_source
from diagnostics.store import open_store
from tests.analysis.helpers import events
from tests.conftest import FIXTURES

GPUD = FIXTURES / "real" / "kernel_xid13_31_109_gpud_1.txt"  # dmesg --ctime lines of a PyTorch job's faults
END = datetime(2024, 8, 31, 8, 53, 22, tzinfo=UTC)


def _notes(d: Diagnosis) -> list[str]:
    return [w for w in d.warnings if "an application causes" in w]


def _doors(path: Path, tmp: Path, window: timedelta) -> tuple[Diagnosis, Diagnosis]:
    files, node, _ = files_source([path], node="h100-a")
    open_store(tmp / "store").ingest([path], node_id="h100-a")
    request = Request(node=node, end=END, window=window)
    return diagnose(files, request).diagnosis, diagnose(StoreSource(tmp / "store"), request).diagnosis


def test_the_catalog_holds_the_device_plugins_application_codes_as_info_with_their_source() -> None:
    catalog = load_xid_catalog()
    assert {c for c, e in catalog.entries.items() if e.application} == {13, 31, 43, 68, 109}
    for code in (13, 31, 43, 68, 109):
        entry = catalog.entry(code)
        assert entry.severity is CodeSeverity.INFO and "k8s-device-plugin" in entry.source
        assert entry.assumed and "not checked" in entry.note  # the Xid catalog's own row was not read
    assert not any(catalog.entry(c).application for c in (45, 74, 79, 94, 149))


def test_a_day_of_application_xids_is_said_as_the_jobs_alike_through_file_and_store(tmp_path: Path) -> None:
    files, stored = _doors(GPUD, tmp_path, timedelta(hours=48))
    assert _notes(files) == _notes(stored)
    [note] = _notes(files)
    assert note.startswith("Xid 13 (Graphics Engine Exception) on the GPU at PCI 0000:cb:00.0 (3 events); "
                           "Xid 31 (GPU memory page fault) on the GPU at PCI 0000:cb:00.0; "
                           "Xid 109 (Context Switch Timeout Error) on the GPU at PCI 0000:cb:00.0 (2 events)"), note
    assert "pt_main_thread (pid 626486)" in note and "<unknown>" not in note
    assert note.endswith("debug the job, not the fabric")
    for d in (files, stored):
        assert not d.fault_detected and not d.findings and str(d.ticket_priority) == "low"


def test_only_the_windows_application_xids_are_said(tmp_path: Path) -> None:
    files, stored = _doors(GPUD, tmp_path, timedelta(hours=1))
    assert _notes(files) == _notes(stored)
    [note] = _notes(files)
    assert note.startswith("Xid 109 (Context Switch Timeout Error) on the GPU at PCI 0000:cb:00.0, from "
                           "pt_main_thread (pid 1158578):"), note


@pytest.mark.parametrize(("code", "said"), [(31, True), (43, True), (95, True), (74, False), (79, False),
                                            (45, False), (94, False)])
def test_a_gpu_the_node_table_knows_by_bus_is_named_by_index(code: int, said: bool) -> None:
    at = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    rows = events([{"timestamp": at, "kind": "xid", "code": code, "pci_bus_id": "0000:1B:00.0",
                    "text": f"Xid (PCI:0000:1b:00): {code}, pid=42, name=train.py, Ch 00000008"}])
    end = int(at.timestamp() * 1e9)
    notes = application_notes(rows, end - 3600 * 10**9, end, {"n1": {"0000:1b:00.0": 3}})
    if not said:
        assert notes == {}
        return
    [note] = notes["n1"]
    assert note.startswith(f"Xid {code} (") and " on GPU 3, from train.py (pid 42): " in note, note


def test_a_gpus_own_fatal_xid_is_said_with_the_catalogs_action_alike_through_file_and_store(tmp_path: Path) -> None:
    """An uncontained memory error (95) and a GSP error (120) are the GPU's, not its links': the answer was "low,
    collect link counters" with not a word of them, as if the log held nothing."""
    log = tmp_path / "kern.log"
    log.write_text("2024-08-31T08:40:10+0000 h100-a kernel: NVRM: Xid (PCI:0000:3b:00): 95, pid=4242, name=python3, "
                   "Uncontained: FBHUB. RST: Yes, D-RST: No\n"
                   "2024-08-31T08:41:00+0000 h100-a kernel: NVRM: Xid (PCI:0000:3b:00): 120, GSP task exception: "
                   "load access page fault (cause:0xd) @ pc:0x13636b2, partition:2#0, task:3, gfid: 0\n"
                   "2024-08-31T08:42:00+0000 h100-a kernel: NVRM: Xid (PCI:0000:3b:00): 45, pid=4242, name=python3, "
                   "Ch 00000008 caused by previous Xid 95\n")
    files, stored = _doors(log, tmp_path, timedelta(hours=1))
    said = [[w for w in d.warnings if "the GPU itself" in w] for d in (files, stored)]
    assert said[0] == said[1]
    [note] = said[0]
    catalog = load_xid_catalog()
    assert note.startswith("Xid 95 (Uncontained memory error) on the GPU at PCI 0000:3b:00.0; Xid 120 (GSP Error) "
                           "on the GPU at PCI 0000:3b:00.0, from python3 (pid 4242): "), note
    assert catalog.entry(95).action in note and catalog.entry(120).action in note and "Xid 45" not in note
    for d in (files, stored):  # not the fabric's: no link is judged on it
        assert not d.fault_detected and not d.findings and not _notes(d)


def test_each_xid_no_rule_counts_is_said_with_its_decode_alike_through_file_and_store(tmp_path: Path) -> None:
    """A non-fatal Xid 144 (SAW_MVB: NVIDIA's decode says IGNORE) and a contained memory error (94) were read and
    stored but never said: the answer named only the Xid 149 and 145 findings, as if the other two lines were not
    there."""
    log = FIXTURES / "real" / "kernel_xid14x_gpud_1.txt"
    files, node, _ = files_source([log], node="gb1")
    open_store(tmp_path / "store").ingest([log], node_id="gb1", at=END)  # no time: the store is told when
    request = Request(node=node, end=END, window=timedelta(hours=1))
    answers = [diagnose(files, request).diagnosis, diagnose(StoreSource(tmp_path / "store"), request).diagnosis]
    said = [[w for w in d.warnings if w.startswith("Xid ")] for d in answers]
    assert said[0] == said[1]
    [saw, rxpipe, contained] = sorted(said[0])
    assert saw.startswith("Xid 144 (NVLINK_SAW_ERROR, SAW_MVB non-fatal) on the GPU at PCI 0000:01:00.0: ") and \
        "IGNORE" in saw and "not judged" in saw, saw
    assert contained.startswith("Xid 94 (ROBUST_CHANNEL_CONTAINED_ERROR) on the GPU at PCI 0000:9b:00.0: ") and \
        "not a fabric fault" in contained and load_xid_catalog().entry(94).action in contained, contained
    assert rxpipe.startswith("Xid 145 (NVLINK_RLW_ERROR, RLW_RXPIPE non-fatal) ") and "IGNORE" in rxpipe, rxpipe
    for d in answers:  # the judged ones are findings, not said again
        judged = {c for f in d.findings for x in f.crossed for c in x.codes}
        assert judged == {149} and not any(w.startswith("Xid 149") for w in d.warnings)


def test_an_nvlink5_xid_on_an_older_platform_is_said_alike_through_the_file_and_the_store(tmp_path: Path) -> None:
    """Xid 144-150 are NVLink5's (Blackwell reports them in place of Xid 74): met on a node named a DGX-1 V100 the
    answer asks whether the platform is right, or the log another node's, and judges the lines as read; on a GB200
    compute tray, or with no platform named, nothing is said of it."""
    log = FIXTURES / "real" / "kernel_xid14x_gpud_1.txt"  # no time: the store is told when it was taken
    open_store(tmp_path / "store").ingest([log], node_id="n1", at=END)
    files, node, _ = files_source([log], node="n1")
    said: dict[str | None, list[str]] = {}
    for platform in ("dgx1-v100-8gpu", "gb200-nvl72-compute-tray", None):
        request = Request(node=node, end=END, platform=platform)
        answers = [diagnose(files, request).diagnosis, diagnose(StoreSource(tmp_path / "store"), request).diagnosis]
        notes = [[w for w in d.warnings if "GPUs (Blackwell and later)" in w] for d in answers]
        assert notes[0] == notes[1], platform
        assert answers[0].ticket_priority == answers[1].ticket_priority
        said[platform] = notes[0]
    assert said["dgx1-v100-8gpu"] == ["Xid 144, 145, 149 are logged by NVLink 5 GPUs (Blackwell and later), and n1's "
                                      "platform has NVLink 2: is the platform right, or the log another node's? "
                                      "Judged as read"]
    assert said["gb200-nvl72-compute-tray"] == said[None] == []


def test_an_nvlink5_xid_known_only_from_the_xid_45_it_caused_is_asked_of_an_older_platform_too() -> None:
    """A log cut to its Xid 45 lines (`... caused by previous Xid 149`) holds no Xid 149 line of its own: the
    findings name the 145s and 149 from those lines, and a platform of NVLink 4 named for it is asked about too."""
    log = FIXTURES / "real" / "xid_145_149_log_1.txt"
    files, node, _ = files_source([log], node="n1")
    for platform, said in (("hgx-h100-8gpu", ["Xid 145, 149 are logged by NVLink 5 GPUs (Blackwell and later), and "
                                              "n1's platform has NVLink 4: is the platform right, or the log another "
                                              "node's? Judged as read"]), ("hgx-b200-8gpu", [])):
        diagnosis = diagnose(files, Request(node=node, end=END, platform=platform)).diagnosis
        assert [w for w in diagnosis.warnings if "GPUs (Blackwell and later)" in w] == said, platform
