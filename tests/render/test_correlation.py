"""The correlation picture, checked by its pixels: the step time and each link's rate in their colours where the
data puts them, the threshold at its rate, the onset line at its time and nowhere else."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from PIL import Image

from diagnostics.components import ComponentRef
from diagnostics.enums import Severity
from diagnostics.errors import InputError
from diagnostics.model import Diagnosis, LinkSeries, StepEvidence
from diagnostics.render.colours import HEALTHY, SEVERITY_COLOURS, STEP_TIME, SUSPECT
from diagnostics.render.correlation import SIZE_PX, Frame, frame_of, render_correlation, titles

START = datetime(2026, 9, 17, 0, 0, tzinfo=UTC)
BUCKETS = 48  # four hours of 5-minute buckets
SLOW_FROM = 24  # the step time and the errors rise together at 02:00
ONSET = START + timedelta(minutes=5 * SLOW_FROM)
MAX_BYTES = 150 * 1024


def rgb(colour: str) -> np.ndarray:
    return np.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)])


def near(img: np.ndarray, point: tuple[int, int], colour: str, radius: int = 4, tol: int = 40) -> bool:
    x, y = point
    window = img[max(y - radius, 0):y + radius + 1, max(x - radius, 0):x + radius + 1]
    return bool((np.abs(window - rgb(colour)).max(axis=2) <= tol).any())


def link(severity: Severity, rates: list[float], *, onset: datetime | None = None, above: float = 1000.0,
         gpu: int = 2) -> LinkSeries:
    return LinkSeries(node_id="node-7", ref=ComponentRef.of_link("nvlink", gpu, 1, "GPU 3"), counter="replay",
                      rate_per_hour=rates, above=above, rule="nvlink_replay", severity=severity,
                      explains_slowdown=onset is not None, score=0.9 if onset else 0.1, onset=onset)


def diagnosis(links: list[LinkSeries], *, explained: bool) -> Diagnosis:
    steps: list[float | None] = [100.0] * SLOW_FROM + [200.0] * (BUCKETS - SLOW_FROM)
    steps[5] = None  # a bucket with no step
    evidence = StepEvidence(job_id="4411", start=START, bucket_minutes=5, step_time_ms=steps, links=links,
                            explained=explained)
    return Diagnosis(node_id="node-7", platform="hgx-h100-8gpu", window_hours=1.0,
                     window_end=START + timedelta(hours=4), fault_detected=explained,
                     isolated_component="GPU 2 -> GPU 3 NVLink 1", degradation_pct=100.0, repair_action="reseat",
                     ticket_priority="urgent",  # type: ignore[arg-type]
                     findings=[], step_time_ms=200.0, baseline_step_time_ms=100.0, job_id="4411",
                     slowdown_onset=ONSET if explained else None,
                     verdict="job 4411 is +100.0% slower and no link's errors track it: not the fabric"
                     if not explained else "node-7 GPU 2 -> GPU 3 NVLink 1 explains job 4411's slowdown",
                     evidence=evidence)


def image(d: Diagnosis) -> tuple[np.ndarray, Frame, int]:
    png = render_correlation(d)
    img = Image.open(io.BytesIO(png))
    assert img.size == SIZE_PX
    assert d.evidence is not None
    return np.asarray(img.convert("RGB")).astype(int), frame_of(d.evidence), len(png)


def hours(bucket: int) -> float:
    return (bucket + 1) * 5 / 60  # a bucket's value is drawn at its end


@pytest.fixture(scope="module")
def storm() -> tuple[np.ndarray, Frame, int]:
    rates = [0.0] * SLOW_FROM + [3000.0] * 17 + [4000.0] * (BUCKETS - SLOW_FROM - 17)  # the top: 4,000/h
    return image(diagnosis([link(Severity.FAILING, rates, onset=ONSET)], explained=True))


def test_step_time_and_rate_curves_lie_where_the_data_puts_them(storm: tuple[np.ndarray, Frame, int]) -> None:
    img, frame, _ = storm
    failing = SEVERITY_COLOURS[Severity.FAILING]
    for bucket, step, rate in ((12, 100.0, 0.0), (30, 200.0, 3000.0), (36, 200.0, 3000.0)):
        assert near(img, frame.px(hours(bucket), step), STEP_TIME), bucket
        assert near(img, frame.px(hours(bucket), rate, rate=True), failing), bucket
    # where the data is not, neither curve is: the step time is never at 150 ms, the rate never at 2,000/h
    assert not near(img, frame.px(hours(40), 150.0), STEP_TIME)
    assert not near(img, frame.px(hours(40), 2000.0, rate=True), failing)


def test_the_threshold_is_drawn_at_its_rate(storm: tuple[np.ndarray, Frame, int]) -> None:
    img, frame, _ = storm
    failing = SEVERITY_COLOURS[Severity.FAILING]
    assert near(img, frame.px(hours(8), 1000.0, rate=True), failing, radius=6)
    assert not near(img, frame.px(hours(8), 1800.0, rate=True), failing, radius=6)


def test_the_onset_line_stands_at_its_time_and_nowhere_else(storm: tuple[np.ndarray, Frame, int]) -> None:
    img, frame, _ = storm
    x = frame.x(ONSET)
    for value in (30.0, 150.0):  # low and high on the axis: a vertical line
        assert near(img, frame.px(x, value), SUSPECT, radius=2, tol=50)
    assert not near(img, frame.px(x - 0.5, 150.0), SUSPECT, radius=3, tol=50)
    assert not near(img, frame.px(x + 0.5, 150.0), SUSPECT, radius=3, tol=50)


def test_size_within_budget(storm: tuple[np.ndarray, Frame, int]) -> None:
    assert storm[2] < MAX_BYTES


def test_not_the_fabric_draws_the_worst_links_flat_and_no_onset() -> None:
    flat = [link(Severity.OK, [12.0] * BUCKETS, gpu=g) for g in (1, 5)]
    d = diagnosis(flat, explained=False)
    img, frame, _ = image(d)
    assert near(img, frame.px(hours(30), 12.0, rate=True), HEALTHY)
    assert near(img, frame.px(hours(30), 200.0), STEP_TIME)
    left, bottom = frame.px(0, 0)
    right, top = frame.px(frame.hours, frame.step_max)
    plot = img[top + 2:bottom - 2, left + 2:right - 2]
    assert not (np.abs(plot - rgb(SUSPECT)).max(axis=2) <= 30).any()  # no onset, nothing suspected
    title, _ = titles(d, d.evidence)  # type: ignore[arg-type]
    assert "not the fabric" in title


def test_the_score_is_in_the_title() -> None:
    d = diagnosis([link(Severity.FAILING, [0.0] * BUCKETS, onset=ONSET)], explained=True)
    title, sub = titles(d, d.evidence)  # type: ignore[arg-type]
    assert title == "GPU 2 -> GPU 3 NVLink 1 explains job 4411's slowdown (score 0.90)"
    assert "errors start 02:00, slowdown 02:00" in sub


def test_a_diagnosis_without_a_job_history_is_an_input_error() -> None:
    d = diagnosis([], explained=False).model_copy(update={"evidence": None})
    with pytest.raises(InputError, match="no job history"):
        render_correlation(d)
