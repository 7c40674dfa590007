"""The failures a mutation run of the project's own samples found, one test each: a bad value, a bad time or a
cut value is refused with a warning naming the line and the value, never a traceback or a wrong number."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from diagnostics.errors import InputError
from diagnostics.ingest import detect
from diagnostics.ingest.base import IngestResult, Source
from diagnostics.ingest.dcgm import read_scrapes
from tests.ingest.helpers import REAL, SAMPLES, assert_conformed


def read_file(tmp_path: Path, text: str, name: str = "input.txt") -> IngestResult:
    """`text` written as a file, byte for byte (no newline added), read through detection."""
    path = tmp_path / name
    path.write_bytes(text.encode())
    result = detect.read(Source.from_path(path))
    assert_conformed(result)
    return result


def said(result: IngestResult, line: int, *words: str) -> bool:
    """Whether a warning names `line` and holds every one of `words`."""
    return any(w.line == line and all(x in w.message for x in words) for w in result.warnings)


def test_an_impossible_kernel_log_time_is_said_and_the_event_kept(tmp_path: Path) -> None:
    text = (SAMPLES / "kernel_sxid_aer.log").read_text().replace("2026-11-20T03:14:07+0000", "2026-11-20T03:14:87+0000",
                                                                    1)
    result = read_file(tmp_path, text, "kern.log")
    assert said(result, 2, "'2026-11-20T03:14:87+0000'", "no time")
    events = result["events"]
    xid74 = events[events["code"] == 74].iloc[0]
    assert pd.isna(xid74["timestamp"]) and xid74["link"] == 5  # the event is kept, without a time


@pytest.mark.parametrize("label", ['gpu="18446744073709551616"', 'gpu="-1"', 'gpu="1e3"'])
def test_a_dcgm_gpu_label_that_is_no_index_is_a_warning(label: str) -> None:
    text = (f'DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L0{{{label},Hostname="n1"}} 5 1767225600000\n'
            'DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L0{gpu="1",Hostname="n1"} 7 1767225600000\n')
    result = read_scrapes([(Source.from_text(text, name="s.prom"), None)])
    assert result["link_samples"]["gpu"].tolist() == [1]
    assert said(result, 1, "not an index")


@pytest.mark.parametrize("value", ["18446744073709551616", "NaN", "+Inf", "-1", "1e30", "0.5"])
def test_a_dcgm_counter_no_counter_holds_is_refused(value: str) -> None:
    text = (f'DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L2{{gpu="0",Hostname="n1"}} {value} 1767225600000\n'
            'DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L2{gpu="0",Hostname="n1"} 45120 1767225660000\n')
    result = read_scrapes([(Source.from_text(text, name="s.prom"), None)])
    assert result["link_samples"]["crc_flit"].tolist() == [45120.0]
    assert said(result, 1, f"'{value}' is not a value this field can hold")


@pytest.mark.parametrize(("value", "why"), [("12x 1780000000000", "not a number"),
                                            ("-3 1780000000000", "is not a value this field can hold")])
def test_a_refused_dcgm_value_names_its_metric_and_the_labels_that_place_it(value: str, why: str) -> None:
    """Of a scrape's many GPUs and links, the refused sample is named by its metric, host, GPU and link (the labels
    that place it), not the UUID, model and device that only lengthen it."""
    series = ('DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL{{gpu="{gpu}",'
              'UUID="GPU-02348a17-a825-300c-0336-48e33d0dadb2",device="nvidia{gpu}",nvlink="3",'
              'modelName="NVIDIA A100-SXM4-40GB",Hostname="axa"}}')
    text = f"{series.format(gpu=0)} 4 1780000000000\n{series.format(gpu=1)} {value}\n"
    result = read_scrapes([(Source.from_text(text, name="s.prom"), None)])
    assert result["link_samples"]["gpu"].tolist() == [0]
    assert said(result, 2, 'DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL{gpu="1",nvlink="3",Hostname="axa"}: ', why)
    assert not any("UUID" in w.message or "modelName" in w.message for w in result.warnings)


def test_the_dcgm_blank_sentinel_and_the_saturated_counter_keep_their_meaning() -> None:
    text = ('DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L0{gpu="0",Hostname="n1"} 9223372036854775794 1767225600000\n'
            'DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L1{gpu="0",Hostname="n1"} 65535 1767225600000\n')
    result = read_scrapes([(Source.from_text(text, name="s.prom"), None)])
    rows = result["link_samples"]
    assert rows["replay"].tolist() == [65535.0] and rows["saturated"].tolist() == [True]
    assert any("blank sentinel" in w.message for w in result.warnings)


@pytest.mark.parametrize("value", ["NaN", "inf", "-1", "1e30", "18446744073709551616", "2.5"])
def test_nvlink_e_values_no_counter_holds_are_refused(tmp_path: Path, value: str) -> None:
    text = (REAL / "nvlink_e_h100_1.txt").read_text().replace("Link 1: CRC Errors: 0", f"Link 1: CRC Errors: {value}")
    result = read_file(tmp_path, text)
    rows = result["link_samples"]
    link1 = rows[(rows["link"] == 1) & rows["speed_gbps"].isna()].iloc[0]
    assert pd.isna(link1["crc_flit"]) and link1["replay"] == 0
    assert said(result, 11, f"= '{value}'", "not read")
    assert rows["crc_flit"].dropna().between(0, 2**64).all()


def test_nvlink_e_keeps_the_largest_64_bit_count() -> None:
    text = (REAL / "nvlink_e_h100_1.txt").read_text().replace("Link 1: CRC Errors: 0",
                                                               "Link 1: CRC Errors: 18446744073709551615")
    rows = detect.read(Source.from_text(text))["link_samples"]
    assert rows["crc_flit"].max() == float(2**64 - 1)


@pytest.mark.parametrize("value", ["NaN", "inf", "-1", "1e30"])
def test_smi_query_values_no_counter_holds_are_refused(value: str) -> None:
    text = (SAMPLES / "nvidia_smi_q_fabric_h100.txt").read_text().replace(
        "Replays Since Reset               : 3", f"Replays Since Reset               : {value}")
    result = detect.read(Source.from_text(text))
    rows = result["link_samples"]
    assert pd.isna(rows.iloc[0]["replay"]) and rows.iloc[1]["replay"] == 65535
    assert said(result, 25, "Replays Since Reset", value)


def test_a_cut_smi_query_reads_what_it_holds(tmp_path: Path) -> None:
    text = (SAMPLES / "nvidia_smi_q_fabric_h100.txt").read_text()
    cut = text[: text.index("Replays Since Reset               : 65535") + len("Replays Since Reset        ")]
    result = read_file(tmp_path, cut)
    rows = result["link_samples"]
    assert rows["replay"].tolist()[0] == 3 and pd.isna(rows["replay"].tolist()[1])
    assert said(result, 45, "ends inside this line")


def test_an_lspci_speed_that_is_no_number_is_said(tmp_path: Path) -> None:
    text = (SAMPLES / "lspci_vvv_h100.txt").read_text().replace("LnkSta:\tSpeed 16GT/s", "LnkSta:\tSpeed 9.5.5GT/s")
    result = read_file(tmp_path, text)
    row = result["link_samples"].set_index("pci_bus_id").loc["0000:1b:00.0"]
    assert pd.isna(row["gen"]) and row["width"] == 8 and row["max_gen"] == 5
    assert said(result, 21, "'9.5.5'", "not a number")


@pytest.mark.parametrize("value", ["Infinity", "NaN", "-Infinity", "1e400", "-5", "1e30"])
@pytest.mark.parametrize("name", ["step_time_ms", "iteration_time_ms"])  # a normalized table, a step log
def test_a_json_step_time_that_is_no_time_is_refused(tmp_path: Path, value: str, name: str) -> None:
    text = f'{{"step": 6, "{name}": 812.5}}\n{{"step": 7, "{name}": {value}}}\n'
    result = read_file(tmp_path, text, "steps.jsonl")
    assert result["step_samples"]["step_time_ms"].dropna().tolist() == [812.5]
    assert any(w.line == 2 for w in result.warnings)


@pytest.mark.parametrize("bad", ["inf", "nan", "1e400", "1E+308", "812.5.1", "2e3"])
def test_a_text_step_log_takes_no_part_of_a_number(tmp_path: Path, bad: str) -> None:
    text = f"step=1 step_time_ms=812.5\nstep=2 step_time_ms={bad} lr=1\nstep=3 step_time_ms=815.9\n"
    result = read_file(tmp_path, text, "train.log")
    assert result["step_samples"]["step_time_ms"].tolist() == [812.5, 815.9]
    assert bad[0].isalpha() or said(result, 2, repr(bad), "not a number this pattern reads")


@pytest.mark.parametrize(("fixture", "value", "kept", "line"), [
    ("nvlink_e_h100_1.txt", "45120", 2, 7),  # CRC 45120 cut to 45
    ("nccl_allreduce_1.txt", "231.793", 2, 21),  # busbw 231.793 cut to 23
    ("megatron_train.log", "815.9", 2, 4),  # step time 815.9 cut to 81
])
def test_a_number_cut_at_the_end_of_a_file_is_dropped_and_said(tmp_path: Path, fixture: str, value: str, kept: int,
                                                                line: int) -> None:
    folder = REAL if (REAL / fixture).exists() else SAMPLES
    text = (folder / fixture).read_text().replace("Link 0: CRC Errors: 0", "Link 0: CRC Errors: 45120")
    cut = text[: text.index(value) + kept]
    result = read_file(tmp_path, cut, fixture)
    assert said(result, line, "ends inside this line", f"'{value[:kept]}'", "not read")
    numbers = pd.concat([result["link_samples"]["crc_flit"], result["step_samples"]["busbw_gbps"],
                         result["step_samples"]["step_time_ms"]])
    assert not numbers.isin([float(value[:kept])]).any()
    whole = read_file(tmp_path, text, fixture)  # the same file, whole, reads the figure
    assert float(value) in pd.concat([whole["link_samples"]["crc_flit"], whole["step_samples"]["busbw_gbps"],
                                      whole["step_samples"]["step_time_ms"]]).tolist()


def test_a_cut_line_keeps_the_values_a_space_follows(tmp_path: Path) -> None:
    text = (SAMPLES / "kernel_sxid_aer.log").read_text().splitlines(keepends=True)
    cut = "".join(text[:2]) + text[1].replace("fatal error detected on link 5(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)",
                                              "fatal error detected on link 5(0x0, 0x0, 0x1000").rstrip("\n")
    result = read_file(tmp_path, cut, "kern.log")
    events = result["events"]
    assert events["code"].tolist() == [74, 74] and events["link"].tolist() == [5, 5]
    assert said(result, 3, "its last part ('0x1000')")


@pytest.mark.parametrize("wrap", ["  ", "    ", "\t", "> "])
def test_smi_query_indented_or_quoted_keeps_its_gpu_indices(wrap: str) -> None:
    text = (SAMPLES / "nvidia_smi_q_fabric_h100.txt").read_text()
    wrapped = "".join(wrap + line if line.strip() else line for line in text.splitlines(keepends=True))
    columns = ["gpu", "pci_bus_id", "gen", "max_gen", "width", "max_width", "replay"]
    assert (detect.read(Source.from_text(wrapped))["link_samples"][columns].equals(
        detect.read(Source.from_text(text))["link_samples"][columns]))


def test_smi_query_with_tabs_keeps_pcie_generation_and_width() -> None:
    text = (SAMPLES / "nvidia_smi_q_fabric_h100.txt").read_text()
    tabbed = "".join("\t" * ((len(line) - len(line.lstrip(" "))) // 4) + line.lstrip(" ")
                     for line in text.splitlines(keepends=True))
    rows = detect.read(Source.from_text(tabbed))["link_samples"]
    assert rows[["gen", "max_gen", "width", "max_width"]].values.tolist() == [[5, 5, 16, 16], [4, 5, 8, 16]]


@pytest.mark.parametrize("host", ["nœud-07", "узел-3", "gpu-no\u0301de-2"])
def test_a_kernel_log_keeps_a_host_name_in_any_script(tmp_path: Path, host: str) -> None:
    text = (SAMPLES / "kernel_sxid_aer.log").read_text().replace("gpu-node-07", host)
    events = read_file(tmp_path, text, "kern.log")["events"]
    dated = events[events["timestamp"].notna()]
    assert set(dated["node_id"].astype(str)) == {host}


def test_a_prompt_names_a_host_in_any_script(tmp_path: Path) -> None:
    text = (SAMPLES / "mixed_paste.md").read_text().replace("gpu-node-07", "узел-3")
    result = read_file(tmp_path, text, "paste.md")
    assert set(result["link_samples"]["node_id"].astype(str)) == {"узел-3"}


@pytest.mark.parametrize("fixture", ["nvidia_smi_q_fabric_h100.txt", "steps.csv", "kernel_sxid_aer.log"])
def test_a_bom_and_crlf_read_as_the_original(tmp_path: Path, fixture: str) -> None:
    raw = (SAMPLES / fixture).read_bytes()
    plain = read_file(tmp_path, raw.decode(), fixture)
    (tmp_path / "bom").mkdir()
    (tmp_path / "bom" / fixture).write_bytes(b"\xef\xbb\xbf" + raw.replace(b"\n", b"\r\n"))
    other = detect.read(Source(name=str(tmp_path / fixture), path=tmp_path / "bom" / fixture))
    for table in plain.tables:
        pd.testing.assert_frame_equal(plain[table], other[table])


@pytest.mark.parametrize("window", ["Infinity", "NaN", "0", "1e-9", "1e9"])
def test_a_snapshot_window_of_no_sane_length_is_refused_naming_the_field(tmp_path: Path, window: str) -> None:
    text = (f'{{"node_id": "n1", "fabric_errors": [{{"gpu_src": 2, "gpu_dst": 3, "link_id": "nvlink-1", '
            f'"crc_errors": 45120, "replay_count": 8900}}], "step_time_ms": 340.5, "baseline_step_time_ms": 180, '
            f'"window_hours": {window}}}\n')
    with pytest.raises(InputError) as caught:
        read_file(tmp_path, text, "snapshot.json")
    assert "field 'window_hours'" in str(caught.value)


def test_a_csv_row_of_another_width_is_said_and_later_rows_keep_their_lines(tmp_path: Path) -> None:
    text = ('step,step_time_ms\n1,812.5\n2,813.0,extra,fields\n"3",815.9\n\n4,816.1\n')
    result = read_file(tmp_path, text, "steps.csv")
    rows = result["step_samples"]
    assert rows["step_time_ms"].tolist() == [812.5, 815.9, 816.1]
    assert rows["source"].str.rsplit(":", n=1).str[1].tolist() == ["2", "4", "6"]
    assert said(result, 3, "4 fields where the header names 2", "not read")


@pytest.mark.parametrize(("series", "said_of"), [
    ('Effective_BER{node_description="MF0;sw06:N5400_LD/U1", Port_Number="9"} NaN', "'NaN' is not a value"),
    ('Symbol_Errors{node_description="MF0;sw06:N5400_LD/U1", Port_Number="9"} -1', "'-1' is not a value"),
    ('Symbol_Errors{node_description="MF0;sw06:N5400_LD/U1", Port_Number="18446744073709551616"} 5', "no index"),
    ('Symbol_Errors{node_description="MF0;sw06:N5400_LD/U1", Port_Number="9"} 5 99999999999999999', "no time"),
])
def test_an_nmxt_sample_no_column_holds_is_refused(tmp_path: Path, series: str, said_of: str) -> None:
    good = 'Symbol_Errors{node_description="MF0;sw06:N5400_LD/U1", Port_Number="10"} 7 1781993954087\n'
    result = detect.read(Source.from_text(good + series + "\n", name="n.prom"), fmt="nmxt", node_id="rack-07")
    rows = result["link_samples"]
    assert rows["link"].tolist() == [10] and rows["symbol_errors"].tolist() == [7]
    assert said(result, 2, said_of)


def test_a_cut_nmxt_sample_is_not_read_and_said(tmp_path: Path) -> None:
    text = ('Symbol_Errors{node_description="MF0;sw06:N5400_LD/U1", Port_Number="10", chassis_id="1"} 7 1781993954087\n'
            'Symbol_Errors{node_description="MF0;sw06:N5400_LD/U1", Port_Number="11", chassis_id="1"} 45')
    result = read_file(tmp_path, text, "n.prom")
    assert result["link_samples"]["link"].tolist() == [10]
    assert said(result, 2, "ends inside this line")


@pytest.mark.parametrize("tail", [" 1780000000000", "", " "])
def test_a_dcgm_value_that_is_not_a_number_is_quoted_alone(tail: str) -> None:
    """The refusal quotes the value the line gives, not the value with the sample's timestamp or the space after
    it ('12x 1780000000000', 'abc ')."""
    text = f'DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL{{gpu="1",Hostname="axa"}} 12x{tail}\n'
    result = read_scrapes([(Source.from_text(text, name="s.prom"), None)])
    assert said(result, 1, "not a number: '12x'")


@pytest.mark.parametrize("fixture", ["dcgmi_nvlink_down_replay_h100.txt", "nvidia_smi_q_fabric_h100.txt",
                                     "lspci_vvv_h100.txt", "kernel_sxid_aer.log"])
def test_a_line_cut_at_the_end_of_a_file_is_said_once(tmp_path: Path, fixture: str) -> None:
    """A file cut inside a line says so of that line; what is left of the line was also said to be "not read as"
    the format's output (a dcgmi table's `| -> ` before a cut `Replay`), as though it were another output's line."""
    folder = REAL if (REAL / fixture).exists() else SAMPLES
    text = (folder / fixture).read_text()
    for share in (0.3, 0.5, 0.7):
        cut = text[:int(len(text) * share)]
        if cut.endswith("\n") or " " not in cut.rsplit("\n", 1)[-1].strip():
            continue  # a cut at a line's end, or in its first word, leaves no remnant to say
        result = read_file(tmp_path, cut, fixture)
        (at,) = [w.line for w in result.warnings if w.cut and "ends inside this line" in w.message]
        assert not [w for w in result.warnings if w.line == at and "not read as" in w.message], result.warnings
