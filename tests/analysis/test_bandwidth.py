"""nccl-tests all_reduce bus bandwidth judged against the node's platform: healthy, degraded, not judged."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from diagnostics import ComponentKind, Diagnosis, Finding
from diagnostics.analysis import analyze_tables
from diagnostics.analysis.bandwidth import BUSBW_ACTION
from diagnostics.config import load_thresholds
from diagnostics.config.busbw import default_busbw
from diagnostics.config.thresholds import BUSBW_RULE
from diagnostics.enums import Severity
from diagnostics.ingest.base import Source
from diagnostics.ingest.nccl_tests import READER
from tests.ingest.helpers import REAL

A100 = (REAL / "nccl_allreduce_1.txt").read_text()
HOST = "a4bae1424041"


def tenth(text: str) -> str:
    """The real A100 run with its busbw cut to a tenth, each cell the width it had (the columns stay aligned)."""
    cuts = {"232.04": " 23.20", "231.54": " 23.15", "231.793": "23.1793"}
    for was, cut in cuts.items():
        assert text.count(was) == 1
        text = text.replace(was, cut)
    return text


def diagnosed(text: str, node: str = HOST, platform: str | None = None) -> Diagnosis:
    tables = READER.read(Source("nccl.txt", text=text)).tables
    return analyze_tables(tables, node_id=node, platform=platform)


def fabric(d: Diagnosis) -> list[Finding]:
    return [f for f in d.findings if f.ref.kind is ComponentKind.GPU_FABRIC]


def test_real_a100_run_is_healthy_on_its_platform() -> None:
    d = diagnosed(A100, platform="dgx-a100-8gpu")
    [f] = fabric(d)
    assert f.severity is Severity.OK and f.crossed == []
    [said] = f.evidence
    assert "232 GB/s at 10 GiB messages, 100% of the 232 GB/s expected of dgx-a100-8gpu" in said
    assert said not in d.warnings  # a healthy figure is no warning: its finding says it
    assert not d.repair_action.startswith("Check the GPU-to-GPU paths")


def test_a_tenth_of_the_figure_is_degraded() -> None:
    d = diagnosed(tenth(A100), platform="dgx-a100-8gpu")
    [f] = fabric(d)
    expected = default_busbw().of("dgx-a100-8gpu")
    assert expected is not None
    [crossing] = f.crossed
    fraction = load_thresholds().setting("busbw_degraded_fraction")
    assert f.severity is Severity.WARNING and crossing.rule == BUSBW_RULE
    assert crossing.rate_per_hour == 23.2 and crossing.above == pytest.approx(expected.busbw_gbps * fraction)
    assert "23.2 GB/s at 10 GiB messages, 10% of the 232 GB/s expected of dgx-a100-8gpu" in crossing.message
    assert "`nvidia-smi nvlink -s`" in crossing.message and "`nvidia-smi topo -m`" in crossing.message
    assert f.link is None and f.gpu is None  # the node's fabric as one: no link named
    assert d.repair_action == BUSBW_ACTION.format(node=HOST)


def test_the_average_alone_is_not_judged() -> None:
    text = "\n".join(line for line in tenth(A100).splitlines() if not line.startswith(" 10737418240"))
    d = diagnosed(text, platform="dgx-a100-8gpu")
    assert fabric(d) == []
    [said] = [w for w in d.warnings if "all_reduce bus bandwidth" in w]
    assert "23.2 GB/s (the run's average)" in said and "not judged" in said


H100 = (REAL / "nccl_allreduce_3.txt").read_text()
H100_HOST = "bm-h100-01"


def one_host(text: str = H100) -> str:
    """The real two-host H100 run as its first host's alone (its second host's Rank lines dropped)."""
    return "\n".join(line for line in text.splitlines() if "on bm-h100-02 device" not in line)


def stopped_at(text: str, size: int) -> str:
    """The run cut after its `size` row, as `-e size` stops it."""
    return "\n".join(line for line in text.splitlines()
                     if not line[:13].strip().isdigit() or int(line[:13]) <= size)


def h100_said(text: str, platform: str = "hgx-h100-8gpu") -> tuple[list[Finding], str]:
    d = diagnosed(text, node=H100_HOST, platform=platform)
    found = fabric(d)
    return found, " ".join([*(w for w in d.warnings if "all_reduce bus bandwidth" in w),
                            *(e for f in found for e in f.evidence)])


def test_a_healthy_one_host_h100_run_is_judged_at_its_largest_size() -> None:
    [f], said = h100_said(one_host())
    assert f.severity is Severity.OK and "469 GB/s at 16 GiB messages, 98% of the 480 GB/s" in said


def test_a_run_that_stopped_at_a_small_size_is_not_judged() -> None:
    found, said = h100_said(stopped_at(one_host(), 1 << 20))
    assert found == [] and "at 1 MiB messages" in said and "not judged" in said and "-e 8G" in said
    [f], _ = h100_said(stopped_at(one_host(), default_busbw().judged_from_bytes))
    assert f.severity is Severity.OK  # from the size the file names on, judged


def test_wrong_values_fail_the_fabric_whatever_the_bandwidth() -> None:
    clean, wrong = "469.21      0    68668  250.19  469.10      0", "469.21      5    68668  250.19  469.10      5"
    text = one_host().replace(clean, wrong)
    text = text.replace("# Out of bounds values : 0 OK", "# Out of bounds values : 10 FAILED")
    [f], said = h100_said(text)
    assert f.severity is Severity.FAILING and "as expected" not in said
    assert "found 10 wrong values" in f.crossed[0].message
    action = diagnosed(text, node=H100_HOST, platform="hgx-h100-8gpu").repair_action
    assert action.startswith(f"Drain {H100_HOST}: a collective's results") and "nvlink -e" in action, action
    assert "no component is localized" not in action  # the node's action says what finds the link, not "investigate"


def test_a_run_on_fewer_gpus_than_the_board_is_not_judged() -> None:
    text = "\n".join(line for line in one_host().splitlines() if not re.search(r"Rank  [2-7] ", line))
    found, said = h100_said(text)
    assert found == [] and "used 2 GPUs of the node's 8" in said


def test_a_run_on_another_gpu_than_the_platforms_is_not_judged() -> None:
    d = diagnosed(A100, platform="hgx-h100-8gpu")
    assert fabric(d) == []
    assert any("NVIDIA A100-SXM4-40GB, not the H100 of hgx-h100-8gpu" in w for w in d.warnings)


def test_two_one_host_runs_in_one_file_are_two_runs() -> None:
    first = one_host()
    second = first.replace("bm-h100-01", "bm-h100-02")
    for host in ("bm-h100-01", "bm-h100-02"):
        d = diagnosed(first + "\n" + second, node=host, platform="hgx-h100-8gpu")
        [f] = fabric(d)
        assert f.severity is Severity.OK and not any("2 hosts" in w for w in d.warnings)


def test_the_newest_run_of_a_host_is_judged() -> None:
    good = one_host()
    bad = good.replace("469.21", " 46.92").replace("469.10", " 46.91")  # the later run, a tenth
    [f], _ = h100_said(good + "\n" + bad)
    assert f.severity is Severity.WARNING and "46.9 GB/s" in f.crossed[0].message
    [f], _ = h100_said(bad + "\n" + good)
    assert f.severity is Severity.OK


def test_a_racks_multi_tray_run_does_not_cross_the_network() -> None:
    text = H100.replace("NVIDIA H100 80GB HBM3", "NVIDIA GB200")
    d = diagnosed(text, node=H100_HOST, platform="gb200-nvl72-compute-tray")
    [said] = [w for w in d.warnings if "all_reduce bus bandwidth" in w]
    assert "the rack's NVLink domain" in said and "network" not in said


def test_unknown_platform_says_the_figure_without_a_verdict() -> None:
    d = diagnosed(tenth(A100))
    assert fabric(d) == []
    [said] = [w for w in d.warnings if "all_reduce bus bandwidth" in w]
    assert "23.2 GB/s at 10 GiB messages" in said and "not judged" in said and "--platform" in said


def test_a_platform_with_no_figure_is_not_judged() -> None:
    assert default_busbw().of("pcie-8gpu") is None
    d = diagnosed(tenth(A100), platform="pcie-8gpu")
    assert fabric(d) == [] and any("no expected all_reduce figure is known for pcie-8gpu" in w for w in d.warnings)


def test_a_run_over_two_hosts_judges_no_nvlink() -> None:
    text = (REAL / "nccl_allreduce_3.txt").read_text()
    for host in ("bm-h100-01", "bm-h100-02"):
        d = diagnosed(text, node=host, platform="hgx-h100-8gpu")
        assert fabric(d) == []
        [said] = [w for w in d.warnings if "all_reduce bus bandwidth" in w]
        assert "469 GB/s at 16 GiB messages over 2 hosts (bm-h100-01, bm-h100-02)" in said
        assert "crosses the network" in said


def test_a_dated_run_is_newer_than_an_undated_one() -> None:
    """An undated run states no time, so any window holds it: a dated run of the host is judged before it."""
    good, bad = one_host(), one_host().replace("469.21", " 46.92").replace("469.10", " 46.91")
    steps = READER.read(Source("nccl.txt", text=good + "\n" + bad)).tables["step_samples"]
    first = steps["run"] == steps["run"].iloc[0]
    steps.loc[first, "timestamp"] = pd.Timestamp("2026-09-01T00:00:00Z")  # the healthy run, read first, dated
    [f] = fabric(analyze_tables({"step_samples": steps}, node_id=H100_HOST, platform="hgx-h100-8gpu"))
    assert f.severity is Severity.OK
