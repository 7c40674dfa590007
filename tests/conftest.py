"""Shared test set-up: no test reaches the network or a real model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

try:  # the model layer may not be imported by every test run
    from pydantic_ai import models as _models

    _models.ALLOW_MODEL_REQUESTS = False
except ImportError:  # pragma: no cover
    pass

ROOT = Path(__file__).resolve().parent.parent
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
