"""A node's own `nvidia-smi topo -m` counting fewer NVLinks on a GPU than its platform has is a link down: judged,
not only warned, whether the platform was fitted to the description or named."""

from __future__ import annotations

from pathlib import Path

from diagnostics.analysis.described import described_short
from diagnostics.enums import Severity
from diagnostics.ingest.base import Source
from diagnostics.ingest.detect import read
from diagnostics.service import Request, diagnose, files_source
from diagnostics.topology import platform_graph
from tests.conftest import FIXTURES

REAL = FIXTURES / "real"


def switched(gpus: int, nv: int, short: dict[int, int] | None = None) -> str:
    """A switched board's `topo -m` as nvidia-smi prints it: a pair through the switches shows the fewer of its two
    GPUs' NVLinks."""
    have = {g: (short or {}).get(g, nv) for g in range(gpus)}
    head = "        " + "".join(f"GPU{i:<5}" for i in range(gpus)) + "CPU Affinity    NUMA Affinity   GPU NUMA ID\n"
    rows = "".join(f"GPU{i}    " + "    ".join(" X  " if i == j else f"NV{min(have[i], have[j])}"
                                              for j in range(gpus)) + f"    0-47    {i * 2 // gpus}               N/A\n"
                   for i in range(gpus))
    return head + rows


def answer(tmp_path: Path, text: str, platform: str | None = None, name: str = "topo.txt"):  # type: ignore[no-untyped-def]
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    source, node, _ = files_source([path], node="a100-7")
    return diagnose(source, Request(node=node, platform=platform)).diagnosis


def test_a_gpu_short_of_its_platform_s_nvlinks_is_a_link_down(tmp_path: Path) -> None:
    got = answer(tmp_path, switched(8, 12, {3: 11}))
    assert got.platform == "dgx-a100-8gpu" and got.fault_detected
    (finding,) = [f for f in got.findings if f.severity is not Severity.OK]
    assert (finding.gpu, finding.link, finding.severity) == (3, None, Severity.DOWN)
    assert "GPU 3 with 11 NVLinks where dgx-a100-8gpu has 12" in finding.crossed[0].message
    assert got.localization is not None and got.localization.gpu == 3
    assert "nvidia-smi nvlink -s -i 3" in got.repair_action
    assert "DCGM figures are totals" not in got.repair_action  # no counter was read
    named = answer(tmp_path, switched(8, 12, {3: 11}), platform="dgx-a100-8gpu")
    assert named.fault_detected and named.localization is not None and named.localization.gpu == 3


def test_a_whole_board_reads_clean_and_a_platform_that_does_not_fit_is_said_not_judged(tmp_path: Path) -> None:
    assert not answer(tmp_path, switched(8, 12)).fault_detected
    wrong = answer(tmp_path, switched(8, 12), platform="hgx-h100-8gpu")
    assert not wrong.fault_detected
    assert any("every GPU with 12 NVLinks where hgx-h100-8gpu has 18" in w for w in wrong.warnings)


def test_a_direct_pair_short_of_its_nvlinks_is_that_pair_s_link(tmp_path: Path) -> None:
    """The DGX-1's real matrix with GPU 0 - GPU 3 at NV1 where the hybrid cube-mesh joins them by two."""
    lines = (REAL / "topo_m_dgx1_v100_1.txt").read_text(encoding="utf-8").splitlines()
    cells = [line.split("\t") for line in lines]
    for row in cells:
        if row[0] == "GPU0":
            row[4] = "NV1"
        elif row[0] == "GPU3":
            row[1] = "NV1"
    got = answer(tmp_path, "\n".join("\t".join(row) for row in cells) + "\n")
    assert got.platform == "dgx1-v100-8gpu" and got.fault_detected
    (finding,) = [f for f in got.findings if f.severity is not Severity.OK]
    assert (finding.gpu, finding.peer_gpu, finding.link) == (0, 3, None)
    assert not answer(tmp_path, (REAL / "topo_m_dgx1_v100_1.txt").read_text(encoding="utf-8")).fault_detected


def test_readings_that_count_every_link_of_a_gpu_outweigh_a_stored_description(tmp_path: Path) -> None:
    path = tmp_path / "topo.txt"
    path.write_text(switched(8, 12, {3: 11}), encoding="utf-8")
    rows = read(Source.from_path(path), node_id="a100-7")["topology"]
    graph = platform_graph("dgx-a100-8gpu")
    assert [f.gpu for f in described_short(rows, graph)[0]] == [3]
    assert described_short(rows, graph, {3: set(range(12))}) == ([], [])


def test_two_gpus_short_are_two_links_down(tmp_path: Path) -> None:
    got = answer(tmp_path, switched(8, 12, {3: 11, 6: 10}))
    assert got.platform == "dgx-a100-8gpu" and got.fault_detected
    assert sorted(f.gpu for f in got.findings if f.severity is Severity.DOWN) == [3, 6]


def test_a_link_down_from_the_description_is_named_by_its_state_and_said_once(tmp_path: Path) -> None:
    """A link that is down counts no errors: the ticket's first step reads the link states, not DCGM totals; the
    answer says the description shows the fault rather than that nothing is known; one short GPU is one warning."""
    from diagnostics.tickets import RulesDrafter

    got = answer(tmp_path, switched(8, 12, {3: 11}))
    ticket = RulesDrafter().draft(got)
    first = ticket.repair_steps[0]
    assert first.command == "nvidia-smi nvlink -s -i 3" and "DCGM" not in first.text
    assert "`nvidia-smi nvlink -s -i 3`" in ticket.to_markdown().split("| link |")[1].split("\n")[0]
    assert not any("fabric health is unknown" in w for w in got.warnings)
    assert any("shows a fault (GPU 3 NVLinks)" in w and "not read" in w for w in got.warnings)
    about_3 = [w for w in got.warnings if "GPU 3" in w and "NVLinks where" in w]
    assert len(about_3) == 1 and "GPU 0 - GPU 3" not in about_3[0]


def test_a_gpu_whose_readings_lack_a_link_is_judged_by_them_not_twice(tmp_path: Path) -> None:
    """GPU 3 at NV11 in the description and read on 11 of its 12 NVLinks: the readings judge it (the link they lack
    is missing from them), and the description adds no second finding for the same down link."""
    path = tmp_path / "topo.txt"
    path.write_text(switched(8, 12, {3: 11}), encoding="utf-8")
    rows = read(Source.from_path(path), node_id="a100-7")["topology"]
    assert described_short(rows, platform_graph("dgx-a100-8gpu"), {3: set(range(11))}) == ([], [])
