"""nvidia-smi -q PCI and Fabric sections."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from diagnostics.errors import InputError
from diagnostics.ingest import detect
from diagnostics.ingest.base import Source
from diagnostics.ingest.smi_query import READER
from diagnostics.service import files_source
from diagnostics.store import open_store
from tests.ingest.helpers import H100_SMI_Q, REAL, SAMPLES, read, read_text, smi_q_read_twice, warning_lines


def test_v100_pci_section() -> None:
    result = read(REAL / "nvidia_smi_q_pcie_v100_1.txt")
    assert result.warnings == []  # the source lines and the trailing GPU-level keys are not complaints
    (row,) = result["link_samples"].to_dict("records")
    assert row["link_type"] == "pcie" and row["pci_bus_id"] == "0000:00:04.0"
    assert (row["gen"], row["max_gen"], row["width"], row["max_width"]) == (3, 3, 16, 16)
    assert row["replay"] == 0 and row["replay_rollovers"] == 0
    assert row["rx_bytes_per_s"] == 50_000 and row["tx_bytes_per_s"] == 0
    assert pd.isna(row["gpu"])  # a pasted section does not say which index the GPU has
    assert pd.isna(row["timestamp"])


def test_whole_output_gives_indexes_fabric_events_and_saturation() -> None:
    result = read(SAMPLES / "nvidia_smi_q_fabric_h100.txt")
    links = result["link_samples"]
    assert list(links["gpu"]) == [0, 1]
    assert list(links["pci_bus_id"]) == ["0000:19:00.0", "0000:1b:00.0"]
    assert list(links["replay"]) == [3, 65535] and list(links["saturated"]) == [False, True]
    assert list(links["replay_rollovers"]) == [0, 2]  # retrains: never added to the replays
    assert list(links["link_state"]) == ["up", "degraded"]  # x8 of x16
    assert links["timestamp"].eq(pd.Timestamp("2026-11-20 03:20:00", tz="UTC")).all()
    events = result["events"]
    assert list(events["kind"]) == ["fabric_state", "fabric_state"]
    assert list(events["text"]) == ["State: Completed; Status: Success", "State: In Progress"]
    assert warning_lines(result) == [4]  # the time states no zone


def test_cut_in_the_pci_section() -> None:
    text = (REAL / "nvidia_smi_q_pcie_v100_1.txt").read_text().splitlines()[:15]
    result = read_text("\n".join(text), fmt="smi_query")
    assert result["link_samples"]["width"].tolist() == [16]
    assert result["link_samples"]["replay"].isna().all()
    assert warning_lines(result) == [15] and "cut off" in result.warnings[0].message


def test_value_cut_off() -> None:
    result = read_text("        Replays Since Reset               :\n", fmt="smi_query")
    assert 1 in warning_lines(result)


def test_another_format_and_empty() -> None:
    assert READER.read(Source.from_path(REAL / "xid_145_149_log_1.txt")).rows["link_samples"] == 0
    assert READER.read(Source.from_text("")).empty


def test_garbage_in_the_middle() -> None:
    lines = (REAL / "nvidia_smi_q_pcie_v100_1.txt").read_text().splitlines()
    lines.insert(17, "@@@@ \x07 garbage @@@@")
    result = read_text("\n".join(lines), fmt="smi_query")
    (row,) = result["link_samples"].to_dict("records")
    assert row["replay"] == 0 and row["width"] == 16  # the lines after the garbage are still read
    assert warning_lines(result) == [18]


def test_gpu_identity_rows() -> None:
    gpus = read(SAMPLES / "nvidia_smi_q_fabric_h100.txt")["gpus"]
    assert gpus[["gpu", "pci_bus_id"]].values.tolist() == [[0, "0000:19:00.0"], [1, "0000:1b:00.0"]]
    assert set(gpus["driver_version"]) == {"550.54.15"} and set(gpus["model"]) == {"NVIDIA H100 80GB HBM3"}
    assert gpus["uuid"].tolist()[0] == "GPU-33333333-3333-3333-3333-333333333333"


@pytest.mark.parametrize(("name", "line", "text"), [
    ("smi_q_fabric_unhealthy_1.txt", 5, "State: Completed; Status: Success; CliqueId: 2; "
     "ClusterUUID: dc6e40c4-d722-4357-9ba6-5291dd461278; Health Summary: Unhealthy; Health Bandwidth: Full"),
    ("smi_q_fabric_insufficient_1.txt", 4, "State: Completed; Status: Insufficient Resources; CliqueId: 0; "
     "ClusterUUID: 00000000-0000-0000-0000-000000000000"),
    ("smi_q_fabric_in_progress_1.txt", 4, "State: In Progress"),  # every other value reads N/A
])
def test_real_fabric_sections(name: str, line: int, text: str) -> None:
    assert detect.choose(Source.from_path(REAL / name)).name == "smi_query"
    result = read(REAL / name)
    events = result["events"]
    assert events["kind"].tolist() == ["fabric_state"] and events["text"].tolist() == [text]
    assert events["source"].iloc[0].endswith(f":{line}")
    assert result.rows["link_samples"] == 0  # a Fabric section alone says nothing of the PCIe link


def test_a_grep_separator_is_said_and_the_root_prompt_is_a_command() -> None:
    result = read(REAL / "smi_q_fabric_unhealthy_1.txt")
    assert warning_lines(result) == [12] and "'--'" in result.warnings[0].message  # not line 3's `# nvidia-smi`


def test_a_section_indented_with_a_tab_and_spaces_nests_as_written() -> None:
    """A tab is nvidia-smi's 4-space step: `\\t   Health` (7 columns) holds `\\t\\t\\tSummary` (12), as with spaces."""
    spaces = (REAL / "smi_q_fabric_unhealthy_1.txt").read_text().replace("\n        Health\n", "\n       Health\n", 1)
    assert "\n       Health\n" in spaces
    tabs = "".join("\t" * ((len(line) - len(line.lstrip(" "))) // 4) + " " * ((len(line) - len(line.lstrip(" "))) % 4)
                   + line.lstrip(" ") for line in spaces.splitlines(keepends=True))
    assert "\n\t   Health\n" in tabs
    read_spaces, read_tabs = read_text(spaces)["events"], read_text(tabs)["events"]
    assert "Health Summary: Unhealthy" in read_spaces["text"].iloc[0]
    assert read_tabs["text"].tolist() == read_spaces["text"].tolist()


@pytest.mark.parametrize(("damage", "said"), [
    (("Driver Version                            : ", "Driver Version                            g "),
     "'Driver Version' with no ':' before its value"),
    (("\n    Product Name", "\n  g Product Name"), "'Product Name' has a stray 'g' before it"),
])
def test_a_key_it_reads_damaged_in_its_colon_or_indentation_is_said(damage: tuple[str, str], said: str) -> None:
    """A flipped byte where the colon or the indentation was: the value was lost without a word."""
    whole = (SAMPLES / "nvidia_smi_q_fabric_h100.txt").read_text()
    assert damage[0] in whole
    result = read_text(whole.replace(damage[0], damage[1], 1))
    assert [w.message for w in result.warnings if said in w.message]
    assert len(read_text(whole)["gpus"]) == len(result["gpus"])  # every GPU still read; only that value is not


@pytest.mark.parametrize("path", [*REAL.glob("*smi_q_*.txt"), SAMPLES / "nvidia_smi_q_fabric_h100.txt"],
                         ids=lambda p: p.stem)
def test_real_outputs_hold_no_lost_colon_and_no_stray_byte(path: Path) -> None:
    result = read_text(path.read_text())
    assert not [w for w in result.warnings if "no ':'" in w.message or "stray" in w.message]


def test_an_output_of_one_gpu_of_several_is_said_as_nvidia_smi_q_i() -> None:
    """`nvidia-smi -q -i 0` keeps the log's `Attached GPUs : 8` and prints one GPU section: not a damaged output,
    and its GPU has no index in it."""
    result = read(REAL / "smi_q_one_gpu_h100_1.txt")
    (row,) = result["link_samples"].to_dict("records")
    assert pd.isna(row["gpu"]) and row["pci_bus_id"] == "0000:18:00.0" and row["replay"] == 7
    (said,) = [w.message for w in result.warnings if "Attached GPUs" in w.message]
    assert "1 GPU section of its own: `nvidia-smi -q -i N` output" in said and "(0000:18:00.0)" in said
    assert "missing or damaged" not in said


@pytest.mark.parametrize("keep", [0.45, 0.6, 0.75])
def test_a_whole_output_cut_off_keeps_the_indexes_of_the_gpus_it_holds(keep: float, tmp_path: Path) -> None:
    """`nvidia-smi -q` of two GPUs cut inside the first GPU's section (or the second's) was read as `-q -i N` output:
    its GPU placed on no index, the node's health unknown. The sections it holds come first in index order, so they
    keep their indexes, and the cut is said."""
    whole = (SAMPLES / "nvidia_smi_q_fabric_h100.txt").read_text()
    cut = tmp_path / "smi_q.txt"  # a file that ends inside a line: cut (a paste may lack its last newline)
    cut.write_text(whole[:int(len(whole) * keep)])
    result, full = read(cut), read_text(whole)
    got = result["link_samples"]
    assert len(got) and got["gpu"].notna().all()
    by_bus = dict(zip(full["link_samples"]["pci_bus_id"], full["link_samples"]["gpu"], strict=True))
    assert all(by_bus[b] == g for b, g in zip(got["pci_bus_id"], got["gpu"], strict=True))
    assert not [w for w in result.warnings if "-i N" in w.message]
    assert [w for w in result.warnings if "cut off" in w.message or w.cut]


ECC = REAL / "refused" / "smi_q_d_ecc_v100_1.txt"  # two `nvidia-smi -i N -q -d ECC` outputs, a themed prompt between


def test_an_output_run_with_a_display_of_no_section_read_says_so_and_what_to_run(tmp_path: Path) -> None:
    """`-q -d ECC` prints no PCI or Fabric section: the refusal says so first, not the time notes alone, through the
    files and the store alike; the shell prompt between its two outputs is a command, not a line unread."""
    with pytest.raises(InputError) as refused:
        files_source([ECC], node="n1")
    said = str(refused.value)
    assert "no telemetry read" in said and "holds no PCI or Fabric section and no NVLink counters" in said
    assert "`-d ECC`, the display it was run with, leaves them out" in said
    assert "`nvidia-smi -q` with no -d" in said and "`nvidia-smi -q -d FABRIC`" in said
    assert said.index("no PCI") < said.index("states no zone") and "not read as" not in said
    report = open_store(tmp_path / "store").ingest([ECC], node_id="n1")
    stored = [str(w) for w in report.warnings]
    assert any("holds no PCI or Fabric section" in w for w in stored), stored
    assert not [w for w in stored if "not read as" in w], stored


def test_an_output_cut_before_its_sections_is_said_cut_not_run_with_a_display(tmp_path: Path) -> None:
    """The real H100 `-q` cut at 1,500 bytes, inside GPU 0's section: it was said to be a `-d` display that left the
    PCI and Fabric sections out, beside the warning that the input was cut. It is said cut, and what to paste."""
    cut = tmp_path / "cut.txt"
    cut.write_bytes((REAL / "smi_q_h100_8gpu_gpud_1.txt").read_bytes()[:1500])
    result = read(cut)
    said = [w.message for w in result.warnings]
    assert any("cut off before any GPU's PCI or Fabric section" in w for w in said), said
    assert not any("display it was run with" in w for w in said) and any("ends inside this line" in w for w in said)


def test_a_display_named_by_no_command_is_told_by_the_sections_it_holds() -> None:
    text = ECC.read_text(encoding="utf-8")
    result = read_text("\n".join(line for line in text.splitlines() if "nvidia-smi" not in line) + "\n")
    (said,) = [w.message for w in result.warnings if "no PCI" in w.message]
    assert "the `-d` display it was run with (its sections: ECC Errors, ECC Mode)" in said


def test_prompts_of_two_hosts_give_each_host_its_own_gpus_at_its_own_time() -> None:
    """The same bus id on two nodes is two GPUs, not one GPU's section twice; each is read at its node's time."""
    whole = (SAMPLES / "nvidia_smi_q_fabric_h100.txt").read_text()
    other = whole.replace("03:20:00", "04:20:00").replace("Replays Since Reset               : 3",
                                                          "Replays Since Reset               : 40")
    result = read_text(f"root@nodeA:~# nvidia-smi -q\n{whole}\nroot@nodeB:~# nvidia-smi -q\n{other}\n")
    links = result["link_samples"]
    first = links[links["pci_bus_id"] == "0000:19:00.0"]
    assert list(zip(first["node_id"].astype(str), first["replay"], first["timestamp"].astype(str), strict=True)) == [
        ("nodeA", 3.0, "2026-11-20 03:20:00+00:00"), ("nodeB", 40.0, "2026-11-20 04:20:00+00:00")]
    assert not any("section again" in w.message for w in result.warnings)
    assert sorted(result["gpus"]["node_id"].astype(str)) == ["nodeA", "nodeA", "nodeB", "nodeB"]


def test_each_hosts_display_is_named_under_that_host() -> None:
    """`nvidia-smi -q -d ECC` on nodeA, then `-d TEMPERATURE` at nodeB's prompt: each output's display is its own
    host's, not both nodeA's."""
    def output(host: str, display: str, section: str) -> str:
        return (f"root@{host}:~# nvidia-smi -q -d {display}\n==============NVSMI LOG==============\n"
                "Timestamp : Wed May 13 11:00:00 2026\nDriver Version : 535.1\nAttached GPUs : 1\n"
                f"GPU 00000000:07:00.0\n    Product Name : NVIDIA H100 80GB HBM3\n    {section}\n")
    result = read_text(output("nodeA", "ECC", "ECC Mode") + output("nodeB", "TEMPERATURE", "Temperature"))
    said = [w.message for w in result.warnings if "the display it was run with" in w.message]
    assert [s.split(":", 1)[0] for s in said] == ["nodeA", "nodeB"], said
    assert "`-d ECC`," in said[0] and "`-d TEMPERATURE`," in said[1], said


def _pcie(result: object) -> pd.DataFrame:
    links = result.tables["link_samples"]  # type: ignore[attr-defined]
    return links[links["link_type"] == "pcie"]


def test_the_same_board_read_twice_in_one_paste_is_two_readings() -> None:
    result = read_text(smi_q_read_twice(), name="twice.txt")
    pcie = _pcie(result)
    times = sorted(pcie["timestamp"].unique())
    assert [str(t) for t in times] == ["2024-06-21 02:03:08+00:00", "2024-06-21 02:13:08+00:00"]
    for t in times:  # each reading of the whole board keeps every GPU's index
        assert sorted(pcie.loc[pcie["timestamp"] == t, "gpu"].astype(int)) == list(range(8))
    gpu0 = pcie[pcie["gpu"] == 0].sort_values("timestamp")["replay"].tolist()
    assert gpu0 == [120, 5120]
    assert not [w for w in result.warnings if "again" in w.message]


def test_the_same_output_pasted_twice_at_one_time_is_one_reading_said() -> None:
    body = H100_SMI_Q.read_text()
    result = read_text(body + body.split("\n", 1)[1], name="twice.txt")
    assert len(_pcie(result)) == 8
    assert any("section again" in w.message for w in result.warnings)


def test_a_second_reading_cut_short_keeps_the_first_whole_and_says_the_cut() -> None:
    result = read_text(smi_q_read_twice(cut_in_gpu4=True), name="twice.txt")
    pcie = _pcie(result)
    first = pcie[pcie["timestamp"] == pcie["timestamp"].min()]
    second = pcie[pcie["timestamp"] == pcie["timestamp"].max()]
    assert sorted(first["gpu"].astype(int)) == list(range(8))
    assert sorted(second["gpu"].astype(int)) == [0, 1, 2, 3, 4]
    assert second.loc[second["gpu"] == 4, "replay"].isna().all()  # cut before its replays: no value made
    said = " ".join(w.message for w in result.warnings)
    assert "cut off" in said and "Attached GPUs says 8" in said


def test_two_boards_outputs_pasted_as_one_node_are_said_to_be_two_machines() -> None:
    body = H100_SMI_Q.read_text().split("\n", 1)[1]
    other = body
    for bus in ("53", "64", "75", "86", "97", "A8", "B9", "CA"):  # another board: its GPUs on other buses
        other = other.replace(f"00000000:{bus}:00.0", f"00000001:{bus}:00.0")
    other = other.replace("Fri Jun 21 02:03:08 2024", "Fri Jun 21 02:13:08 2024", 1)
    result = read_text(body + other, name="two.txt")
    said = [w.message for w in result.warnings if "GPU sections" in w.message or "whole `nvidia-smi -q`" in w.message]
    assert len(said) == 1 and "2 whole `nvidia-smi -q` outputs of 8 GPUs each" in said[0]
    assert _pcie(result)["gpu"].isna().all()  # no GPU is placed on an index of a board it may not be on


@pytest.mark.parametrize(("last", "cut"), [("    Processes                             : None", False),
                                           ("        Used                              : 15922 MiB", False),
                                           ("            Current                       : 16x", False),
                                           ("    Processes                             : No", True)])
def test_a_last_line_without_a_newline_is_whole_where_its_value_shows_its_end(last: str, cut: bool,
                                                                              tmp_path: Path) -> None:
    """gpud's test outputs end with no final newline (an editor's save): `15922 MiB` or `None` is whole as it
    stands, so the output is not said cut; a value that may be the start of a longer one (`No` of `None`, 45 of
    45120) still is."""
    body = H100_SMI_Q.read_text().split("\n", 1)[1].rsplit("\n", 2)[0]  # the output less its last line
    path = tmp_path / "saved.txt"
    path.write_text(f"{body}\n{last}")
    said = [w for w in read(path).warnings if w.cut]
    assert bool(said) is cut, said
