"""nccl-tests all_reduce bus bandwidth judged against the node's platform: healthy, degraded, not judged."""

from __future__ import annotations

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
    assert said in d.warnings  # said where every door shows it
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


def test_the_average_is_judged_where_no_size_row_was_read() -> None:
    text = "\n".join(line for line in tenth(A100).splitlines() if not line.startswith(" 10737418240"))
    [f] = fabric(diagnosed(text, platform="dgx-a100-8gpu"))
    assert f.severity is Severity.WARNING and "23.2 GB/s (the run's average)" in f.crossed[0].message


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
