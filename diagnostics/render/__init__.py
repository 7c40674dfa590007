"""The node picture (a scene laid out from the topology graph and the diagnosis) and the rack picture (trays by
switch chips), drawn as PNG or SVG."""

from .draw import SEVERITY_COLOURS, render_node, render_with_warnings
from .inputs import Drawable, drawable_from_file, drawable_from_store, graph_for_platform
from .rack import render_rack, wants_rack_view
from .scene import Scene, build_scene

__all__ = [
    "SEVERITY_COLOURS",
    "Drawable",
    "Scene",
    "build_scene",
    "drawable_from_file",
    "drawable_from_store",
    "graph_for_platform",
    "render_node",
    "render_rack",
    "render_with_warnings",
    "wants_rack_view",
]
