"""Xid 74 (the NVLink Xid of A100 and H100) as a kernel log prints it: an NVLink fault of the GPU it names, on the
link its line names or on one still to be found. Never Blackwell's GPU-wide NVLink totals, which an A100 or H100
board cannot have: the answer must not say the input contradicts the platform, through the files or the store."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from diagnostics.enums import FaultKind
from diagnostics.model import Diagnosis
from diagnostics.service import Request, StoreSource, diagnose, files_source
from diagnostics.store import open_store
from diagnostics.tickets.markdown import ticket_markdown
from diagnostics.tickets.rules import RulesDrafter
from tests.conftest import FIXTURES
from tests.repair.test_xid_actions import INTERNAL

END = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
BUS = "0000:18:00.0"
# The line names no link (the shape the review gave; real drivers add "on link N(...)", as the fixture below does)
NO_LINK = ("2026-03-01T11:30:00+00:00 kernel: NVRM: Xid (PCI:0000:18:00): 74, pid=1234, name=python, "
           "NVLink: fatal error detected\n")
PLATFORMS = [None, "dgx-a100-8gpu", "hgx-h100-8gpu", "hgx-b200-8gpu", "gb200-nvl72-compute-tray"]


def _doors(path: Path, tmp: Path, platform: str | None) -> tuple[Diagnosis, Diagnosis]:
    """The same question through the files and through the store they were ingested into."""
    files, node, _ = files_source([path], node="n1")
    open_store(tmp / "store").ingest([path], node_id="n1")
    request = Request(node=node, end=END, platform=platform)
    return diagnose(files, request).diagnosis, diagnose(StoreSource(tmp / "store"), request).diagnosis


def _said(d: Diagnosis) -> list[tuple[str, str, str | None]]:
    return [(loc.component, str(loc.fault), loc.action) for loc in d.localizations]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_an_xid_74_naming_no_link_is_a_link_to_find_on_every_board(platform: str | None, tmp_path: Path) -> None:
    path = tmp_path / "kern.log"
    path.write_text(NO_LINK, encoding="utf-8")
    files, stored = _doors(path, tmp_path, platform)
    assert _said(files) == _said(stored) and files.repair_action == stored.repair_action
    action = files.repair_action or ""
    assert not [w for w in [*files.warnings, action] if "contradicts" in w], (files.warnings, action)
    [loc] = files.localizations
    assert loc.fault is FaultKind.NVLINK and loc.link is None and loc.switch_port is None
    assert f"`nvidia-smi nvlink -e -i {BUS}`" in action and "find the failing NVLink" in action, action
    assert f"`nvidia-smi -r -i {BUS}`" in action and action.startswith(("Drain", "Platform unknown: drain")), action
    assert not INTERNAL.search(action), action
    ticket = RulesDrafter().draft(files)
    assert ticket.link is None and ticket.switch_port is None
    assert ticket.repair_steps[0].command == f"nvidia-smi nvlink -e -i {BUS}"
    text = ticket_markdown(ticket)
    assert "| link | unknown" in text and not re.search(r"\b(?:link|NVLink|port) \d", text), text
    assert not [s.text for s in [*ticket.isolation_steps, *ticket.repair_steps] if INTERNAL.search(s.text)]


@pytest.mark.parametrize("platform", ["dgx-a100-8gpu", "gb200-nvl72-compute-tray", None])
def test_a_real_a100_xid_74_keeps_the_link_its_line_names(platform: str | None, tmp_path: Path) -> None:
    """The GPU is named by PCI address alone; the line still names link 8: the action reads that link."""
    path = FIXTURES / "real" / "xid74_link_a100_vllm_1.txt"
    files, node, _ = files_source([path])
    d = diagnose(files, Request(node=node, platform=platform)).diagnosis
    [loc] = d.localizations
    assert loc.fault is FaultKind.NVLINK and loc.link == 8
    action = d.repair_action or ""
    assert "NVLink 8's counters (`nvidia-smi nvlink -e -i 0000:48:00.0`)" in action, action
    assert "contradicts" not in action and not INTERNAL.search(action), action
    assert "| link | the GPU at PCI 0000:48:00.0 NVLink 8 |" in ticket_markdown(RulesDrafter().draft(d))


@pytest.mark.parametrize("platform", ["dgx-a100-8gpu", None])
def test_a_gpu_reset_alone_on_an_unknown_board_says_a_pre_ampere_gpu_needs_its_nvlink_peers(
        platform: str | None) -> None:
    """Whether a GPU resets alone depends on the board (nvidia-smi: a pre-Ampere GPU joined by NVLink only with its
    peers): an unknown board's reset step and its ticket's reset row say so; a known Ampere board's need not."""
    path = FIXTURES / "real" / "xid74_link_a100_vllm_1.txt"
    files, node, _ = files_source([path])
    ticket = RulesDrafter().draft(diagnose(files, Request(node=node, platform=platform)).diagnosis)
    [reset] = [s.text for s in ticket.repair_steps if s.command == "nvidia-smi -r -i 0000:48:00.0"]
    [row] = [line for line in ticket_markdown(ticket).splitlines() if line.startswith("| reset |")]
    unknown = platform is None
    assert ("pre-Ampere board" in reset) is unknown, reset
    assert ("a pre-Ampere GPU only with every GPU its NVLinks join" in row) is unknown, row
    assert "alone" in reset and "alone" in row
