"""Labelled synthetic fleets and the eval that scores the analysis against their ground truth."""

from .evaluate import EVAL_STEPS, EvalReport, evaluate
from .fleet import DEFAULT_NODES, build, generate, generate_steps, load

__all__ = ["DEFAULT_NODES", "EVAL_STEPS", "EvalReport", "build", "evaluate", "generate", "generate_steps", "load"]
