"""The `fabricbot` command: each subcommand lives in its own module under `bot/commands/`."""

from __future__ import annotations

import argparse
import gc
import importlib
import io
import os
import re
import sqlite3
import sys
from collections.abc import Sequence
from typing import Any, NoReturn, TextIO, cast

from diagnostics import FabricbotError

from .commands import SUMMARIES

_DASHED_VALUE = re.compile(r"^-\d")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; with `command`, only that subcommand's module is imported (the others get a stub entry)."""
    parser = argparse.ArgumentParser(
        prog="fabricbot", description="Diagnose NVLink, NVSwitch and PCIe faults inside multi-GPU nodes."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, summary in SUMMARIES.items():
        if command is None or name == command:
            importlib.import_module(f"bot.commands.{name}").register(sub)
        else:
            sub.add_parser(name, help=summary)
    return parser


def _command_in(argv: Sequence[str]) -> str | None:
    return next((a for a in argv if a in SUMMARIES), None)


def _values_joined(argv: list[str]) -> list[str]:
    """`--window -1h` as `--window=-1h`: argparse takes a value that starts with a dash and a digit for an option of
    its own ("expected one argument"), where the option's own check names what is wrong with the value."""
    out: list[str] = []
    for token in argv:
        if out and out[-1].startswith("--") and "=" not in out[-1] and _DASHED_VALUE.match(token):
            out[-1] = f"{out[-1]}={token}"
        else:
            out.append(token)
    return out


def _dashed_positional(argv: Sequence[str]) -> str | None:
    """A value after no option that starts with a dash and a digit (`maintenance NODE -2h`): argparse would take it
    for an option and say only "unrecognized arguments"."""
    return next((t for i, t in enumerate(argv) if _DASHED_VALUE.match(t) and not (i and argv[i - 1].startswith("-"))),
                None)


def main(argv: Sequence[str] | None = None) -> int:
    argv = _values_joined(list(sys.argv[1:] if argv is None else argv))
    command = _command_in(argv)
    dashed = _dashed_positional(argv)
    if dashed is not None:
        earlier = "; work that began earlier: --at TIME" if command == "maintenance" else ""
        print(f"fabricbot: {dashed!r}: a value that starts with a dash reads as an option; durations and windows are "
              f"longer than zero, like 2h{earlier}", file=sys.stderr)
        return 2
    parser = build_parser(command) if command else build_parser("analyze")
    args = parser.parse_args(argv)
    if isinstance(sys.stdout, io.TextIOWrapper):  # a pipe (`2>&1 | less`): each line out before a later stderr line
        sys.stdout.reconfigure(line_buffering=True)
    real = sys.stdout
    if real is sys.__stdout__:
        sys.stdout = cast(TextIO, _ReaderMayGo(real))
    try:
        code: int = args.func(args)
        return code
    except FabricbotError as exc:
        print(f"fabricbot: {exc}", file=sys.stderr)
        return 2
    except sqlite3.OperationalError as exc:  # another writer held the store past the busy timeout
        if "locked" not in str(exc) and "busy" not in str(exc):
            raise
        from diagnostics.store import BUSY_TIMEOUT_S

        print(f"fabricbot: the store's database stayed locked by another writer for over {BUSY_TIMEOUT_S:g} s "
              f"({exc}); nothing was half-written: try again", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # a write that went round the wrapper (a library's own handle on stdout): the command's
        _silenced()  # status is lost with it, so 1, never the 0 of a healthy answer
        return 1
    finally:
        if real is sys.__stdout__:
            sys.stdout = real


class _ReaderMayGo:
    """stdout, whose reader may go away (`sweep | head -1`): what is left to print is dropped, and the command runs on
    to its own exit status. It returned 0 when the pipe closed first, so a script with `set -o pipefail` read
    offenders (1) or an incomplete view (3) as healthy, at random."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, data: Any) -> int:
        try:
            return int(self._stream.write(data))
        except BrokenPipeError:
            _silenced()
            return len(data)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            _silenced()

    @property
    def buffer(self) -> Any:
        return _ReaderMayGo(self._stream.buffer)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _silenced() -> None:
    """stdout's descriptor pointed at /dev/null: later writes and the interpreter's last flush go nowhere."""
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, sys.__stdout__.fileno())  # type: ignore[union-attr]
    finally:
        os.close(null)


def run() -> NoReturn:
    """The installed command: `main`, then the usual exit with what the process holds frozen first. The interpreter's
    last collection otherwise walks every object the command left (every library it imported among them): a node's
    `analyze --store --node` spent 0.2-0.3 s of its 0.95-1.15 s there after its answer was out."""
    code = main()
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    run()
