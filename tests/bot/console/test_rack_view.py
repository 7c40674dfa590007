"""The console's rack view: the rack picture as SVG, its suspect and its trays' rows tied to their findings."""

from __future__ import annotations

from datetime import timedelta

import pandas as pd

from bot.console.topology import rack_units, topology_view
from diagnostics.analysis import analyze_fleet
from diagnostics.render import drawable_of
from diagnostics.synth.rack_fleet import build_racks


def test_a_racks_view_makes_its_suspect_and_failing_trays_clickable() -> None:
    tables, truth, slots, platforms = build_racks(seed=5, racks=1, hours=6, scenarios=["cartridge"])
    fleet = analyze_fleet(tables, window=timedelta(hours=1), end=pd.Timestamp(truth["end"]), platforms=platforms,
                          racks=slots)
    rack = fleet.racks["rack-01"]
    view = topology_view(drawable_of(rack, None), 1, None)
    gids = {link["gid"] for link in view["links"]}
    assert "suspect" in gids and view["suspect"] == rack.isolated_component
    assert all(f'id="{g}"' in view["svg"] for g in gids)
    failing = {f.ref.tray for f in rack.failing if f.ref.tray}
    assert {f"unit-tray{t}" for t in failing} <= set(rack_units(rack))
    suspect = next(link for link in view["links"] if link["gid"] == "suspect")
    assert suspect["severity"] in ("failing", "down")
