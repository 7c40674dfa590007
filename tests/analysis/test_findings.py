"""A link's finding says where a counter is pinned at its 16-bit maximum: its total and its rate are lower bounds."""

from __future__ import annotations

import pandas as pd

from diagnostics import format as fmt
from diagnostics.analysis import analyze_tables
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
