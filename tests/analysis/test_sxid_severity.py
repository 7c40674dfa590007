"""A non-fatal SXid is judged as the SXid catalog says its code is (data/sxid.toml): one NVIDIA says to ignore
(`info`, IGNORE: 22013, the MINION DLREQ interrupt logged as links train at boot) raises no warning and no priority,
and is said as ignorable, not dropped; a code the catalog keeps as worth watching (20001, TX replay) still warns."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from diagnostics.analysis import analyze_tables
from diagnostics.config.catalogs import load_sxid_catalog
from diagnostics.enums import CodeSeverity, Priority
from diagnostics.ingest import detect
from diagnostics.ingest.base import Source
from tests.analysis.helpers import T0, events, node_links

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


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


def _driver_reports() -> pd.DataFrame:
    return pd.read_csv(FIXTURES / "nvswitch_error_reports.csv", comment="#", dtype=str, keep_default_na=False)


def test_a_code_the_catalog_calls_fatal_is_one_the_driver_can_report_fatal() -> None:
    """The kernel line's Fatal or Non-fatal is the driver's report (fixtures/nvswitch_error_reports.csv, from its
    interrupt handlers): a code it only ever reports non-fatal is not fatal here, so a line cut before its severity
    is not judged graver than the whole line would be."""
    reports = _driver_reports()
    kinds = {int(r.code): {k for k in f"{r.lr10}/{r.ls10}".split("/") if k} for r in reports.itertuples()}
    fatal = [c for c, e in load_sxid_catalog().entries.items() if e.severity is CodeSeverity.FATAL]
    assert fatal and {12028, 19084} <= set(kinds)
    # reported outside these two files' handlers (a host interrupt, link training): their catalog entries rest on
    # their other sources alone
    assert [c for c in fatal if c not in kinds] == [10003, 25010]
    assert [c for c in fatal if c in kinds and not kinds[c] & {"fatal", "contained"}] == []


def test_an_sxid_cut_before_its_severity_is_judged_as_the_driver_reports_its_code() -> None:
    """SXid 12028 as a line cut to its Data words (a real quote) and as its whole line, which says Non-fatal: one
    verdict, and neither drains and restarts the node as a fatal SXid does."""
    cut = (FIXTURES / "real" / "kernel_sxid12028_data_line_gpud_1.txt").read_text(encoding="utf-8")
    whole = cut.splitlines()[1].split(", Data {")[0] + ", Non-fatal, Link 32 egress non-posted PRIV error (First)\n"
    answers = []
    for text in (cut, whole):
        tables = detect.read(Source.from_text(text, name="dmesg.txt"), node_id="n1").tables
        d = analyze_tables(tables, node_id="n1", platform="hgx-h100-8gpu")
        crossed = [c for f in d.findings for c in f.crossed if c.counter.startswith("sxid")]
        answers.append((d.ticket_priority, d.fault_detected, [c.rule for c in crossed],
                        "restart the node" in d.repair_action))
    assert answers[0] == answers[1]
    assert answers[0][0] is Priority.MEDIUM and answers[0][2] == ["sxid"] and not answers[0][3]
