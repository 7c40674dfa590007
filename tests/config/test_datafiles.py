from __future__ import annotations

from pathlib import Path

import pytest

from diagnostics import load_thresholds
from diagnostics.config.datafiles import DATA_DIR, read_toml
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


def test_a_thresholds_file_edited_at_once_to_the_same_size_is_read_anew(tmp_path: Path) -> None:
    mine = tmp_path / "mine.toml"
    mine.write_text('[[rule]]\nname = "nvlink_replay"\nabove = 500.0\n')
    assert load_thresholds(mine).rule("nvlink_replay").above == 500.0
    mine.write_text('[[rule]]\nname = "nvlink_replay"\nabove = 600.0\n')  # same size, same clock tick
    assert load_thresholds(mine).rule("nvlink_replay").above == 600.0


def test_a_read_data_file_changed_by_its_reader_is_not_changed_for_the_next() -> None:
    first = read_toml(DATA_DIR / "thresholds.toml", "thresholds file")
    first["rule"].clear()
    assert read_toml(DATA_DIR / "thresholds.toml", "thresholds file")["rule"]
