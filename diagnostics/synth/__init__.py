"""Labelled synthetic fleets and the eval that scores the analysis against their ground truth."""

from .evaluate import EvalReport, evaluate
from .fleet import DEFAULT_NODES, build, generate, load

__all__ = ["DEFAULT_NODES", "EvalReport", "build", "evaluate", "generate", "load"]
