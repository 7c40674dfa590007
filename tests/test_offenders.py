"""A sweep's headline counts what its rows are: links, GPUs (an Xid, a GPU gone), switch chips, or parts when they
are of more than one kind; never 'links' for a GPU. A server's rows are folded and named as their read-back says."""

from __future__ import annotations

from datetime import UTC, datetime

from diagnostics.analysis import analyze_tables
from diagnostics.analysis.urgency import places
from diagnostics.components import ComponentRef
from diagnostics.enums import LinkType, Severity
from diagnostics.offenders import (
    Offender,
    SweepResult,
    far_ends_folded,
    named_as_read_back,
    offenders_of,
    worst_first,
)
from tests.analysis.helpers import link_series, links, steady

AT = datetime(2026, 9, 17, 8, tzinfo=UTC)
CRC = Offender(node_id="n1", link_type=LinkType.NVLINK, gpu=7, link=15, rule="crc", severity=Severity.WARNING,
               rate_per_hour=719.0, above=100.0)
XID = Offender(node_id="n1", link_type=LinkType.NVLINK, bus="0000:18:00.0", xid=79, rule="xid_off_bus",
               severity=Severity.DOWN)
CHIP = Offender(node_id="n2", link_type=LinkType.NVSWITCH, nvswitch="nvswitch3", rule="sxid_fatal",
                severity=Severity.FAILING)


def _headline(*rows: Offender, complete: bool = True) -> str:
    result = SweepResult(at=AT, window_hours=1.0, source="store", offenders=list(rows))
    if not complete:
        result.complete, result.incomplete_reasons = False, ["a part could not be read"]
    return result.headline()


def test_rows_of_one_kind_are_counted_as_that_kind() -> None:
    assert _headline(CRC) == "1 offending link on 1 node"
    assert _headline(XID, XID.model_copy(update={"bus": "0000:19:00.0", "xid": 145, "rule": "xid_145"})) == \
        "2 offending GPUs on 1 node"
    assert _headline(CHIP) == "1 offending NVSwitch on 1 node"


def test_rows_of_several_kinds_are_counted_as_parts_whatever_door_says_them() -> None:
    assert _headline(CRC, XID, CHIP) == "3 offending parts on 2 nodes"
    assert _headline(CRC, XID, complete=False).startswith("fleet view INCOMPLETE (2 offending parts found so far;")


def test_an_incomplete_view_with_nothing_found_yet_counts_no_links() -> None:
    result = SweepResult(at=AT, window_hours=1.0, source="prometheus", offenders=[])
    assert result.found() == "0 offending links"


def test_a_switch_port_the_read_back_judges_as_a_links_far_end_is_that_links_row() -> None:
    """The server knows no far end: it listed NVSwitch 4 port 14's replays as a part beside GPU 7 NVLink 8, which
    the engine judges as one link (its switch end said on the GPU's row) and the store's sweep lists once. A port
    the read-back judges on its own stays; each row takes the name the read-back gives its link."""
    end = ComponentRef.nvlink(7, 8, switch="NVSwitch 4", port=14)
    link = Offender(node_id="n1", link_type=LinkType.NVLINK, gpu=7, link=8, rule="nvlink_crc_data",
                    severity=Severity.FAILING, rate_per_hour=11674.0, above=1000.0)
    port = Offender(node_id="n1", link_type=LinkType.NVSWITCH, nvswitch="4", link=14, rule="nvswitch_replay",
                    severity=Severity.FAILING, rate_per_hour=5615.0, above=1000.0)
    read_back = [link.model_copy(update={"part": end, "detail": "CRC data errors 11,674/h > 1,000/h",
                                         "rate_per_hour": 11600.0})]
    assert far_ends_folded([link, port], read_back) == [link]
    judged = [*read_back, port.model_copy(update={"part": ComponentRef.nvswitch("NVSwitch 4", 14)})]
    assert far_ends_folded([link, port], judged) == [link, port]
    (named,) = named_as_read_back([link], read_back)
    assert named.component == "GPU 7 NVLink 8 -> NVSwitch 4 port 14" and named.rate_per_hour == 11674.0  # the server's
    assert named.detail == "CRC data errors 11,674/h > 1,000/h"


def test_a_gpus_xid_and_its_nvlinks_totals_are_two_parts_as_the_fleet_view_counts_them() -> None:
    """A GB200 tray's GPU 1: its NVLinks' totals over a rule and an Xid 149 share the GPU's key; the sweep counted
    one part where the node's findings and `/fabric fleet` count two (236 against 237 on a rack store)."""
    totals = Offender(node_id="n1", link_type=LinkType.NVLINK, gpu=1, rule="effective_errors",
                      severity=Severity.FAILING, rate_per_hour=7.0, above=0.0)
    xid = Offender(node_id="n1", link_type=LinkType.NVLINK, gpu=1, xid=149, rule="xid_nvlink", severity=Severity.DOWN)
    assert _headline(totals, xid) == "2 offending parts on 1 node"
    assert _headline(xid, xid.model_copy(update={"xid": 74})) == "1 offending GPU (2 rule breaches) on 1 node"


def test_a_parts_rows_come_in_the_order_its_analysis_ranks_its_crossings() -> None:
    """A PCIe link over its replay rate and with a replay rollover (any rollover breaks its rule): `analyze`, its
    suspect's evidence and the digest led with the rollover, the sweep with the replays. One order now: a rule any
    event breaks is as far over as can be, in the sweep as in the analysis."""
    frame = links(link_series({"replay": steady(4000.0), "replay_rollovers": [0.0] * 12 + [1.0]}, gpu=2, link=None,
                              link_type="pcie", peer="CPU 0"))
    d = analyze_tables({"link_samples": frame}, node_id="n1")
    (finding,) = [f for f in d.findings if f.severity is not Severity.OK]
    rows = worst_first(offenders_of(d), places(d))
    assert [o.rule for o in rows] == [c.rule for c in finding.crossed] == ["pcie_replay_rollover", "pcie_replay"]
