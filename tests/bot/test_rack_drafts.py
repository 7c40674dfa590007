"""A rack's part drafted from `/fabric` is the ticket `fabricbot ticket` drafts: a switch tray's Draft button on the
rack, on the switch tray's host or on a compute tray whose links it fails drafts from the rack's view (every
failing link, the rack's steps), not from the tray's share of it."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main
from bot.nodes import StoreNodeSource

from .console.helpers import click_draft, console, summary
from .helpers import buttons

Rack = tuple[Path, Path, dict[str, Any]]


def test_a_switch_tray_drafted_from_any_slack_door_is_the_ticket_commands_draft(
        switch_tray_rack: Rack, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "store"
    shutil.copytree(switch_tray_rack[1], store)
    fault = switch_tray_rack[2]["racks"]["rack-01"]["faults"][0]
    part = f"Switch tray {fault['switch_tray']}"
    trays = sorted({link[0] for link in fault["links"]})
    capsys.readouterr()
    assert main(["ticket", "rack-01", "--store", str(store), "--rules"]) == 0
    expected = capsys.readouterr().out
    assert expected.startswith(f"# Repair ticket: {part} on rack-01\n")
    doors = ["rack rack-01", f"rack-01-s{int(fault['switch_tray']):02d}", f"rack-01-c{trays[0]:02d}",
             f"rack-01-c{trays[-1]:02d}"]
    with console(source=StoreNodeSource(store)) as c:
        for door in doors:
            replies = click_draft(c, summary(c, door), part)
            preview = next(m for m in replies if any(b["action_id"] == "file_ticket" for b in buttons(m)))
            draft_id = next(int(b["value"]) for b in buttons(preview) if b["action_id"] == "file_ticket")
            draft = c.state.draft(draft_id)
            assert draft is not None and draft.node_id == "rack-01", door
            assert draft.markdown + "\n" == expected, door
