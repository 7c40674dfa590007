"""The `fabricbot` command: each subcommand lives in its own module under `bot/commands/`."""

from __future__ import annotations

import argparse
import importlib
import io
import sqlite3
import sys
from collections.abc import Sequence

from diagnostics import FabricbotError

# One module per subcommand (`bot/commands/<name>.py`, defining `register(subparsers)` that sets `func`), with
# its one-line help. Only the module of the command being run is imported, so `fabricbot analyze` never pays for
# the Slack, model and plotting libraries.
COMMANDS: dict[str, str] = {
    "analyze": "diagnose interconnect snapshots or counter histories",
    "ingest": "read telemetry files (dcgm-exporter, tables, snapshots, shell outputs)",
    "compact": "merge a store's days held in many small parts (a store fed scrape by scrape) into one part each",
    "render": "draw a node's NVLink/NVSwitch/PCIe fabric with its degraded links",
    "synth": "write a synthetic fleet with labelled faults and ground truth",
    "eval": "detection and localization precision/recall/F1 on a synthetic fleet",
    "ticket": "draft the repair ticket for the isolated component (or one link)",
    "sweep": "find offending links fleet-wide through Prometheus (PromQL push-down)",
    "rules": "write a Prometheus rules file (recording and alerting rules) from the thresholds",
    "serve": "run the Slack bot (Socket Mode, HTTP, or the local mock without a token)",
    "demo": "run a scripted Slack conversation locally; write transcripts/demo.md",
    "audit": "print the audit trail (JSON lines, or Markdown with --markdown)",
    "tickets": "list tickets, report a repair, verify repaired parts",
    "watch": "links trending toward a failing threshold, with the projected time",
    "maintenance": "planned work on a node: no page and no ticket from it for a while",
    "digest": "the daily digest: new failing parts, watch list, repairs verifying, maintenance",
    "console": "run the ops channel and a clickable topology in your browser, on loopback",
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; with `command`, only that subcommand's module is imported (the others get a stub entry)."""
    parser = argparse.ArgumentParser(
        prog="fabricbot", description="Diagnose NVLink, NVSwitch and PCIe faults inside multi-GPU nodes."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, summary in COMMANDS.items():
        if command is None or name == command:
            importlib.import_module(f"bot.commands.{name}").register(sub)
        else:
            sub.add_parser(name, help=summary)
    return parser


def _command_in(argv: Sequence[str]) -> str | None:
    return next((a for a in argv if a in COMMANDS), None)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = _command_in(argv)
    parser = build_parser(command) if command else build_parser("analyze")
    args = parser.parse_args(argv)
    if isinstance(sys.stdout, io.TextIOWrapper):  # a pipe (`2>&1 | less`): each line out before a later stderr line
        sys.stdout.reconfigure(line_buffering=True)
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
    except BrokenPipeError:
        # the reader went away (e.g. `| head`); nothing left to say
        sys.stdout = None
        return 0


if __name__ == "__main__":
    sys.exit(main())
