from __future__ import annotations

import subprocess
import sys

import pytest

from bot.cli import COMMANDS, build_parser, main
from tests.conftest import FIXTURES


def test_every_command_registers_and_has_help() -> None:
    for name in COMMANDS:
        with pytest.raises(SystemExit) as info:
            build_parser(name).parse_args([name, "--help"])
        assert info.value.code == 0


def test_running_a_command_imports_only_its_module() -> None:
    seed = FIXTURES / "seed_examples.json"
    code = (
        f"import sys; from bot.cli import main; main(['analyze', {str(seed)!r}, '--json']); "
        "heavy = [m for m in ('slack_bolt', 'pydantic_ai', 'matplotlib', 'uvicorn') if m in sys.modules]; "
        "sys.stderr.write(','.join(heavy))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stderr == ""


def test_no_command_prints_usage(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main([])
    assert info.value.code == 2
    assert "COMMAND" in capsys.readouterr().err
