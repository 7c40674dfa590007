"""Cases a field engineer found reading the tickets before signing them, each with the corrected answer."""

from __future__ import annotations

import json

from diagnostics import Snapshot, diagnose_snapshot
from diagnostics.analysis import analyze_tables
from diagnostics.enums import FaultKind, LinkEnd, LinkType
from diagnostics.ingest.base import Source
from diagnostics.ingest.snapshot import READER as SNAPSHOT
from diagnostics.repair import repair_plan
from diagnostics.repair.plan import PlanFacts
from diagnostics.tables import LINK_SAMPLES
from tests.analysis.helpers import link_series, steady
from tests.conftest import snapshot_dict


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
