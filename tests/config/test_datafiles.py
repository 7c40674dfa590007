from __future__ import annotations

from pathlib import Path

import pytest

from diagnostics import load_thresholds
from diagnostics.errors import ConfigError


def test_a_missing_thresholds_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.toml: thresholds file not found"):
        load_thresholds(tmp_path / "nope.toml")


def test_a_broken_data_file_names_the_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "mine.toml"
    bad.write_text('[[rule]]\nname = "nvlink_replay"\nabove = = 5\n')
    with pytest.raises(ConfigError, match=r"mine\.toml: not a readable thresholds file: .*line 3"):
        load_thresholds(bad)
    bad.write_bytes(b"\xff\xfe junk")
    with pytest.raises(ConfigError, match=r"mine\.toml: not a readable thresholds file"):
        load_thresholds(bad)
