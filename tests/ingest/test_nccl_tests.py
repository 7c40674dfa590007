"""nccl-tests all_reduce_perf output: busbw per size, in-place and out-of-place, the average, the layouts."""

from __future__ import annotations

import pandas as pd

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
