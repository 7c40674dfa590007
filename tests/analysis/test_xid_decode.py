"""Xid 144-150 decoded by subcode as NVIDIA's catalog decodes them (data/xid.toml), read from the kernel lines a
Blackwell node writes: an IGNORE subcode orders no part and no reset, a fatal one fails the link's GPU."""

from __future__ import annotations

import pandas as pd
import pytest

from diagnostics.analysis import analyze_tables
from diagnostics.config.catalogs import load_xid_catalog
from diagnostics.config.thresholds import load_thresholds
from diagnostics.enums import CodeSeverity, Severity
from tests.analysis.helpers import T0, node_links
from tests.ingest.helpers import read_text

LINES = {  # the NVLink5 Xid line as the driver prints it: code, subcode word, stated severity, link, intrInfo
    "147": "NVRM: Xid (PCI:0000:1b:00): 147, TREX_ERR Nonfatal XC0 i0 Link 03 (0x00000004 0x00000000)",
    "147 fatal": "NVRM: Xid (PCI:0000:1b:00): 147, TREX_ERR Fatal XC0 i0 Link 03 (0x00000004 0x00000000)",
    "148": "NVRM: Xid (PCI:0000:1b:00): 148, NVLPW_CTRL Nonfatal XC0 i0 Link 03 (0x00000100 0x00000000)",
    "149 fatal": "NVRM: Xid (PCI:0000:1b:00): 149, NETIR_LINK_EVT  Fatal   XC0 i0 Link 03 (0x026001c6 0x00000000)",
    "149 non-fatal": "NVRM: Xid (PCI:0000:1b:00): 149, NETIR_BER_EVENT Nonfatal XC0 i0 Link 03 (0x02600000 0x0)",
    "145 non-fatal": "NVRM: Xid (PCI:0000:1b:00): 145, RLW_REMAP Nonfatal XC0 i0 Link 03",
    "145 status ignored": "NVRM: Xid (PCI:0000:1b:00): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 03 (0x0409a0c2 0x00000008)",
    "144 fatal": "NVRM: Xid (PCI:0000:1b:00): 144, SAW_MVB Fatal XC0 i0 Link 03 (0x00000042 0x00000001)",
}


def _diagnose(line: str) -> tuple[list[str], object]:
    events = read_text(f"[  100.000000] {line}\n")["events"]
    events["timestamp"] = T0 + pd.Timedelta(minutes=30)
    events["node_id"] = "b200-07"
    events["gpu"] = 2
    d = analyze_tables({"link_samples": node_links(node="b200-07", switches=(9, 9)), "events": events},
                       node_id="b200-07", platform="hgx-b200-8gpu")
    rules = [c.rule for f in d.findings for c in f.crossed if f.severity is not Severity.OK]
    return rules, d


@pytest.mark.parametrize("case", ["147", "147 fatal", "148", "149 non-fatal", "145 status ignored"])
def test_an_ignore_subcode_orders_no_part_no_reset_and_no_swap(case: str) -> None:
    """One Xid 147 line on an HGX B200 ordered a B200 module, a reboot and a swap test: every TREX subcode is
    IGNORE in NVIDIA's decode table, as NVLPW_CTRL (148) and NETIR_BER_EVENT (149, non-fatal) are, and RLW_RXPIPE
    (145) with error status 0x8 (the line gpud's tests quote)."""
    rules, d = _diagnose(LINES[case])
    assert "xid_nvlink" not in rules and "xid_nvlink_warning" not in rules  # IGNORE: not even a warning
    assert not d.fault_detected and d.localization is None  # type: ignore[attr-defined]


@pytest.mark.parametrize("case", ["149 fatal", "144 fatal"])
def test_a_fatal_subcode_fails_its_gpu(case: str) -> None:
    rules, d = _diagnose(LINES[case])
    assert "xid_nvlink" in rules and d.fault_detected  # type: ignore[attr-defined]
    loc = d.localization  # type: ignore[attr-defined]
    assert loc is not None and loc.gpu == 2


def test_a_non_fatal_rlw_subcode_asks_for_the_recovery_action_not_a_repair() -> None:
    """It warns, naming its code, rather than being read and dropped (the rule's doc said it warns; it said
    nothing): a line whose words name no status the table decodes."""
    rules, d = _diagnose(LINES["145 non-fatal"])
    assert "xid_nvlink" not in rules and rules == ["xid_nvlink_warning"]
    assert not d.fault_detected and d.localization is None  # type: ignore[attr-defined]
    assert any("Xid 145" in c.message for f in d.findings for c in f.crossed)  # type: ignore[attr-defined]
    assert load_xid_catalog().entry(145).decoded("RLW_RXPIPE", "non-fatal") == (CodeSeverity.WARNING,
                                                                              "XID_154_EVAL")


def test_the_catalog_says_what_nvidia_and_nvsentinel_say() -> None:
    xids = load_xid_catalog()
    assert xids.entry(137).name == "NVLINK_FLA_PRIV_ERR"
    assert (xids.entry(155).immediate_action, xids.entry(155).severity) == ("RESET_GPU", CodeSeverity.FATAL)
    for code in (147, 148):
        assert xids.entry(code).severity is CodeSeverity.INFO
        assert all(xids.entry(code).decoded(u, s) == (CodeSeverity.INFO, "IGNORE")
                   for u in (None, "TREX_ERR", "NVLPW_CTRL") for s in (None, "fatal", "non-fatal"))
    assert xids.entry(149).decoded("NETIR_LINK_EVT", "fatal") == (CodeSeverity.FATAL, "RESET_GPU")
    for code in range(144, 151):
        rows = xids.entry(code).decode
        assert rows and all("XID 144-150 Decode" in r.source for r in rows), code
        assert all("NVSentinel" in r.source for r in rows if not (r.intr_info or r.error_status is not None)), code


def test_the_push_down_counts_the_codes_a_series_without_subcodes_can_fail() -> None:
    from diagnostics.prometheus.promql import pushed_codes

    assert pushed_codes(load_thresholds().rule("xid_nvlink")) == [74, 144, 145, 146, 149, 150]
