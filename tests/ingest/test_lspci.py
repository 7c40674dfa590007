"""lspci -vvv link capability vs status, and sysfs AER counter dumps."""

from __future__ import annotations

from diagnostics.ingest.base import Source
from diagnostics.ingest.lspci import READER
from tests.ingest.helpers import SAMPLES, read, read_text, warning_lines


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
