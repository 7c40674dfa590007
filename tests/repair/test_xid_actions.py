"""Every code of the Xid catalog, as a kernel log prints it, through the analysis and the rules drafter: what a
technician is told to do names a real action, never a placeholder or one of fabricbot's internal names."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from diagnostics.config.catalogs import load_xid_catalog
from diagnostics.config.thresholds import load_thresholds
from diagnostics.enums import FaultKind
from diagnostics.repair import PlanFacts, repair_plan
from diagnostics.service import Request, diagnose, files_source
from diagnostics.tickets.rules import RulesDrafter
from tests.conftest import FIXTURES

END = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
CODES = sorted(load_xid_catalog().entries)
# fabricbot's own names: fault kinds, rule names, and the wording a missing template used to fall back on
# a fault-kind value on its own, not inside a part id such as gb200-nvl72-compute-tray (a ticket names parts by id)
INTERNAL = re.compile("|".join([*(r"(?<![\w-])" + re.escape(f.value) + r"(?![\w-])" for f in FaultKind
                                  if "-" in f.value),
                                *(re.escape(r.name) + r"\b" for r in load_thresholds().rules if "_" in r.name),
                                r"\{", r"\}", r"\bthis \S+ fault\b", r"\bunknown\b \(None\)", r"\bNone\b"]))
BUSES = ("0000:97:00", "0000:ba:00")  # two GPUs, named as the driver names them: by PCI address alone


def _log(code: int, tmp: Path) -> Path:
    """Two GPUs reporting the code (a decoded NVLink5 code with its subcode word stated fatal, as the driver prints
    it), each line timed inside the hour before END."""
    subcode = " NETIR_LINK_EVT Fatal XC0 i0 Link -1 (0x00000000)" if load_xid_catalog().entry(code).decode else ""
    lines = [f"2026-03-01T11:{30 + i:02d}:00+00:00 kernel: NVRM: Xid (PCI:{bus}): {code}, pid=1818987, "
             f"name=python3,{subcode} Ch 00000003" for i, bus in enumerate(BUSES)]
    path = tmp / f"xid_{code}.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("platform", [None, "hgx-b200-8gpu", "gb200-nvl72-compute-tray"])  # NVLink5 boards, and none
@pytest.mark.parametrize("code", CODES)
def test_no_drafted_action_for_a_catalogued_xid_names_a_placeholder(code: int, platform: str | None,
                                                                     tmp_path: Path) -> None:
    source, node, _ = files_source([_log(code, tmp_path)], node="n1")
    diagnosis = diagnose(source, Request(node=node, end=END, platform=platform)).diagnosis
    said = [diagnosis.repair_action, *(loc.action or "" for loc in diagnosis.localizations)]
    if diagnosis.localizations:  # a code some rule counts: the ticket a person would approve
        ticket = RulesDrafter().draft(diagnosis)
        said += [ticket.reset.command or "", *(c.command for c in ticket.capture_first),
                 *(t for s in [*ticket.isolation_steps, *ticket.repair_steps] for t in (s.text, s.command or ""))]
    bad = [t for t in said if INTERNAL.search(t)]
    assert not bad, (code, bad)


def test_the_real_xid_145_149_log_resets_each_gpu_by_its_pci_address() -> None:
    """Four GPUs, named by PCI address, each with an NVLink5 Xid: each is reset by that address (as NVIDIA's Xid
    catalog asks of a fatal NVLink5 error, RESET_GPU; an Xid 145 not logged fatal only where its decode or Xid 154
    asks), and its links are read one by one to name the link."""
    source, node, _ = files_source([FIXTURES / "real" / "xid_145_149_log_1.txt"], node="n1")
    diagnosis = diagnose(source, Request(node=node)).diagnosis
    actions = {loc.component: loc.action or "" for loc in diagnosis.localizations}
    assert sorted(actions) == [f"the GPU at PCI 0000:{b}:00.0" for b in ("97", "ba", "dc", "ed")]
    for gpu, action in actions.items():
        bus = gpu.removeprefix("the GPU at PCI ")
        assert f"`nvidia-smi -r -i {bus}`" in action and f"`nvidia-smi nvlink -e -i {bus}`" in action, action
        # an Xid 145 known only from a later Xid 45's "caused by" line: its own line, fatal or not, was never read
        unsure = "no line read shows this one fatal" in action
        assert "not logged fatal" not in action and unsure == (bus != "0000:dc:00.0"), action
    ticket = RulesDrafter().draft(diagnosis)  # the GPU its Link Fatal Xid 149 stopped, before the Xid 145s' GPUs
    assert ticket.reset.command == "nvidia-smi -r -i 0000:dc:00.0"
    assert ticket.repair_steps[0].command == "nvidia-smi nvlink -e -i 0000:dc:00.0"


@pytest.mark.parametrize("platform", ["hgx-b200-8gpu", "hgx-h100-8gpu"])
def test_a_gpu_known_by_its_pci_address_on_a_known_board_is_reseated_as_that_boards_module(platform: str) -> None:
    """A kernel log names a GPU by its PCI address alone: on a named HGX board the ticket still said "reseat what
    carries the GPU's NVLinks, once the board is known" while its parts named the board's module and baseboard."""
    plan = repair_plan(platform, FaultKind.NVLINK, PlanFacts(node_id="n1", bus="0000:dc:00.0",
                                                             unit="the GPU at PCI 0000:dc:00.0"))
    reseat = next(s.text for s in plan.repair if "reseat" in s.text.lower() and "powered off" in s.text)
    assert "once the board is known" not in reseat and plan.part is not None, reseat
    assert reseat.startswith(f"With the node powered off, reseat the GPU at PCI 0000:dc:00.0's {plan.part.fru}"), reseat


def test_a_link_on_a_rack_switch_tray_with_no_platform_names_the_compute_tray_not_a_baseboard() -> None:
    """An NMX-T scrape read without a rack inventory names a link's far end `Switch tray 7 chip 1`: the ticket named
    an HGX "GPU baseboard carrying the NVSwitch chips", a part no GB200 rack has."""
    rack = repair_plan(None, FaultKind.NVLINK, PlanFacts(node_id="n1", gpu=2, link=11, peer="Switch tray 7 chip 1",
                                                         switch="Switch tray 7 chip 1"))
    board = repair_plan(None, FaultKind.NVLINK, PlanFacts(node_id="n1", gpu=2, link=11, peer="NVSwitch 0",
                                                          switch="NVSwitch 0"))
    assert rack.part is not None and rack.part.id == "unknown-rack-compute-tray"
    assert board.part is not None and board.part.id == "unknown-sxm-module"  # the module, then the baseboard
    assert board.next_part is not None and board.next_part.id == "unknown-gpu-baseboard"


@pytest.mark.parametrize("platform", ["hgx-h100-8gpu", "dgx-a100-8gpu"])
def test_a_gpu_off_the_bus_known_by_its_address_reseats_the_boards_own_pcie_path(platform: str) -> None:
    """A kernel log's Xid 79 names the GPU by its PCI address: on a named HGX board the action said to reseat "the
    PCIe riser, cable or retimer" (a PCIe server's parts) while the ticket's part was the board's host PCIe path."""
    plan = repair_plan(platform, FaultKind.GPU_OFF_BUS, PlanFacts(node_id="n1", bus="0000:91:00.0",
                                                                  unit="the GPU at PCI 0000:91:00.0"))
    assert plan.part is not None and "riser" not in plan.action, plan.action
    assert f"reseat the {plan.part.fru} of the GPU at PCI 0000:91:00.0" in plan.action
    reseat = next(s.text for s in plan.repair if s.text.startswith("With the node powered off, reseat"))
    assert plan.part.fru in reseat and "riser, cable or retimer" not in reseat, reseat
