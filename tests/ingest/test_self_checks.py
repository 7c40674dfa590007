"""Readers check what a file says about itself: a line lost, doubled or damaged is said, never read as another
device's, link's or GPU's numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ingest.helpers import REAL, SAMPLES, read_text, warning_lines


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def _without(lines: list[str], text: str) -> str:
    """The lines with the first one that starts with `text` deleted."""
    at = next(i for i, line in enumerate(lines) if line.startswith(text))
    return "\n".join(lines[:at] + lines[at + 1:]) + "\n"


def _doubled(lines: list[str], text: str) -> tuple[str, int]:
    """The lines with the first one holding `text` doubled, and the copy's line number."""
    at = next(i for i, line in enumerate(lines) if text in line)
    return "\n".join(lines[: at + 1] + lines[at:]) + "\n", at + 2


def test_lspci_a_deleted_device_header_leaves_the_port_above_with_its_own_counters() -> None:
    """The issue's case: without `0000:19:00.0 3D controller ...`, the GPU's LnkCap, LnkSta and CESta followed the
    port above it, whose BadDLLP and RxErr went from 1 to 0 (a failing port read clean)."""
    lines = _lines(SAMPLES / "lspci_vvv_lane_h100.txt")
    whole = read_text("\n".join(lines) + "\n")["link_samples"]
    result = read_text(_without(lines, "0000:19:00.0 3D controller"))
    port = result["link_samples"].query("peer == '0000:18:00.0' or pci_bus_id == '0000:18:00.0'")
    before = whole.query("peer == '0000:18:00.0'").iloc[0]
    assert port.iloc[0][["rx_err", "bad_dllp", "replay_timeout", "width"]].tolist() == \
        before[["rx_err", "bad_dllp", "replay_timeout", "width"]].tolist()
    assert any("a second LnkCap in 0000:18:00.0's block" in w.message for w in result.warnings)


@pytest.mark.parametrize("line", ["LnkSta:\tSpeed 32GT/s (ok)", "CESta:\tRxErr+"])
def test_lspci_a_doubled_capability_line_is_said(line: str) -> None:
    text, copy = _doubled(_lines(SAMPLES / "lspci_vvv_lane_h100.txt"), line)
    result = read_text(text)
    assert copy in warning_lines(result) and "a second" in result.warnings[0].message


@pytest.mark.parametrize(("old", "new", "said"), [
    ("Port #0, Speed 32GT/s", "Port #1e30, Speed 32GT/s", "not a LnkCap line"),
    ("secondary=19,", "secondary=4294967296,", "not a Bus line"),
    ("Timeout+", "Timeott+", "has no Timeout bit"),
])
def test_lspci_a_damaged_field_line_is_said(old: str, new: str, said: str) -> None:
    text = (SAMPLES / "lspci_vvv_lane_h100.txt").read_text().replace(old, new, 1)
    assert any(said in w.message for w in read_text(text).warnings)


@pytest.mark.parametrize(("old", "new", "said"), [
    # a damaged bus id is no other device (its last eight digits are not a domain)
    ("0000:19:00.0/aer_dev_correctable:TOTAL", "18446744073709551615:19:00.0/aer_dev_correctable:TOTAL",
     "no device bus id"),
    ("0000:19:00.0/aer_dev_correctable:RxErr", "0000:09:00.0/aer_dev_correctable:RxErr", "where the command prints"),
    ("correctable:BadDLLP", "correctable:CadDLLP", "no counter aer_dev_correctable prints"),
    ("$ cat /sys/bus/pci/devices/0000:1b:00.0/aer_dev_fatal\n", "", "no counter aer_dev_correctable prints"),
])
def test_sysfs_aer_lines_that_contradict_their_file_are_said(old: str, new: str, said: str) -> None:
    text = (SAMPLES / "aer_sysfs_dump.txt").read_text().replace(old, new, 1)
    result = read_text(text)
    assert any(said in w.message for w in result.warnings)
    assert result["link_samples"].query("pci_bus_id == '0000:19:00.0'")["aer_fatal"].isna().all()


def test_topo_m_a_doubled_row_is_read_once_and_said() -> None:
    lines = _lines(REAL / "topo_m_hgx_h100_1.txt")
    text, copy = _doubled(lines, "GPU3    NV18")
    result = read_text(text)
    whole = read_text("\n".join(lines) + "\n")["topology"]
    assert len(result["topology"]) == len(whole)
    assert copy in warning_lines(result) and "row GPU3 again" in str(result.warnings)


def test_topo_m_a_row_whose_x_is_not_in_its_own_column_is_not_read() -> None:
    text = (REAL / "topo_m_hgx_h100_1.txt").read_text().replace("\nGPU4 ", "\nGPU5 ", 1)
    result = read_text(text)
    assert "its X is under GPU4" in str(result.warnings)
    assert not result["topology"].query("a == 'GPU5' and b == 'GPU4'").empty  # the true GPU5 row is read


@pytest.mark.parametrize(("old", "new", "said"), [
    ('<nvlink target="0000:f5:00.0" count="5"', '<nvlink target="0000:f5:00.0" cnunt="5"', "nvlink count = ''"),
    ('<net name="mlx5_7"', '<ndt name="mlx5_7"', "<ndt> inside <nic> is no element NCCL reads"),
    ('      <nvlink target="0000:f5:00.0"', '      =nvlink target="0000:f5:00.0"', "inside <gpu> is no element"),
])
def test_nccl_xml_what_nccl_would_not_read_is_said(old: str, new: str, said: str) -> None:
    text = (REAL / "nccl_topo_1.txt").read_text().replace(old, new, 1)
    assert any(said in w.message for w in read_text(text).warnings)


@pytest.mark.parametrize("element", ['<net name="mlx5_2"', '<nvlink target="0000:f4:00.0"',
                                     '<pci busid="0000:d3:00.0"'])
def test_nccl_xml_a_doubled_element_is_read_once_and_said(element: str) -> None:
    lines = _lines(REAL / "nccl_topo_1.txt")
    at = next(i for i, line in enumerate(lines) if element in line)
    # an element that holds others is doubled with its closing tag, empty
    lines[at:at] = [lines[at], "</pci>"] if element.startswith("<pci") else [lines[at]]
    result = read_text("\n".join(lines) + "\n")
    copy = at + (3 if element.startswith("<pci") else 2)  # the line of the element read second
    assert copy in warning_lines(result) and "again" in result.warnings[0].message


def test_nccl_xml_a_gap_in_the_device_numbers_is_said() -> None:
    lines = _lines(REAL / "nccl_topo_1.txt")
    result = read_text(_without(lines, '          <net name="mlx5_6"'))
    assert any("skip 6" in w.message for w in result.warnings)


@pytest.mark.parametrize("byte", ["\x0b", "\x07", "\x1b", "\ufffd"])
def test_a_line_holding_a_byte_that_is_no_text_is_said(byte: str) -> None:
    lines = _lines(SAMPLES / "lspci_vvv_h100.txt")
    lines[5] = lines[5] + byte + lines[6]  # a newline flipped into another byte joins two lines
    del lines[6]
    result = read_text("\n".join(lines) + "\n")
    assert 6 in warning_lines(result) and "no text holds" in str(result.warnings)
