"""Kernel log: NVRM Xid (with caused-by chains), NVSwitch SXid and PCIe AER lines."""

from __future__ import annotations

import pandas as pd

from diagnostics.ingest.base import Source
from diagnostics.ingest.kernel_log import READER
from tests.ingest.helpers import REAL, SAMPLES, read, read_text, warning_lines


def test_real_xid_145_149_chains() -> None:
    result = read(REAL / "xid_145_149_log_1.txt")
    events = result["events"]
    assert len(events) == 8 and set(events["kind"]) == {"xid"} and set(events["code"]) == {45}
    assert events["caused_by"].tolist()[:7] == [149, 145, 145, 145, 149, 145, 145]
    assert pd.isna(events["caused_by"].iloc[7])
    assert sorted(set(events["pci_bus_id"])) == ["0000:97:00.0", "0000:ba:00.0", "0000:dc:00.0", "0000:ed:00.0"]
    by_bus = events.groupby("pci_bus_id")["caused_by"].agg(lambda s: set(s.dropna()))
    assert by_bus["0000:dc:00.0"] == {149} and by_bus["0000:ed:00.0"] == {145}
    assert result.warnings == []


def test_prefixes_sxid_aer_and_the_cut_line() -> None:
    result = read(SAMPLES / "kernel_sxid_aer.log")
    events = result["events"]
    assert events["kind"].tolist() == ["xid", "sxid", "aer", "xid", "xid", "xid"]
    assert events["code"].tolist()[:2] == [74, 12028] and events["code"].tolist()[3:] == [79, 149, 45]
    assert events["link"].tolist()[:2] == [5, 33] and events["link"].iloc[4] == 7
    assert "Data {" in events["text"].iloc[1]  # the SXid data line joins its event
    aer = events.iloc[2]
    assert aer["pci_bus_id"] == "0000:19:00.0" and "BadTLP" in aer["text"] and "Data Link Layer" in aer["text"]
    assert events["timestamp"].iloc[0] == pd.Timestamp("2026-11-20 03:14:07", tz="UTC")
    assert events["timestamp"].iloc[3:].isna().all()  # syslog has no year, dmesg counts from boot
    assert set(events["node_id"]) == {"gpu-node-07"}
    assert events["caused_by"].iloc[5] == 149
    assert warning_lines(result) == [9, 10, 12]  # yearless syslog, uptime stamps, the cut Xid line


def test_unrelated_kernel_lines_are_counted_once() -> None:
    text = "kernel: usb 1-1: new device\nkernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n" \
           "kernel: eth0: link up\n"
    result = read_text(text)
    assert result["events"]["code"].tolist() == [79]
    assert warning_lines(result) == [1] and "2 line(s)" in result.warnings[0].message


def test_another_format_and_empty() -> None:
    other = READER.read(Source.from_path(REAL / "nvlink_e_h100_1.txt"))
    assert other.rows["events"] == 0 and other.warnings
    assert READER.read(Source.from_text("")).empty


def test_dmesg_iso_and_journal_precise_prefixes() -> None:
    text = ("2026-11-29T16:00:01,123456+00:00 NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n"
            "Nov 29 16:00:02.000001 node-9 kernel: nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Fatal, "
            "Link 30 LTSSM Fault Up\n")
    result = read_text(text)
    events = result["events"]
    assert events["code"].tolist() == [79, 20034] and events["link"].iloc[1] == 30
    assert events["timestamp"].iloc[0] == pd.Timestamp("2026-11-29 16:00:01.123456", tz="UTC")
    assert set(events["node_id"]) == {"node-9"}
