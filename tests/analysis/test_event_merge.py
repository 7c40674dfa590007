"""An Xid the kernel log and DCGM both report counts once; lines of other GPUs, or that state another severity, are
other events, whichever files they come from (a node's logs ingested one file at a time lost a fatal Xid to a
non-fatal one of another GPU logged 20 s before it)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from diagnostics.analysis.event_merge import merge_sources
from diagnostics.tables import EVENTS

T = pd.Timestamp("2026-03-01T10:00:00Z")


def _events(*rows: dict[str, object]) -> pd.DataFrame:
    base = {"node_id": "gb1", "kind": "xid", "code": 145}
    return EVENTS.conform(pd.DataFrame([{**base, **r} for r in rows]))


def test_lines_of_two_buses_from_two_files_are_two_events() -> None:
    got = merge_sources(_events(
        {"timestamp": T, "pci_bus_id": "0018:03:00.0", "severity": "fatal", "subcode": "RLW_RXPIPE", "source": "a:1"},
        {"timestamp": T - pd.Timedelta(seconds=20), "pci_bus_id": "0018:01:00.0", "severity": "non-fatal",
         "subcode": "RLW_RXPIPE", "source": "b:1"}))
    assert sorted(got["pci_bus_id"]) == ["0018:01:00.0", "0018:03:00.0"]


def test_a_fatal_and_a_non_fatal_line_of_one_gpu_are_two_events() -> None:
    got = merge_sources(_events(
        {"timestamp": T, "gpu": 2, "severity": "fatal", "subcode": "RLW_TX", "source": "a:1"},
        {"timestamp": T + pd.Timedelta(minutes=1), "gpu": 2, "severity": "non-fatal", "subcode": "RLW_RXPIPE",
         "source": "b:7"}))
    assert sorted(got["severity"]) == ["fatal", "non-fatal"]


def test_the_kernel_line_is_kept_over_dcgms_count_of_the_same_xid() -> None:
    """DCGM's counter says only the code; the kernel line says whether it is fatal: the one kept, whichever came
    first."""
    for dcgm_first in (True, False):
        shift = pd.Timedelta(seconds=-30 if dcgm_first else 30)
        got = merge_sources(_events(
            {"timestamp": T + shift, "gpu": 2, "count": 1, "source": "dcgm.prom:3"},
            {"timestamp": T, "gpu": 2, "severity": "fatal", "subcode": "RLW_TX", "source": "kern.log:9"}))
        assert len(got) == 1 and got["severity"].tolist() == ["fatal"], (dcgm_first, got)


def test_one_gpus_xid_in_two_sources_still_counts_once() -> None:
    got = merge_sources(_events(
        {"timestamp": T, "gpu": 2, "count": 1, "source": "dcgm.prom:3"},
        {"timestamp": T + pd.Timedelta(minutes=2), "gpu": 2, "source": "kern.log:9"}))
    assert len(got) == 1



def test_one_xid_in_two_logs_and_dcgm_counts_once() -> None:
    """kern.log and syslog hold the same fatal line, DCGM counts it between them: one event, the stated line."""
    got = merge_sources(_events(
        {"timestamp": T, "gpu": 2, "severity": "fatal", "subcode": "RLW_TX", "source": "kern.log:9"},
        {"timestamp": T + pd.Timedelta(seconds=20), "gpu": 2, "count": 1, "source": "dcgm.prom:3"},
        {"timestamp": T + pd.Timedelta(seconds=40), "gpu": 2, "severity": "fatal", "subcode": "RLW_TX",
         "source": "syslog:12"}))
    assert len(got) == 1 and got["severity"].tolist() == ["fatal"], got


def test_two_xids_of_one_log_stay_two_beside_dcgms_count() -> None:
    """Two lines of one log are two events, whatever another source counted between them."""
    got = merge_sources(_events(
        {"timestamp": T, "gpu": 2, "source": "kern.log:9"},
        {"timestamp": T + pd.Timedelta(seconds=30), "gpu": 2, "count": 1, "source": "dcgm.prom:3"},
        {"timestamp": T + pd.Timedelta(seconds=60), "gpu": 2, "source": "kern.log:10"}))
    assert sorted(got["source"].astype(str)) == ["kern.log:10", "kern.log:9"], got

def test_a_fatal_xid_in_one_file_is_not_lost_to_another_files_line_of_another_gpu(tmp_path: Path) -> None:
    from diagnostics import Priority
    from diagnostics.service import Request, StoreSource, diagnose, files_source
    from diagnostics.store import open_store

    lines = {"x4.log": "[Sat Dec  5 11:59:30 2026] NVRM: Xid (PCI:0018:03:00): 145, RLW_RXPIPE Fatal XC0 i0 Link 13 "
                       "(0x0409a0c2 0x00000008)",
             "x5.log": "[Sat Dec  5 11:59:10 2026] NVRM: Xid (PCI:0018:01:00): 145, RLW_RXPIPE Nonfatal XC0 i0 "
                       "Link 13 (0x0409a0c2 0x00000008)"}
    paths = []
    for name, line in lines.items():
        paths.append(tmp_path / name)
        paths[-1].write_text(line + "\n")
    files, _, _ = files_source(paths, node="gb1")
    store = open_store(tmp_path / "store")
    for path in paths:  # one file at a time, as a node's logs are collected
        store.ingest([path], node_id="gb1")
    for door, source in (("files", files), ("store", StoreSource(tmp_path / "store"))):
        d = diagnose(source, Request(node="gb1")).diagnosis
        assert d.fault_detected and d.ticket_priority is Priority.HIGH, (door, d.ticket_priority)
        rules = sorted(c.rule for f in d.findings for c in f.crossed)
        assert rules == ["xid_nvlink"], (door, rules)  # the other GPU's status 0x8: NVIDIA's decode says IGNORE
        assert any(w.startswith("Xid 145 (NVLINK_RLW_ERROR, RLW_RXPIPE non-fatal) on the GPU at PCI 0018:01:00.0")
                   for w in d.warnings), (door, d.warnings)


def test_a_counters_first_reading_covers_the_kernel_line_before_it() -> None:
    """The counter's first reading counts every Xid since the exporter started: a line two hours before it is one
    of them, not another; the line, which says more, is kept."""
    for line_at in (T, T + pd.Timedelta(hours=2, minutes=5)):  # or minutes after it: the two clocks may differ
        got = merge_sources(_events(
            {"timestamp": line_at, "gpu": 1, "code": 79, "source": "kern.log:4"},
            {"timestamp": T + pd.Timedelta(hours=2), "gpu": 1, "code": 79, "count": 1, "since_start": True,
             "source": "dcgm.prom:872"}))
        assert got["source"].astype(str).tolist() == ["kern.log:4"], (line_at, got)


def test_a_first_reading_of_two_beside_one_line_still_counts_two() -> None:
    """The line is one of the two the counter read: the other stays, counted by the reading."""
    got = merge_sources(_events(
        {"timestamp": T, "gpu": 1, "code": 79, "source": "kern.log:4"},
        {"timestamp": T + pd.Timedelta(hours=2), "gpu": 1, "code": 79, "count": 2, "since_start": True,
         "source": "dcgm.prom:872"}))
    assert got["count"].astype("Float64").fillna(1).sum() == 2, got
    assert "kern.log:4" in got["source"].astype(str).tolist()


def test_a_first_reading_covers_no_more_lines_than_it_counted() -> None:
    """Three lines before a first reading of one: the reading stands for one of them, the other two are more."""
    got = merge_sources(_events(
        *({"timestamp": T + pd.Timedelta(minutes=m), "gpu": 1, "code": 79, "source": f"kern.log:{m}"}
          for m in (0, 1, 2)),
        {"timestamp": T + pd.Timedelta(hours=2), "gpu": 1, "code": 79, "count": 1, "since_start": True,
         "source": "dcgm.prom:872"}))
    assert got["count"].astype("Float64").fillna(1).sum() == 3, got


def test_a_later_increase_is_no_first_reading() -> None:
    """An increase between two readings counts Xids after the earlier one: a line two hours before it is another
    event (and a store written before the mark, whose events lack it, is read as before)."""
    for mark in ({"since_start": False}, {}):
        got = merge_sources(_events(
            {"timestamp": T, "gpu": 1, "code": 79, "source": "kern.log:4"},
            {"timestamp": T + pd.Timedelta(hours=2), "gpu": 1, "code": 79, "count": 1, "source": "dcgm.prom:9",
             **mark}).drop(columns=[] if mark else ["since_start"]))
        assert len(got) == 2, (mark, got)


def test_a_first_reading_of_another_gpu_or_code_covers_nothing() -> None:
    for other in ({"gpu": 2}, {"code": 48}):
        got = merge_sources(_events(
            {"timestamp": T, "gpu": 1, "code": 79, "source": "kern.log:4"},
            {"timestamp": T + pd.Timedelta(hours=2), "gpu": 1, "code": 79, "count": 1, "since_start": True,
             "source": "dcgm.prom:872", **other}))
        assert len(got) == 2, (other, got)


def test_an_increase_of_two_beside_one_line_is_that_line_counting_two() -> None:
    """DCGM counted two Xid 74 within minutes, the kernel logged one of them: two events, said by the line, which
    states its severity, whichever came first."""
    for shift in (pd.Timedelta(minutes=-3), pd.Timedelta(minutes=3)):
        got = merge_sources(_events(
            {"timestamp": T, "gpu": 2, "code": 74, "severity": "fatal", "text": "NVLink error", "source": "kern.log:9"},
            {"timestamp": T + shift, "gpu": 2, "code": 74, "count": 2, "source": "dcgm.prom:3"}))
        assert got["source"].astype(str).tolist() == ["kern.log:9"], (shift, got)
        assert got["count"].tolist() == [2] and got["severity"].tolist() == ["fatal"], (shift, got)
        assert got["text"].tolist() == ["NVLink error"]


def test_an_increase_takes_as_many_lines_as_it_counted() -> None:
    """Two lines of one log and DCGM's increase of two between them: the two events the lines are; an increase of
    one between them is one of them."""
    for increase in (2, 1):
        got = merge_sources(_events(
            {"timestamp": T, "gpu": 2, "code": 74, "source": "kern.log:9"},
            {"timestamp": T + pd.Timedelta(seconds=30), "gpu": 2, "code": 74, "count": increase,
             "source": "dcgm.prom:3"},
            {"timestamp": T + pd.Timedelta(seconds=60), "gpu": 2, "code": 74, "source": "kern.log:10"}))
        assert sorted(got["source"].astype(str)) == ["kern.log:10", "kern.log:9"], (increase, got)
        assert got["count"].astype("Float64").fillna(1).sum() == 2, (increase, got)


def test_copies_of_one_increase_count_what_the_source_that_counted_most_says() -> None:
    got = merge_sources(_events(
        {"timestamp": T, "gpu": 2, "code": 74, "count": 1, "source": "a.prom:3"},
        {"timestamp": T + pd.Timedelta(seconds=30), "gpu": 2, "code": 74, "count": 2, "source": "b.prom:3"}))
    assert got["count"].tolist() == [2], got


def test_the_kernels_and_fabric_managers_line_of_one_sxid_in_one_journal_count_once() -> None:
    """Two reporters of one fault, though one file holds both: as when the two logs are ingested apart."""
    from diagnostics.ingest.base import Source
    from diagnostics.ingest.kernel_log import READER

    journal = ("2025-02-27T15:10:02+0000 host kernel: nvidia-nvswitch3: SXid (PCI:0000:86:00.0): 12028, Non-fatal, "
               "Link 61 egress non-posted PRIV error\n"
               "2025-02-27T15:10:02+0000 host nv-fabricmanager[6313]: detected NVSwitch non-fatal error 12028 on fid 0 "
               "on NVSwitch pci bus id 00000000:86:00.0 physical id 3 port 61\n")
    events = READER.read(Source.from_text(journal, "journal.txt")).tables["events"]
    assert len(events) == 2
    assert len(merge_sources(events)) == 1
    manager = journal.splitlines(keepends=True)[1]
    twice = READER.read(Source.from_text(manager + manager.replace(":02+", ":09+"), "journal.txt")).tables["events"]
    assert len(merge_sources(twice)) == 2  # Fabric Manager's line twice: the fault twice


def test_an_sxid_burst_on_several_ports_counts_once_a_port_from_both_reporters() -> None:
    """The kernel prints a burst first, Fabric Manager a second later: each port's two lines are one event, never one
    port's kernel line with another port's Fabric Manager line (a port counted twice, another lost)."""
    kernel = [{"timestamp": T, "kind": "sxid", "code": 20034, "link": p, "pci_bus_id": "0000:86:00.0",
               "nvswitch": "3", "severity": "fatal", "text": f"Fatal, Link {p} LTSSM Fault Up", "source": f"j:{i}"}
              for i, p in enumerate((33, 34, 35), start=1)]
    manager = [{"timestamp": T + pd.Timedelta(seconds=1), "kind": "sxid", "code": 20034, "link": p,
                "pci_bus_id": "0000:86:00.0", "nvswitch": "3", "severity": "fatal", "source": f"j:{i}",
                "text": f"detected NVSwitch fatal error 20034 on fid 0 on NVSwitch pci bus id 00000000:86:00.0 "
                        f"physical id 3 port {p}"} for i, p in enumerate((33, 34, 35), start=4)]
    got = merge_sources(_events(*kernel, *manager))
    assert sorted(got["link"].astype(int)) == [33, 34, 35]
