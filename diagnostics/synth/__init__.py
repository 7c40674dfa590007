"""Labelled synthetic fleets and the eval that scores the analysis against their ground truth."""

from .evaluate import EvalReport, evaluate
from .fleet import DEFAULT_NODES, build, generate, load
from .rack_fleet import DEFAULT_RACKS, build_racks, generate_racks, load_slots

__all__ = ["DEFAULT_NODES", "DEFAULT_RACKS", "EvalReport", "build", "build_racks", "evaluate", "generate",
           "generate_racks", "load", "load_slots"]
