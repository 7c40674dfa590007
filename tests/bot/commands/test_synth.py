"""`fabricbot synth` refuses a fleet it cannot write before writing anything, naming the option and the value."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bot.commands.conftest import Cli


@pytest.mark.parametrize(("option", "value", "said"), [
    ("--hours", "2", "at least 6 hours (got '2')"),
    ("--hours", "nan", "at least 6 hours (got 'nan')"),
    ("--hours", "six", "not a number of hours: 'six'"),
    ("--nodes", "0", "at least 1 (got '0')"),
    ("--interval", "0", "more than 0 minutes (got '0')"),
])
def test_a_value_it_cannot_use_is_refused_with_its_option(
        cli: Cli, tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str, value: str, said: str) -> None:
    with pytest.raises(SystemExit) as info:
        cli("synth", "--out", str(tmp_path / "fleet"), option, value)
    err = capsys.readouterr().err
    assert info.value.code == 2 and option in err and said in err
    assert not (tmp_path / "fleet").exists()


def test_racks_without_a_rack_platform_is_an_input_error(cli: Cli, tmp_path: Path) -> None:
    code, _, err = cli("synth", "--out", str(tmp_path / "fleet"), "--racks", "3")
    assert code != 0 and "--racks" in err and "--platform" in err
    assert not (tmp_path / "fleet").exists()
