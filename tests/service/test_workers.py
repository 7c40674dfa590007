"""Node and job questions answered in worker processes give this process's answers: the same diagnosis, the same
planned work, the same error with its close matches; a worker killed costs one answer made here, not the bot."""

from __future__ import annotations

import logging
import os
import pickle
import signal
from datetime import timedelta
from pathlib import Path

import pytest

from diagnostics.errors import ConfigError, InputError
from diagnostics.service import DiagnosisWorkers, Request, SnapshotSource, StoreSource, UnknownName, diagnose

ROOT = Path(__file__).resolve().parents[2]
SEEDS = ROOT / "fixtures" / "seed_examples.json"


def _here(source: SnapshotSource | StoreSource, request: Request) -> dict[str, object]:
    return diagnose(source, request).diagnosis.model_dump()


def test_a_store_is_answered_in_workers_as_here(bundled_store: Path) -> None:
    source = StoreSource(bundled_store)
    nodes = source.nodes()
    jobs = source.jobs()
    asked = [Request(node=n) for n in nodes[:6]] + [Request(job=j) for j in jobs[:2]]
    assert len(asked) > 6  # the bundled fleet has jobs: a job's question goes through the workers too
    workers = DiagnosisWorkers(source, processes=2)
    try:
        workers.start()
        for request in asked:
            assert workers.diagnosis(request).model_dump() == _here(source, request)
    finally:
        workers.close()


def test_planned_work_set_here_is_judged_by_the_workers() -> None:
    source = SnapshotSource.from_files([SEEDS])
    workers = DiagnosisWorkers(source, processes=2)
    try:
        workers.start()  # the workers copied the source before the planned work was set
        request = Request(node="hpc-gpu-node-12")
        before = workers.diagnosis(request)
        assert before.maintenance is None
        end = before.window_end
        assert end is not None
        source.maintenance().set("hpc-gpu-node-12", start=end - timedelta(hours=2), span=timedelta(hours=4),
                                 reason="swap the mezzanine", set_by="UALICE")
        held = workers.diagnosis(request)
        assert held.maintenance is not None and "swap the mezzanine" in held.maintenance
        assert held.model_dump() == _here(source, request)
        source.maintenance().end("hpc-gpu-node-12", at=end - timedelta(hours=1), by="UALICE")
        assert workers.diagnosis(request).model_dump() == _here(source, request)  # ended here, ended there
        assert workers.diagnosis(request).maintenance is None
    finally:
        workers.close()


def test_an_unknown_name_comes_back_with_its_close_matches() -> None:
    workers = DiagnosisWorkers(SnapshotSource.from_files([SEEDS]), processes=2)
    try:
        workers.start()
        with pytest.raises(UnknownName) as raised:
            workers.diagnosis(Request(node="hpc-gpu-node12"))
        assert raised.value.kind == "node" and raised.value.matches[0] == "hpc-gpu-node-12"
    finally:
        workers.close()


def test_requests_before_the_workers_serve_are_answered_here() -> None:
    source = SnapshotSource.from_files([SEEDS])
    workers = DiagnosisWorkers(source, processes=2)
    request = Request(node="hpc-gpu-node-12")
    try:
        assert not workers.serving() and workers.diagnosis(request).model_dump() == _here(source, request)
        workers.start(wait=False)
        assert workers.serving(timeout=120)
        assert workers.diagnosis(request).model_dump() == _here(source, request)
    finally:
        workers.close()
    assert not workers.serving()


def test_a_killed_worker_costs_one_answer_made_here(caplog: pytest.LogCaptureFixture) -> None:
    source = SnapshotSource.from_files([SEEDS])
    request = Request(node="hpc-gpu-node-12")
    workers = DiagnosisWorkers(source, processes=2)
    try:
        workers.start()
        pool = workers._pool
        assert pool is not None
        for pid in list(pool._processes):  # as the kernel's out-of-memory killer would
            os.kill(pid, signal.SIGKILL)
        with caplog.at_level(logging.WARNING, logger="fabricbot"):
            assert workers.diagnosis(request).model_dump() == _here(source, request)
        assert "an analysis worker ended without an answer" in caplog.text
        assert workers.serving(timeout=120) and workers._pool is not pool  # new workers, started aside
        assert workers.diagnosis(request).model_dump() == _here(source, request)
    finally:
        workers.close()


@pytest.mark.parametrize("error", [
    UnknownName("node", "n1", ["n10", "n11"], 12, listed=["n10", "n11"], where="store", field="--node"),
    InputError("a part of the store cannot be read", source="/s/p.parquet", line=3, field="f", value=7),
    ConfigError("FABRICBOT_PROCESSES: expected a positive whole number"),
])
def test_an_error_travels_between_processes_whole(error: Exception) -> None:
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is type(error) and str(back) == str(error) and back.args == error.args
    assert vars(back) == vars(error)



def test_a_name_typed_in_another_case_has_its_node_as_the_first_close_match() -> None:
    """Host names are case-insensitive (RFC 4343): `HPC-GPU-NODE-12` was offered the first ten nodes, not itself."""
    from diagnostics.service import close_matches

    names = [f"hpc-gpu-node-{i:02d}" for i in range(1, 41)]
    assert close_matches("HPC-GPU-NODE-12", names)[0] == "hpc-gpu-node-12"
    assert close_matches("hpc-gpu-nod-12", names)[0] == "hpc-gpu-node-12"
