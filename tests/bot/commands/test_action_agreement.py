"""What `fabricbot analyze FILE` says to do (its text and its JSON) and what `fabricbot ticket FILE` lists as steps
are one plan: the parts the action names are the parts the ticket's steps touch, for the same reason."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.bot.commands.conftest import Cli
from tests.conftest import FIXTURES

NODE = "n1"


def _analyze(cli: Cli, *argv: str) -> tuple[str, dict[str, Any]]:
    """The action line of the text answer and the JSON answer."""
    code, text, err = cli("analyze", *argv)
    assert code in (0, 1), err
    code, out, err = cli("analyze", *argv, "--json")
    assert code in (0, 1), err
    action = next(line.split("action:", 1)[1].strip() for line in text.splitlines() if "action:" in line)
    return action, json.loads(out)


def _ticket(cli: Cli, *argv: str) -> dict[str, Any]:
    code, out, err = cli("ticket", *argv, "--json")
    assert code == 0, err
    ticket: dict[str, Any] = json.loads(out)
    return ticket


def _failing_direct_link(tmp_path: Path) -> Path:
    """A DGX-1's GPU 0 -> GPU 3 direct link replaying far over its threshold (the real reading, scaled up)."""
    text = (FIXTURES / "real" / "nvlink_e_v100_short_form_dated_2.txt").read_text()
    assert "Replay Errors: 104" in text
    path = tmp_path / "v100.txt"
    path.write_text(text.replace("Replay Errors: 104", "Replay Errors: 90104"))
    return path


def test_a_direct_links_two_modules_are_reseated_in_the_action_and_the_ticket_alike(cli: Cli,
                                                                                   tmp_path: Path) -> None:
    argv = (str(_failing_direct_link(tmp_path)), "--node", NODE, "--platform", "dgx1-v100-8gpu")
    action, answer = _analyze(cli, *argv)
    loc = answer["localization"]
    assert loc["end"] is None, "no reading says which end received the errors: both modules are suspects"
    ends = f"GPU {loc['gpu']} and {loc['peer']}"
    assert loc["peer"] and loc["peer"].startswith("GPU ") and loc["peer"] != f"GPU {loc['gpu']}"
    assert action == answer["repair_action"] and f"modules of {ends}" in action
    ticket = _ticket(cli, *argv)
    assert ticket["peer"] == loc["peer"]
    reseat = [s["text"] for s in ticket["repair_steps"] if ", reseat " in s["text"]]
    assert len(reseat) == 1 and f"modules of {ends}" in reseat[0], reseat
