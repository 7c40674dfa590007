"""Kernel log: NVRM Xid (with caused-by chains), NVSwitch SXid and PCIe AER lines."""

from __future__ import annotations

import pandas as pd
import pytest

from diagnostics.errors import InputError
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
    syslog = events["timestamp"].iloc[3]  # no year: the latest that puts it no later than now
    assert f"{syslog:%m-%d %H:%M:%S}" == "11-20 03:16:12" and syslog <= pd.Timestamp.now(tz="UTC")
    assert events["timestamp"].iloc[4:].isna().all()  # dmesg counts from boot
    assert set(events["node_id"]) == {"gpu-node-07"}
    assert events["caused_by"].iloc[5] == 149
    assert warning_lines(result) == [9, 10, 12]  # yearless syslog, uptime stamps, the cut Xid line


def test_unrelated_kernel_lines_are_counted_once() -> None:
    text = "kernel: usb 1-1: new device\nkernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n" \
           "kernel: eth0: link up\n"
    result = read_text(text)
    assert result["events"]["code"].tolist() == [79]
    assert warning_lines(result) == [1] and "2 lines hold no Xid" in result.warnings[0].message


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


_OFF_BUS = "NVRM: Xid (PCI:0000:b9:00): 79, pid=1234, name=python, GPU has fallen off the bus."


@pytest.mark.parametrize(("prefix", "at"), [
    ("Tue 2024-03-12 10:00:00 UTC gpu-3 kernel: ", "2024-03-12 10:00:00"),  # journalctl -o short-full
    ("Tue 2024-03-12 10:00:00.250000 UTC gpu-3 kernel: ", "2024-03-12 10:00:00.25"),  # with --utc -o short-full
    ("Tue 2024-03-12 11:00:00 CET gpu-3 kernel: ", "2024-03-12 10:00:00"),  # printed in the host's zone
    ("Tue 2024-07-16 12:00:00 Europe/Berlin gpu-3 kernel: ", "2024-07-16 10:00:00"),  # summer time
    ("1710237600.123456 gpu-3 kernel: ", "2024-03-12 10:00:00.123456"),  # journalctl -o short-unix
    ("Wed 2026-05-13 11:00:00 +03 gpu-3 kernel: ", "2026-05-13 08:00:00"),  # a zone with no abbreviation
    ("Wed 2026-05-13 11:00:00 -0530 gpu-3 kernel: ", "2026-05-13 16:30:00"),
    ("Wed 2026-05-13 20:00:00 ChST gpu-3 kernel: ", "2026-05-13 10:00:00"),  # Guam: the table's mixed-case name
])
def test_journal_short_full_and_unix_prefixes_give_the_time_and_host(prefix: str, at: str) -> None:
    """They were a prefix 'none of the forms this reader knows': an Xid of 2024 was judged as read now."""
    result = read_text(prefix + _OFF_BUS + "\n")
    [event] = result["events"].to_dict("records")
    assert event["code"] == 79 and event["timestamp"] == pd.Timestamp(at, tz="UTC")
    assert event["node_id"] == "gpu-3" and not result.warnings, result.warnings


def test_a_short_full_zone_no_lookup_knows_is_read_as_utc_and_said() -> None:
    """CEST is in the zone table `date` lines read too; IST stands for three zones (Ireland, Israel, India): not
    guessed, by either reader."""
    result = read_text("Tue 2024-07-16 12:00:00 CEST gpu-3 kernel: " + _OFF_BUS + "\n")
    assert result["events"]["timestamp"].iloc[0] == pd.Timestamp("2024-07-16 10:00:00", tz="UTC")
    assert not result.warnings, result.warnings
    result = read_text("Tue 2024-07-16 12:00:00 IST gpu-3 kernel: " + _OFF_BUS + "\n")
    assert result["events"]["timestamp"].iloc[0] == pd.Timestamp("2024-07-16 12:00:00", tz="UTC")
    [warning] = result.warnings
    assert warning.message.startswith("the zone 'IST' stands for several zones")


def test_real_sxid_lines_are_one_event_each_with_severity_switch_and_link() -> None:
    result = read(REAL / "sxid_22013_h100_1.txt")
    events = result["events"]
    assert set(events["kind"]) == {"sxid"} and set(events["code"]) == {22013}
    assert events["link"].tolist()[1:] == [44, 45, 46] and pd.isna(events["link"].iloc[0])
    assert events["severity"].tolist()[1:] == ["non-fatal"] * 3 and pd.isna(events["severity"].iloc[0])
    assert set(events["nvswitch"]) == {"3"} and set(events["pci_bus_id"]) == {"0000:04:00.0"}
    link44 = events.iloc[1]
    assert link44["source"].endswith(":5")
    assert "Severity 0 Engine instance 44" in link44["text"] and "Data {0x0000002c" in link44["text"]
    assert "Data {" not in events.iloc[3]["text"]  # Link 46's following lines are past the cut
    # the first SXid line is the Data line of an event whose first line is above the excerpt: said, not dropped
    assert any(w.line == 4 and "first line (severity and link) is not in the input" in w.message
               for w in result.warnings)


def test_real_fatal_sxid_without_its_first_line_and_talos_prefixes() -> None:
    result = read(REAL / "sxid_24007_xid_a100_1.txt")
    events = result["events"]
    assert events["kind"].tolist() == ["sxid", "xid", "xid", "xid"] and events["code"].tolist() == [24007, 62, 45, 45]
    sxid = events.iloc[0]
    assert (sxid["severity"], sxid["nvswitch"], sxid["pci_bus_id"]) == ("fatal", "1", "0000:aa:00.0")  # Severity 1
    assert pd.isna(sxid["link"]) and "Data {0x10000000" in sxid["text"]
    assert sxid["timestamp"] == pd.Timestamp("2026-04-22T21:25:20.466440686Z")
    assert events["pci_bus_id"].tolist()[1:] == ["0000:48:00.0"] * 3
    # `NVRM: GPU at PCI:0000:48:00: GPU-5fc0bcec-...` (line 4) names the GPU of the Xids after it
    assert events["gpu_uuid"].tolist()[1:] == ["GPU-5fc0bcec-c2e1-38dc-8994-2a9f9f3b709e"] * 3
    assert pd.isna(events["gpu_uuid"].iloc[0])  # the SXid is a switch's
    assert warning_lines(result) == [5]  # the SXid cut above
    # `NVRM: GPU Board Serial Number: ...` (line 6, after the SXid of another device) is that GPU's serial
    assert events["gpu_serial"].tolist()[1:] == ["1563521020414"] * 3 and pd.isna(events["gpu_serial"].iloc[0])


def test_an_sxid_and_its_continuations_interleaved_with_other_lines() -> None:
    text = ("[ 3367.373226] nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 24007, Fatal, Link 12 sourcetrack timeout "
            "error (First)\n"
            "[ 3367.373230] NVRM: GPU at PCI:0000:18:00: GPU-aaaa\n"
            "[ 3367.373238] nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 24007, Severity 1 Engine instance 12 "
            "Sub-engine instance 00\n"
            "[ 3367.373240] nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 20009, Non-fatal, Link 30 RX Short Error Rate\n"
            "[ 3367.373245] nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 24007, Data {0x00000001, 0x00000001, "
            "0x00000000}\n"
            "[ 3367.373250] nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 24007, Data {0x00000002}\n"
            "[ 3367.373300] nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 10001, Non-fatal, PRI WRITE SYSB error, "
            "instance=3\n")
    events = read_text(text)["events"]
    assert events["code"].tolist() == [24007, 20009, 10001]
    assert events["severity"].tolist() == ["fatal", "non-fatal", "non-fatal"]
    assert events["nvswitch"].tolist() == ["0", "2", "0"]
    assert events["link"].tolist()[:2] == [12, 30] and pd.isna(events["link"].iloc[2])
    first = events.iloc[0]["text"]
    assert first.startswith("nvidia-nvswitch0: Fatal, Link 12 sourcetrack timeout error (First); Severity 1")
    assert first.endswith("Data {0x00000001, 0x00000001, 0x00000000}; Data {0x00000002}")


def test_dmesg_decode_iso_prefix_and_nvlink5_xid_severity() -> None:
    text = ("kern  :err   : 2025-01-25T10:34:54,859532+00:00 nvidia-nvswitch1: SXid (PCI:0000:84:00.0): 12028, "
            "Non-fatal, Link 7 egress non-posted PRIV error (First)\n"
            "NVRM: Xid (PCI:0000:00:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 00 (0x026001c6 0x00000000)\n"
            "NVRM: Xid (PCI:0018:01:00): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2 0x00000008)\n"
            "NVRM: Xid (PCI:0000:1b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n")
    events = read_text(text)["events"]
    assert events["timestamp"].iloc[0] == pd.Timestamp("2025-01-25 10:34:54.859532", tz="UTC")
    assert events["severity"].tolist()[:3] == ["non-fatal", "fatal", "non-fatal"]
    assert pd.isna(events["severity"].iloc[3])  # Xid 79's line states no severity: the catalog's is not put here
    assert events["link"].tolist()[:3] == [7, 0, 13]
    assert events["pci_bus_id"].tolist()[2] == "0018:01:00.0"


def test_a_log_of_several_hosts_puts_each_event_on_its_own_host() -> None:
    """A log server's syslog (or journalctl of several hosts): the host each line's prefix names is the node of its
    events, and what one host's driver said of a bus (its GPU's UUID) is not another host's GPU on that bus."""
    uuid = "GPU-5fc0bcec-c2e1-38dc-8994-2a9f9f3b709e"
    text = "\n".join([
        f"2026-04-23T10:00:00+0000 gpu-node-01 kernel: NVRM: GPU at PCI:0000:48:00: {uuid}",
        "2026-04-23T10:01:02+0000 gpu-node-01 kernel: NVRM: Xid (PCI:0000:48:00): 74, pid=1, name=python, NVLink: "
        "fatal error detected on link 8(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)",
        "2026-04-23T10:02:02+0000 gpu-node-02 kernel: NVRM: Xid (PCI:0000:48:00): 79, pid=1, name=python, GPU has "
        "fallen off the bus.",
        "2026-04-23T10:03:02+0000 gpu-node-01 kernel: NVRM: Xid (PCI:0000:48:00): 45, pid=1, name=python, channel 1",
    ])
    events = read_text(text, name="syslog")["events"]
    assert events["node_id"].astype(str).tolist() == ["gpu-node-01", "gpu-node-02", "gpu-node-01"]
    assert events["code"].tolist() == [74, 79, 45]
    assert events["gpu_uuid"].iloc[0] == uuid and events["gpu_uuid"].iloc[2] == uuid
    assert pd.isna(events["gpu_uuid"].iloc[1])  # gpu-node-02's GPU on 0000:48:00 is another GPU


def test_each_event_carries_its_hosts_driver_version_from_the_drivers_banner() -> None:
    """The banner the driver prints as it loads, in its open modules' form and the older one (Bumblebee-Project/
    Bumblebee#645): an event carries the newest banner's version before it, else that of one within a minute after it
    (a driver reloaded after its GPU fell off prints it then, as the NVSentinel sample shows); each host its own."""
    text = "\n".join([
        "2026-04-23T10:00:00+0000 gpu-node-01 kernel: NVRM: Xid (PCI:0000:48:00): 79, pid=1, name=python, GPU has "
        "fallen off the bus.",
        "2026-04-23T10:00:05+0000 gpu-node-01 kernel: NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  "
        "570.158.01  Release Build  (dvs-builder@U22-I3-B10-02-5)  Mon Jun  2 13:13:04 UTC 2025",
        "2026-04-23T10:01:02+0000 gpu-node-02 kernel: NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.129.03  Thu "
        "Oct 19 18:56:32 UTC 2023",
        "2026-04-23T10:02:02+0000 gpu-node-02 kernel: NVRM: Xid (PCI:0000:48:00): 45, pid=1, name=python, channel 1",
        "2026-04-23T10:03:02+0000 gpu-node-01 kernel: NVRM: loading NVIDIA UNIX Open Kernel Module for aarch64  "
        "580.65.06  Release Build  (dvs-builder@U22-I3-B10-02-5)  Mon Jun  2 13:13:04 UTC 2025",
        "2026-04-23T10:04:02+0000 gpu-node-01 kernel: NVRM: Xid (PCI:0000:48:00): 45, pid=1, name=python, channel 1",
        "2026-04-23T10:05:02+0000 gpu-node-03 kernel: NVRM: Xid (PCI:0000:48:00): 45, pid=1, name=python, channel 1",
    ])
    result = read_text(text, name="syslog")
    events = result["events"]
    assert events["node_id"].astype(str).tolist() == ["gpu-node-01", "gpu-node-02", "gpu-node-01", "gpu-node-03"]
    assert events["driver_version"].tolist()[:3] == ["570.158.01", "535.129.03", "580.65.06"]
    assert pd.isna(events["driver_version"].iloc[3])  # gpu-node-03's driver printed no banner here
    assert not warning_lines(result)  # the banners are read, not skipped


@pytest.mark.parametrize(("word", "changed"), [("loading", "loadinf"), ("NVRM:", "NVRL:"), ("NVRM:", "NVRM;"),
                                               ("UNIX", "UNIY"), ("Module", "Modulf")])
def test_a_banner_with_a_byte_changed_is_said_not_passed_over(word: str, changed: str) -> None:
    """A flipped byte in the banner's words (a long fuzz run found one in the NVSentinel sample) left the line an
    unrelated one: the off-the-bus event lost its driver version without a word. It is said at the banner's line."""
    lines = (REAL / "kernel_off_bus_no_xid_nvsentinel_1.txt").read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if "NVRM: loading NVIDIA UNIX" in line)
    whole = read_text("\n".join(lines), name="dmesg.log")
    assert whole["events"]["driver_version"].tolist() == ["570.158.01"]
    assert not [w for w in whole.warnings if "banner" in w.message]
    lines[at] = lines[at].replace(word, changed, 1)
    result = read_text("\n".join(lines), name="dmesg.log")
    assert pd.isna(result["events"]["driver_version"].iloc[0])
    said = [w for w in result.warnings if w.line == at + 1]
    assert len(said) == 1 and "driver's banner" in said[0].message and "not taken" in said[0].message


@pytest.mark.parametrize("log", [
    ["2025-03-01T09:00:05+00:00 gpu07 kernel: NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 "
     "01:15:15 UTC 2023",
     "2025-03-02T09:00:00+00:00 gpu07 kernel: Linux version 5.15.0-105-generic (buildd@lcy02-amd64-007)",
     "2025-03-02T09:00:02+00:00 gpu07 kernel: NVRM: Xid (PCI:0000:b3:00): 79, pid=1, name=python, GPU has fallen off "
     "the bus."],
    ["[ 7000.000000] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023",
     "[    2.000000] NVRM: Xid (PCI:0000:b3:00): 79, pid=1, name=python, GPU has fallen off the bus."],
    ["2025-03-01T09:00:00+00:00 gpu07 kernel: NVRM: Xid (PCI:0000:b3:00): 79, pid=1, name=python, GPU has fallen off "
     "the bus.",
     "2025-03-01T11:00:00+00:00 gpu07 kernel: NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 "
     "22:23:56 UTC 2024"],
], ids=["a reboot's first line", "dmesg's clock starting again", "a banner hours later"])
def test_an_event_takes_no_driver_version_across_a_reboot_or_from_a_later_boot(log: list[str]) -> None:
    """Events of a boot whose driver printed no banner yet (the last one was the boot before, or the next one comes
    hours later, after a reboot into a driver upgraded as the repair): their driver is not known."""
    events = read_text("\n".join(log), name="syslog")["events"]
    assert events["code"].tolist() == [79] and pd.isna(events["driver_version"].iloc[0])


def test_a_node_given_holds_every_line_whatever_the_prefixes_say() -> None:
    text = ("2026-04-23T10:01:02+0000 gpu-node-01 kernel: NVRM: Xid (PCI:0000:48:00): 79, pid=1, name=python, GPU has "
            "fallen off the bus.\n2026-04-23T10:02:02+0000 gpu-node-02 kernel: NVRM: Xid (PCI:0000:4e:00): 79, pid=1, "
            "name=python, GPU has fallen off the bus.\n")
    result = READER.read(Source.from_text(text, name="syslog"), node_id="asked")
    assert set(result["events"]["node_id"].astype(str)) == {"asked"}


def test_pdsh_output_names_each_line_s_host() -> None:
    """`pdsh -w gpu-node-[01-02] dmesg -T` (clush alike) leads each line with `host: `: each event is its host's, its
    dmesg time read after it; the driver's own `NVRM: ` is no host."""
    text = ("gpu-node-01: [Thu Apr 23 10:01:02 2026] NVRM: Xid (PCI:0000:48:00): 74, pid=1, name=python, NVLink: fatal "
            "error detected on link 8(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)\n"
            "gpu-node-02: [ 1843.308145] NVRM: Xid (PCI:0000:4e:00): 79, pid=1, name=python, GPU has fallen off the "
            "bus.\n"
            "gpu-node-02: NVRM: Xid (PCI:0000:4e:00): 45, pid=1, name=python, channel 1\n")
    result = read_text(text, name="pdsh.out")
    events = result["events"]
    assert events["node_id"].astype(str).tolist() == ["gpu-node-01", "gpu-node-02", "gpu-node-02"]
    assert events["code"].tolist() == [74, 79, 45] and events["link"].iloc[0] == 8
    assert events["timestamp"].iloc[0] == pd.Timestamp("2026-04-23T10:01:02Z") and pd.isna(events["timestamp"].iloc[1])
    assert not any("prefix none of the forms" in w.message for w in result.warnings)


def test_prompts_of_two_hosts_give_each_host_its_events() -> None:
    text = ("root@gpu-node-01:~# dmesg | grep Xid\n"
            "[ 1843.308145] NVRM: Xid (PCI:0000:4e:00): 79, pid=1, name=python, GPU has fallen off the bus.\n"
            "root@gpu-node-02:~# dmesg | grep Xid\n"
            "[  943.000000] NVRM: Xid (PCI:0000:4e:00): 45, pid=1, name=python, channel 1\n"
            "$ dmesg | grep Xid\n"
            "[  944.000000] NVRM: Xid (PCI:0000:4e:00): 45, pid=1, name=python, channel 2\n")
    events = read_text(text, name="dmesg.txt")["events"]
    assert list(zip(events["node_id"].astype(str), events["code"], strict=True)) == [
        ("gpu-node-01", 79), ("gpu-node-02", 45), ("gpu-node-02", 45)]


def test_a_dshbak_block_of_a_range_is_each_hosts_log() -> None:
    """`pdsh -w node[01-02] 'dmesg | grep Xid' | dshbak -c`: the hosts whose lines were the same share a block."""
    text = ("----------------\nnode[01-02]\n----------------\n[ 1843.308145] NVRM: Xid (PCI:0000:4e:00): 79, pid=1, "
            "name=python, GPU has fallen off the bus.\n")
    events = read_text(text)["events"]
    assert sorted(zip(events["node_id"], events["code"], strict=True)) == [("node01", 79), ("node02", 79)]


@pytest.mark.parametrize(("word", "month"), [("Apr", 4), ("april", 4), ("jun", 6), ("Sept.", 9), ("okt", 10),
                                             ("maj", 5), ("Dez", 12), ("avr.", 4), ("desember", 12), ("11月", 11),
                                             ("Bad", None), ("Foo", None)])
def test_a_syslog_date_reads_its_month_in_any_case_and_in_other_locales_words(word: str, month: int | None) -> None:
    """journalctl prints the month as the locale has it: `jun 09 19:26:17 archlinux kernel:` (a desktop's log,
    NVIDIA/open-gpu-kernel-modules#876), `april 19 ...` (Swedish), `11月 15 ...` (zh_CN, NVIDIA/gpu-operator#610).
    Read as a word no locale's month is, the line kept no time and its Xid 79 was judged as new."""
    text = (f"-- Journal begins at Sat 2025-01-04 10:00:00 UTC, ends at Sat 2025-12-20 10:00:00 UTC. --\n"
            f"{word} 19 09:27:03 desk kernel: NVRM: Xid (PCI:0000:01:00): 79, pid=71039, name=Media, GPU has fallen "
            "off the bus.\n")
    result = READER.read(Source.from_text(text, name="journal"), node_id="desk")
    stamp = result["events"]["timestamp"].iloc[0]
    if month is None:
        assert pd.isna(stamp) and any("log prefix none of the forms" in w.message for w in result.warnings)
    else:
        assert f"{stamp:%Y-%m-%d %H:%M:%S}" == f"2025-{month:02d}-19 09:27:03"


@pytest.mark.parametrize("word", ["jun", "juni", "6月"])
def test_a_pdsh_line_of_a_locales_month_keeps_its_host_and_time(word: str) -> None:
    """pdsh puts `host: ` before each line; a line whose date starts with a month word in another case or locale was
    not taken for a host's line, so its Xid 79 had neither host nor time."""
    text = ("node01: -- Journal begins at Sat 2025-01-04 10:00:00 UTC, ends at Sat 2025-12-20 10:00:00 UTC. --\n"
            f"node01: {word} 09 09:27:03 node01 kernel: NVRM: Xid (PCI:0000:01:00): 79, pid=1, name=x, GPU has "
            "fallen off the bus.\n")
    events = READER.read(Source.from_text(text, name="pdsh")).tables["events"]
    assert events["node_id"].tolist() == ["node01"]
    assert f"{events['timestamp'].iloc[0]:%Y-%m-%d %H:%M:%S}" == "2025-06-09 09:27:03"


KMSG = ("6,3964,206764307,-;nvidia-nvswitch2: open (major=510)\n"
        "6,3973,227986636,-;IPv6: ADDRCONF(NETDEV_CHANGE): eth0: link becomes ready\n")


def test_a_kmsg_records_xid_is_read_and_its_time_since_boot_said() -> None:
    """`cat /dev/kmsg` (GPUd's kmsg watcher) puts `priority,sequence,microseconds,flags;` before each message."""
    result = read_text(KMSG + "4,3990,250000000,-;NVRM: Xid (PCI:0000:4e:00): 79, pid=1234, name=python, "
                              "GPU has fallen off the bus.\n")
    events = result["events"]
    assert events[["code", "pci_bus_id"]].values.tolist() == [[79, "0000:4e:00.0"]]
    assert events["timestamp"].isna().all()
    assert not any("none of the forms this reader knows" in w.message for w in result.warnings)
    assert any("microseconds since boot" in w.message for w in result.warnings)


@pytest.mark.parametrize("log", [KMSG, "[    5.123456] nvidia-nvswitch2: open (major=510)\n"
                                       "[    6.000000] IPv6: ADDRCONF(NETDEV_CHANGE): eth0: link becomes ready\n",
                                 "Dec  7 10:00:01 gpu-07 kernel: nvidia-nvswitch2: open (major=510)\n"
                                 "Dec  7 10:00:02 gpu-07 kernel: IPv6: eth0: link becomes ready\n"])
def test_a_kernel_log_with_no_driver_line_is_read_as_one_and_says_so(log: str) -> None:
    """A clean kernel log was refused as a format nothing reads; it is a kernel log in which nothing was logged."""
    result = read_text(log)
    assert result.empty
    assert any("hold no Xid, SXid, AER or off-the-bus message" in w.message for w in result.warnings)


def test_lines_that_only_look_timed_are_no_kernel_log() -> None:
    with pytest.raises(InputError, match="unrecognized format"):
        read_text("2026-12-07T10:00:00Z step=1 loss=2.3\n2026-12-07T10:00:01Z step=2 loss=2.2\n")


def test_a_gpu_the_kernel_cannot_recover_from_a_fatal_pcie_error_is_off_the_bus_once() -> None:
    """`dmesg -H` (`[  +0.000844]` before each line) of a fatal AER at the GPU's root port: the PCIe core says twice
    that it can't recover the nvidia device; it is one event of the GPU off the bus, its audio function's line none."""
    result = read(REAL / "kernel_aer_cant_recover_reltime_returnn_1.txt")
    lost = result["events"][result["events"]["kind"] == "xid"]
    assert lost[["code", "pci_bus_id"]].values.tolist() == [[79, "0000:03:00.0"]]
    assert "can't recover (no error_detected callback)" in lost["text"].item()
    assert not any("none of the forms this reader knows" in w.message for w in result.warnings)


def test_dmesg_h_minute_lines_are_a_prefix_and_its_times_are_said_as_its_own() -> None:
    """`dmesg -H` states each minute's first line (`[Jan21 10:23]`) and the others' seconds since the line before:
    both are prefixes read (no time), said as dmesg -H's, not as plain dmesg's seconds since boot."""
    result = read_text("[Jan21 10:23] nvidia 0000:03:00.0: AER: can't recover (no error_detected callback)\n"
                       "[  +0.000921] nvidia 0000:03:00.0: AER: can't recover (no error_detected callback)\n")
    assert result["events"][["code", "pci_bus_id"]].values.tolist() == [[79, "0000:03:00.0"]]
    said = [w.message for w in result.warnings]
    assert not any("none of the forms this reader knows" in w for w in said)
    assert any(w.startswith("`dmesg -H` times are seconds since the line before") for w in said)
    plain = read_text("[ 5.123456] NVRM: Xid (PCI:0000:4e:00): 79, pid=1, GPU has fallen off the bus.\n")
    assert [w.message for w in plain.warnings if "seconds since" in w.message] == [
        "dmesg times are seconds since boot, no time of day: these events carry none of their own"]
