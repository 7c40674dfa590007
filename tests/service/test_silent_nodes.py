"""A node with no reading in the span a sweep reads is said in one wording, whichever source was swept (the
store's nodes, some or all of them silent, and the nodes a Prometheus server knows around the span)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pandas as pd

from diagnostics import load_thresholds
from diagnostics.analysis.fleet import history_needed
from diagnostics.prometheus import SweepResult
from diagnostics.prometheus.client import LabelValues
from diagnostics.prometheus.presence import say_silent
from diagnostics.service import Request, StoreSource, sweep
from diagnostics.store import open_store
from tests.analysis.helpers import T0, link_series, links, steady

NODES = ["node-1", "node-2", "node-3"]


def _store(tmp_path: Path) -> Path:
    """node-1 reads throughout; node-2 and node-3 only in the first hour of a day."""
    csv = tmp_path / "links.csv"
    links(link_series(steady(20.0, 289), node="node-1"),
          *(link_series(steady(20.0, 13), node=n) for n in NODES[1:])).to_csv(csv, index=False)
    store = tmp_path / "store"
    assert open_store(store).ingest([csv], fmt="tables").files[0].status == "ingested"
    return store


def _as_prometheus_says(store: SweepResult, reported: set[str], span: timedelta) -> SweepResult:
    """The same silence said by the Prometheus sweep: the server knows every node, `reported` answered."""
    said = SweepResult(at=store.at, window_hours=store.window_hours, source=store.source)
    say_silent(said, reported, LabelValues(NODES), span=span, around_hours=24.0,
               usable=lambda _: True)
    return said


def test_silent_nodes_are_said_alike_by_every_sweep(tmp_path: Path) -> None:
    source = StoreSource(_store(tmp_path))
    thresholds = load_thresholds()
    span = history_needed(Request().length, thresholds)  # what the store's sweep of its default window reads
    end = T0 + pd.Timedelta(hours=24)
    some = sweep(source, Request(end=end.to_pydatetime(), thresholds=thresholds))
    every = sweep(source, Request(end=(end + pd.Timedelta(hours=12)).to_pydatetime(), thresholds=thresholds))
    assert some.silent == NODES[1:] and every.silent == NODES
    for result, reported in ((some, {"node-1"}), (every, set())):
        said = [r for r in result.incomplete_reasons if "no reading" in r]
        assert said == _as_prometheus_says(result, reported, span).incomplete_reasons, said
        assert all(n in said[0] for n in result.silent)
