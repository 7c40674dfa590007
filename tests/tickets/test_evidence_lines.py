"""A ticket's Evidence section says each fact once: a link's rates where its crossed lines leave one out, never a
line that repeats them, and a GPU total's crossed line not again among the notes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from diagnostics.service import Request, StoreSource, diagnose
from diagnostics.tickets import RulesDrafter
from tests.tickets.helpers import seed_diagnosis


def _evidence(markdown: str) -> list[str]:
    return [line[2:] for line in markdown.split("## Evidence", 1)[1].split("## Estimated", 1)[0].splitlines()
            if line.startswith("- ")]


def test_a_links_rates_are_said_only_where_they_add_to_its_crossed_lines(
        switch_tray_rack: tuple[Path, Path, dict[str, Any]]) -> None:
    d = diagnose(StoreSource(switch_tray_rack[1]), Request(rack="rack-01")).diagnosis
    ticket = RulesDrafter().draft(d)
    lines = _evidence(ticket.to_markdown())
    assert len(lines) == len(set(lines)), [line for line in lines if lines.count(line) > 1]
    crossed = ticket.evidence.thresholds_crossed
    assert len(crossed) >= 2
    for line in lines:
        if " > " in line or ": " not in line:
            continue
        comp, said = line.split(": ", 1)
        mine = [c for c in crossed if c.startswith(f"{comp}: ")]
        assert not mine or not all(any(part in c for c in mine) for part in said.split(", ")), line
    seed = _evidence(RulesDrafter().draft(seed_diagnosis(platform="hgx-h100-8gpu")).to_markdown())
    assert "GPU 2 NVLink 1 -> NVSwitch 0 port 9: replays 8,900/h, CRC flit errors 45,120/h, recoveries 0/h, " \
           "CRC errors 45,120/h" in seed  # the rates crossed lines leave out (recoveries, CRC flits) kept
