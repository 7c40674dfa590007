"""The console in a real headless Chromium: the on-call walk-through from slash command to filed ticket."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .browser import page, walk_through
from .helpers import served

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.browser
def test_slash_command_picture_buttons_then_a_topology_click_files_a_ticket(tmp_path: Path) -> None:
    with served(real_png=True) as (console, url), page() as tab:
        walk = walk_through(tab, url + "/", tmp_path)
    tickets = list(console.local.tracker.db["tickets"].rows)  # type: ignore[attr-defined]
    # the id the page shows is the ticket the tracker holds, for the link that was clicked
    assert [(t["id"], t["component"]) for t in tickets] == [(walk.ticket, walk.link)]
    assert "Rates" in walk.tooltip and walk.link in walk.tooltip
    drafts = [c.params for c in console.slack.calls_to("chat.update") if c.params["text"].startswith("Ticket draft")]
    assert len(drafts) == 1  # one click, one draft ("Drafting…" replaced), through the bot's own flow
    assert walk.console_errors == []
    kept = ROOT / "test-output" / "console"  # git-ignored; CI keeps it as an artifact
    kept.mkdir(parents=True, exist_ok=True)
    for shot in walk.shots:
        assert shot.stat().st_size > 20_000  # a rendered page, not a blank one
        shutil.copy(shot, kept / shot.name)
