"""A store's window ends at its newest reading or event, whichever is later: a kernel log ingested after the last
scrape (here a node that only logs, beside a node whose readings stopped months before) was left after the window by
every door, its fatal Xid never judged."""

from __future__ import annotations

from pathlib import Path

from diagnostics import Priority
from diagnostics.service import Request, StoreSource, diagnose, sweep
from diagnostics.store import open_store
from tests.conftest import FIXTURES

XID = ("2026-12-05T11:59:30+00:00 gb1 kernel: NVRM: Xid (PCI:0018:03:00): 149, NETIR_LINK_EVT  Fatal   XC0 i0 "
       "Link 01 (0x021425c6 0x00000000)\n")


def test_a_kernel_log_newer_than_the_last_reading_is_judged_by_the_node_and_the_sweep(tmp_path: Path) -> None:
    log = tmp_path / "kern.log"
    log.write_text(XID)
    store = open_store(tmp_path / "store")
    store.ingest([FIXTURES / "real" / "nvlink_e_v100_short_form_dated_2.txt"], node_id="v1")  # May 2026
    store.ingest([log])
    source = StoreSource(tmp_path / "store")
    node = diagnose(source, Request(node="gb1")).diagnosis
    assert node.fault_detected and node.ticket_priority is Priority.HIGH, node.warnings
    assert node.window_end is not None and node.window_end.isoformat().startswith("2026-12-05T11:59:30")
    fleet = sweep(source, Request())
    assert fleet.diagnoses["gb1"].ticket_priority is Priority.HIGH
    assert [o for o in fleet.offenders if o.node_id == "gb1" and o.rule == "xid_nvlink"]
    assert any("v1" in r for r in fleet.incomplete_reasons)  # months without a reading: said, not judged healthy

