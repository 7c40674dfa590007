"""The correlation picture (PNG): a job's step time and links' error rates on one time axis, from the evidence the
engine put in the Diagnosis (`Diagnosis.evidence`): the job's baseline before the slowdown and the analysis window
shaded, the links' thresholds, the errors' onset and the slowdown's change point marked, the score in the title.

When no link explains the slowdown the node's worst links are drawn beside the step time: flat, that is the
picture of "not the fabric". Sized for a Slack preview (1200x560 px, well under 150 KB).
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from datetime import datetime, timedelta

import matplotlib
import numpy as np

matplotlib.use("Agg")

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MultipleLocator
from PIL import Image  # matplotlib's own dependency

from .. import format as fmt
from ..errors import InputError
from ..model import Diagnosis, LinkSeries, StepEvidence
from .colours import INK, MUTED, STEP_TIME, SUSPECT, severity_colour
from .text import fit

SIZE_PX = (1200, 560)
AXES = (0.075, 0.13, 0.83, 0.66)  # left, bottom, width, height as fractions of the figure
WINDOW_SHADE = "#e9ecef"
LINK_STYLES = ("-", (0, (5, 2)), (0, (1, 1.5)))  # several links of one colour stay apart
HEADROOM = 1.4  # the curves stay under the legend


@dataclass(frozen=True)
class Frame:
    """Where the data lands: hours since the evidence's start along x, step time (left) and rate (right) up."""

    start: datetime
    hours: float
    step_max: float
    rate_max: float

    def x(self, when: datetime) -> float:
        return (when - self.start).total_seconds() / 3600

    def px(self, hours: float, value: float, *, rate: bool = False) -> tuple[int, int]:
        """The pixel (column, row) of a point: `value` a step time, or a rate with `rate`."""
        left, bottom, width, height = AXES
        top = self.rate_max if rate else self.step_max
        col = (left + width * hours / self.hours) * SIZE_PX[0]
        row = (1 - bottom - height * value / top) * SIZE_PX[1]
        return round(col), round(row)


def frame_of(evidence: StepEvidence) -> Frame:
    steps = [v for v in evidence.step_time_ms if v is not None]
    rates = [r for link in evidence.links for r in link.rate_per_hour]
    rates += [link.above for link in evidence.links if link.above is not None]
    return Frame(start=evidence.start, hours=len(evidence.step_time_ms) * evidence.bucket_minutes / 60,
                 step_max=max(steps, default=1.0) * HEADROOM, rate_max=max(max(rates, default=0.0) * HEADROOM, 1.0))


def _clock(frame: Frame) -> FuncFormatter:
    return FuncFormatter(lambda x, _: f"{frame.start + timedelta(hours=x):%H:%M}")


def _tick_hours(hours: float) -> float:
    return next((s for s in (0.25, 0.5, 1, 2, 3, 6, 12) if hours / s <= 10), 24.0)


def titles(diagnosis: Diagnosis, evidence: StepEvidence) -> tuple[str, str]:
    top = evidence.links[0] if evidence.links else None
    if evidence.explained and top is not None:
        score = f" (score {top.score:.2f})" if top.score is not None else ""
        title = f"{top.ref.name} explains job {evidence.job_id}'s slowdown{score}"
    else:
        title = diagnosis.verdict or f"job {evidence.job_id}"
    parts = [diagnosis.node_id, f"step time {fmt.percent(diagnosis.degradation_pct)}"]
    if diagnosis.window_end is not None:
        parts.append(diagnosis.window_said())
    if top is not None and evidence.explained:
        parts.append(f"errors start {_at(top.onset)}, slowdown {_at(diagnosis.slowdown_onset)}")
    elif evidence.links:
        parts.append("the node's worst links")
    return title, "  ·  ".join(parts)


def _at(moment: datetime | None) -> str:
    return f"{moment:%H:%M}" if moment is not None else "n/a"


def _marks(ax: Axes, frame: Frame, diagnosis: Diagnosis, evidence: StepEvidence) -> None:
    """The slowdown's change point and, for the links that explain it, their errors' onset."""
    change = diagnosis.slowdown_onset
    if change is not None:
        x = frame.x(change)
        ax.axvline(x, color=STEP_TIME, linestyle=(0, (4, 2)), linewidth=1.4, zorder=4, gid="change-point")
        ax.text(x, 1.01, f"slowdown {change:%H:%M} ", transform=ax.get_xaxis_transform(), ha="right",
                va="bottom", fontsize=9, color=STEP_TIME)
    onsets = sorted({link.onset for link in evidence.links if link.onset is not None and evidence.explained})
    for onset in onsets:
        x = frame.x(onset)
        ax.axvline(x, color=SUSPECT, linewidth=1.4, zorder=4, gid="onset")
        ax.text(x, 1.01, f" errors start {onset:%H:%M}", transform=ax.get_xaxis_transform(), ha="left",
                va="bottom", fontsize=9, color=SUSPECT)


def _links(rates: Axes, frame: Frame, links: list[LinkSeries], evidence: StepEvidence) -> None:
    hours = [evidence.bucket_minutes / 60 * (i + 1) for i in range(len(evidence.step_time_ms))]
    seen: dict[str, int] = {}
    for link in links:
        colour = severity_colour(link.severity)
        style = LINK_STYLES[seen.get(colour, 0) % len(LINK_STYLES)]
        seen[colour] = seen.get(colour, 0) + 1
        rates.plot(hours, link.rate_per_hour, color=colour, linewidth=2.0, linestyle=style, zorder=3,
                   label=f"{link.ref.name}: {fmt.label(link.counter)}/h")
        if link.above is not None:
            rates.axhline(link.above, color=colour, linewidth=1.0, linestyle=(0, (6, 3)), zorder=2)
            rates.text(frame.hours, link.above, f"{fmt.value(link.above, fmt.Unit.PER_HOUR)} ({link.rule}) ",
                       ha="right", va="bottom", fontsize=8.5, color=colour, zorder=5)


def render_correlation(diagnosis: Diagnosis) -> bytes:
    """PNG bytes of the job's step time against its links' error rates, from `diagnosis.evidence`."""
    evidence = diagnosis.evidence
    if evidence is None:
        raise InputError(f"{diagnosis.node_id} has no job history to draw: the correlation picture needs the "
                         "step times of a job on the node and its links' readings over them")
    frame = frame_of(evidence)
    fig = Figure(figsize=(SIZE_PX[0] / 100, SIZE_PX[1] / 100), dpi=100, facecolor="white")
    canvas = FigureCanvasAgg(fig)
    ax = fig.add_axes(AXES)
    rates = ax.twinx()
    ax.set_zorder(rates.get_zorder() + 1)  # the step time over the rates; its face clear so both show
    ax.patch.set_visible(False)
    ax.set_xlim(0, frame.hours)
    ax.set_ylim(0, frame.step_max)
    rates.set_ylim(0, frame.rate_max)
    if diagnosis.window_end is not None:
        end = frame.x(diagnosis.window_end)
        rates.axvspan(end - diagnosis.window_hours, end, color=WINDOW_SHADE, zorder=0, linewidth=0)
        rates.text(end - diagnosis.window_hours / 2, frame.rate_max * 0.97, "analysis window", ha="center",
                   va="top", fontsize=8.5, color=MUTED)
    _links(rates, frame, evidence.links, evidence)
    hours = [evidence.bucket_minutes / 60 * (i + 1) for i in range(len(evidence.step_time_ms))]
    steps = [math.nan if v is None else v for v in evidence.step_time_ms]
    ax.plot(hours, steps, color=STEP_TIME, linewidth=2.2, zorder=6, label=f"job {evidence.job_id} step time")
    if diagnosis.baseline_step_time_ms is not None:
        ax.axhline(diagnosis.baseline_step_time_ms, color=STEP_TIME, linewidth=1.0, linestyle=(0, (1, 2)),
                   alpha=0.7, zorder=5, label=f"baseline {fmt.number(diagnosis.baseline_step_time_ms)} ms")
    _marks(ax, frame, diagnosis, evidence)
    ax.xaxis.set_major_locator(MultipleLocator(_tick_hours(frame.hours)))
    ax.xaxis.set_major_formatter(_clock(frame))
    ax.set_xlabel(f"UTC, from {evidence.start:%Y-%m-%d %H:%M} ({fmt.number(evidence.bucket_minutes)}-minute "
                  "buckets)", fontsize=9.5, color=MUTED)
    ax.set_ylabel("step time (ms)", color=STEP_TIME, fontsize=10)
    rates.set_ylabel("errors per hour", color=MUTED, fontsize=10)
    rates.yaxis.set_major_formatter(FuncFormatter(lambda y, _: fmt.number(y, compact=True)))
    handles = [*ax.get_legend_handles_labels()[0], *rates.get_legend_handles_labels()[0]]
    ax.legend(handles=handles, loc="upper left", fontsize=8.5, frameon=True, framealpha=0.9)
    title, sub = titles(diagnosis, evidence)
    edge = SIZE_PX[0] - 16  # the picture's right edge, less a margin
    fit(fig.text(AXES[0], 0.95, title, fontsize=13.5, fontweight="bold", color=INK, va="center"), canvas, edge)
    fit(fig.text(AXES[0], 0.895, sub, fontsize=10, color=SUSPECT if evidence.explained else MUTED, va="center"),
        canvas, edge)
    canvas.draw()
    out = io.BytesIO()
    # RGB, not RGBA: the picture is opaque
    Image.fromarray(np.asarray(canvas.buffer_rgba())[:, :, :3]).save(out, format="png", compress_level=6)
    return out.getvalue()


__all__ = ["SIZE_PX", "Frame", "frame_of", "render_correlation", "titles"]
