"""The pictures: the node's fabric (a scene laid out from the topology graph and the diagnosis, drawn as PNG or
SVG), the rack view (trays by switch chips), a job's step time against its links' errors, and the fleet's heat map."""

from .colours import SEVERITY_COLOURS
from .correlation import render_correlation
from .draw import render_node, render_with_warnings
from .heatmap import FleetGrid, fleet_grid, render_fleet
from .inputs import (
    Drawable,
    describes_topology,
    drawable_of,
    graph_for_platform,
    read_snapshot_text,
    snapshot_case,
    topology_drawable,
)
from .rack import render_rack, wants_rack_view
from .scene import Scene, build_scene

__all__ = [
    "SEVERITY_COLOURS",
    "Drawable",
    "FleetGrid",
    "Scene",
    "build_scene",
    "describes_topology",
    "drawable_of",
    "fleet_grid",
    "graph_for_platform",
    "read_snapshot_text",
    "render_correlation",
    "render_fleet",
    "render_node",
    "render_rack",
    "render_with_warnings",
    "snapshot_case",
    "topology_drawable",
    "wants_rack_view",
]
