"""Text that must fit where it is drawn: a picture's headline, set smaller until it ends where it may."""

from __future__ import annotations

import textwrap

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.text import Text

MIN_FONT = 8.0  # points: smaller than this a headline is no longer read at a glance


def fit(line: Text, canvas: FigureCanvasAgg, right_px: float) -> None:
    """The line's font made smaller, half a point at a time, until it ends left of `right_px` (a long node name, a
    snapshot's window and the step time ran under the legend or off the picture), down to `MIN_FONT`."""
    renderer = canvas.get_renderer()
    size = float(line.get_fontsize())
    while size > MIN_FONT and line.get_window_extent(renderer).x1 > right_px:
        size -= 0.5
        line.set_fontsize(size)


def footnote(note: str, width: int) -> str:
    """A warning under a picture, cut at a word with an ellipsis where it is longer than the line holds (it was cut
    mid-word: "their NVSwitch chips and p")."""
    return textwrap.shorten(f"! {note}", width, placeholder=" …")
