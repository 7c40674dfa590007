"""`/fabric fleet` from a store says what `fabricbot sweep --store` says of the same store: a node whose links were
not judged (one reading per link, a stored part that cannot be read) makes the view incomplete, never healthy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.cli import main
from bot.commands.output import INCOMPLETE
from bot.nodes import StoreNodeSource
from diagnostics.store import open_store
from tests.analysis.helpers import link_series, links, steady
from tests.bot.helpers import LONG_WAIT, OPS, local_bot, posted


def _store(tmp_path: Path, *, cut: bool) -> tuple[Path, Path | None]:
    """node-1 read once (totals only), node-2 read three times and clean, node-3 likewise with its part cut when
    `cut` (the part's path returned)."""
    csv = tmp_path / "links.csv"
    links(link_series(steady(20.0, 1), node="node-1", gpu=0, link=0),
          link_series(steady(20.0, 3), node="node-2", gpu=0, link=0),
          link_series(steady(20.0, 3), node="node-3", gpu=0, link=0)).to_csv(csv, index=False)
    store = tmp_path / "store"
    assert open_store(store).ingest([csv], fmt="tables").files[0].status == "ingested"
    if not cut:
        return store, None
    part = next(store.glob("link_samples/node=node-3/*/*.parquet"))
    part.write_bytes(part.read_bytes()[:500])
    return store, part


def _fleet(store: Path) -> str:
    with local_bot(source=StoreNodeSource(store)) as local:
        assert local.injector.command("fleet", user="UALICE", channel=OPS).status == 200
        assert local.slack.wait_for(lambda s: len(posted(s)) > 0, timeout=LONG_WAIT)
        return posted(local.slack)[0].shown_blocks


@pytest.mark.parametrize("cut", [False, True], ids=["one-reading", "one-reading-and-a-cut-part"])
def test_a_fleet_with_unjudged_nodes_is_said_incomplete_as_the_sweep_says(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, cut: bool) -> None:
    monkeypatch.delenv("FABRICBOT_STORE", raising=False)
    store, part = _store(tmp_path, cut=cut)
    capsys.readouterr()
    assert main(["sweep", "--store", str(store), "--json"]) == INCOMPLETE
    swept = json.loads(capsys.readouterr().out)
    assert swept["complete"] is False
    said = _fleet(store)
    assert "INCOMPLETE" in said and "not an all-clear" in said
    assert "node-1" in said  # the node read once is named, not counted healthy
    assert "3 healthy nodes" not in said and "2 healthy nodes" not in said
    if part is not None:
        assert "node-3" in said and str(part) in said


def test_a_fleet_judged_whole_is_not_called_incomplete(tmp_path: Path) -> None:
    csv = tmp_path / "links.csv"
    links(link_series(steady(20.0, 3), node="node-1", gpu=0, link=0),
          link_series(steady(20.0, 3), node="node-2", gpu=0, link=0)).to_csv(csv, index=False)
    store = tmp_path / "store"
    assert open_store(store).ingest([csv], fmt="tables").files[0].status == "ingested"
    said = _fleet(store)
    assert "INCOMPLETE" not in said and "2 healthy nodes" in said
