"""The expected all_reduce bus bandwidth file: each figure a known platform's, sourced or said to be assumed."""

from __future__ import annotations

from pathlib import Path

import pytest

from diagnostics.config import all_platforms, load_thresholds
from diagnostics.config.busbw import load_busbw
from diagnostics.errors import ConfigError


def test_each_figure_is_a_known_platforms_and_sourced() -> None:
    policy = load_busbw()
    names = [e.name for e in policy.platform]
    assert len(names) == len(set(names)) and set(names) <= set(all_platforms())
    assert all(e.source or (e.assumed and e.why) for e in policy.platform)
    assert 0 < load_thresholds().setting("busbw_degraded_fraction") < 1


def test_a_figure_with_neither_source_nor_reason_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "busbw.toml"
    path.write_text('[[platform]]\nname = "dgx-a100-8gpu"\nbusbw_gbps = 232.0\nassumed = true\n')
    with pytest.raises(ConfigError, match="source"):
        load_busbw(path)
