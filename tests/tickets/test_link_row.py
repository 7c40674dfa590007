"""A ticket's link row names the link, or says none is known and why: never a counter's or a kind's id (`xid`,
`nvswitch`, `gpu`, `pcie`, `rack`) that a finding from an event or a unit carries as its link id."""

from __future__ import annotations

from datetime import timedelta

import pandas as pd
import pytest

from diagnostics.analysis.fleet import analyze_fleet
from diagnostics.model import Diagnosis
from diagnostics.service import Request, TableSource, diagnose
from diagnostics.synth.fleet import build
from diagnostics.synth.rack_fleet import build_racks
from diagnostics.tickets import RepairTicket, RulesDrafter, candidates_for

IDS = {"xid", "sxid", "nvswitch", "gpu", "pcie", "rack", "fabric", "nvlink", "nvlinks"}


def _row(ticket: RepairTicket) -> str:
    return next(line for line in ticket.to_markdown().splitlines() if line.startswith("| link |"))


def _rack(scenario: str, seed: int) -> Diagnosis:
    tables, truth, slots, platforms = build_racks(seed=seed, racks=1, hours=6, scenarios=[scenario])
    fleet = analyze_fleet(tables, window=timedelta(hours=1), end=pd.Timestamp(truth["end"]), platforms=platforms,
                          racks=slots)
    return fleet.racks["rack-01"]


def test_a_rack_switch_port_ticket_names_the_gpu_link_on_the_port() -> None:
    d = _rack("switch_port", 3)
    ticket = RulesDrafter().draft(d)
    assert ticket.fault.value == "switch-port" and ticket.link_id == "nvswitch"
    (gpu_link,) = [f.component for f in d.findings if f.link is not None and f.ref.kind.value == "nvlink"
                   and f.component.endswith(f"-> {ticket.component}")]
    assert _row(ticket) == f"| link | {gpu_link} |"


def test_an_xid_gpus_ticket_names_the_link_its_line_gives_with_the_tray() -> None:
    d = _rack("fanout_unresolved", 3)
    xid_gpus = [c for c in candidates_for(d) if c.link_id == "xid" and c.kind.value == "gpu"]
    assert any(c.link is not None for c in xid_gpus)
    for c in xid_gpus:
        row = _row(RulesDrafter().draft(d, component=c.id))
        if c.link is not None:
            assert row == f"| link | {c.component} NVLink {c.link} |", row
        else:
            assert row.startswith("| link | unknown: the input names none"), row


def test_a_rack_gpus_ticket_says_why_no_one_link_is_named() -> None:
    """One GPU of a GB200 rack failing on most of its links, with an Xid 149 on it: the GPU's module."""
    d = _rack("one_gpu", 3)
    ticket = RulesDrafter().draft(d)
    assert ticket.fault.value == "gpu-nvlinks" and ticket.link_id == "xid"
    row = _row(ticket)
    assert row.startswith("| link | none named: the Xid names GPU ") and "not one of its links" in row
    assert "its failing links: Compute tray" in row


@pytest.mark.parametrize("scenario", ["xid79_gpu_lost", "pcie_riser_replays", "fatal_sxid", "nvswitch_port_fault"])
def test_no_node_ticket_shows_a_counter_or_kind_id_as_its_link(scenario: str) -> None:
    tables, truth = build(seed=3, nodes=1, hours=2, scenarios=[scenario])
    ((node, facts),) = truth["nodes"].items()
    d = diagnose(TableSource(tables, platforms={node: facts["platform"]}), Request(node=node)).diagnosis
    for c in candidates_for(d):
        ticket = RulesDrafter().draft(d, component=c.id)
        value = _row(ticket).removeprefix("| link | ").removesuffix(" |")
        assert value not in IDS, (c.id, value)
        if c.fault.value == "gpu-off-bus":
            assert value.startswith("none: the GPU fell off the bus")
        if c.fault.value.startswith("pcie"):
            assert value == f"GPU {c.gpu}'s PCIe link"


def test_a_rack_switch_port_ticket_resets_the_gpu_at_the_links_other_end_by_name() -> None:
    """The port's own finding names no GPU; the GPU link the analysis saw on it does: the first repair step resets
    that GPU, on its compute tray, with the command, as the analysis's action says."""
    d = _rack("switch_port", 3)
    ticket = RulesDrafter().draft(d)
    (gpu_side,) = [f for f in d.findings if f.link is not None and f.ref.kind.value == "nvlink"
                   and f.component.endswith(f"-> {ticket.component}")]
    tray, gpu = gpu_side.ref.tray, gpu_side.gpu
    first = ticket.repair_steps[0]
    assert f"compute tray {tray} " in first.text and f"reset GPU {gpu} " in first.text, first.text
    assert first.command == f"nvidia-smi -r -i {gpu}" and ticket.reset.gpus == [gpu]
    assert "other end" not in first.text
    assert f"reset GPU {gpu};" in (d.repair_action or "")
