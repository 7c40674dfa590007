"""A node whose links only warn has nothing to repair until someone asks: `fabricbot ticket` drafts its link only
when the link is named, and `/fabric` offers the link's draft without making it the message's primary button; a
node with a fault keeps its primary button."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.cli import main
from bot.mrkdwn import esc
from bot.nodes import StoreNodeSource
from tests.shared import copy_store

from .console.helpers import click_draft, console, summary
from .helpers import buttons

WARNED = "hpc-gpu-life-09"  # the bundled fleet's node whose one CRC rate is over the warning line, no fault


def test_warnings_alone_get_a_draft_button_that_is_not_primary_as_ticket_drafts_them_only_when_named(
        bundled_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = StoreNodeSource(bundled_store)
    d = source.diagnose(WARNED)
    warned_only = [f for f in d.findings if f.severity.value != "ok"]
    assert not d.fault_detected and [f.severity.value for f in warned_only] == ["warning"], d.findings
    (warned,) = warned_only
    store = copy_store(bundled_store, tmp_path / "store")
    assert main(["ticket", "--store", str(store), "--node", WARNED, "--rules"]) == 1
    assert "warnings only" in capsys.readouterr().err
    assert main(["ticket", "--store", str(store), "--node", WARNED, "--rules", "--link", warned.component]) == 0
    with console(source=source) as c:
        shown = summary(c, WARNED)
        offered = [b for b in buttons(shown) if b["type"] == "button"]
        assert [b["text"]["text"] for b in offered] == [f"Draft ticket: {warned.component}"]
        assert all("style" not in b for b in offered), offered
        drafted = click_draft(c, shown, warned.component)
        assert any(f"Ticket draft for {esc(warned.component)} on {WARNED}" in m.text for m in drafted), \
            [m.text for m in drafted]
        failing = summary(c, "hpc-gpu-node-12")
        assert [b.get("style") for b in buttons(failing) if b["type"] == "button"][:1] == ["primary"]
