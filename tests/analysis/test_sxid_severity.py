"""A non-fatal SXid is judged as the SXid catalog says its code is (data/sxid.toml): one NVIDIA says to ignore
(`info`, IGNORE: 22013, the MINION DLREQ interrupt logged as links train at boot) raises no warning and no priority,
and is said as ignorable, not dropped; a code the catalog keeps as worth watching (20001, TX replay) still warns."""

from __future__ import annotations

import pandas as pd
import pytest

from diagnostics.analysis import analyze_tables
from diagnostics.config.catalogs import load_sxid_catalog
from diagnostics.enums import CodeSeverity, Priority
from tests.analysis.helpers import T0, events, node_links


def _sxids(code: int, name: str) -> pd.DataFrame:
    return events([{"timestamp": T0 + pd.Timedelta(minutes=port - 14), "kind": "sxid", "code": code,
                    "severity": "non-fatal", "nvswitch": "3", "link": port,
                    "text": f"nvidia-nvswitch3: SXid (PCI:0000:04:00.0): {code}, Non-fatal, Link {port} {name}"}
                   for port in (44, 45, 46)])


@pytest.mark.parametrize("code", [c for c, e in load_sxid_catalog().entries.items()
                                  if e.severity is CodeSeverity.INFO])
def test_an_sxid_nvidia_says_to_ignore_raises_nothing_and_is_said(code: int) -> None:
    clean = analyze_tables({"link_samples": node_links()}, node_id="n1", platform="hgx-h100-8gpu")
    d = analyze_tables({"link_samples": node_links(), "events": _sxids(code, "an ignorable event")}, node_id="n1",
                       platform="hgx-h100-8gpu")
    assert not [c for f in d.findings for c in f.crossed if c.counter == "sxid"]
    assert (d.ticket_priority, d.fault_detected) == (clean.ticket_priority, clean.fault_detected)
    said = [w for w in d.warnings if f"SXid {code}" in w]
    assert len(said) == 1 and "NVSwitch 3" in said[0] and load_sxid_catalog().entry(code).action in said[0]


def test_an_sxid_the_catalog_keeps_as_worth_watching_still_warns() -> None:
    assert load_sxid_catalog().entry(20001).severity is CodeSeverity.WARNING
    d = analyze_tables({"link_samples": node_links(), "events": _sxids(20001, "TX Replay Error")}, node_id="n1",
                       platform="hgx-h100-8gpu")
    warned = [f for f in d.findings if any(c.counter == "sxid" for c in f.crossed)]
    assert [f.switch_port for f in warned] == [44, 45, 46]
    assert d.ticket_priority is Priority.MEDIUM
