"""lspci -vvv link capability vs status, and sysfs AER counter dumps."""

from __future__ import annotations

import pandas as pd
import pytest

from diagnostics.ingest.base import Source
from diagnostics.ingest.lspci import READER
from tests.ingest.helpers import REAL, SAMPLES, read, read_text, warning_lines


def test_link_cap_vs_status_for_gpus_switches_nics() -> None:
    result = read(SAMPLES / "lspci_vvv_h100.txt")
    rows = result["link_samples"].set_index("pci_bus_id")
    assert dict(rows["device_kind"]) == {
        "0000:18:00.0": "pcie_switch", "0000:19:00.0": "gpu", "0000:1b:00.0": "gpu",
        "0000:1a:00.0": "nic", "0000:05:00.0": "nvswitch",
    }  # the USB controller is not followed
    narrow = rows.loc["0000:1b:00.0"]
    assert (narrow["gen"], narrow["max_gen"], narrow["width"], narrow["max_width"]) == (4, 5, 8, 16)
    assert narrow["link_state"] == "degraded"
    assert rows.loc["0000:19:00.0", "link_state"] == "up"
    assert result.warnings == []


def test_aer_sysfs_counters() -> None:
    rows = read(SAMPLES / "aer_sysfs_dump.txt")["link_samples"].set_index("pci_bus_id")
    gpu = rows.loc["0000:19:00.0"]
    assert (gpu["aer_correctable"], gpu["bad_tlp"], gpu["bad_dllp"]) == (16, 12, 3)
    assert rows.loc["0000:1b:00.0", "aer_fatal"] == 0


def test_aer_counters_without_a_device_are_not_read() -> None:
    result = read_text("BadTLP 4\nTOTAL_ERR_COR 4\n", fmt="lspci")
    assert result["link_samples"].empty and warning_lines(result) == [1]


def test_cut_after_lnkcap() -> None:
    text = "\n".join((SAMPLES / "lspci_vvv_h100.txt").read_text().splitlines()[:20])
    result = read_text(text)
    assert "0000:1b:00.0" not in set(result["link_samples"]["pci_bus_id"])
    assert warning_lines(result) == [20] and "cut off" in result.warnings[0].message


def test_garbage_between_devices() -> None:
    lines = (SAMPLES / "lspci_vvv_h100.txt").read_text().splitlines()
    lines.insert(10, "#### garbage ####")
    result = read_text("\n".join(lines))
    assert len(result["link_samples"]) == 5 and warning_lines(result) == [11]


def test_another_format_and_empty() -> None:
    assert READER.read(Source.from_path(SAMPLES / "steps.csv")).rows["link_samples"] == 0
    assert READER.read(Source.from_text("")).empty


def test_real_lane_error_status_names_the_lane() -> None:
    result = read(REAL / "lspci_vv_laneerr_rk3588_1.txt")  # four-space indented, as the article shows it
    rows = result["link_samples"]
    assert set(rows["pci_bus_id"]) == {"0001:10:00.0"}  # the SATA controller is not a link fabricbot follows
    port = rows[rows["lane"].isna()].iloc[0]
    assert (port["device_kind"], port["gen"], port["width"], port["max_width"]) == ("pcie_switch", 3, 2, 2)
    assert port["link_state"] == "up" and port["lane_error"]
    lane = rows[rows["lane"].notna()]
    assert lane["lane"].tolist() == [1] and lane["lane_error"].tolist() == [True]
    assert lane["source"].iloc[0].endswith(":70") and pd.isna(lane["width"].iloc[0])
    assert result.warnings == []


GPU = """{bus} 3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev a1)
	Capabilities: [68] Express (v2) Endpoint, MSI 00
		LnkCap:	Port #0, Speed 32GT/s, Width x16, ASPM not supported
		LnkSta:	Speed {speed}GT/s, Width x{width}
{tail}"""


def test_lanes_come_only_from_lane_error_status() -> None:
    secondary = "\tCapabilities: [200 v1] Secondary PCI Express\n\t\tLnkCtl3: LnkEquIntrruptEn- PerformEqu-\n"
    text = "".join([
        GPU.format(bus="0000:19:00.0", speed=16, width=8, tail=secondary + "\t\tLaneErrStat: LaneErr at lane: 8 9\n"),
        GPU.format(bus="0000:1b:00.0", speed=32, width=16, tail=secondary + "\t\tLaneErrStat: 0\n"),
        GPU.format(bus="0000:5d:00.0", speed=16, width=8, tail=""),  # downtrained: how many lanes, not which
    ])
    rows = read_text(text, fmt="lspci")["link_samples"]
    links = rows[rows["lane"].isna()].set_index("pci_bus_id")
    assert links.loc["0000:19:00.0", "width"] == 8 and links.loc["0000:19:00.0", "max_width"] == 16
    assert links.loc["0000:19:00.0", "link_state"] == "degraded" and links.loc["0000:19:00.0", "lane_error"]
    assert not links.loc["0000:1b:00.0", "lane_error"] and links.loc["0000:1b:00.0", "link_state"] == "up"
    assert pd.isna(links.loc["0000:5d:00.0", "lane_error"]) and links.loc["0000:5d:00.0", "link_state"] == "degraded"
    lanes = rows[rows["lane"].notna()]
    assert lanes[["pci_bus_id", "lane"]].values.tolist() == [["0000:19:00.0", 8], ["0000:19:00.0", 9]]
    assert set(lanes["device_kind"]) == {"gpu"} and lanes["lane_error"].all()


def test_no_lane_is_made_up_from_a_downtrain() -> None:
    rows = read(SAMPLES / "lspci_vvv_h100.txt")["link_samples"]
    assert rows["lane"].isna().all() and rows["lane_error"].isna().all()


def test_the_port_above_a_gpu_is_its_upstream_end_with_its_status_bits() -> None:
    rows = read(SAMPLES / "lspci_vvv_lane_h100.txt")["link_samples"]
    ends = rows[rows["lane"].isna()].set_index(["pci_bus_id", rows[rows["lane"].isna()]["end"].astype("string")
                                                .fillna("gpu")])
    port = ends.loc[("0000:19:00.0", "upstream")]  # the bridge whose secondary bus is 19, read as the GPU's far end
    assert (port["peer"], port["device_kind"], port["replay_timeout"], port["rx_err"]) == \
        ("0000:18:00.0", "pcie_switch", 1.0, 0.0)
    gpu = ends.loc[("0000:19:00.0", "gpu")]
    assert (gpu["rx_err"], gpu["bad_dllp"], gpu["bad_tlp"], gpu["replay_timeout"]) == (1.0, 1.0, 0.0, 0.0)
    lane = rows[rows["lane"].notna()]
    assert lane[["pci_bus_id", "lane"]].values.tolist() == [["0000:19:00.0", 6]] and lane["end"].isna().all()


def test_each_dated_listing_of_a_file_is_a_reading_of_its_own() -> None:
    """`date; lspci -vvv` twice in one file: two readings, each at its time with its own ports joined, not the second
    listing's values written over the first's (a lane status read clear and then set is how one is dated)."""
    listing = (SAMPLES / "lspci_vvv_lane_h100.txt").read_text()
    clear = listing.replace("LaneErrStat: LaneErr at lane: 6", "LaneErrStat: 0", 1)
    result = read_text(f"Sun Mar  1 11:00:00 UTC 2026\n{clear}\nSun Mar  1 12:00:00 UTC 2026\n{listing}")
    rows = result["link_samples"]
    once = read_text(listing)["link_samples"]
    assert len(rows) == 2 * len(once) - 1  # the lane row only in the second
    gpu = rows[(rows["pci_bus_id"] == "0000:19:00.0") & rows["lane"].isna() & rows["end"].isna()]
    assert [(t.hour, flag) for t, flag in zip(gpu["timestamp"], gpu["lane_error"], strict=True)] == \
        [(11, False), (12, True)]
    ports = rows[rows["end"] == "upstream"]
    assert ports.groupby(ports["timestamp"].dt.hour)["peer"].apply(sorted).to_dict() == \
        {11: ["0000:18:00.0", "0000:1a:00.0"], 12: ["0000:18:00.0", "0000:1a:00.0"]}
    lane = rows[rows["lane"].notna()]
    assert [(t.hour, n) for t, n in zip(lane["timestamp"], lane["lane"], strict=True)] == [(12, 6)]
    assert result.warnings == []


def test_a_sysfs_count_is_kept_over_the_status_bit() -> None:
    text = ((SAMPLES / "aer_sysfs_dump.txt").read_text() + "\n" + (SAMPLES / "lspci_vvv_lane_h100.txt").read_text())
    gpu = read_text(text)["link_samples"]
    gpu = gpu[(gpu["pci_bus_id"] == "0000:19:00.0") & gpu["lane"].isna() & gpu["end"].isna()]
    assert gpu["bad_tlp"].max() == 12 and gpu["rx_err"].max() == 0  # the counts, not CESta's bits


def test_real_root_port_status_bits() -> None:
    rows = read(REAL / "lspci_vv_laneerr_rk3588_1.txt")["link_samples"]
    port = rows[rows["lane"].isna() & (rows["pci_bus_id"] == "0001:10:00.0")].iloc[0]
    # CESta: RxErr+ BadTLP- BadDLLP+ Rollover- Timeout+ on the root port that reports lane 1 in error
    assert (port["rx_err"], port["bad_tlp"], port["bad_dllp"], port["aer_rollover"], port["replay_timeout"]) == \
        (1.0, 0.0, 1.0, 0.0, 1.0)


def test_real_gpu_lane_error_and_status_bits_as_printed() -> None:
    text = (SAMPLES / "lspci_vvv_laneerr_firepro_real.txt").read_text(encoding="utf-8")  # real, but no NVIDIA device
    amd = read_text(text, fmt="lspci")
    assert amd["link_samples"].empty  # an AMD display device is not a link fabricbot follows, and it says so
    assert [w.message for w in amd.warnings] == [
        "0000:0a:00.0 reports lane 6 in error, but it is no NVIDIA GPU, NVSwitch, PCIe switch or NIC: its link is "
        "not followed"]
    two = read_text(text.replace("LaneErr at lane: 6", "LaneErr at lane: 6 7"), fmt="lspci")  # a list, worded so
    assert [w.message for w in two.warnings] == [
        "0000:0a:00.0 reports lanes 6 7 in error, but it is no NVIDIA GPU, NVSwitch, PCIe switch or NIC: its link is "
        "not followed"]
    # the same lines under an NVIDIA device header (the only line changed): the lane and the bits are read as printed
    nvidia = text.replace("VGA compatible controller [0300]: Advanced Micro Devices, Inc. [AMD/ATI] Cape Verde GL "
                          "[FirePro W4100] [1002:682c]", "3D controller [0302]: NVIDIA Corporation GH100 [10de:2330]")
    rows = read_text(nvidia, fmt="lspci")["link_samples"]
    device = rows[rows["lane"].isna()].iloc[0]
    assert (device["width"], device["max_width"], device["lane_error"]) == (16, 16, True)
    assert (device["bad_tlp"], device["rx_err"], device["bad_dllp"], device["replay_timeout"]) == (1.0, 0.0, 0.0, 0.0)
    assert rows.loc[rows["lane"].notna(), "lane"].tolist() == [6]


@pytest.mark.parametrize(("old", "new"), [
    ("0000:18:00.0 PCI bridge:", "0000:18:00.0 PCI bridfe:"),  # the port above the GPU
    ("0000:19:00.0 3D controller:", "0000:19:00.0 3D controllfr:"),
    ("0000:19:00.0 3D controller: NVIDIA", "0000:19:00.0 3D controller: NVIDHA"),
])
def test_a_header_one_letter_from_a_followed_device_is_said_and_read_as_that_device(old: str, new: str) -> None:
    text = (SAMPLES / "lspci_vvv_lane_h100.txt").read_text()
    line = next(i for i, row in enumerate(text.splitlines(), 1) if row.startswith(old))
    result, whole = read_text(text.replace(old, new, 1)), read_text(text)
    word = new.split(": ")[-1] if ": " in new else new[13:-1]  # the damaged vendor word, or the class
    assert warning_lines(result) == [line] and f"{word!r} in {old[:12]}'s header is one letter from" in \
        result.warnings[0].message
    assert result["link_samples"].equals(whole["link_samples"])  # nothing lost: the port's and GPU's rows as before


def test_class_codes_as_lspci_nn_prints_them_read_as_without() -> None:
    text = (SAMPLES / "lspci_vvv_lane_h100.txt").read_text()
    coded = text.replace("PCI bridge:", "PCI bridge [0604]:").replace("3D controller:", "3D controller [0302]:")
    assert coded != text
    result = read_text(coded)
    assert not result.warnings
    assert result["link_samples"].equals(read_text(text)["link_samples"])


def test_a_lnksta_without_its_lnkcap_is_said_and_still_read() -> None:
    lines = (SAMPLES / "lspci_vvv_h100.txt").read_text().splitlines()
    nic = next(i for i, line in enumerate(lines) if line.startswith("0000:1a:00.0 "))
    cap = next(i for i in range(nic, len(lines)) if "LnkCap:" in lines[i])
    result = read_text("\n".join(lines[:cap] + lines[cap + 1:]) + "\n")
    assert warning_lines(result) == [cap + 1]  # the LnkSta line, now where the LnkCap was
    assert "0000:1a:00.0: LnkSta without a LnkCap above it" in result.warnings[0].message
    row = result["link_samples"].query("pci_bus_id == '0000:1a:00.0'")
    assert row["width"].tolist() == [16] and row["max_width"].isna().all()


@pytest.mark.parametrize(("old", "new", "gpu"), [
    ("0000:1b:00.0 3D controller", "0100:1b:00.0 3D controller", "0100:1b:00.0"),  # the GPU's domain damaged
    ("0000:1a:00.0 PCI bridge", "0001:1a:00.0 PCI bridge", "0000:1b:00.0"),  # the port's
])
def test_a_gpu_and_the_port_above_its_bus_in_two_domains_is_said(old: str, new: str, gpu: str) -> None:
    text = (SAMPLES / "lspci_vvv_lane_h100.txt").read_text()
    assert old in text
    result = read_text(text.replace(old, new, 1))
    line = next(i for i, row in enumerate(text.splitlines(), 1) if row.startswith("0000:1b:00.0"))
    assert warning_lines(result) == [line] and f"{gpu} is in PCI domain {gpu[:4]}, and the bridge above bus 1b" in \
        result.warnings[0].message
    assert result["link_samples"].query(f"pci_bus_id == '{gpu}'")["end"].isna().all()  # not joined to the port


def test_prompts_of_two_hosts_give_each_host_its_own_devices() -> None:
    listing = (SAMPLES / "lspci_vvv_h100.txt").read_text()
    result = read_text(f"root@nodeA:~# lspci -vvv\n{listing}\nroot@nodeB:~# lspci -vvv\n{listing}\n")
    links = result["link_samples"]
    narrow = links[links["pci_bus_id"] == "0000:1b:00.0"]
    assert narrow["node_id"].astype(str).tolist() == ["nodeA", "nodeB"]
    assert set(narrow["link_state"]) == {"degraded"}


# `lspci -vvv` of an A100 as hwloc issue 653 quotes it: the GPU's block stops inside its Express capability, before
# LnkCap and LnkSta
A100_CUT = """da:00.0 3D controller [0302]: NVIDIA Corporation GA100 [A100 SXM4 40GB] [10de:20b0] (rev a1)
\tSubsystem: NVIDIA Corporation Device [10de:134f]
\tControl: I/O+ Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr+ Stepping- SERR+ FastB2B- DisINTx+
\tNUMA node: 5
\tCapabilities: [78] Express (v2) Endpoint, MSI 00
\t\tDevCap:\tMaxPayload 256 bytes, PhantFunc 0, Latency L0s unlimited, L1 <64us
\t\tDevSta:\tCorrErr- NonFatalErr- FatalErr- UnsupReq- AuxPwr- TransPend-
\t\tLn"""


def test_a_gpu_block_cut_before_its_link_lines_is_read_and_says_so_by_device() -> None:
    """Sniffed as no format at all, and forced with --format lspci only 'no telemetry read': the reader now takes
    an `lspci -v` block of a GPU with no link lines and says, naming the device, where its output stops."""
    for fmt in (None, "lspci"):
        result = read_text(A100_CUT, fmt)
        assert result["link_samples"].empty
        assert [(w.line, w.message) for w in result.warnings] == [
            (8, "no LnkCap/LnkSta for 0000:da:00.0 (the output stops at line 8): its link is not read")]
    lines = (SAMPLES / "lspci_vvv_h100.txt").read_text().splitlines()
    cut = next(i for i, line in enumerate(lines) if line.startswith("0000:1b:00.0"))
    kept = [line for line in lines[:cut] if not line.strip().startswith(("LnkCap:", "LnkSta:"))] + lines[cut:]
    result = read_text("\n".join(kept))  # the bridge and the first GPU lost their link lines; the rest are read
    said = [w.message for w in result.warnings]
    assert any("no LnkCap/LnkSta for 0000:18:00.0 (its block, lines 3-" in m for m in said)
    assert any("no LnkCap/LnkSta for 0000:19:00.0 (its block, lines" in m for m in said)
    assert "0000:1b:00.0" in set(result["link_samples"]["pci_bus_id"])
    denied = "0000:19:00.0 3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev a1)\n" \
             "\tSubsystem: NVIDIA Corporation Device 16c1\n\tCapabilities: <access denied>\n"
    assert "`sudo lspci -vvv`" in read_text(denied).warnings[0].message
    plain = "0000:19:00.0 3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev a1)\n"
    assert READER.sniff(plain) == 0.0  # `lspci` without -v lists devices only: no block, nothing said of a link


@pytest.mark.parametrize("first", ["Wed May 13 11:00:00 UTC 2026", "$ sudo lspci -vvv"])
def test_an_indented_listing_under_a_flush_left_date_or_prompt_is_read_as_the_listing(first: str) -> None:
    """A `date` line or a prompt kept flush left above a listing pasted indented: read with the listing's indentation
    kept, no line was a device's, and nothing was read ('lines 3-51 not read as lspci / AER output')."""
    listing = "\n".join(line for line in (SAMPLES / "lspci_vvv_lane_h100.txt").read_text().splitlines()
                        if not line.startswith("#"))
    plain = read_text(f"{first}\n{listing}\n")
    indented = read_text(first + "\n" + "\n".join(f"    {line}" if line else line for line in listing.splitlines())
                         + "\n")
    columns = ["pci_bus_id", "end", "lane", "rx_err", "bad_dllp", "replay_timeout", "width", "max_width"]
    assert len(plain["link_samples"]) and \
        indented["link_samples"][columns].astype(str).values.tolist() == \
        plain["link_samples"][columns].astype(str).values.tolist()
    assert not [w for w in indented.warnings if "not read as" in w.message], indented.warnings
