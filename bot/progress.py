"""The command line's progress bar for long work (ingesting many files, synth, eval, a benchmark's backfill):
tqdm on stderr, drawn only when stderr is a terminal and the output is not `--json`, so pipes, logs and
machine-readable output stay as they were."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

from tqdm import tqdm


def shown(stream: TextIO, *, quiet: bool = False) -> bool:
    """Whether a bar is drawn on `stream`: a terminal, and not asked to be quiet (`--json`)."""
    isatty = getattr(stream, "isatty", None)
    return not quiet and bool(isatty and isatty())


@contextmanager
def progress_bar(total: int, what: str, *, unit: str = "step", quiet: bool = False,
                 stream: TextIO | None = None) -> Iterator[Callable[[int], None]]:
    """A bar of `total` steps for the work in the block; the block gets the callable that advances it."""
    out = stream if stream is not None else sys.stderr
    with tqdm(total=total, desc=what, unit=unit, file=out, disable=not shown(out, quiet=quiet), leave=True,
              dynamic_ncols=True, mininterval=0.2) as bar:
        yield bar.update
