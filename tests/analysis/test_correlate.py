"""Step time against link errors: onset, the link that explains it, and plain 'not the fabric' verdicts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from diagnostics.analysis import analyze_tables, explain_job
from diagnostics.analysis.correlate import job_slowdown
from diagnostics.analysis.stats import change_point
from diagnostics.config.thresholds import load_thresholds
from tests.analysis.helpers import T0, link_series, links, steps

N = 24 * 12 + 1  # a day of 5-minute samples
ONSET = 200


def slow_steps(onset: int | None = ONSET, pct: float = 40.0, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    values = 200 * (1 + rng.normal(0, 0.01, N))
    if onset is not None:
        values[onset:] *= 1 + pct / 100
    return steps(values)


def counter(rate_from: dict[int, float]) -> list[float]:
    """A cumulative counter whose per-hour rate changes at the given sample indices."""
    rate = np.zeros(N)
    for start, value in sorted(rate_from.items()):
        rate[start:] = value
    return list(np.cumsum(rate * 5 / 60))


def fleet() -> pd.DataFrame:
    return links(
        link_series(counter({0: 3.0}), link=0, step_min=5),
        link_series(counter({ONSET: 6000.0}), link=1, step_min=5),  # starts with the slowdown
        link_series(counter({2: 5000.0}), link=2, step_min=5),  # erroring since the day began, no effect
    )


def test_change_point_finds_the_shift() -> None:
    values = np.r_[np.full(50, 100.0), np.full(30, 130.0)]
    assert change_point(values) == 50
    assert change_point(np.ones(4)) is None


def test_link_starting_with_the_slowdown_ranks_first() -> None:
    job = explain_job({"link_samples": fleet(), "step_samples": slow_steps()}, job_id="j1")
    assert job.slowdown and job.degradation_pct is not None and 35 < job.degradation_pct < 45
    assert job.onset is not None and abs(pd.Timestamp(job.onset) - (T0 + pd.Timedelta(minutes=5 * ONSET))) \
        <= pd.Timedelta(minutes=10)
    top = job.links[0]
    assert top.ref.link == 1 and top.explains_slowdown and top.score >= 0.6
    early = next(s for s in job.links if s.ref.link == 2)
    assert not early.explains_slowdown and early.score < top.score
    assert "explains" in job.verdict


def test_slow_job_with_no_erroring_link_is_not_the_fabric() -> None:
    quiet = links(link_series(counter({0: 3.0}), link=0))
    job = explain_job({"link_samples": quiet, "step_samples": slow_steps()}, job_id="j1")
    assert job.slowdown and not any(s.explains_slowdown for s in job.links)
    assert "not the fabric" in job.verdict


def test_bad_link_but_job_not_slower_is_said() -> None:
    tables = {"link_samples": fleet(), "step_samples": slow_steps(onset=None)}
    d = analyze_tables(tables, node_id="n1")
    assert d.fault_detected and d.degradation_pct is not None and abs(d.degradation_pct) < 3
    assert d.verdict is not None and "not slower" in d.verdict
    assert d.ticket_priority.value == "medium"  # failing, but the job does not pay for it


def test_diagnosis_carries_scores_and_urgent_priority_when_explained() -> None:
    d = analyze_tables({"link_samples": fleet(), "step_samples": slow_steps()}, node_id="n1")
    link1 = next(f for f in d.findings if f.link == 1)
    assert link1.explains_slowdown and link1.correlation_score is not None and link1.onset is not None
    assert d.job_id == "j1" and d.ticket_priority.value == "urgent"
    link2 = next(f for f in d.findings if f.link == 2)
    assert link2.explains_slowdown is False


def test_given_baseline_and_job_without_telemetry() -> None:
    given = job_slowdown(slow_steps(), "j1", thresholds=load_thresholds(), baseline_ms=100.0)
    assert given.baseline_step_time_ms == 100.0 and given.degradation_pct is not None and given.degradation_pct > 90
    job = explain_job({"step_samples": slow_steps()}, job_id="j1")
    assert job.warnings == ["no link telemetry for the nodes of job j1 (n1)"]
    assert "not the fabric" in job.verdict
    missing = explain_job({"step_samples": slow_steps()}, job_id="nope")
    assert missing.verdict.startswith("no step-time samples")


def test_two_failing_links_on_one_job_only_the_one_that_tracks_best_explains_it() -> None:
    """A ring is paced by its slowest hop: the link whose errors start with the slowdown explains it; another
    failing link on the job whose errors start a quarter of an hour later tracks less well and does not, and its
    node's priority stays medium."""
    peer = link_series(counter({ONSET + 3: 3000.0}), node="n2", link=4, step_min=5)  # 15 min after: it tracks too
    tables = {"link_samples": links(*(link_series(counter({ONSET: 6000.0}), link=1, step_min=5),), peer),
              "step_samples": steps(slow_steps()["step_time_ms"].tolist(), nodes="n1,n2")}
    job = explain_job(tables, job_id="j1")
    explaining = [(s.node_id, s.ref.link) for s in job.links if s.explains_slowdown]
    assert explaining == [("n1", 1)]
    other = next(s for s in job.links if s.node_id == "n2")
    assert any("another link tracks the slowdown better" in e for e in other.evidence)
    bystander = analyze_tables(tables, node_id="n2")
    assert bystander.fault_detected and bystander.ticket_priority.value == "medium"
    assert bystander.verdict is not None and "not this node's fabric" in bystander.verdict


def events_of(rate_from: dict[int, float], seed: int) -> list[float]:
    """A counter of whole events at the given per-hour rates (a few an hour: one every few samples)."""
    return list(np.floor(np.array(counter(rate_from)) + np.random.default_rng(seed).uniform()))


def test_a_few_failed_recoveries_an_hour_starting_with_the_slowdown_explain_it() -> None:
    sparse = links(link_series({"recovery_failed": events_of({ONSET: 3.0}, 1)}, link=None, gpu=0, peer="",
                               gpu_total=True),
                   link_series({"recovery_failed": events_of({ONSET - 60: 3.0}, 2)}, link=None, gpu=1, peer="",
                               gpu_total=True))
    job = explain_job({"link_samples": sparse, "step_samples": slow_steps()}, job_id="j1")
    by_gpu = {s.ref.gpu: s for s in job.links}
    assert by_gpu[0].explains_slowdown and by_gpu[0].score >= 0.6  # one count every 20 minutes, from the onset
    assert "between counts" in " ".join(by_gpu[0].evidence)
    assert not by_gpu[1].explains_slowdown  # the same rate from five hours before: not this slowdown


def test_a_background_of_errors_does_not_start_a_link_before_its_rise() -> None:
    """A flapping link: a few recoveries an hour and replays rising over a background of 40 an hour."""
    rng = np.random.default_rng(3)
    noisy = np.cumsum(rng.poisson(40 * 5 / 60, N) + np.where(np.arange(N) >= ONSET, 150 * 5 / 60, 0))
    flapping = link_series({"replay": list(noisy.astype(float)), "recovery": events_of({ONSET: 4.0}, 4)}, link=4)
    job = explain_job({"link_samples": links(flapping), "step_samples": slow_steps()}, job_id="j1")
    (score,) = job.links
    assert score.onset is not None
    assert abs(pd.Timestamp(score.onset) - (T0 + pd.Timedelta(minutes=5 * ONSET))) <= pd.Timedelta(minutes=10)
    assert score.explains_slowdown


def test_a_job_that_logs_no_step_any_more_is_not_running() -> None:
    storm = links(link_series(counter({ONSET: 6000.0}), link=1))
    cut = slow_steps().iloc[: ONSET + 20]  # the job stops logging 100 minutes after its slowdown began
    d = analyze_tables({"link_samples": storm, "step_samples": cut}, node_id="n1")
    assert d.job_id == "j1" and d.verdict is not None and "not running" in d.verdict
    assert d.degradation_pct is None and d.ticket_priority.value == "medium"  # failing, no slowdown to blame
    running = analyze_tables({"link_samples": storm, "step_samples": slow_steps()}, node_id="n1")
    assert running.ticket_priority.value == "urgent" and "explains" in (running.verdict or "")


def test_a_history_of_the_chosen_links_scores_them_as_the_whole_history_does() -> None:
    """The correlation reads only the links its findings name (each whole): their segments hold the same readings
    and increases as in the history of every link, and a link named by any of its readings (its peer relabelled
    half-way) is read whole."""
    from diagnostics.analysis.jobs import LinkChoice, link_history, segment_index
    from diagnostics.components import ComponentRef
    from diagnostics.times import ns

    relabelled = link_series(counter({0: 1.0}), gpu=1, link=4, peer="NVSwitch 2")
    relabelled.loc[N // 2:, "peer"] = "unknown"
    table = links(link_series(counter({0: 2.0, ONSET: 60.0}), gpu=0, link=3, peer="NVSwitch 1"),
                  link_series(counter({0: 5.0}), gpu=0, link=5, peer="NVSwitch 1"), relabelled,
                  link_series(counter({0: 3.0}), node="n2", gpu=0, link=3, peer="NVSwitch 1"))
    t = ns(table["timestamp"])
    wanted = [("n1", ComponentRef.nvlink(0, 3)), ("n1", ComponentRef.nvlink(1, 4)), ("n2", ComponentRef.nvlink(0, 3))]
    every = link_history(["n1", "n2"], int(t.min()), int(t.max()), table, t, None)
    chosen = link_history(["n1", "n2"], int(t.min()), int(t.max()), table, t, None, LinkChoice.of(wanted))
    all_index, index = segment_index(every), segment_index(chosen)
    assert chosen.nseg == 3 < every.nseg and len(chosen.t) == 3 * N
    for node, ref in wanted:
        a, b = all_index[(node, ref.slug)], index[(node, ref.slug)]
        rows_a = slice(every.segment_starts[a], every.segment_starts[a] + N)
        rows_b = slice(chosen.segment_starts[b], chosen.segment_starts[b] + N)
        assert (every.t[rows_a] == chosen.t[rows_b]).all()
        assert (every.delta("replay")[0][rows_a] == chosen.delta("replay")[0][rows_b]).all()


def test_ranks_and_bucket_means_are_what_pandas_gives() -> None:
    """The vector forms the scoring uses: each row ranked as `rank(axis=1)` ranks it (ties at their mean rank), and a
    job's step time per bucket as a groupby's mean, each empty bucket taking the one before it."""
    from diagnostics.analysis.stats import average_ranks, bucket_means

    rng = np.random.default_rng(5)
    for _ in range(200):
        rows = rng.integers(0, int(rng.integers(1, 5)), (int(rng.integers(1, 6)), int(rng.integers(1, 30))))
        values = rows.astype(float) if rng.random() < 0.5 else rng.normal(size=rows.shape)
        assert np.array_equal(average_ranks(values), pd.DataFrame(values).rank(axis=1).to_numpy())
        n, width = int(rng.integers(1, 20)), 300
        t = np.sort(rng.integers(0, n * width + 1, int(rng.integers(1, 40))))
        step = rng.normal(100, 5, len(t))
        step[rng.random(len(t)) < 0.1] = np.nan  # a step without a time read
        frame = pd.DataFrame({"t": t, "v": step})
        expected = frame.groupby((frame["t"] - 1) // width)["v"].mean().reindex(range(n)).ffill().bfill()
        assert np.array_equal(bucket_means(t, step, t0=0, width=width, n=n), expected.to_numpy(), equal_nan=True)
    # a sum that differs from a plain one in its last bit flips which bucket ranks higher
    assert bucket_means(np.array([1, 2, 3, 4]), np.array([0.1, 0.2, 0.3, 0.2]), t0=0, width=3, n=2)[0] < 0.2
    with_nan = np.array([[1.0, np.nan, 1.0, 0.0]])
    assert np.array_equal(average_ranks(with_nan), pd.DataFrame(with_nan).rank(axis=1).to_numpy(), equal_nan=True)


def test_a_down_link_is_read_once_for_every_job_scored_on_a_history(monkeypatch: pytest.MonkeyPatch) -> None:
    """A link down from the slowdown on tracks it (a large step while down), for each job scored on one history;
    which rows are down is read from the history once, not once per job."""
    import diagnostics.analysis.correlate as correlate
    from diagnostics.analysis.jobs import link_history, segment_index
    from diagnostics.components import ComponentRef
    from diagnostics.times import ns

    down = link_series(counter({0: 3.0}), link=1, step_min=5,
                       link_state=["up"] * ONSET + ["down"] * (N - ONSET))
    table = links(down, link_series(counter({0: 3.0}), link=2, step_min=5))
    t = ns(table["timestamp"])
    p = link_history(["n1"], int(t.min()), int(t.max()), table, t, None)
    refs = [("n1", ComponentRef.nvlink(0, 1)), ("n1", ComponentRef.nvlink(0, 2))]
    segments = np.array([segment_index(p)[(n, r.slug)] for n, r in refs])
    reads = []
    impaired = correlate._impaired
    monkeypatch.setattr(correlate, "_impaired", lambda p: reads.append(p) or impaired(p))
    thresholds = load_thresholds()
    for seed in (1, 2):
        rows = slow_steps(seed=seed)
        job = job_slowdown(rows, "j1", thresholds=thresholds)
        scored = correlate.score_links(job, rows, p, segments, refs, thresholds)
        assert [(s.ref.link, s.explains_slowdown) for s in scored.links] == [(1, True), (2, False)]
    assert len(reads) == 1


def test_a_snapshot_without_clock_times_tells_the_gap_not_the_hour() -> None:
    """A snapshot's times are placeholders: its evidence says how far the errors lead the slowdown, never "errors
    start no clock time"."""
    from tests.tickets.helpers import seed_diagnosis

    evidence = [e for f in seed_diagnosis().findings for e in f.evidence]
    assert "errors start 5 min before the slowdown" in evidence
    assert not any("no clock time" in e for e in evidence)


def test_a_link_choice_keeps_the_rows_of_the_links_named_on_their_own_nodes() -> None:
    """`LinkChoice.rows` against the rule said row by row: a row is kept when some reading of its link (node and
    keys) is named, by its node and its component's name, among the chosen; the same link on another node, a
    switch port, a GPU's total and nulls in the keys included, node names as a category (as a store reads them)."""
    from diagnostics.analysis.findings import ref_of
    from diagnostics.analysis.jobs import LinkChoice
    from diagnostics.analysis.prepared import KEYS
    from diagnostics.components import ComponentRef
    from diagnostics.tables import LINK_IDENTITY

    rng = np.random.default_rng(11)
    rows = 600
    frame = pd.DataFrame({
        "node_id": pd.Categorical(rng.choice(["n1", "n2", "n3"], rows)),
        "gpu": pd.array(rng.choice([0, 1, 2, None], rows), dtype="Int16"),
        "link_type": pd.Categorical(rng.choice(["nvlink", "pcie", "nvswitch"], rows, p=[0.7, 0.25, 0.05])),
        "nvswitch": pd.Categorical(rng.choice(["0", "1", None], rows)),
        "link": pd.array(rng.choice([0, 1, 2, 3, None], rows), dtype="Int16"),
        "lane": pd.array([None] * rows, dtype="Int8"),
        "gpu_total": pd.array(rng.random(rows) < 0.1, dtype="boolean"),
        "peer": pd.Categorical(rng.choice(["NVSwitch 0", "NVSwitch 1", None], rows)),
    })
    wanted = [("n1", ComponentRef.nvlink(0, 1)), ("n2", ComponentRef.nvlink(0, 1)), ("n3", ComponentRef.nvlink(2, 3)),
              ("n1", ComponentRef.pcie(1)), ("n9", ComponentRef.nvlink(0, 0))]
    choice = LinkChoice.of(wanted)
    named = {(n, r.slug) for n, r in wanted}
    keys = [tuple(None if pd.isna(v) else v for v in row) for row in frame[list(KEYS)].itertuples(index=False)]
    slugs = [ref_of({c: (None if pd.isna(v) else v) for c, v in zip(LINK_IDENTITY[1:], row, strict=True)}).slug
             for row in frame[list(LINK_IDENTITY[1:])].itertuples(index=False)]
    chosen = {k for k, node, slug in zip(keys, frame["node_id"], slugs, strict=True) if (node, slug) in named}
    expected = np.array([k in chosen for k in keys])
    assert expected.any() and not expected.all()
    assert np.array_equal(choice.rows(frame), expected)
    as_text = frame.assign(node_id=frame["node_id"].astype(str))
    assert np.array_equal(choice.rows(as_text), expected)
