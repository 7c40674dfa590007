"""The `fabricbot` command: each subcommand lives in its own module under `bot/commands/`."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from diagnostics import FabricbotError

# One module per subcommand; each defines `register(subparsers)` and sets `func` on its parser.
COMMANDS: tuple[str, ...] = (
    "analyze",
    "ingest",
    "render",
    "synth",
    "eval",
    "ticket",
    "sweep",
    "serve",
    "demo",
    "audit",
    "console",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fabricbot", description="Diagnose NVLink, NVSwitch and PCIe faults inside multi-GPU nodes."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"bot.commands.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
        return code
    except FabricbotError as exc:
        print(f"fabricbot: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # the reader went away (e.g. `| head`); nothing left to say
        sys.stdout = None
        return 0


if __name__ == "__main__":
    sys.exit(main())
