"""Labelled synthetic fleets and the eval that scores the analysis against their ground truth, and real outputs
against what their sources say."""

from .drafter_eval import DrafterReport, score_drafter
from .evaluate import EVAL_STEPS, EvalReport, evaluate
from .expected import EXPECTED_FILE, SamplesReport, evaluate_samples
from .fleet import DEFAULT_NODES, build, generate, generate_steps, load
from .life import build_life, load_life
from .rack_fleet import DEFAULT_RACKS, build_racks, generate_racks, load_slots
from .storm import build_storm, storm_inventory

__all__ = ["DEFAULT_NODES", "DEFAULT_RACKS", "EVAL_STEPS", "EXPECTED_FILE", "DrafterReport", "EvalReport",
           "SamplesReport", "build", "build_life", "build_racks", "build_storm", "evaluate", "evaluate_samples",
           "generate", "generate_racks", "generate_steps", "load", "load_life", "load_slots", "score_drafter",
           "storm_inventory"]
