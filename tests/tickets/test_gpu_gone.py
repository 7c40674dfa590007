"""A GPU whose every series stopped is gone, as an Xid 79's is: a ticket drafted for it (its button, `ticket --link`)
is the GPU-off-the-bus plan, on a node's board and on a GB200 compute tray alike, never a PCIe replay plan the
platform refuses ("hold the ticket")."""

from __future__ import annotations

import pytest

from diagnostics.analysis import analyze_tables
from diagnostics.enums import FaultKind
from diagnostics.repair import finding_fault
from diagnostics.tables import TABLES
from diagnostics.tickets import RulesDrafter
from tests.analysis.helpers import node_links


@pytest.mark.parametrize(("platform", "gpus", "part"), [("gb200-nvl72-compute-tray", 4, "gb200-nvl72-compute-tray"),
                                                        ("hgx-h100-8gpu", 8, "hgx-h100-pcie-path")])
def test_a_gpu_that_stopped_reporting_drafts_the_off_bus_plan(platform: str, gpus: int, part: str) -> None:
    rows = node_links(gpus=gpus, per_gpu=18)
    late = rows["timestamp"] > rows["timestamp"].min() + (rows["timestamp"].max() - rows["timestamp"].min()) / 2
    rows = rows[~(late & (rows["gpu"] == 3)).to_numpy(bool)].reset_index(drop=True)  # GPU 3 falls silent halfway
    tables = {**{name: schema.empty() for name, schema in TABLES.items()}, "link_samples": rows}
    diagnosis = analyze_tables(tables, node_id="n1", platform=platform)
    (gone,) = [f for f in diagnosis.findings if f.gpu == 3 and any(c.rule == "gpus_missing" for c in f.crossed)]
    assert finding_fault(gone) is FaultKind.GPU_OFF_BUS
    ticket = RulesDrafter().draft(diagnosis, component=gone.component)
    assert ticket.fault is FaultKind.GPU_OFF_BUS and ticket.gpu_index == 3
    assert ticket.replacement_part is not None and ticket.replacement_part.id == part
    steps = [s.text for s in [*ticket.isolation_steps, *ticket.repair_steps]]
    assert not [s for s in steps if "Hold the ticket" in s or "input and the platform agree" in s], steps
    assert ticket.isolation_steps[0].text.startswith("Drain"), steps


def test_the_fabric_software_hypothesis_of_a_gpu_off_the_bus_does_not_speak_of_link_errors() -> None:
    """Ranked second for a GPU off the bus, Fabric Manager was dismissed because 'link errors are confined to specific
    links', where no link had an error at all."""
    from diagnostics.ingest.base import Source
    from diagnostics.service import Request, diagnose, files_source

    log = Source.from_text("[Wed May 13 11:50:02 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid=1911, name=python3, GPU "
                           "has fallen off the bus.\n", name="kern.log")
    source, node, _ = files_source([log], node="n1")
    ticket = RulesDrafter().draft(diagnose(source, Request(node=node)).diagnosis)
    (software,) = [h for h in ticket.hypotheses if h.kind == "fabric-software"]
    said = " ".join(software.evidence)
    assert "no NVLink is down or failing" in said and "confined" not in said, said
