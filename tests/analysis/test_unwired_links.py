"""A bridged H100 card wires 12 of its die's 18 NVLinks; the other six read `<inactive>` by design (Azure's NC H100
v5 health checks, issue 162; an HPE DL380a's two H100 PCIe cards). With the platform named, all twelve were paged
"down" at high priority and the ticket replaced the card."""

from __future__ import annotations

from pathlib import Path

from diagnostics import Diagnosis
from diagnostics.service import Request, diagnose, files_source
from tests.conftest import FIXTURES

REAL = FIXTURES / "real" / "nvlink_s_h100_pcie_bridged_1.txt"
UNWIRED = (4, 5, 10, 11, 16, 17)


def _answer(path: Path) -> Diagnosis:
    source, _, _ = files_source([path], node="h")
    return diagnose(source, Request(node="h", platform="h100-nvl-8gpu")).diagnosis


def test_links_the_board_leaves_unused_are_not_down(tmp_path: Path) -> None:
    got = _answer(REAL)
    assert not got.fault_detected and got.ticket_priority.value in ("low", "medium"), got.priority_said()
    assert not [f for f in got.findings if f.severity.value == "down"]
    said = {(f.gpu, f.link) for f in got.findings if any("inactive by design" in e for e in f.evidence)}
    assert said == {(g, n) for g in (0, 1) for n in UNWIRED}, said
    # one wired link inactive is still down, and only that one
    lines = REAL.read_text(encoding="utf-8").splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip() == "Link 2: 26.562 GB/s")  # GPU 0's link 2
    lines[at] = lines[at].replace("26.562 GB/s", "<inactive>")
    broken = tmp_path / "broken.txt"
    broken.write_text("\n".join(lines) + "\n", encoding="utf-8")
    got = _answer(broken)
    down = [(f.gpu, f.link) for f in got.findings if f.severity.value == "down"]
    assert got.fault_detected and down == [(0, 2)], down
