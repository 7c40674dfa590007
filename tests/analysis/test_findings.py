"""A link's finding says where a counter is pinned at its 16-bit maximum: its total and its rate are lower bounds."""

from __future__ import annotations

import pandas as pd
import pytest

from diagnostics import format as fmt
from diagnostics.analysis import analyze_tables, findings
from diagnostics.config.thresholds import LINK_DOWN_RULE, load_thresholds
from diagnostics.enums import Severity
from diagnostics.metrics import LEVELS, RATES
from diagnostics.model import Finding
from tests.analysis.helpers import link_series, links

PINNED_CRC = fmt.pinned(["crc_flit"], 65535)


def _finding(*frames: pd.DataFrame, pinned_last: bool = True) -> Finding:
    frame = pd.concat(frames, ignore_index=True)
    frame["saturated"] = False
    if pinned_last:
        frame.loc[frame.index[-1], "saturated"] = True
    d = analyze_tables({"link_samples": links(frame)}, node_id="n1")
    return d.findings[0]


def test_a_rate_up_to_a_pinned_counter_is_said_a_lower_bound() -> None:
    """8,814 CRC errors, then 65,535 half an hour later: 113,442/h at least, said in the crossing itself."""
    found = _finding(link_series({"replay": [0, 0], "crc_flit": [8814, 65535]}, step_min=30))
    assert found.rates_per_hour["crc"] == 113442
    assert [c.message for c in found.crossed] == [f"CRC errors 113,442/h > 100/h (crc); {PINNED_CRC}"]
    assert PINNED_CRC not in found.evidence  # said once
    assert PINNED_CRC == ("CRC flit errors pinned at 65,535, its maximum: it counts no further, so the count since "
                          "reset and any rate from it are lower bounds")


def test_a_pinned_counter_no_rule_judges_is_said_in_the_evidence() -> None:
    """Replays pinned (no increase can show) while the CRC rule fires: the CRC crossing is exact, the replays are
    said to be a lower bound; a lone pinned reading says it too."""
    found = _finding(link_series({"replay": [65535, 65535], "crc_flit": [0, 600]}, step_min=30))
    assert [c.message for c in found.crossed] == ["CRC errors 1,200/h > 100/h (crc)"]
    assert fmt.pinned(["replay"], 65535) in found.evidence
    lone = _finding(link_series({"replay": [148], "crc_flit": [65535]}))
    assert lone.crossed == [] and PINNED_CRC in lone.evidence


def test_no_word_of_it_where_nothing_is_pinned() -> None:
    found = _finding(link_series({"replay": [0, 0], "crc_flit": [8814, 65535]}, step_min=30), pinned_last=False)
    assert not any("pinned" in text for text in [*found.evidence, *(c.message for c in found.crossed)])


def test_a_failing_link_s_finding_is_built_from_its_row_without_asking_the_metric_table_per_metric(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A fleet makes thousands of findings: which metrics a link type has is asked once per link type, and the
    finding the engine builds from typed values is not validated a second time. Its answer is the one it was."""
    row = {"node_id": "n1", "link_type": "nvlink", "gpu": 2, "link": 5, "peer": "NVSwitch 1", "samples": 3,
           "covered_h": 1.0, "replay_per_hour": 9.0, "replay_increase": 9.0, "replay_total": 256.0,
           "crc_flit_per_hour": 600.0, "crc_flit_increase": 600.0, "crc_flit_total": 4000.0,
           "crc_per_hour": 600.0, "crc_total": 4000.0, "replay_rollovers_per_hour": 7.0, "link_state": "down"}
    asked: list[str] = []
    applies = findings.applies
    monkeypatch.setattr(findings, "applies", lambda name, link_type: asked.append(name) or applies(name, link_type))

    def validated(self: Finding, **data: object) -> None:
        raise AssertionError("a finding the engine built was validated again")

    monkeypatch.setattr(Finding, "__init__", validated)
    made = [findings.finding_of(row, load_thresholds()) for _ in range(50)]
    assert len(asked) <= len(RATES) + len(LEVELS)
    found = made[-1]
    assert found.severity is Severity.DOWN and found.component == "GPU 2 NVLink 5 -> NVSwitch 1"
    assert [c.rule for c in found.crossed] == [LINK_DOWN_RULE, "crc"]
    assert found.rates_per_hour == {"replay": 9.0, "crc_flit": 600.0, "crc": 600.0}  # no PCIe rollovers on NVLink
    assert found.counts == {"replay": 9.0, "crc_flit": 600.0, "crc": 600.0}
    assert Finding.model_validate(found.model_dump()) == found


def test_links_of_one_identity_share_one_ref_and_a_different_column_gives_its_own() -> None:
    """A ref is read from the row's identity columns alone, once per identity: two nodes' GPU 2 NVLink 5 to NVSwitch
    1 are one (immutable) ref; another peer, link type or a GPU-wide total is another."""
    row = {"node_id": "n1", "link_type": "nvlink", "gpu": 2.0, "link": 5.0, "peer": "nvswitch-1"}
    same = findings.ref_of({**row, "node_id": "n2", "gpu": 2, "link": 5})
    assert findings.ref_of(row) is same and same.name == "GPU 2 NVLink 5 -> NVSwitch 1"
    assert findings.ref_of({**row, "peer": "GPU3"}).name == "GPU 2 -> GPU 3 NVLink 5"
    assert findings.ref_of({**row, "gpu_total": True}).name == "GPU 2 NVLinks"
    assert findings.ref_of({**row, "link_type": "pcie", "gpu_total": True}).name == "GPU 2 PCIe"
    assert findings.ref_of({**row, "link_type": "nvswitch", "nvswitch": "3"}).name == "NVSwitch 3 port 5"
    assert findings.ref_of({**row, "gpu_total": pd.NA}) is same
