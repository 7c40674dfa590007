"""`dcgmi nvlink -e -g N` (table and -j JSON) and `dcgmi nvlink -s`: the real samples, the forms DCGM's source
prints, and damaged inputs."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from diagnostics.ingest import detect
from diagnostics.ingest.base import Source
from diagnostics.ingest.dcgmi_nvlink import READER
from tests.ingest.helpers import REAL, SAMPLES, links_per_gpu, read, read_text, warning_lines

HLINE = "+-----------------------------+------------------------------------------------+"


def _errors(gpu: int, links: dict[int, dict[str, str]], *, title: str = "NVLINK Error Counts") -> str:
    """`dcgmi nvlink -e -g GPU` as DcgmiOutputTree(30, 50) prints it: a `Link N` row, then one row a counter."""
    rows = [HLINE, f"| {title:<77}|", f"| {'GPU ' + str(gpu):<77}|",
            "+=============================+================================================+"]
    for link, counters in links.items():
        rows.append(f"| {'Link ' + str(link):<27} | {'':<46} |")
        rows += [f"| {'-> ' + name:<27} | {value:<46} |" for name, value in counters.items()]
    return "\n".join([*rows, HLINE]) + "\n"


def _four(replay: str = "0", flit: str = "0", data: str = "0", recovery: str = "0") -> dict[str, str]:
    return {"CRC FLIT Error": flit, "CRC Data Error": data, "Replay Error": replay, "Recovery Error": recovery}


def _status(gpus: dict[int, str], switches: dict[int, str] | None = None) -> str:
    lines = ["+----------------------+", "|  NvLink Link Status  |", "+----------------------+", "GPUs:"]
    for gpu, states in gpus.items():
        lines += [f"    gpuId {gpu}:", "        " + " ".join(states)]
    lines.append("NvSwitches:")
    for switch, states in (switches or {}).items():
        lines += [f"    physicalId {switch}:", "        " + " ".join(states)]
    if not switches:
        lines.append("    No NvSwitches found.")
    return "\n".join([*lines, "", "Key: Up=U, Down=D, Disabled=X, Not Supported=_"]) + "\n"


def test_dcgm_issue_198_all_links_down_real() -> None:
    result = read(REAL / "dcgmi_nvlink_s_all_down_1.txt")
    links = result["link_samples"]
    assert links_per_gpu(links) == {0: list(range(18)), 1: list(range(18))}
    assert set(links["link_state"]) == {"down"} and set(links["link_type"]) == {"nvlink"}
    assert {s.rsplit(":", 1)[1] for s in links[links["gpu"] == 1]["source"]} == {"10"}  # the states line
    assert result.warnings == [] and not result.partial  # `-s` lists every GPU DCGM sees


def test_h800_status_then_one_gpus_counters_real_merge_per_link() -> None:
    """The page's `-s` (8 links up, 10 not supported a GPU) and `> dcgmi nvlink -g 1 -e`: GPU 1's rows hold both."""
    result = read(REAL / "dcgmi_nvlink_s_e_h800_1.txt")
    links = result["link_samples"]
    assert links_per_gpu(links) == {gpu: list(range(8)) for gpu in range(8)}  # `_` is no link
    assert set(links["link_state"]) == {"up"}
    one = links[links["gpu"] == 1]
    assert (one[["crc_flit", "crc_data", "replay", "recovery"]] == 0).all().all()
    assert links[links["gpu"] != 1]["replay"].isna().all()
    assert result.warnings == []  # the page's `> ` prompt is a command line, not an unread line


def test_h800_json_output_real() -> None:
    result = read(REAL / "dcgmi_nvlink_e_json_h800_1.txt")
    links = result["link_samples"]
    assert links_per_gpu(links) == {0: list(range(8))}
    assert (links[["crc_flit", "crc_data", "replay", "recovery"]] == 0).all().all()
    assert result.warnings == [] and result.partial  # one GPU of eight: the others are not judged missing


def test_counters_take_the_names_the_other_readers_give_them() -> None:
    text = _errors(3, {0: _four(), 2: _four(replay="48213", recovery="3", flit="12", data="1")})
    result = read_text(text)
    assert detect.choose(Source.from_text(text)).name == "dcgmi_nvlink"
    row = result["link_samples"].set_index("link").loc[2]
    assert (row["replay"], row["recovery"], row["crc_flit"], row["crc_data"]) == (48213, 3, 12, 1)
    assert row["gpu"] == 3 and pd.isna(row["timestamp"]) and result.warnings == []


def test_several_gpus_outputs_pasted_one_after_another_are_one_reading() -> None:
    text = "".join(f"$ dcgmi nvlink -e -g {gpu}\n" + _errors(gpu, {0: _four(), 1: _four(replay=str(gpu))})
                   for gpu in range(8))
    result = read_text(text)
    links = result["link_samples"]
    assert links_per_gpu(links) == {gpu: [0, 1] for gpu in range(8)}
    assert links[links["link"] == 1].set_index("gpu")["replay"].to_dict() == {g: g for g in range(8)}
    assert result.warnings == [] and not result.partial  # GPUs 0 to 7: the node whole


def test_a_paste_of_the_status_then_one_gpus_counters_reads_both() -> None:
    states = {gpu: "U" * 18 for gpu in range(8)} | {3: "UUUUUDUUUUUUUUUUUU"}
    text = "dcgmi nvlink -s\n" + _status(states) + "\ndcgmi nvlink -e -g 3\n" + _errors(3, {2: _four(replay="7")})
    result = read_text(text)
    links = result["link_samples"].set_index(["gpu", "link"])
    assert links.loc[(3, 5), "link_state"] == "down" and links.loc[(3, 2), "replay"] == 7
    assert links.loc[(3, 2), "link_state"] == "up" and len(links) == 8 * 18
    assert result.warnings == []


def test_the_constructed_sample_paste() -> None:
    result = read(SAMPLES / "dcgmi_nvlink_down_replay_h100.txt")
    links = result["link_samples"].set_index(["gpu", "link"])
    assert links.loc[(3, 5), "link_state"] == "down"
    assert (links.loc[(3, 2), "replay"], links.loc[(3, 2), "recovery"]) == (48213, 3)
    assert result.warnings == []


def test_blank_values_are_no_value_and_dcgms_own_warning_is_said() -> None:
    text = ("Warning: Unable to retrieve nvlink CRC Data Error count for link 1 for gpuId 0 - Host engine error\n"
            + _errors(0, {0: _four(flit="Not Supported", data="Not Specified"), 1: {"CRC FLIT Error": "0",
                                                                                   "Replay Error": "0",
                                                                                   "Recovery Error": "0"}}))
    result = read_text(text)
    rows = result["link_samples"].set_index("link")
    assert pd.isna(rows.loc[0, "crc_flit"]) and pd.isna(rows.loc[0, "crc_data"]) and rows.loc[0, "replay"] == 0
    assert warning_lines(result) == [1]
    assert "CRC Data Error count (Host engine error)" in result.warnings[0].message


def test_a_damaged_value_is_said_with_its_line_and_the_rest_kept() -> None:
    text = _errors(2, {0: _four(replay="12x4"), 1: _four(replay="5")})
    result = read_text(text)
    rows = result["link_samples"].set_index("link")
    assert pd.isna(rows.loc[0, "replay"]) and rows.loc[0, "recovery"] == 0 and rows.loc[1, "replay"] == 5
    assert warning_lines(result) == [8]
    assert "GPU 2 link 0 Replay Error" in result.warnings[0].message and "'12x4'" in result.warnings[0].message


def test_an_output_cut_inside_a_link_is_said() -> None:
    whole = _errors(0, {0: _four(), 1: _four(replay="9")})
    cut = "\n".join(whole.splitlines()[:12]) + "\n"  # link 1: its CRC FLIT and CRC Data rows only
    result = read_text(cut)
    rows = result["link_samples"].set_index("link")
    assert rows.loc[0, "replay"] == 0 and rows.loc[1, "crc_flit"] == 0 and pd.isna(rows.loc[1, "replay"])
    assert [w.line for w in result.warnings] == [12] and "cut off" in result.warnings[0].message


def test_an_unknown_counter_is_said_once() -> None:
    text = _errors(0, {link: {**_four(), "Mystery Error": "4"} for link in (0, 1)})
    result = read_text(text)
    assert warning_lines(result) == [10] and "'Mystery Error' is not in dcgmi_nvlink.toml" in str(result.warnings[0])
    assert len(result["link_samples"]) == 2


def test_a_blackwell_gpus_totals_are_one_row_with_no_link() -> None:
    """DCGM prints a Blackwell GPU's NVLink5 counters as one `Error Detail` section of totals over its links."""
    totals = {"Malformed Packet Error": "0", "Buffer Overrun Error": "0", "Rx Error": "0", "Rx Remote Error": "0",
              "Rx General Error": "0", "Rx Symbol Error": "1520", "Effective Error": "4", "Tx Discards": "0",
              "Link Integrity Error": "0", "Symbol BER": "1.5e-15", "Effective BER": "Not Specified"}
    text = _errors(0, {0: {}}).replace("| Link 0                      |", "| Error Detail                |")
    text = text.replace(HLINE + "\n", "", 1)
    text = HLINE + "\n" + text.replace("|\n" + HLINE, "|\n" + "\n".join(
        f"| {'-> ' + name:<27} | {value:<46} |" for name, value in totals.items()) + "\n" + HLINE)
    result = read_text(text)
    row = result["link_samples"].iloc[0]
    assert len(result["link_samples"]) == 1 and bool(row["gpu_total"]) and pd.isna(row["link"])
    assert (row["symbol_errors"], row["effective_errors"], row["symbol_ber"]) == (1520, 4, 1.5e-15)
    assert pd.isna(row["effective_ber"]) and result.warnings == []


def test_status_states_switches_and_the_disabled_note() -> None:
    """D down; X (a link NVML reports down while a GPU is in MIG mode) listed with no state, not judged; on an
    NVSwitch only U and D are ports."""
    result = read_text(_status({0: "UUXX__", 1: "UDUU__"}, {8: "UUDX__XX"}))
    links = result["link_samples"]
    gpus = links[links["link_type"] == "nvlink"].set_index(["gpu", "link"])["link_state"].to_dict()
    assert gpus == {(0, 0): "up", (0, 1): "up", (0, 2): "unknown", (0, 3): "unknown", (1, 0): "up",
                    (1, 1): "down", (1, 2): "up", (1, 3): "up"}
    ports = links[links["link_type"] == "nvswitch"]
    assert ports.set_index("link")["link_state"].to_dict() == {0: "up", 1: "up", 2: "down"}
    assert set(ports["nvswitch"]) == {"8"} and ports["gpu"].isna().all()
    assert warning_lines(result) == [6] and "MIG" in result.warnings[0].message


def test_a_damaged_state_and_a_cut_status_are_said() -> None:
    text = _status({0: "UUUU", 1: "UQUU", 2: "UUUU"})
    cut = text.split("NvSwitches:")[0].rstrip()[:-4] + "\n"  # GPU 2's line stops after two links
    result = read_text(cut)
    links = result["link_samples"].set_index(["gpu", "link"])
    assert (1, 1) not in links.index and links.loc[(1, 2), "link_state"] == "up"
    assert sorted(links.loc[2].index) == [0, 1]
    assert warning_lines(result) == [8, 10]
    assert "'Q' is no link state" in result.warnings[0].message and result.warnings[1].cut


def test_a_gpu_line_with_no_states_after_it_is_a_cut() -> None:
    result = read_text(_status({0: "UUUU"}).split("NvSwitches:")[0] + "    gpuId 1:\n")
    assert links_per_gpu(result["link_samples"]) == {0: [0, 1, 2, 3]}
    assert warning_lines(result) == [7] and result.warnings[0].cut


def test_a_json_output_cut_off_is_said_and_the_one_before_it_kept() -> None:
    whole = (REAL / "dcgmi_nvlink_e_json_h800_1.txt").read_text(encoding="utf-8")
    text = whole + whole.replace('"GPU 0"', '"GPU 1"')[:900]
    result = read_text(text)
    assert links_per_gpu(result["link_samples"]) == {0: list(range(8))}
    assert len(result.warnings) == 1 and result.warnings[0].cut and "does not parse" in result.warnings[0].message


def test_a_value_dcgm_was_not_permitted_to_read_is_said_once_naming_its_line() -> None:
    """`Insf. Permission` is what dcgmi prints for DCGM's NOT_PERMISSIONED blank: the host engine's credentials may
    not read the counter. No value, and one warning for the file at its first line, not silence."""
    text = _errors(2, {0: _four(flit="Insf. Permission", data="Insf. Permission"), 1: _four(replay="Insf. Permission")})
    result = read_text(text)
    rows = result["link_samples"].set_index("link")
    assert pd.isna(rows.loc[0, "crc_flit"]) and pd.isna(rows.loc[1, "replay"]) and rows.loc[1, "crc_flit"] == 0
    said = [w for w in result.warnings if "Insf. Permission" in w.message]
    assert [w.line for w in said] == [6] and len(result.warnings) == 1
    assert "GPU 2 link 0 CRC FLIT Error" in said[0].message and "permission" in said[0].message.split("'")[-1]


def test_a_paste_of_the_status_then_a_json_output_reads_both() -> None:
    """`dcgmi nvlink -s` (every link down) pasted above `dcgmi nvlink -g 0 -e -j`: the states were dropped without a
    word once one line opened a JSON document, and the node read healthy."""
    states = _status({0: "D" * 8, 1: "U" * 8})
    json_paste = (REAL / "dcgmi_nvlink_e_json_h800_1.txt").read_text(encoding="utf-8")
    result = read_text("$ dcgmi nvlink -s\n" + states + "\n" + json_paste)
    links = result["link_samples"].set_index(["gpu", "link"])
    assert links.loc[(0, 3), "link_state"] == "down" and links.loc[(1, 3), "link_state"] == "up"
    assert links.loc[(0, 3), "replay"] == 0  # the JSON's counters on the same row
    assert result.warnings == []


def test_a_date_line_above_a_json_output_times_it() -> None:
    json_paste = (REAL / "dcgmi_nvlink_e_json_h800_1.txt").read_text(encoding="utf-8")
    result = read_text("$ date\nTue Mar  3 10:00:00 UTC 2026\n" + json_paste)
    stamps = set(result["link_samples"]["timestamp"])
    assert stamps == {pd.Timestamp("2026-03-03 10:00:00", tz="UTC")}, stamps


@pytest.mark.parametrize("text", ["Key: Up=U, Down=D, Disabled=X, Not Supported=_\n",
                                  "    gpuId 0:\n        U U U D\n"])
def test_a_status_without_its_title_is_still_claimed(text: str) -> None:
    assert detect.choose(Source.from_text(text)).name == "dcgmi_nvlink"


def test_counter_rows_cut_from_their_headers_are_claimed_and_another_dcgmi_table_is_not() -> None:
    rows = "".join(f"| {'-> ' + name:<27} | {'0':<46} |\n" for name in _four())
    assert detect.choose(Source.from_text(rows)).name == "dcgmi_nvlink"
    health = "| -> 0                      | Failure                                       |\n" * 2
    assert READER.sniff(health) == 0.0  # `dcgmi health -c`: its rows name no NVLink counter


def test_a_gpu_cut_to_one_link_state_is_said_in_the_singular() -> None:
    result = read_text(_status({0: "UUUUUU", 1: "U"}))
    said = [w.message for w in result.warnings if "where the others" in w.message]
    assert said == ["GPU 1: 1 link state where the others have 6; the output looks cut off here"], said


def test_json_outputs_pasted_with_no_newline_between_are_both_read() -> None:
    whole = (REAL / "dcgmi_nvlink_e_json_h800_1.txt").read_text(encoding="utf-8").rstrip("\n")
    result = read_text(whole + whole.split("\n", 2)[2].replace('"GPU 0"', '"GPU 1"') + "\n")
    assert links_per_gpu(result["link_samples"]) == {0: list(range(8)), 1: list(range(8))}
    assert result.warnings == []


@pytest.mark.parametrize("name", ["dcgmi_nvlink_e_json_h800_1.txt", "dcgmi_nvlink_s_e_h800_1.txt"])
def test_an_output_ending_in_its_closing_bracket_or_border_without_a_newline_is_whole(name: str,
                                                                                     tmp_path: Path) -> None:
    """`$(...)` and `echo -n` drop the final newline: a last line that is the JSON's closing `}` (or the table's
    border) was read as cut, the `}` dropped, and the document did not parse: nothing was read. A document cut
    before its end still does not parse and is said."""
    whole = read(REAL / name)
    path = tmp_path / name
    text = (REAL / name).read_text(encoding="utf-8").rstrip("\n")
    path.write_text(text, encoding="utf-8")
    bare = read(path)
    assert not [w for w in bare.warnings if w.cut], bare.warnings
    assert bare["link_samples"].equals(whole["link_samples"].assign(source=bare["link_samples"]["source"]))
    if name.endswith("json_h800_1.txt"):
        path.write_text(text[: text.rindex("}")].rstrip(), encoding="utf-8")
        cut = read(path)
        assert cut["link_samples"].empty and any("does not parse" in w.message for w in cut.warnings)
