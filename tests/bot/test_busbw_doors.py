"""An nccl-tests run's bus bandwidth verdict is the same through `analyze FILE` and through the store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.blocks import diagnosis_blocks, finding_line
from bot.cli import main
from bot.commands.output import NO_PART
from bot.fleet_blocks import offender_line
from diagnostics import offenders_of
from diagnostics.analysis import analyze_tables
from diagnostics.ingest.base import Source
from diagnostics.ingest.nccl_tests import READER
from tests.analysis.test_bandwidth import H100, one_host, tenth
from tests.ingest.helpers import REAL
from tests.shared import answered_exit


def fabric(capsys: pytest.CaptureFixture[str], args: list[str], code: int = 3) -> list[dict[str, Any]]:
    """The answer's fabric findings, where it exits `code` (3 by default: a busbw alone leaves the links unread)."""
    capsys.readouterr()
    got = main(args)
    out = capsys.readouterr().out
    assert got == answered_exit(out) == code
    diagnosis = json.loads(out)
    return [f for f in diagnosis["findings"] if f["ref"]["kind"] == "gpu-fabric"]


def test_the_file_and_the_store_give_the_same_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "nccl.txt"  # the real A100 run with its figure cut to a tenth: below its platform's
    run.write_text(tenth((REAL / "nccl_allreduce_1.txt").read_text()))
    from_file = fabric(capsys, ["analyze", str(run), "--platform", "dgx-a100-8gpu", "--json"])
    store = str(tmp_path / "store")
    assert main(["ingest", str(run), "--store", store]) == 0
    from_store = fabric(capsys, ["analyze", "--store", store, "--node", "a4bae1424041", "--platform", "dgx-a100-8gpu",
                                 "--json"])
    assert [f["severity"] for f in from_file] == ["warning"]
    assert [c["message"] for f in from_file for c in f["crossed"]] == \
        [c["message"] for f in from_store for c in f["crossed"]]
    assert "10% of the 232 GB/s expected of dgx-a100-8gpu" in from_file[0]["crossed"][0]["message"]


def test_a_bus_bandwidth_offends_below_its_limit_in_the_fleet_views() -> None:
    steps = READER.read(Source("nccl.txt", text=tenth((REAL / "nccl_allreduce_1.txt").read_text()))).tables
    diagnosis = analyze_tables(steps, node_id="a4bae1424041", platform="dgx-a100-8gpu")
    [offender] = offenders_of(diagnosis)
    line = offender_line(offender)
    assert "23.2 GB/s < 162 GB/s" in line and ">" not in line.split(";")[0]
    assert "10% of the 232 GB/s expected" in line and "below 70% of it" in line


def test_a_degraded_bus_bandwidth_drafts_no_part(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "nccl.txt"
    run.write_text(tenth((REAL / "nccl_allreduce_1.txt").read_text()))
    capsys.readouterr()
    assert main(["ticket", str(run), "--platform", "dgx-a100-8gpu", "--link", "gpu-fabric"]) == 3
    said = capsys.readouterr()  # the fabric named: its refusal, then why the node's health is unknown
    assert "names no part" in said.err and "p2pBandwidthLatencyTest" in said.err and "replace" not in said.out.lower()
    diagnosis = analyze_tables(READER.read(Source("nccl.txt", text=run.read_text())).tables, node_id="a4bae1424041",
                               platform="dgx-a100-8gpu")
    assert not any("Draft" in str(b.to_dict()) for b in diagnosis_blocks(diagnosis, 1))


def test_a_run_alone_says_its_verdict_and_that_the_links_are_unread(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    text = (REAL / "nccl_allreduce_1.txt").read_text()
    for run, verdict in ((text, "as expected"), (tenth(text), "below its platform's")):
        diagnosis = analyze_tables(READER.read(Source("nccl.txt", text=run)).tables, node_id="a4bae1424041",
                                   platform="dgx-a100-8gpu")
        header = diagnosis_blocks(diagnosis, 1)[0].to_dict()["text"]["text"]
        assert header.endswith(f"bus bandwidth {verdict}, links unread") and "unknown" not in header
    path = tmp_path / "nccl.txt"
    path.write_text(text)
    capsys.readouterr()
    code = main(["analyze", str(path), "--platform", "dgx-a100-8gpu"])
    out = capsys.readouterr().out
    assert code == answered_exit(out) == 3  # a healthy figure reads no link: the node's health is unknown
    [note] = [line for line in out.splitlines() if "232 GB/s at 10 GiB" in line]
    assert note.strip().startswith("note:") and "as expected of a healthy fabric" in note
    path.write_text(tenth(text))
    code = main(["analyze", str(path), "--platform", "dgx-a100-8gpu"])
    out = capsys.readouterr().out
    assert code == answered_exit(out) == 3  # merely warned: still unknown
    [row] = [line for line in out.splitlines() if line.strip().startswith("the GPU-to-GPU")]
    assert row.split()[4] == "-"  # its state: a collective reads none


def test_the_fabrics_slack_line_names_its_figure_not_a_link_state() -> None:
    text = tenth((REAL / "nccl_allreduce_1.txt").read_text())
    diagnosis = analyze_tables(READER.read(Source("nccl.txt", text=text)).tables, node_id="a4bae1424041",
                               platform="dgx-a100-8gpu")
    [line] = [finding_line(f) for f in diagnosis.findings]
    assert "busbw 23.2 GB/s" in line and "state" not in line.split("—")[0]


def test_a_run_with_wrong_values_is_a_fault_that_names_no_part(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    clean, wrong = "469.21      0    68668  250.19  469.10      0", "469.21      5    68668  250.19  469.10      5"
    run = tmp_path / "nccl.txt"
    run.write_text(one_host(H100).replace(clean, wrong))
    capsys.readouterr()
    code = main(["analyze", str(run), "--platform", "hgx-h100-8gpu"])
    out = capsys.readouterr().out
    assert code == answered_exit(out) == 0 and " fault=yes " in out.splitlines()[0]
    assert main(["ticket", str(run), "--platform", "hgx-h100-8gpu", "--rules"]) == NO_PART
    said = capsys.readouterr()
    assert "wrong values" in said.err and "corrupted" in said.err and said.out == ""
    assert "nothing to repair" not in said.err and "slow GPU pair" not in said.err


def test_the_store_reads_a_run_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A dated run's rows come through the store once: no job's rows are read as the node's runs, not as a job's
    too."""
    clean, wrong = "469.21      0    68668  250.19  469.10      0", "469.21      5    68668  250.19  469.10      0"
    run = tmp_path / "nccl.txt"
    run.write_text(one_host(H100).replace(clean, wrong))
    store = str(tmp_path / "store")
    assert main(["ingest", str(run), "--store", store, "--node", "bm-h100-01", "--at", "2026-03-02T10:00:00Z"]) == 0
    found = fabric(capsys, ["analyze", "--store", store, "--node", "bm-h100-01", "--platform", "hgx-h100-8gpu",
                            "--json"], code=0)
    assert "found 5 wrong values" in found[0]["crossed"][0]["message"]


def test_a_sweep_calls_a_node_with_a_run_alone_unjudged_not_silent(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A dated run is a reading of its node in the span: a sweep calls it not judged (its links unread), as
    `analyze` calls its answer incomplete, not a node with no reading in the span."""
    run = tmp_path / "nccl.txt"
    store = str(tmp_path / "store")
    for i, text in enumerate(((REAL / "nccl_allreduce_1.txt").read_text(), tenth((REAL / "nccl_allreduce_1.txt")
                                                                                 .read_text()))):
        run.write_text(text)
        assert main(["ingest", str(run), "--store", store, "--at", f"2026-03-0{i + 2}T10:00:00Z"]) == 0
        capsys.readouterr()
        assert main(["sweep", "--store", store, "--json"]) == 3  # no platform: the run is said, not judged
        swept = json.loads(capsys.readouterr().out)
        assert swept["silent"] == [] and swept["unjudged"] == ["a4bae1424041"]
        assert "bus bandwidth only, no link reading" in swept["incomplete_reasons"][0]


def test_the_fabrics_slack_line_says_its_wrong_values() -> None:
    clean, wrong = "469.21      0    68668  250.19  469.10      0", "469.21      5    68668  250.19  469.10      0"
    text = one_host(H100).replace(clean, wrong)
    diagnosis = analyze_tables(READER.read(Source("nccl.txt", text=text)).tables, node_id="bm-h100-01",
                               platform="hgx-h100-8gpu")
    [line] = [finding_line(f) for f in diagnosis.findings]
    measures = line.split("—")[0]
    assert "wrong values in its results" in measures and "measured by a collective" not in line
