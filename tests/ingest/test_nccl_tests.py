"""nccl-tests all_reduce_perf output: busbw per size, in-place and out-of-place, the average, the layouts."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from diagnostics.ingest.base import Source
from diagnostics.ingest.nccl_tests import READER
from tests.ingest.helpers import REAL, read, read_text, warning_lines


def test_a100_single_size() -> None:
    result = read(REAL / "nccl_allreduce_1.txt")
    steps = result["step_samples"]
    sized = steps[steps["size_bytes"].notna()].set_index("in_place")
    assert sized.loc[False, "busbw_gbps"] == 232.04 and sized.loc[True, "busbw_gbps"] == 231.54
    assert sized.loc[False, "collective_time_us"] == 80978 and sized.loc[False, "algbw_gbps"] == 132.60
    assert set(steps["size_bytes"].dropna()) == {10737418240}
    avg = steps[steps["size_bytes"].isna()]
    assert avg["busbw_gbps"].tolist() == [231.793] and avg["in_place"].isna().all()
    assert set(steps["collective"]) == {"all_reduce"} and set(steps["node_ids"]) == {"a4bae1424041"}
    assert result.warnings == []


def test_h100_two_hosts_sweep_with_mpi_noise() -> None:
    result = read(REAL / "nccl_allreduce_3.txt")
    steps = result["step_samples"]
    sized = steps[steps["size_bytes"].notna()]
    assert len(sized) == 64 and sized["size_bytes"].nunique() == 32
    top = sized[sized["size_bytes"] == 17179869184].set_index("in_place")["busbw_gbps"]
    assert (top[False], top[True]) == (469.21, 469.10)
    assert steps.loc[steps["size_bytes"].isna(), "busbw_gbps"].tolist() == [139.56]
    assert set(steps["node_ids"]) == {"bm-h100-01,bm-h100-02"}
    assert set(steps["collective"]) == {"all_reduce"}  # from the continued mpirun command line
    assert warning_lines(result) == [12, 25]  # the MPI warning block and MPI's help-message lines
    assert "lines 12-21" in result.warnings[0].message and "lines 25-26" in result.warnings[1].message


OLD_LAYOUT = """#                                                     out-of-place                       in-place
#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        262144   float     sum    60.21   17.42   30.48  4e-07    59.88   17.51   30.64  4e-07
    33554432       8388608   float     sum    395.2   84.90  148.58  4e-07    394.1   85.14  149.00
"""


def test_old_layout_and_a_cut_row() -> None:
    result = read_text(OLD_LAYOUT)
    steps = result["step_samples"]
    assert steps["busbw_gbps"].tolist() == [30.48, 30.64, 148.58, 149.00]
    assert steps["collective"].isna().all()
    assert warning_lines(result) == [None]  # no command line names the collective; the row was whole enough
    cut = read_text(OLD_LAYOUT.rstrip()[:-20])
    assert cut["step_samples"]["busbw_gbps"].tolist()[-1] == 148.58
    assert 5 in warning_lines(cut)


def test_rows_without_a_header_use_the_known_layouts() -> None:
    row = "  1024   256  float  sum  -1  29.75  0.03  0.06  0  26.65  0.04  0.07  0"
    steps = read_text(f"$ ./all_reduce_perf -b 1K\n{row}\n", fmt="nccl_tests")["step_samples"]
    assert steps["busbw_gbps"].tolist() == [0.06, 0.07] and steps["collective"].tolist() == ["all_reduce"] * 2


def test_garbage_row_another_format_and_empty() -> None:
    result = read_text(OLD_LAYOUT.replace("    33554432", "3355 garbage\n    33554432"), fmt="nccl_tests")
    assert 5 in warning_lines(result) and len(result["step_samples"]) == 4
    assert READER.read(Source.from_path(REAL / "nvlink_s_a100_1.txt")).rows["step_samples"] == 0
    assert READER.read(Source.from_text("")).empty
    assert pd.api.types.is_bool_dtype(result["step_samples"]["in_place"])


# superbench's parser test (tests/benchmarks/micro_benchmarks/test_cuda_nccl_bw_performance.py) reads each of its
# logs for these sizes' time, algbw and busbw, and states alltoall's at 8 GiB.
SUPERBENCH_SIZES = {8589934592, 4294967296, 2147483648, 1073741824, 536870912, 32}
SUPERBENCH = {  # fixture -> (the layout's columns before the figures, the log's `Avg bus bandwidth`)
    "nccl_alltoall_superbench_1": ("size count type redop", 58.6481),  # redop empty in every row
    "nccl_allgather_superbench_1": ("size count type", 58.2651),
    "nccl_broadcast_superbench_1": ("size count type root", 64.8653),
    "nccl_reduce_superbench_1": ("size count type redop root", 65.018),
    "nccl_reducescatter_superbench_1": ("size count type redop", 60.168),
}


@pytest.mark.parametrize("name", sorted(SUPERBENCH))
def test_every_row_of_each_collectives_table_is_read(name: str) -> None:
    path = REAL / f"{name}.txt"
    header = next(line for line in path.read_text().splitlines() if "busbw" in line and "size" in line)
    assert header.split()[1:header.split().index("time")] == SUPERBENCH[name][0].split()
    result = read(path)
    steps = result["step_samples"]
    sized = steps[steps["size_bytes"].notna()]
    rows = sum(1 for line in path.read_text().splitlines() if line[:1] == " " and line.strip()[:1].isdigit())
    assert rows == 34 and len(sized) == 2 * rows  # each size's out-of-place and in-place figures: none dropped
    assert sized.groupby("in_place")["size_bytes"].apply(set).to_dict() == {
        False: set(sized["size_bytes"]), True: set(sized["size_bytes"])}
    assert set(sized["size_bytes"]) >= SUPERBENCH_SIZES
    assert sized[["collective_time_us", "algbw_gbps", "busbw_gbps"]].notna().all().all()
    assert steps.loc[steps["size_bytes"].isna(), "busbw_gbps"].tolist() == [SUPERBENCH[name][1]]
    assert set(steps["node_ids"]) == {"localhost"}
    assert warning_lines(result) == [None]  # no command line names the collective (superbench passes it apart)
    columns = SUPERBENCH[name][0].split()  # a column the layout lacks, or a cell left empty, reads as none
    assert set(sized["data_type"]) == {"float"}
    assert set(sized["redop"].dropna()) == ({"sum"} if "redop" in columns and "alltoall" not in name else set())
    assert set(sized["root"].dropna()) == ({0} if "root" in columns else set())


def test_alltoall_at_8_gib_as_superbench_states_it() -> None:
    sized = read(REAL / "nccl_alltoall_superbench_1.txt")["step_samples"].dropna(subset=["size_bytes"])
    top = sized[sized["size_bytes"] == 8589934592].set_index("in_place")
    figures = ["collective_time_us", "algbw_gbps", "busbw_gbps"]
    assert top.loc[False, figures].tolist() == [33508.0, 256.36, 224.31]
    assert top.loc[True, figures].tolist() == [33234.0, 258.47, 226.16]


def test_sendrecv_in_place_rows_with_no_check_are_read() -> None:
    """nccl-tests #214: sendrecv's in-place `#wrong` is N/A; its figures are there all the same."""
    result = read(REAL / "nccl_sendrecv_a40_1.txt")
    steps = result["step_samples"]
    assert len(steps) == 10 and steps["in_place"].sum() == 5
    at = steps[steps["size_bytes"] == 4096].set_index("in_place")
    assert at.loc[True, ["collective_time_us", "busbw_gbps"]].tolist() == [30.69, 0.13]
    assert set(steps["node_ids"]) == {"gpu23,gpu24"}
    assert warning_lines(result) == [None]


def test_all_gather_in_bfloat16_named_by_its_command() -> None:
    """nccl #1435: all_gather_perf -d bfloat16 on GPUs 0 and 1."""
    result = read(REAL / "nccl_allgather_bf16_h100_1.txt")
    steps = result["step_samples"]
    assert set(steps["collective"]) == {"all_gather"} and len(steps) == 14
    assert set(steps["data_type"]) == {"bfloat16"} and steps[["redop", "root"]].isna().all().all()  # none, -1
    last = steps[steps["size_bytes"] == 117440512].set_index("in_place")["busbw_gbps"]
    assert (last[False], last[True]) == (119.64, 140.24)
    assert warning_lines(result) == [3]  # `export CUDA_VISIBLE_DEVICES=0,1`: shell, no nccl-tests output


def test_rows_whose_header_is_above_the_paste_named_by_the_concluded_line() -> None:
    """rccl #2075: alltoall rows without their header, then `# Collective test concluded: alltoall_perf`."""
    result = read(REAL / "nccl_alltoall_rccl_noheader_1.txt")
    steps = result["step_samples"]
    assert set(steps["collective"]) == {"alltoall"}
    sized = steps[steps["size_bytes"].notna()]
    assert len(sized) == 20 and sized["size_bytes"].max() == 134217728
    assert sized.set_index(["size_bytes", "in_place"]).loc[(134217728, True), "busbw_gbps"] == 6.34
    assert steps.loc[steps["size_bytes"].isna(), "busbw_gbps"].tolist() == [2.38156]
    assert result.warnings == []


ALIGNED = """$ ./alltoall_perf -b 8 -e 16 -g 8
#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
           8             2   float             1.63    0.00    0.00    N/A     1.38    0.00    0.00    N/A
"""


def test_an_empty_cell_found_by_position_or_from_the_right_when_the_paste_lost_its_spaces() -> None:
    kept = read_text(ALIGNED)["step_samples"]
    assert kept["collective_time_us"].tolist() == [1.63, 1.38] and set(kept["collective"]) == {"alltoall"}
    squeezed = "\n".join(" ".join(line.split()) if line[:1] == " " else line for line in ALIGNED.splitlines())
    again = read_text(squeezed)  # as nccl-tests #280 pasted its rows: no leading spaces, single ones between
    assert again["step_samples"]["collective_time_us"].tolist() == [1.63, 1.38] and again.warnings == []
    stray = read_text(ALIGNED.replace("float    ", "float x y "))  # more cells than columns: said, not guessed
    assert stray["step_samples"].empty and warning_lines(stray) == [3]


@pytest.mark.parametrize("name", ["nccl_alltoall_superbench_1", "nccl_broadcast_superbench_1",
                                  "nccl_allreduce_3"])
def test_tabs_between_cells_read_as_the_aligned_table(name: str) -> None:
    """A copy that keeps columns as tabs loses their widths: the cells are told apart by their values (alltoall's
    empty redop cell once put each size under `count`, and its row was dropped unsaid)."""
    text = (REAL / f"{name}.txt").read_text()
    tabbed = "\n".join(re.sub(r"(?<=\S) {2,}(?=\S)", "\t", line) for line in text.splitlines())
    assert "\t" in tabbed
    aligned, again = read_text(text), read_text(tabbed)
    assert again["step_samples"].drop(columns="source").equals(aligned["step_samples"].drop(columns="source"))
    assert warning_lines(again) == warning_lines(aligned)


@pytest.mark.parametrize("tabs", ["leading", "between"])
def test_a_cut_row_with_tabs_reads_as_the_aligned_cut_row(tabs: str, tmp_path: Path) -> None:
    """The last row cut before its in-place #wrong: positions from the size again (tabs before it), or the cells
    told apart from the left (tabs between them); never from the right, which had read #wrong as a time."""
    text = (REAL / "nccl_allgather_bf16_h100_1.txt").read_text()
    cut = text[: text.index("214.95  107.48") + len("214.95  107.48  ")]
    if tabs == "leading":
        tabbed = re.sub(r"(?m)^    ", "\t", cut)
    else:
        tabbed = "\n".join(re.sub(r"(?<=\S) {2,}(?=\S)", "\t", line) for line in cut.split("\n"))
    (tmp_path / "aligned.txt").write_text(cut)
    (tmp_path / "tabbed.txt").write_text(tabbed)
    aligned, again = read(tmp_path / "aligned.txt")["step_samples"], read(tmp_path / "tabbed.txt")["step_samples"]
    last = aligned[aligned["size_bytes"] == 33554432].set_index("in_place")["collective_time_us"]
    assert last.to_dict() == {False: 183.0, True: 156.1}
    where = ["source", "run"]  # the file and line each names: two files here
    assert again.drop(columns=where).equals(aligned.drop(columns=where))


@pytest.mark.parametrize(("old", "new"), [
    ("  busbw #wrong     time", "  busbw #wrong     tile"),  # the in-place time had gone: its algbw and busbw
    ("#       size", "#       sime"),                         # overwrote the out-of-place ones, one row lost
    ("  algbw   busbw #wrong     time", "  algbw   busbx #wrong     time"),
    ("#       size", "#!      size"),  # a cell before size: the count had been read as the size
])
def test_a_damaged_header_is_said_and_its_rows_read_by_the_printed_layouts(old: str, new: str) -> None:
    text = (REAL / "nccl_allreduce_1.txt").read_text()
    assert old in text
    result = read_text(text.replace(old, new, 1))
    damaged = next(w for w in set(new.split()) - set(old.split()))
    said = "the header's first column is '!', not size" if damaged == "#!" else \
        f"header column {damaged!r} is one letter from"
    assert said in str(result.warnings)
    whole = read_text(text)["step_samples"]
    assert result["step_samples"].drop(columns="source").equals(whole.drop(columns="source"))


@pytest.mark.parametrize("damaged", ["# Avg bus bandwidth    ; 231.793", "# Avg bus bandwixth    : 231.793"])
def test_a_damaged_average_line_is_said(damaged: str) -> None:
    text = (REAL / "nccl_allreduce_1.txt").read_text()
    result = read_text(text.replace("# Avg bus bandwidth    : 231.793", damaged, 1))
    assert f"{damaged!r} is not the `# Avg bus bandwidth : <GB/s>` line" in str(result.warnings)
    assert result["step_samples"]["size_bytes"].notna().all()  # no average read


@pytest.mark.parametrize(("name", "new", "said"), [
    ("nccl_alltoall_superbench_1", "67108864 ! float", "type = '!' is no data type nccl-tests prints; "
                                                         "redop = 'float' is no reduction"),
    ("nccl_reducescatter_superbench_1", "67108864   float     s!m", "redop = 's!m' is no reduction"),
])
def test_a_cell_that_is_no_type_or_reduction_is_said_and_the_rows_figures_kept(name: str, new: str,
                                                                               said: str) -> None:
    text = (REAL / f"{name}.txt").read_text()
    line = next(i for i, row in enumerate(text.splitlines(), 1) if row.startswith("  2147483648      67108864"))
    old = re.search(r"67108864 +float(?: +sum)?", text.splitlines()[line - 1])
    assert old is not None and len(old[0]) == len(new)  # a flipped byte: every cell where it was
    result, whole = read_text(text.replace(old[0], new, 1)), read(REAL / f"{name}.txt")
    assert said in str(result.warnings) and line in warning_lines(result)
    rows = result["step_samples"][result["step_samples"]["source"].str.endswith(f":{line}")]
    assert len(rows) == 2 and rows[["data_type", "redop"]].isna().all().all()  # out of place: not read
    figures = ["size_bytes", "collective_time_us", "algbw_gbps", "busbw_gbps"]
    assert rows[figures].reset_index(drop=True).equals(
        whole["step_samples"].loc[rows.index, figures].reset_index(drop=True))


def _util_cu(fields: str, *values: object) -> str:
    """A line as nccl-tests' src/util.cu (2.19.6) prints it: its printf formats, in Python's % spelling."""
    return fields.replace("%*s", "%s") % values


def test_the_newest_layouts_cputime_timestamps_and_per_iteration_columns() -> None:
    head = "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s"
    header = _util_cu(head, "size", "count", "type", "redop", "root", "cputime", "algbw", "busbw", "#wrong",
                      "cputime", "algbw", "busbw", "#wrong", f"{'timestamp':>19}")
    row = (_util_cu("%12li  %12li  %8s  %6s  %6s", 1048576, 262144, "float", "sum", "    -1")
           + _util_cu("  %7s  %6s  %6s  %6g", "  28.15", " 37.25", " 65.19", 0)
           + _util_cu("  %7s  %6s  %6s  %6g", "  27.52", " 38.10", " 66.67", 0) + "  2026-07-09 15:52:13")
    result = read_text(f"$ ./all_reduce_perf -b 1M -e 1M -C 1 -S 1\n{header}\n{row}\n")
    steps = result["step_samples"]
    assert steps["busbw_gbps"].tolist() == [65.19, 66.67] and steps["collective_time_us"].tolist() == [28.15, 27.52]
    assert steps["timestamp"].astype(str).tolist() == ["2026-07-09 15:52:13+00:00"] * 2
    assert [w.message for w in result.warnings] == [
        "nccl-tests writes its timestamps in the host's local time and states no zone; read as UTC"]
    per_iter = ("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s"
                "  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s")
    header = _util_cu(per_iter, "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong",
                      "i_min", "i_max", "i_p99", "i_cv%", "time", "algbw", "busbw", "#wrong", "i_min", "i_max",
                      "i_p99", "i_cv%")
    body = "  %7s  %6s  %6s  %6g  %7s  %7s  %7s  %7s"
    row = (_util_cu("%12li  %12li  %8s  %6s  %6s", 1048576, 262144, "float", "sum", "    -1")
           + _util_cu(body, "28.15", "37.25", "65.19", 0, "27.01", "30.50", "30.12", "2.10")
           + _util_cu(body, "27.52", "38.10", "66.67", 0, "26.90", "29.80", "29.70", "1.95"))
    steps = read_text(f"{header}\n{row}\n", fmt="nccl_tests")["step_samples"]
    assert steps["busbw_gbps"].tolist() == [65.19, 66.67] and steps["algbw_gbps"].tolist() == [37.25, 38.10]


def test_a_trace_replay_row_has_in_place_figures_only_and_tagged_lines_are_read() -> None:
    header = ("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw"
              "   busbw #wrong")
    row = "     1048576        262144     float     sum      -1" + " " * 32 + "    27.52   38.10   66.67      0"
    steps = read_text(f"$ ./all_reduce_perf\n{header}\n{row}\n")["step_samples"]
    assert steps["in_place"].tolist() == [True] and steps["busbw_gbps"].tolist() == [66.67]
    tagged = read_text("[1,0]<stdout>:" + "\n[1,0]<stdout>:".join(["$ ./all_reduce_perf", header, row.replace(
        " " * 32, "    28.15   37.25   65.19      0")]), fmt="nccl_tests")["step_samples"]
    assert tagged["busbw_gbps"].tolist() == [65.19, 66.67]


def test_an_output_cut_before_its_results_says_so_where_it_read_nothing() -> None:
    """Cut after its `Rank` lines, a run read nothing and said only that its last line was cut."""
    text = (REAL / "nccl_allreduce_1.txt").read_text()
    head = text[:text.index("#  Rank  3")]
    result = read_text(head, "nccl_tests")
    assert result["step_samples"].empty
    said = [w.message for w in result.warnings if "results table" in w.message]
    assert said == ["the run's header (1 host) is read, but the output ends before any row of its results table or "
                    "its `# Avg bus bandwidth` line (cut off?): no bandwidth is read"]
    assert not [w for w in read(REAL / "nccl_allreduce_1.txt").warnings if "results table" in w.message]


def test_a_row_cut_before_its_figures_is_said_to_be_dropped_whole(tmp_path: Path) -> None:
    """A row cut inside its type cell ('bfloa') was said to lose 'its last part' only, while the whole row was
    dropped: the warning now says the row is not read."""
    head = ("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
            "busbw #wrong\n")
    whole = ("    16777216       4194304  bfloat16    none      -1    108.8  154.20   77.10      0    98.19  170.86   "
             "85.43      0\n")
    path = tmp_path / "cut.txt"
    path.write_text(head + whole + "    83886080      20971520  bfloa", encoding="utf-8")
    result = READER.read(Source.from_path(path))
    assert sorted(result["step_samples"]["size_bytes"]) == [16777216, 16777216]
    said = [w.message for w in result.warnings if w.line == 3]
    assert len(said) == 1 and said[0].endswith("the row is not read") and "last part" not in said[0]


def test_each_run_names_its_own_hosts_gpus_device_and_wrong_values() -> None:
    """Two one-host runs pasted together stay two runs; a run's GPUs are its Rank lines; #wrong and the
    out-of-bounds total are read."""
    first = "\n".join(line for line in (REAL / "nccl_allreduce_3.txt").read_text().splitlines()
                      if "on bm-h100-02 device" not in line)
    second = first.replace("bm-h100-01", "bm-h100-02").replace("# Out of bounds values : 0 OK",
                                                               "# Out of bounds values : 7 FAILED")
    steps = read_text(first + "\n" + second)["step_samples"]
    runs = steps.groupby("run", sort=False)
    assert runs["node_ids"].unique().map(list).tolist() == [["bm-h100-01"], ["bm-h100-02"]]
    assert runs["gpus"].max().tolist() == [8, 8]
    assert set(steps["gpu_name"]) == {"NVIDIA H100 80GB HBM3"}
    assert runs["wrong_values"].max().tolist() == [0, 7]


def test_a_wrong_count_that_is_no_number_is_said_not_read_as_unchecked() -> None:
    """`#wrong` is a count (N/A: not checked, -c 0); an old layout's `error` is the largest error (`4e-07`), no count
    either; a damaged cell (`inf`, a word) is said with its line, never taken silently for a run not checked."""
    header = ("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
              "busbw #wrong\n")
    row = "     2097152    262144   float    none   -1    191.3   10.96    5.48   {}    194.1   10.80    5.40    N/A\n"
    for cell, said in (("0", False), ("N/A", False), ("inf", True), ("lots", True)):
        result = read_text(header + row.format(cell), fmt="nccl_tests")
        warned = [w.message for w in result.warnings if "#wrong (out-of-place)" in w.message]
        assert warned == ([f"#wrong (out-of-place) = {cell!r}: neither a count of wrong values nor an error; not "
                           "read"] if said else []), (cell, result.warnings)
        first = result["step_samples"]["wrong_values"].iloc[0]
        assert first == 0 if cell == "0" else pd.isna(first), (cell, first)
    assert not [w for w in read_text(OLD_LAYOUT).warnings if "#wrong" in w.message]


def test_an_out_of_bounds_count_past_any_number_is_said_not_a_traceback() -> None:
    """`# Out of bounds values : 18446744073709551616` (a digit run past 64 bits) raised OverflowError when the
    run's rows were written; it is said with its line, and the run's rows are kept."""
    text = (REAL / "nccl_alltoall_rccl_noheader_1.txt").read_text(encoding="utf-8")
    result = read_text(text.replace("Out of bounds values : 0 OK", "Out of bounds values : 18446744073709551616 OK"))
    assert len(result["step_samples"]) == len(read_text(text)["step_samples"])
    assert [w for w in result.warnings if w.message.startswith("Out of bounds values = '18446744073709551616'")]
