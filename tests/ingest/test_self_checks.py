"""Readers check what a file says about itself: a line lost, doubled or damaged is said, never read as another
device's, link's or GPU's numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ingest.dcgm_helpers import scrape
from tests.ingest.helpers import FIXTURES, REAL, SAMPLES, read_text, warning_lines


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
def test_a_doubled_line_is_read_once_and_said(line: str) -> None:
    lines = _lines(SAMPLES / "lspci_vvv_lane_h100.txt")
    text, copy = _doubled(lines, line)
    result = read_text(text)
    assert result["link_samples"].drop(columns="source").equals(
        read_text("\n".join(lines) + "\n")["link_samples"].drop(columns="source"))
    assert warning_lines(result) == [copy] and "repeats the line before it" in result.warnings[0].message


@pytest.mark.parametrize(("old", "new", "said"), [
    ("Port #0, Speed 32GT/s", "Port #1e30, Speed 32GT/s", "not a LnkCap line"),
    ("secondary=19,", "secondary=4294967296,", "not a Bus line"),
    ("Timeout+", "Timeott+", "has no Timeout bit"),
    ("LnkCap:\tPort", "LnkBap:\tPort", "'LnkBap' is one letter from 'LnkCap'"),
    ("LnkSta:\tSpeed", "LnkSta;\tSpeed", "'LnkSta;' is one letter from 'LnkSta'"),
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


def test_topo_m_a_header_naming_a_device_twice_is_said_and_its_row_not_read_as_another() -> None:
    text = (REAL / "topo_m_pcie_4090_1.txt").read_text().replace("\tNIC1\t", "\tNIC0\t", 1)
    result = read_text(text)
    said = str(result.warnings)
    assert "the header names NIC0 twice" in said and "row NIC1 names no column of the header" in said
    topology = result["topology"]
    assert topology.query("b == 'NIC0' or a == 'NIC1'").empty  # no cell is read under either NIC0 column
    assert topology.query("relation == 'nic'")["a"].tolist() == ["NIC0"]  # one device, not two
    assert topology.query("a == 'GPU6' and b == 'GPU0'")["relation"].tolist() == ["SYS"]  # the rest is read


@pytest.mark.parametrize(("old", "new", "column"), [
    ("2               N/A", "2               O/A", "GPU NUMA ID"),
    ("48-71,144-167   2 ", "48-71,144-167   @ ", "NUMA Affinity"),
    ("48-71,144-167", "48-71,144.167", "CPU Affinity"),
])
def test_topo_m_an_affinity_that_is_no_number_list_is_said_and_not_read(old: str, new: str, column: str) -> None:
    """`N/A` flipped to `O/A` had made `O/A` the GPU's NUMA id."""
    lines = _lines(REAL / "topo_m_hgx_h100_1.txt")
    at = next(i for i, line in enumerate(lines) if line.startswith("GPU4 "))
    assert old in lines[at]
    whole = read_text("\n".join(lines) + "\n")
    lines[at] = lines[at].replace(old, new, 1)
    result = read_text("\n".join(lines) + "\n")
    value = new if column == "CPU Affinity" else new.split()[-1]
    assert [w.message for w in result.warnings if w.line == at + 1] == [
        f"row GPU4: {column} = {value!r} is no CPU or NUMA number list as nvidia-smi prints one; not read"]
    relation = {"GPU NUMA ID": "gpu_numa_id", "NUMA Affinity": "numa_affinity", "CPU Affinity": "cpu_affinity"}[column]
    assert result["topology"].query(f"a == 'GPU4' and relation == '{relation}'").empty
    others = whole["topology"].query(f"not (a == 'GPU4' and relation == '{relation}')")
    assert len(result["topology"]) == len(others)  # the rest of the row and the matrix read as before


def test_topo_m_a_row_with_more_values_than_the_header_has_columns_reads_none_of_them() -> None:
    """A space flipped to `!` between NUMA Affinity and GPU NUMA ID had made `!` the GPU's NUMA id."""
    lines = _lines(REAL / "topo_m_hgx_h100_1.txt")
    at = next(i for i, line in enumerate(lines) if line.startswith("GPU4 "))
    lines[at] = lines[at].replace("2               N/A", "2       !       N/A")
    result = read_text("\n".join(lines) + "\n")
    assert f"{at + 1}: row GPU4 has 4 values after its device columns where the header names 3" in \
        "; ".join(f"{w.line}: {w.message}" for w in result.warnings)
    gpu4 = result["topology"].query("a == 'GPU4'")
    assert gpu4["relation"].isin(["cpu_affinity", "numa_affinity", "gpu_numa_id"]).sum() == 0
    assert (gpu4["relation"] == "NV").sum() == 7  # its cells are read


@pytest.mark.parametrize(("old", "new", "said"), [
    ('<nvlink target="0000:f5:00.0" count="5"', '<nvlink target="0000:f5:00.0" cnxnt="5"', "nvlink count = ''"),
    ('<net name="mlx5_7"', '<ndt name="mlx5_7"', "<ndt> inside <nic> is no element NCCL reads"),
    ('      <nvlink target="0000:f5:00.0"', '      =nvlink target="0000:f5:00.0"', "inside <gpu> is no element"),
])
def test_nccl_xml_what_nccl_would_not_read_is_said(old: str, new: str, said: str) -> None:
    text = (REAL / "nccl_topo_1.txt").read_text().replace(old, new, 1)
    assert any(said in w.message for w in read_text(text).warnings)


@pytest.mark.parametrize(("old", "new"), [
    ('count="4" tclass="0x068000"/>', 'count="4" tcla-s="0x068000"/>'),
    ('<nvlink target="0000:f5:00.0" count="5"', '<nvlink target="0000:f5:00.0" cnunt="5"'),
    ('<gpu dev="3"', '<gpu dew="3"'),
])
def test_nccl_xml_an_attribute_name_one_letter_off_is_said_and_read_as_its_name(old: str, new: str) -> None:
    text = (REAL / "nccl_topo_1.txt").read_text()
    line = next(i for i, row in enumerate(text.splitlines(), 1) if old in row)
    result = read_text(text.replace(old, new, 1))
    assert warning_lines(result) == [line] and "is one letter from" in result.warnings[0].message
    assert result["topology"].drop(columns="source").equals(read_text(text)["topology"].drop(columns="source"))


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


def test_smi_query_a_doubled_gpu_header_is_one_gpu_and_said() -> None:
    """The issue's case: a doubled `GPU 00000000:19:00.0` read 3 GPUs where the file says "Attached GPUs: 2", GPU 0's
    replays landed on GPU 1 and the degraded x8 link on a GPU that does not exist."""
    lines = _lines(SAMPLES / "nvidia_smi_q_fabric_h100.txt")
    whole = read_text("\n".join(lines) + "\n")
    text, copy = _doubled(lines, "GPU 00000000:19:00.0")
    result = read_text(text)
    columns = ["gpu", "pci_bus_id", "replay", "width", "link_state"]
    assert result["link_samples"][columns].equals(whole["link_samples"][columns])
    assert result["gpus"]["gpu"].tolist() == [0, 1]
    assert copy in warning_lines(result)


def test_smi_query_a_deleted_gpu_header_gives_no_gpu_the_other_one_s_numbers() -> None:
    lines = _lines(SAMPLES / "nvidia_smi_q_fabric_h100.txt")
    result = read_text(_without(lines, "GPU 00000000:1B:00.0"))
    links = result["link_samples"]
    assert links["replay"].tolist() == [3] and links["width"].tolist() == [16]  # GPU 0's own, not GPU 1's
    said = str(result.warnings)
    assert "a GPU header line is missing above" in said and "Attached GPUs says 2" in said
    assert links["gpu"].isna().all()  # a section lost: no index is sure


@pytest.mark.parametrize(("old", "new", "said"), [
    ("Fri Nov 20 03:20:00 2026", "Fri Nov 20 03:20:00 1e30", "is no time"),
    ("Bus Id                            : 00000000:19:00.0", "Bus Id                            : 0.5:00:04.0",
     "is no PCI bus id"),
    ("        Tx Throughput                     : 1200", "        Tx Throughput               !     : 1200",
     "is no key as nvidia-smi prints one"),
    ("Driver Version                            :", "Driver Wersion                            :",
     "one letter from 'Driver Version'"),
    ("CUDA Version                              :", "CUDA Revision                             :",
     "no key of the log's header"),
    ("        Replay Number Rollovers           : 0", "        Replay Oumber Rollovers           : 0",
     "one letter from 'Replay Number Rollovers'"),
    ("    Product Name                          : NVIDIA H100 80GB HBM3\n    GPU UUID                              : "
     "GPU-44", "    Product Namd                          : NVIDIA H100 80GB HBM3\n    GPU UUID                 "
     "             : GPU-44", "no Product Name where another GPU's has"),
    ("Rx Throughput                     : 800 KB/s", "Rx Throughput                     : 800 KiB/s",
     "no unit nvidia-smi prints"),
])
def test_smi_query_a_damaged_line_is_said(old: str, new: str, said: str) -> None:
    text = (SAMPLES / "nvidia_smi_q_fabric_h100.txt").read_text()
    assert old in text
    result = read_text(text.replace(old, new, 1))
    assert any(said in w.message for w in result.warnings), result.warnings
    assert result["link_samples"]["gpu"].tolist() == [0, 1]  # a header key no reader takes starts no GPU


def test_smi_query_pci_lines_whose_section_line_is_lost_are_read_as_pci_and_said() -> None:
    lines = _lines(SAMPLES / "nvidia_smi_q_fabric_h100.txt")
    at = max(i for i, line in enumerate(lines) if line == "    PCI")
    result = read_text("\n".join(lines[:at] + lines[at + 1:]) + "\n")
    assert result["link_samples"]["width"].tolist() == [16, 8]
    assert "the `PCI` line above it is missing" in str(result.warnings)


@pytest.mark.parametrize(("old", "new", "said"), [
    ("Link 46 Minion", "Link 1,000,000 Minion", "'1,000,000': a link index is 0-255"),  # never link 1
    ("Link 46 Minion", "Link 1e30 Minion", "'1e30'"),
    ("Link 46 Minion", "Link!46 Minion", "names a link with no link number"),
    ("Link 46 Minion", "Lhnk 46 Minion", "names a link with no link number"),
    ("SXid (PCI:0000:04:00.0): 22013, Non-fatal, Link 46", "SXid (PCI:0000:04:00.0): 22013, Oon-fatal, Link 46",
     "none of the driver's SXid lines"),
    ("SXid (PCI:0000:04:00.0): 22013, Non-fatal, Link 46", "SXid (PCI:-0:04:00.0): 22013, Non-fatal, Link 46",
     "'-0:04:00.0' is no PCI bus id"),
    ("SXid (PCI:0000:04:00.0): 22013, Non-fatal, Link 46", "SXie (PCI:0000:04:00.0): 22013, Non-fatal, Link 46",
     "a word damaged"),
])
def test_kernel_log_a_damaged_event_line_is_said(old: str, new: str, said: str) -> None:
    text = (REAL / "sxid_22013_h100_1.txt").read_text()
    assert old in text
    result = read_text(text.replace(old, new, 1))
    assert any(said in w.message for w in result.warnings), result.warnings
    assert 1 not in result["events"]["link"].dropna().tolist()


@pytest.mark.parametrize(("old", "new"), [
    ("[2026-04-22T21:25:20.560271408Z]", "[2026-04-22T21:25:-0.560271408Z]"),  # the issue's `21:25:-0`
    ("[2026-04-22T21:25:20.560271408Z]", "[99999999999999999999999999-04-22T21:25:20.560271408Z]"),
])
def test_kernel_log_a_damaged_time_is_said(old: str, new: str) -> None:
    text = (REAL / "sxid_24007_xid_a100_1.txt").read_text()
    assert old in text
    result = read_text(text.replace(old, new, 1))
    assert any("is a log prefix none of the forms" in w.message or "is no time" in w.message
               for w in result.warnings), result.warnings


def test_kernel_log_an_xid_on_a_bus_no_identity_line_names_is_said() -> None:
    text = (REAL / "sxid_24007_xid_a100_1.txt").read_text().replace("Xid (PCI:0000:48:00): 45",
                                                                    "Xid (PCI:0001:48:00): 45", 1)
    assert "a bus none of the log's GPU identity lines names" in str(read_text(text).warnings)


def test_kernel_log_a_doubled_xid_line_is_one_event_and_said() -> None:
    lines = _lines(REAL / "xid_145_149_log_1.txt")
    text, copy = _doubled(lines, "caused by previous Xid 145")
    result = read_text(text)
    assert len(result["events"]) == len(read_text("\n".join(lines) + "\n")["events"])
    assert warning_lines(result) == [copy]


@pytest.mark.parametrize(("name", "old", "new", "said"), [
    ("steps.jsonl", '"job_id": "llm-7b-42"', '"joc_id": "llm-7b-42"', "'joc_id' is one letter from 'job_id'"),
    ("steps.csv", "step,step_time_ms,timestamp,", "step,step_time_ms,timestalp,", "'timestalp' is one letter from"),
    ("megatron_train.log", "elapsed time per iteration (ms): 815.9", "elaqsed time per iteration (ms): 815.9",
     "a megatron-lm line that does not read as one"),
    ("megatron_train.log", "iteration      101/  500000", "iteration      101/  -0",
     "a megatron-lm line that does not read as one"),
    ("megatron_train.log", "[2026-11-20 03:00:01]", "[2026-11-18446744073709551615 03:00:01]",
     "before the step is no time the pattern reads"),
])
def test_step_log_a_damaged_key_or_line_is_said(name: str, old: str, new: str, said: str) -> None:
    """The issue's case: one flipped byte in a step log's key lost the job id of that record, unsaid."""
    text = (SAMPLES / name).read_text()
    assert old in text
    result = read_text(text.replace(old, new, 1), name=name)
    assert any(said in w.message for w in result.warnings), result.warnings


def test_a_table_row_written_twice_is_read_once_and_said(tmp_path: Path) -> None:
    lines = ["timestamp,node_id,gpu,link_type,link,crc_flit",
             "2026-11-20T03:00:00Z,n1,0,nvlink,3,10", "2026-11-20T03:05:00Z,n1,0,nvlink,3,12",
             "2026-11-20T03:05:00Z,n1,0,nvlink,3,12"]
    result = read_text("\n".join(lines) + "\n", name="links.csv")
    assert result["link_samples"]["crc_flit"].tolist() == [10, 12]
    assert warning_lines(result) == [4] and "repeats the row of line 3" in result.warnings[0].message


_TX = "DCGM_FI_PROF_NVLINK_TX_BYTES"


@pytest.mark.parametrize(("old", "new", "line", "said"), [
    (f'gauge\n{_TX}{{gpu="0"', f'gauge!{_TX}{{gpu="0"', 5, "a sample inside a comment line"),
    (f'(in B/s).\n# TYPE {_TX} gauge\n{_TX}{{gpu="0"', f'(in B/s).!{_TX}{{gpu="0"', 4,
     "a sample inside a comment line"),
    (f"# TYPE {_TX} gauge\n", f"# TYPE {_TX} gauge x\n", 5, "is no `# TYPE metric type` line"),
])
def test_dcgm_a_sample_joined_to_a_comment_line_is_said(old: str, new: str, line: int, said: str) -> None:
    """The line break after `# TYPE ... counter` flipped to `!` had hidden the next sample in the comment."""
    text = (REAL / "dcgm_metrics_a100_1.txt").read_text()
    assert old in text
    result = read_text(text.replace(old, new, 1), name="metrics.txt")
    assert [w.line for w in result.warnings if said in w.message] == [line], result.warnings


@pytest.mark.parametrize(("old", "new", "said"), [
    ('DCGM_FI_PROF_NVLINK_TX_BYTES{gpu="0"', 'DBGM_FI_PROF_NVLINK_TX_BYTES{gpu="0"', "one letter from"),
    ('{gpu="3",UUID=', '{gpu="-0",UUID=', "an index is never negative"),
    ('{gpu="3",UUID=', '{gpu="2",UUID=', "a series sampled twice at one time"),  # GPU 2's own series
    ('{gpu="0",UUID=', '{gpu="0",UTID=', "label 'UTID' is one letter from 'UUID'"),
])
def test_dcgm_a_damaged_name_or_label_is_said(old: str, new: str, said: str) -> None:
    text = (REAL / "dcgm_metrics_a100_1.txt").read_text()
    assert old in text
    result = read_text(text.replace(old, new, 1), name="metrics.txt")
    assert any(said in w.message for w in result.warnings), result.warnings


def test_dcgm_a_gpu_or_time_few_samples_name_is_said() -> None:
    text = (FIXTURES / "fleet" / "dcgm" / "hpc-gpu-node-01.prom").read_text()
    for old, new, said in (('gpu="0",Hostname="hpc-gpu-node-01"} 16', 'gpu="0",Hostname="hpc-gpu-nnde-01"} 16',
                            "hpc-gpu-nnde-01 GPU 0 has 1 sample a time (lines"),
                           ("} 16 1789631700000", "} 16 0.5", "this time has 1 sample (lines")):
        result = read_text(text.replace(old, new, 1), name="scrape.prom")
        assert any(said in w.message for w in result.warnings), result.warnings


def test_dcgm_a_series_sampled_twice_at_one_time_is_said() -> None:
    lines = _lines(FIXTURES / "fleet" / "dcgm" / "hpc-gpu-node-01.prom")
    at = next(i for i, line in enumerate(lines) if line.startswith("DCGM_FI_DEV_PCIE_REPLAY_COUNTER"))
    changed = lines[at].rsplit(" ", 2)
    lines.insert(at + 1, f"{changed[0]} 7 {changed[2]}")  # the same series and time, another value
    result = read_text("\n".join(lines) + "\n", name="scrape.prom")
    assert any("a series sampled twice at one time" in w.message and f"line {at + 2}" in w.message
               for w in result.warnings), result.warnings


def test_nvlink_a_deleted_gpu_header_hands_no_link_to_the_gpu_above() -> None:
    lines = _lines(REAL / "nvlink_s_a100_1.txt")
    result = read_text(_without(lines, "GPU 1: NVIDIA A100-SXM4-80GB"))
    assert 1 not in result["link_samples"]["gpu"].tolist()
    assert set(result["link_samples"].query("gpu == 0")["link"]) == set(range(12))  # GPU 0's own, read once
    assert "a GPU header line is missing above" in str(result.warnings)


@pytest.mark.parametrize(("old", "new", "said"), [
    ("(UUID: GPU-0c512562-871f-8257-6187-b5ae1b986d5e)", "(UUID: GPU-0c512562-871f-8257-6187-b5ae1b98`d5e)",
     "is no GPU UUID as the driver writes it"),
    ("(UUID: GPU-0c512562-871f-8257-6187-b5ae1b986d5e)", "(UUHD: GPU-0c512562-871f-8257-6187-b5ae1b986d5e)",
     "a UUID clause not as nvidia-smi prints it"),
    ("(UUID: GPU-0c512562-871f-8257-6187-b5ae1b986d5e)", "(UUID; GPU-0c512562-871f-8257-6187-b5ae1b986d5e)",
     "a UUID clause not as nvidia-smi prints it"),
    ("GPU 1: NVIDIA A100-SXM4-80GB", "GPU NaN: NVIDIA A100-SXM4-80GB", "is no GPU header as nvidia-smi prints one"),
])
def test_nvlink_a_damaged_gpu_header_is_said(old: str, new: str, said: str) -> None:
    text = (REAL / "nvlink_s_a100_1.txt").read_text()
    assert old in text
    assert any(said in w.message for w in read_text(text.replace(old, new, 1)).warnings)


def test_nvlink_one_uuid_under_two_gpu_indexes_is_said() -> None:
    """Two outputs of one GPU pasted together, the second header's index flipped (`GPU 0` -> `GPU 1`): its link
    speeds had gone to a GPU 1 the first output never named, unsaid."""
    text = (REAL / "nvlink_e_h100_1.txt").read_text()
    at = text.index("GPU 0:", text.index("nvlink --status"))
    result = read_text(text[:at] + "GPU 1:" + text[at + len("GPU 0:"):])
    assert "is GPU 1 here and GPU 0 at line 4: one of the two indexes is damaged" in str(result.warnings)


def test_a_snapshot_listing_one_link_twice_reads_it_once_and_says_so() -> None:
    lines = _lines(FIXTURES / "seed_examples.json")
    text, _ = _doubled(lines, '"gpu_src": 2, "gpu_dst": 3, "link_id": "nvlink-1"')
    result = read_text(text, name="cases.json")
    whole = read_text("\n".join(lines) + "\n", name="cases.json")
    assert len(result["link_samples"]) == len(whole["link_samples"])
    assert "is the link of fabric_errors[0] (nvlink-1) again" in str(result.warnings)


def test_two_aer_counter_lines_joined_into_one_are_said_and_not_read() -> None:
    """The line break between `...:RxErr 0` and the next line flipped to `;`: RxErr had been lost unsaid."""
    text = (SAMPLES / "aer_sysfs_dump.txt").read_text()
    old = "aer_dev_correctable:RxErr 0\n/sys"
    assert old in text
    result = read_text(text.replace(old, "aer_dev_correctable:RxErr 0;/sys", 1))
    line = text.splitlines().index("/sys/bus/pci/devices/0000:19:00.0/aer_dev_correctable:RxErr 0") + 1
    assert [w.line for w in result.warnings if "two AER counter lines in one" in w.message] == [line]


def test_nccl_tests_a_damaged_rank_line_is_said() -> None:
    """`Pid 1171742` written `Pid Infinity`: the rank line was passed over and its host gone, unsaid."""
    text = (REAL / "nccl_sendrecv_a40_1.txt").read_text()
    old = "Pid 1171742 on"
    assert old in text
    line = next(i for i, row in enumerate(text.splitlines(), 1) if old in row)
    result = read_text(text.replace(old, "Pid Infinity on", 1))
    assert [w.line for w in result.warnings if "is not a `# Rank N Pid P on HOST device D` line" in w.message] == [
        line]


def test_dcgm_a_gpu_that_stops_half_way_through_the_scrapes_is_not_said_damaged() -> None:
    """A GPU off the bus: its series stop, the others' go on. Each scrape it is in holds its full count, so it is no
    damaged label (Prometheus's read-back of such a node said it was)."""
    start = 1_789_631_100_000
    lines = []
    for n in range(12):  # 12 scrapes 5 minutes apart; GPU 3 reports in the first two only
        lines += [line for line in scrape(gpus=4, links=2, ts_ms=start + n * 300_000, value=n)
                  if n < 2 or 'gpu="3"' not in line]
    result = read_text("\n".join(lines) + "\n", name="scrapes.prom")
    assert not [w for w in result.warnings if "damaged?" in w.message], result.warnings
