"""Cases a field engineer found reading the tickets before signing them, each with the corrected answer."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from diagnostics import Snapshot, diagnose_snapshot
from diagnostics.analysis import analyze_tables
from diagnostics.enums import FaultKind, LinkEnd, LinkType, PortSource
from diagnostics.ingest.base import Source
from diagnostics.ingest.snapshot import READER as SNAPSHOT
from diagnostics.repair import repair_plan
from diagnostics.repair.plan_model import PlanFacts
from diagnostics.tables import LINK_SAMPLES
from diagnostics.tickets import RulesDrafter
from diagnostics.topology import platform_graph
from tests.analysis.helpers import T0, events, link_series, links, node_links, steady
from tests.conftest import snapshot_dict

SXM = ("hgx-h100-8gpu", "hgx-h200-8gpu", "hgx-b200-8gpu", "dgx-a100-8gpu", "dgx1-v100-8gpu")


@pytest.mark.parametrize("platform", SXM)
def test_an_sxm_module_swap_is_the_vendors_procedure_not_a_site_step(platform: str) -> None:
    for fault in (FaultKind.NVLINK, FaultKind.GPU_OFF_BUS):
        plan = repair_plan(platform, fault, PlanFacts(node_id="n", gpu=2, link=1, peer="GPU 1"))
        swaps = [s.text for s in plan.repair if s.text.startswith(("To tell a bad", "If GPU 2 falls off the bus"))]
        assert swaps and all("server vendor's field service" in s and "not a site step" in s for s in swaps), swaps


def test_a_pcie_card_swap_stays_a_site_step() -> None:
    plan = repair_plan("pcie-8gpu", FaultKind.GPU_OFF_BUS, PlanFacts(node_id="n", gpu=2))
    assert not [s.text for s in plan.repair if "vendor" in s.text]


def _ticket(tables: dict[str, pd.DataFrame], platform: str | None) -> object:
    d = analyze_tables(tables, node_id="n1", platform=platform)
    return RulesDrafter().draft(d)


@pytest.mark.parametrize(("platform", "peer"), [("dgx1-v100-8gpu", "GPU 1"), ("h100-nvl-8gpu", "GPU 3")])
def test_boards_without_a_switch_get_no_switch_port_row(platform: str, peer: str) -> None:
    """Every GPU's NVLinks read, one failing: the ticket for that link names no switch port. (With that link's
    readings alone, the other GPUs read as missing, and a missing GPU's urgent ticket heads the node.)"""
    board = platform_graph(platform)
    link = next(p for p in board.links_of(2) if p.link_type == "nvlink")
    frame = links(*(link_series(steady(9000.0 if (gpu, p.link) == (2, link.link) else 0.0), gpu=gpu, link=p.link,
                                peer=p.peer or peer)
                    for gpu in board.gpus for p in board.links_of(gpu) if p.link_type == "nvlink"))
    t = _ticket({"link_samples": frame}, platform)
    assert t.component.startswith("GPU 2 -> ")  # type: ignore[attr-defined]
    md = t.to_markdown()  # type: ignore[attr-defined]
    assert "| switch port |" not in md and t.switched is False  # type: ignore[attr-defined]
    assert t.switch is None and t.port_find_with is None  # type: ignore[attr-defined]
    switched = _ticket({"link_samples": links(link_series(steady(9000.0), gpu=2, link=1, peer="NVSwitch 0"))},
                       "hgx-h100-8gpu")
    assert "| switch port |" in switched.to_markdown()  # type: ignore[attr-defined]


def test_a_title_naming_a_port_never_says_port_unknown() -> None:
    """A fatal SXid names its switch and port: the ticket's port row names the same port, observed (the line)."""
    sxid = {"timestamp": T0 + pd.Timedelta(minutes=50), "kind": "sxid", "code": 12028, "nvswitch": "1", "link": 36,
            "severity": "fatal", "text": "nvidia-nvswitch1: SXid (PCI:0000:05:00.0): 12028, Fatal, Link 36 egress"}
    t = _ticket({"link_samples": node_links(), "events": events([sxid])}, "hgx-h100-8gpu")
    assert "port 36" in t.component  # type: ignore[attr-defined]
    md = t.to_markdown()  # type: ignore[attr-defined]
    row = next(line for line in md.splitlines() if line.startswith("| switch port |"))
    assert "port 36" in row and "port unknown" not in row and "(observed" in row
    assert t.port_source is PortSource.OBSERVED  # type: ignore[attr-defined]


def test_a_fabric_manager_ticket_lists_a_dozen_links_and_counts_the_rest() -> None:
    """The issue's nit: 192 per-link evidence lines on a Fabric Manager ticket."""
    graph = platform_graph("hgx-h100-8gpu")
    frames = [link_series(steady(0.0), gpu=g, link=p.link, peer=p.peer, link_state="inactive")
              for g in graph.gpus for p in graph.links_of(g) if p.link_type == "nvlink"]
    t = _ticket({"link_samples": links(*frames)}, "hgx-h100-8gpu")
    assert t.component_kind.value == "fabric-software"  # type: ignore[attr-defined]
    crossed = t.evidence.thresholds_crossed  # type: ignore[attr-defined]
    assert len(crossed) == 12 and crossed[-1].startswith("... and ") and "link is inactive" in crossed[-1]
    assert len(t.evidence.rates_per_hour) <= 12  # type: ignore[attr-defined]
    assert "| switch port |" not in t.to_markdown()  # type: ignore[attr-defined]


def test_pcie_rows_carry_only_pcie_counters() -> None:
    """The issue's case: 'GPU 0 PCIe: CRC flit errors 8/h, CRC data errors 2/h, recoveries 0/h'. A PCIe link has
    replays and AER's kinds; a table or a snapshot giving it NVLink counters has them left out, and said."""
    rows = link_series({"replay": steady(50.0), "crc_flit": steady(8.0), "crc_data": steady(2.0),
                        "recovery": [0.0] * 13}, gpu=0, link=None, link_type="pcie", peer="CPU 0 root port")
    d = analyze_tables({"link_samples": LINK_SAMPLES.conform(rows)}, node_id="n1")
    pcie = next(f for f in d.findings if f.link_type is LinkType.PCIE)
    assert set(pcie.rates_per_hour) == {"replay"} and set(pcie.counts) <= {"replay"}
    snap = snapshot_dict(fabric_errors=[{"gpu_src": 0, "link_id": "pcie-0", "crc_errors": 8, "replay_count": 50,
                                         "recovery_count": 1}])
    seen = diagnose_snapshot(Snapshot.model_validate(snap)).findings[0]
    assert set(seen.rates_per_hour) == {"replay"}
    result = SNAPSHOT.read(Source.from_text(json.dumps(snap), name="snap.json"))
    assert result.tables["link_samples"]["crc_flit"].isna().all()
    assert any("crc_errors=8, recovery_count=1 not read" in w.message for w in result.warnings)


def test_parts_keep_the_catalogs_order_whichever_end_received_the_errors() -> None:
    """The issue's case: 'errors received at the GPU's end -> replacement part: H100 SXM5 module' while the steps
    say the cable or switch board first. The end is evidence; the catalog's order stands."""
    for end in (LinkEnd.GPU, LinkEnd.UPSTREAM, None):
        plan = repair_plan("hgx-h100-8gpu", FaultKind.PCIE_REPLAYS, PlanFacts(node_id="n", gpu=2, end=end))
        assert plan.part is not None and plan.part.id == "hgx-h100-pcie-path"
        assert plan.next_part is not None and plan.next_part.id == "hgx-h100-sxm5-module"


def test_a_switch_named_without_its_port_says_the_port_is_unknown_once() -> None:
    """An SXid whose first line (the one naming the link) was cut off names its switch alone: the port row says the
    port is unknown once, not '(port unknown) (unknown)'."""
    sxid = {"timestamp": T0 + pd.Timedelta(minutes=50), "kind": "sxid", "code": 24007, "nvswitch": "1",
            "severity": "fatal", "text": "nvidia-nvswitch1: SXid (PCI:0000:aa:00.0): 24007, Data {0x10000000}"}
    t = _ticket({"link_samples": node_links(), "events": events([sxid])}, "hgx-h100-8gpu")
    row = next(line for line in t.to_markdown().splitlines()  # type: ignore[attr-defined]
               if line.startswith("| switch port |"))
    assert "NVSwitch 1" in row and row.count("unknown") == 1, row
