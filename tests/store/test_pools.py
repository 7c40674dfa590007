"""Arrow's memory pool: the system allocator for a store's reads (it keeps a part's pages for the next), Arrow's own
while an ingest parses and writes (it hands a parse's pages back)."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from diagnostics.store import parts
from diagnostics.store.telemetry import TelemetryStore

from .test_window import fleet_file


@pytest.mark.skipif(parts._CHOSEN or parts._OWN_POOL.backend_name != "mimalloc",
                    reason="ARROW_DEFAULT_MEMORY_POOL chooses, or this Arrow's own pool is another")
def test_an_ingest_writes_on_arrows_own_pool_and_reads_are_left_on_the_system_allocator(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = tmp_path / "links.parquet"
    fleet_file(source, hours=2)
    store = TelemetryStore(tmp_path / "store")
    seen: list[str] = []
    real = TelemetryStore._ingest

    def watched(self: TelemetryStore, *args: Any, **kwargs: Any) -> Any:
        seen.append(pa.default_memory_pool().backend_name)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(TelemetryStore, "_ingest", watched)
    assert pa.default_memory_pool().backend_name == "system"
    store.ingest([source])
    assert seen == ["mimalloc"] and pa.default_memory_pool().backend_name == "system"
    monkeypatch.setattr(TelemetryStore, "_ingest", lambda self, *a, **k: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        store.ingest([source])
    assert pa.default_memory_pool().backend_name == "system"  # given back when the ingest fails too
    assert len(store.read_window(end=None, span=timedelta(hours=1)).tables["link_samples"])


@pytest.mark.skipif(parts._CHOSEN or parts._OWN_POOL.backend_name != "mimalloc",
                    reason="ARROW_DEFAULT_MEMORY_POOL chooses, or this Arrow's own pool is another")
@pytest.mark.parametrize("first_out", ["first in", "second in"])
def test_two_writers_at_once_leave_the_reads_pool_once_both_are_done(first_out: str) -> None:
    entered, leave = [threading.Event(), threading.Event()], [threading.Event(), threading.Event()]
    during: list[str] = []

    def write(i: int) -> None:
        with parts.writing_pool():
            entered[i].set()
            leave[i].wait(10)
            during.append(pa.default_memory_pool().backend_name)

    threads = [threading.Thread(target=write, args=(i,)) for i in (0, 1)]
    threads[0].start()
    entered[0].wait(10)
    threads[1].start()
    entered[1].wait(10)
    order = (0, 1) if first_out == "first in" else (1, 0)
    leave[order[0]].set()
    threads[order[0]].join(10)
    assert pa.default_memory_pool().backend_name == "mimalloc"  # the other still writes
    leave[order[1]].set()
    threads[order[1]].join(10)
    assert during == ["mimalloc", "mimalloc"] and pa.default_memory_pool().backend_name == "system"
