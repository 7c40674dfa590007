from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from bot.cli import SUMMARIES, build_parser, main
from tests.conftest import FIXTURES

HEAVY = ("slack_bolt", "pydantic_ai", "anthropic", "matplotlib", "uvicorn")  # chat, drafting and picture stacks


def test_every_command_registers_and_has_help() -> None:
    for name in SUMMARIES:
        with pytest.raises(SystemExit) as info:
            build_parser(name).parse_args([name, "--help"])
        assert info.value.code == 0


def test_running_a_command_imports_only_its_module() -> None:
    seed = FIXTURES / "seed_examples.json"
    code = (
        f"import sys; from bot.cli import main; main(['analyze', {str(seed)!r}, '--json']); "
        f"heavy = [m for m in {HEAVY!r} if m in sys.modules]; "
        "sys.stderr.write(','.join(heavy))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stderr == ""


@pytest.mark.parametrize("command", ["analyze", "ingest", "compact", "sweep", "rules", "audit", "watch", "maintenance"])
def test_commands_that_neither_draft_nor_draw_load_no_heavy_stack(command: str) -> None:
    """A fleet's `sweep --json` spent a second of its five importing the drafting stack once its module took a
    constant from `ticket`'s."""
    code = (f"import sys; from bot.cli import build_parser; build_parser({command!r}); "
            f"sys.stderr.write(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stderr == ""


def test_no_command_prints_usage(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main([])
    assert info.value.code == 2
    assert "COMMAND" in capsys.readouterr().err


def test_each_command_says_the_same_one_line_help_in_the_listing_and_in_its_own_parser() -> None:
    """`fabricbot --help` lists each command by a summary kept beside its module's parser; the sweep's listing said
    'through Prometheus' long after it swept the local store too."""
    def listed(parser: argparse.ArgumentParser) -> dict[str, str | None]:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        return {choice.dest: choice.help for choice in sub._choices_actions}

    everything = listed(build_parser())  # every command's module registers its own parser
    for name in SUMMARIES:
        assert everything[name] == listed(build_parser("audit" if name != "audit" else "demo"))[name], name


@pytest.mark.parametrize(("argv", "said"), [
    (["analyze", str(FIXTURES / "seed_examples.json"), "--window", "-1h"],
     "a duration is longer than zero, like 6h, 90m or 2d: '-1h'"),
    (["maintenance", "node-1", "-2h", "swap the riser", "--by", "ann"],
     "'-2h': a value that starts with a dash reads as an option; durations and windows are longer than zero, like 2h; "
     "work that began earlier: --at TIME"),
    (["sweep", "--store", "nowhere", "--at", "-5m"], "expected an ISO time"),
])
def test_a_value_that_starts_with_a_dash_gets_the_options_own_refusal(
        argv: list[str], said: str, capsys: pytest.CaptureFixture[str]) -> None:
    """argparse took `-1h` for an option and said only "expected one argument"."""
    try:
        code = main(argv)
    except SystemExit as exc:
        code = int(exc.code or 0)
    assert code == 2
    err = capsys.readouterr().err
    assert said in err and "expected one argument" not in err and "unrecognized arguments" not in err


@pytest.mark.parametrize(("argv", "code"), [
    (["analyze", str(FIXTURES / "real" / "nvlink_e_h100_1.txt")], 3),  # one reading: health unknown
    (["analyze", str(FIXTURES / "real" / "nvlink_e_h100_1.txt"), "--json"], 3),  # written through stdout's buffer
])
def test_a_reader_that_goes_away_leaves_the_exit_status_the_answers(argv: list[str], code: int) -> None:
    """`fabricbot ... | head -1`: the pipe closed before the answer was written, and the command exited 0, so a script
    with `set -o pipefail` read an incomplete answer (3) or offenders (1) as healthy, depending on which came first."""
    proc = subprocess.Popen([sys.executable, "-m", "bot.cli", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=Path(__file__).resolve().parents[3])
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader gone before the first line
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == code, err
    assert "Traceback" not in err and "BrokenPipe" not in err, err
