"""Shared test set-up: no test reaches the network or a real model."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.prometheus.helpers import Fleet, Server, generate_fleet, serve_fleet
from tests.shared import built_once, computed_once

try:  # the model layer may not be imported by every test run
    from pydantic_ai import models as _models

    _models.ALLOW_MODEL_REQUESTS = False
except ImportError:  # pragma: no cover
    pass

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"


@pytest.fixture
def seed_cases() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads((FIXTURES / "seed_examples.json").read_text())
    return data


def snapshot_dict(**overrides: Any) -> dict[str, Any]:
    """A valid one-link snapshot; keyword arguments replace top-level fields."""
    base: dict[str, Any] = {
        "node_id": "node-a",
        "fabric_errors": [{"gpu_src": 0, "gpu_dst": 1, "link_id": "nvlink-0", "crc_errors": 0, "replay_count": 0}],
        "step_time_ms": 100.0,
        "baseline_step_time_ms": 100.0,
    }
    base.update(overrides)
    return base


def link(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"gpu_src": 0, "gpu_dst": 1, "link_id": "nvlink-0", "crc_errors": 0, "replay_count": 0}
    base.update(overrides)
    return base


# The real Prometheus the `prometheus` tests query (bot and prometheus folders): one per run, started on first use.
@pytest.fixture(scope="session", name="fleet")
def fleet_fixture() -> Fleet:
    """The small CI fleet (4 nodes x 2 h) with its planted faults; import it into a test module to use it."""
    return generate_fleet(nodes=4, hours=2.0)


@pytest.fixture(scope="session", name="server")
def server_fixture(fleet: Fleet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A real Prometheus serving `fleet`, stopped at the end of the run."""
    running = serve_fleet(fleet, tmp_path_factory.mktemp("prometheus"))
    yield running
    running.stop()


@pytest.fixture(scope="session")
def bundled_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled fleet (fixtures/fleet) ingested into a store, once per run. Read it; copy it to write."""
    from bot.cli import main
    from diagnostics.store import DB_NAME, connect

    def ingest(folder: Path) -> None:
        assert main(["ingest", str(FIXTURES / "fleet"), "--store", str(folder)]) == 0
        db = connect(folder / DB_NAME)
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the database file whole in itself: copies need no WAL
        db.close()

    return built_once(tmp_path_factory, "bundled-store", ingest)


def _one_rack(tmp_path_factory: pytest.TempPathFactory, scenario: str, seed: int) -> tuple[Path, Path, dict[str, Any]]:
    """One synthetic GB200 NVL72 rack of `scenario` (its files with the rack inventory, and a store they were
    ingested into) and its ground truth, built once per run."""
    from diagnostics.store import open_store
    from diagnostics.synth.rack_fleet import generate_racks

    def build(folder: Path) -> None:
        generate_racks(out=folder / "fleet", seed=seed, racks=1, hours=6, scenarios=[scenario])
        store = open_store(folder / "store")
        store.ingest([folder / "fleet"])
        store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the database whole in its file: copies need no WAL
        store.db.close()

    built = built_once(tmp_path_factory, f"{scenario}-rack", build)
    truth = json.loads((built / "fleet" / "ground_truth.json").read_text(encoding="utf-8"))
    return built / "fleet", built / "store", truth


@pytest.fixture(scope="session")
def switch_tray_rack(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, Any]]:
    """A rack whose switch tray fails (`_one_rack`). Read it; copy to write."""
    return _one_rack(tmp_path_factory, "switch_tray", seed=4)


@pytest.fixture(scope="session")
def switch_chip_rack(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, Any]]:
    """A rack whose switch chip fails, several of its ports failing too (`_one_rack`). Read it; copy to write."""
    return _one_rack(tmp_path_factory, "switch_chip", seed=0)


@pytest.fixture(scope="session")
def committed_eval(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The committed fleet (fixtures/fleet, its life nodes and storm included) scored by `fabricbot eval`'s
    `evaluate`, once per run (the life nodes' four days make it the suite's costliest single computation)."""
    from diagnostics.synth.evaluate import evaluate

    return computed_once(tmp_path_factory, "committed-eval", lambda: evaluate(FIXTURES / "fleet"))
