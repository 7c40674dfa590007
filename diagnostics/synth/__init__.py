"""Labelled synthetic fleets and the eval that scores the analysis against their ground truth."""

from .evaluate import EvalReport, evaluate
from .fleet import build, generate, load

__all__ = ["EvalReport", "build", "evaluate", "generate", "load"]
