"""The command line as a user runs it: offline (no Anthropic key, no store or Prometheus from the environment), and
a runner that gives back the exit code and what was printed."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bot.cli import main

Cli = Callable[..., tuple[int, str, str]]


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "FABRICBOT_STORE", "FABRICBOT_PROMETHEUS_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Cli:
    """`fabricbot ARGV...` -> (exit code, stdout, stderr)."""
    capsys.readouterr()

    def run(*argv: str) -> tuple[int, str, str]:
        code = main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    return run
