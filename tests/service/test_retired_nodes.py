"""A node silent for longer than `limits.known_nodes_hours` before a store sweep's span is taken as retired (a node
renamed or removed), as the server's sweep knows no such node: said once, not a sweep incomplete forever."""

from __future__ import annotations

from pathlib import Path

import pytest

from diagnostics import load_thresholds
from diagnostics.prometheus.config import ENV_FILE
from diagnostics.service import Request, StoreSource, sweep
from diagnostics.store import open_store
from tests.analysis.helpers import link_series, links, steady


def _store(tmp_path: Path) -> Path:
    """node-1 reads for two days; node-2, its old name, only in the first hour."""
    csv = tmp_path / "links.csv"
    links(link_series(steady(0.0, 48 * 12 + 1), node="node-1"), link_series(steady(0.0), node="node-2")).to_csv(
        csv, index=False)
    store = tmp_path / "store"
    assert open_store(store).ingest([csv], fmt="tables").files[0].status == "ingested"
    return store


def test_a_node_silent_past_the_known_span_is_retired(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_FILE, raising=False)
    result = sweep(StoreSource(_store(tmp_path)), Request(thresholds=load_thresholds()))
    assert result.complete and not result.silent, result.incomplete_reasons
    said = [w for w in result.warnings if "taken as retired" in w]
    assert len(said) == 1 and "node-2 (silent 2 days)" in said[0], result.warnings


def test_the_known_span_is_the_servers_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = tmp_path / "prometheus.toml"
    settings.write_text("[limits]\nknown_nodes_hours = 72\n")
    monkeypatch.setenv(ENV_FILE, str(settings))
    result = sweep(StoreSource(_store(tmp_path)), Request(thresholds=load_thresholds()))
    assert not result.complete and result.silent == ["node-2"]
    assert not [w for w in result.warnings if "taken as retired" in w]


def test_a_node_silent_on_a_fault_is_never_retired(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Silence is not health: a node whose last readings showed a failing link stays silent and urgent however long
    it has been silent (its alert stays open, not reporting); only one gone silent healthy is taken as retired."""
    monkeypatch.delenv(ENV_FILE, raising=False)
    csv = tmp_path / "links.csv"
    links(link_series(steady(0.0, 48 * 12 + 1), node="node-1"), link_series(steady(2400.0), node="node-2")).to_csv(
        csv, index=False)
    assert open_store(tmp_path / "store").ingest([csv], fmt="tables").files[0].status == "ingested"
    result = sweep(StoreSource(tmp_path / "store"), Request(thresholds=load_thresholds()))
    assert result.silent == ["node-2"] and not result.complete
    assert not [w for w in result.warnings if "taken as retired" in w]
    assert any("no link reading from node-2" in r and "failing" in r for r in result.incomplete_reasons), \
        result.incomplete_reasons
