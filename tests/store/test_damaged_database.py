"""A damaged store database is said with what to do, not a traceback; an emptied one still answers for the nodes
its readings' files hold."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from diagnostics.errors import InputError
from diagnostics.service import Request, StoreSource, sweep
from diagnostics.store import open_store
from diagnostics.store.telemetry import DB_NAME
from tests.analysis.helpers import link_series, links, steady

NODES = ["node-1", "node-2"]


def _store(tmp_path: Path) -> Path:
    csv = tmp_path / "links.csv"
    links(*(link_series(steady(0.0), node=n) for n in NODES)).to_csv(csv, index=False)
    store = tmp_path / "store"
    opened = open_store(store)
    assert opened.ingest([csv], fmt="tables").files[0].status == "ingested"
    opened.db.close()  # its write-ahead log checkpointed into the file
    return store


def test_a_damaged_database_is_named_with_what_to_do(tmp_path: Path) -> None:
    store = _store(tmp_path)
    db = store / DB_NAME
    page = 4096
    with db.open("r+b") as f:  # every page after the schema's overwritten
        f.seek(page)
        f.write(os.urandom(db.stat().st_size - page))
    with pytest.raises(InputError) as said:
        StoreSource(store).nodes()
    assert str(db) in str(said.value) and "damaged" in str(said.value)
    assert "catalogs those files again" in str(said.value) and "restore it from a backup" in str(said.value)


def test_an_emptied_database_knows_its_nodes_by_their_files(tmp_path: Path) -> None:
    store = _store(tmp_path)
    (store / DB_NAME).write_bytes(b"")
    source = StoreSource(store)
    assert source.nodes() == NODES
    result = sweep(source, Request())
    assert result.swept == NODES and result.complete, result.incomplete_reasons
