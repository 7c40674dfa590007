"""`fabricbot rules`: a window or evaluation interval Prometheus would reject is refused before any file is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bot.commands.conftest import Cli


@pytest.mark.parametrize(("argv", "field", "value"), [
    (["--interval", "abc"], "--interval", "abc"),
    (["--interval=-5m"], "--interval", "-5m"),
    (["--interval", "0"], "--interval", "0"),
    (["--interval", "0.5s"], "--interval", "0.5s"),
    (["--interval", "2h"], "--interval", "2h"),  # longer than the 1 h window
    (["--window", "30m", "--interval", "31m"], "--interval", "31m"),
])
def test_a_bad_interval_or_window_is_refused_naming_it(cli: Cli, tmp_path: Path, argv: list[str], field: str,
                                                        value: str) -> None:
    out = tmp_path / "r.yml"
    code, _, err = cli("rules", "--out", str(out), *argv)
    assert code == 2
    assert f"'{field}'" in err and repr(value) in err
    assert "Traceback" not in err
    assert not out.exists()


@pytest.mark.parametrize("value", ["nan", "inf", "0.0001"])
def test_a_bad_window_is_refused_by_the_option_naming_it(value: str, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """As every command's `--window` refuses it (bot/options.py's `parse_window`)."""
    from bot.cli import main

    out = tmp_path / "r.yml"
    with pytest.raises(SystemExit) as left:
        main(["rules", "--out", str(out), "--window", value])
    err = capsys.readouterr().err
    assert left.value.code == 2 and "--window" in err and repr(value) in err and "Traceback" not in err
    assert not out.exists()


def test_the_interval_is_written_as_prometheus_spells_it(cli: Cli) -> None:
    code, out, _ = cli("rules", "--interval", "1.5m")
    assert code == 0
    assert 'interval: "90s"' in out
    code, out, _ = cli("rules", "--window", "30m", "--interval", "30m")
    assert code == 0 and 'interval: "30m"' in out
