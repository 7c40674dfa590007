"""A host whose kernel log alone was ingested, beside nodes whose readings end months earlier: its window ends at its
own newest event, as `analyze FILE` ends it (it ended at the others' last reading, its fatal Xid never judged: "low,
fault=no"). A fleet's window keeps the readings' end: one log whose times are off (`dmesg -T` is local time, read as
UTC) must not move every node's window, nor call the fleet silent."""

from __future__ import annotations

from pathlib import Path

from diagnostics import Priority
from diagnostics.service import Request, StoreSource, diagnose, sweep
from diagnostics.store import open_store
from tests.conftest import FIXTURES

XID = ("2026-12-05T11:59:30+00:00 gb1 kernel: NVRM: Xid (PCI:0018:03:00): 149, NETIR_LINK_EVT  Fatal   XC0 i0 "
       "Link 01 (0x021425c6 0x00000000)\n")


def test_a_host_with_only_a_kernel_log_is_judged_at_its_own_newest_event(tmp_path: Path) -> None:
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
    assert fleet.at.isoformat().startswith("2026-05-13T11:30"), fleet.at  # the readings' end: v1 is not silent
    assert not [r for r in fleet.incomplete_reasons if "v1" in r], fleet.incomplete_reasons
    assert diagnose(source, Request(node="v1")).diagnosis.window_end == fleet.diagnoses["v1"].window_end
    # the fleet's answer for the host does not judge its later events, and says so, and where they are judged
    said = [w for w in fleet.warnings if "events after the window's end" in w]
    assert len(said) == 1 and "gb1 (to 2026-12-05 11:59 UTC)" in said[0], fleet.warnings
    assert not [w for w in node.warnings if "after the window's end" in w]
