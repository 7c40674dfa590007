"""How long work says how far it has got: a callable the caller passes, advanced by a count of steps done (files
read, nodes written); the command line draws it as a progress bar, everything else passes none."""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[int], None]


def advance(progress: Progress | None, steps: int = 1) -> None:
    if progress is not None:
        progress(steps)
