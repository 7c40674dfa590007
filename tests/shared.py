"""What several test modules build once per run and share: folders built under a lock, whichever worker asks
first (under pytest-xdist each worker is a process of its own, so a session fixture alone would build once per
worker)."""

from __future__ import annotations

import fcntl
import os
import pickle
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest


def _run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of this run that every xdist worker shares (each worker's own base folder is inside it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """`build(folder)` run once per test run, whichever worker asks first (the others wait for it, under a file
    lock); the folder it filled, to be read, or copied before writing."""
    shared = _run_folder(tmp_path_factory)
    folder, done = shared / name, shared / f"{name}.done"
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            build(folder)
            done.touch()
    return folder


T = TypeVar("T")


def computed_once(tmp_path_factory: pytest.TempPathFactory, name: str, compute: Callable[[], T]) -> T:
    """`compute()` run once per test run, whichever worker asks first; every worker gets its result (pickled)."""
    def build(folder: Path) -> None:
        folder.mkdir(parents=True)
        (folder / "value.pickle").write_bytes(pickle.dumps(compute()))

    loaded: T = pickle.loads((built_once(tmp_path_factory, name, build) / "value.pickle").read_bytes())
    return loaded


def copy_store(store: Path, to: Path) -> Path:
    """A store copied to write in: its parts as files, its database through SQLite's backup (what its WAL holds
    included), since another worker reading the shared store makes and removes the WAL file as it opens and closes
    it, which a file copy can catch half-way."""
    from diagnostics.store import DB_NAME

    shutil.copytree(store, to, ignore=shutil.ignore_patterns(DB_NAME, f"{DB_NAME}-wal", f"{DB_NAME}-shm"))
    source, copy = sqlite3.connect(store / DB_NAME), sqlite3.connect(to / DB_NAME)
    try:
        source.backup(copy)
    finally:
        source.close()
        copy.close()
    return to


def answered_exit(answer: str | dict[str, Any]) -> int:
    """The exit status `analyze` (and `sweep --node`) gives a node's answer, from its JSON or its table: 3,
    incomplete, where its health is unknown (no link judged, no fault found), else 0, so a script reading the status
    never takes an unknown for healthy."""
    from diagnostics.model import Diagnosis

    if isinstance(answer, str) and not answer.lstrip().startswith("{"):
        return 3 if " fault=unknown " in answer.splitlines()[0] else 0
    d = Diagnosis.model_validate_json(answer) if isinstance(answer, str) else Diagnosis.model_validate(answer)
    return 3 if d.fault_said() == "unknown" else 0

# real logs in fixtures/real/ that hold no reading, only a message that is said (Fabric Manager exiting at start)
SAID_ONLY_SAMPLES = frozenset({"fabricmanager_nothing_to_do_gpuop610_1.txt",
                               "fabricmanager_start_script_nothing_to_do_cubestudio_1.txt"})
